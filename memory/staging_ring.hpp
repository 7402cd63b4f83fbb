// The staging ring: N >= 2 host slots, each with room for up to one batch,
// that the pack stage fills and the transfer stage copies to the GPU (or, in
// zero-copy mode, that kernels read in place). Slots are write-combined pinned
// memory by default: the CPU only ever writes them, sequentially and in bulk;
// the API has no way to read a slot back (a slot's device address is a
// gpu::DeviceAddress, which host code cannot read through).
//
// A slot is one or more blocks ("chunks") of a HostMemoryChain:
// write_combined -> pinned -> host_registered -> pageable, within the
// page-locked budget, each step counted and logged once. Its first chunk is
// made at construction (never on the hot path), as a block of a
// FixedSlotResource: StagingOptions::initial_bytes of room (all of
// slot_bytes unless asked for less) for the first initial_slots slots, none
// for the others. A slot with less than slot_bytes grows when its holder
// calls grow(): one more chunk, so that what was written stays where it is
// and no byte is ever read back. The holder of a slot is the only one who
// uses it, and the work that read it last (its release event) is done
// before acquire() hands it out: so a slot grows while no copy reads it. A
// zero-copy ring's slots (kernels read each as one mapped block) are made
// whole at construction and never grow. With `track`, a TrackingAdaptor
// records where each chunk was allocated and reports any still live at
// shutdown. Reuse of a slot is guarded by its release event (acquire()
// waits for it), not by the allocator.
//
// Protocol (one packer thread; then the transfer/kernel/sink stages in order):
//   SlotWriter w = ring.acquire();               // waits until slot w.slot() is free
//   w = ring.grow(w.slot(), bytes);               // only when w.capacity() is too small
//   w.write(offset, src, bytes) ...               // fill it (may be split over threads,
//                                                 //  disjoint ranges)
//   ring.copy_to_device(w.slot(), d, n, stream)   // copy mode, or ring.device_pointer(slot)
//   ring.release(w.slot(), stream);               // slot is free once stream's work is done
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "imgpipe/config.hpp"
#include "memory/gpu.hpp"
#include "memory/host_memory_chain.hpp"
#include "memory/slot_resource.hpp"
#include "memory/tracking_adaptor.hpp"

namespace imgpipe::memory {

class StagingRing;

// acquire() found every slot held after abandon(): the run that waited is
// being torn down while its consumer keeps batches.
class RingAbandoned : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One block of a slot: bytes [offset, offset + bytes) of the slot's room.
struct SlotChunk {
  unsigned char* host = nullptr;
  void* device = nullptr;  // mapped chunks only
  std::size_t offset = 0;
  std::size_t bytes = 0;
  MemoryKind kind = MemoryKind::pageable;
};

// Write-only view of one slot, as large as the slot was when the view was
// made (grow() gives a larger one; older views stay valid for their range).
// Cheap to copy; valid until the slot is released.
class SlotWriter {
 public:
  // Copies `bytes` from cached memory `src` into the slot at `offset` (over
  // as many of the slot's chunks as the range spans). Throws
  // std::out_of_range if it would pass capacity(). Writers of disjoint
  // ranges may run concurrently, also while the slot's holder grows it.
  void write(std::size_t offset, const void* src, std::size_t bytes) const;
  // The slot's memory at [offset, offset + bytes) for the caller to write in
  // place, when that range lies in one chunk of plain (pageable) memory: a
  // stage that makes its frame there saves the copy. Null otherwise
  // (write-combined or page-locked memory, a range over two chunks): then
  // write() a copy. Throws std::out_of_range as write() does.
  unsigned char* plain_span(std::size_t offset, std::size_t bytes) const;
  std::size_t capacity() const noexcept { return capacity_; }
  int slot() const noexcept { return slot_; }

 private:
  friend class StagingRing;
  SlotWriter(const SlotChunk* chunks, std::size_t capacity, int slot)
      : chunks_(chunks), capacity_(capacity), slot_(slot) {}
  const SlotChunk* chunks_;
  std::size_t capacity_;
  int slot_;
};

// The ring's memory figures, for the run report.
struct StagingStats {
  std::size_t pinned_bytes = 0;  // page-locked bytes the slots hold now
  std::size_t pinned_peak = 0;   // the most page-locked bytes held at once
  std::uint64_t hits = 0;        // acquire() calls: a slot reused, no allocation
  std::uint64_t misses = 0;      // blocks allocated through the chain (a slot's first, at construction; its growth)
  std::size_t staged_bytes = 0;  // the slots' room now (every chunk, whatever its kind)
  std::uint64_t grown = 0;       // chunks added by grow()
  std::uint64_t fallbacks = 0;   // fallback steps taken by those allocations
};

struct StagingOptions {
  int device = -1;                // CUDA device whose context allocates; -1 = host backend
  int slots = 2;
  std::size_t slot_bytes = 0;
  StagingMemory memory = StagingMemory::write_combined;
  TransferMode transfer = TransferMode::copy;  // zero_copy maps the slots
  bool portable = false;          // slots used by several GPUs
  std::size_t budget_bytes = 0;   // page-locked bytes allowed; 0 = none
  bool fallback = true;
  bool track = false;
  // The room each slot is made with (0: slot_bytes, no growth); a slot grows
  // up to slot_bytes (grow()). Ignored in zero-copy mode: slots made whole.
  std::size_t initial_bytes = 0;
  // Slots made at construction (-1: all); the others get their first chunk
  // when their holder grows them. Ignored in zero-copy mode: all made.
  int initial_slots = -1;
  // acquire() hands out a slot handed out before rather than a fresh one,
  // waiting a short while (kFreshWait) for one to be released: the host
  // backend's slots fault their pages in as they are first written, so a run
  // whose consumer gives batches back quickly touches one slot, not all.
  bool prefer_written = false;
};

class StagingRing {
 public:
  // Allocates the slots' initial room now (every slot, whole, unless the
  // options ask for less). Throws std::invalid_argument (slots < 2, size 0),
  // AllocationError (fallback off, or nothing in the chain worked). The ring
  // owns the slots and frees them at destruction, after drain().
  explicit StagingRing(const StagingOptions& options);
  StagingRing(int device, int slots, std::size_t slot_bytes, StagingMemory requested);
  ~StagingRing();
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // The next slot in ring order that is not held (acquired and not yet
  // released; when every slot is held, waits for a release; with
  // prefer_written, a slot handed out before first, see there), then waits
  // until the work that read it last (its release) is done. Time spent
  // blocked is added to wait_seconds(). After abandon(), throws
  // RingAbandoned instead of waiting for a held slot. When that wait throws
  // (CudaError: a sticky error), the slot is not held. acquire() and
  // release() may be called from different threads.
  SlotWriter acquire();

  // Gives slot `slot`, which the caller holds (acquired, not released),
  // room for at least `bytes`: one more chunk, of twice the slot's room or
  // `bytes`, whichever is more, at most slot_bytes() in all (all that is
  // left once the slot has kMaxChunks - 1 chunks); memory from the same
  // chain, within the same budget, faulted in now. What was written stays.
  // Returns a writer for the whole slot. Nothing happens when the slot has
  // the room already. Throws std::out_of_range (more than slot_bytes()),
  // std::logic_error (the slot is not held, or a zero-copy ring would need a
  // second block), AllocationError (the slot is as it was).
  SlotWriter grow(int slot, std::size_t bytes);
  static constexpr int kMaxChunks = 32;

  // Enqueue a host->device copy of the first `bytes` of `slot` on `stream`
  // (one copy per chunk the range spans).
  void copy_to_device(int slot, void* d_dst, std::size_t bytes, const gpu::Stream& stream) const;
  // The same for the `bytes` from `offset` of `slot`, to d_dst.
  void copy_to_device(int slot, std::size_t offset, void* d_dst, std::size_t bytes, const gpu::Stream& stream) const;
  // The device address of a slot in zero-copy mode (mapped memory), for
  // kernels and gpu::copy_* only; a null address otherwise (and for a slot
  // not made yet). Throws std::out_of_range for a slot that does not exist.
  gpu::DeviceAddress device_pointer(int slot) const;
  // A slot's memory when it is one chunk of plain (pageable) host memory,
  // which the CPU may read (the host backend's slots: the batch is then the
  // slot itself, no copy); null otherwise. Throws std::out_of_range.
  const unsigned char* host_block(int slot) const;

  // Records the slot's release on `stream` (any device) after the work that
  // reads it; the slot may be acquired again. Any thread. All or nothing:
  // when making or recording the release event throws (CudaError), the slot
  // stays held and keeps the event it had.
  void release(int slot, const gpu::Stream& stream);
  // For paths that must not throw (shut-down, destructors): release(), or,
  // where that throws, waits for `stream` on the host and frees the slot
  // with no event: the work that read it is done, or the device has failed
  // and runs nothing more. Returns false (the reason logged) in that case.
  bool release_or_wait(int slot, const gpu::Stream& stream) noexcept;
  // Wakes a waiting acquire() and makes it throw RingAbandoned (and any
  // later one that would wait); abandon(false) ends that (a kept ring's next
  // run). Any thread.
  void abandon(bool on = true);
  // Slots acquired and not yet released. Any thread.
  int held() const;

  // Waits for every slot's outstanding work (used at shutdown).
  void drain();
  // The next acquire() starts from slot 0 again (a kept ring's next run:
  // the slots made first are used first). Any thread.
  void rewind();

  int slots() const noexcept { return static_cast<int>(slots_.size()); }
  // The most one slot holds (StagingOptions::slot_bytes).
  std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  // The room slot `slot` has now (0 before its first chunk). For its holder,
  // or after the run. Throws std::out_of_range.
  std::size_t capacity(int slot) const;
  // Every slot's room now, in bytes. Any thread.
  std::size_t staged_bytes() const noexcept { return staged_bytes_.load(std::memory_order_relaxed); }
  // The ring's kind, after any fallback: the chunks' kind when they agree,
  // else the furthest step down the fallback chain that a chunk took (a slot
  // of write_combined and two of pinned read as pinned); memory() is the
  // same as StagingMemory (host_registered reads as pinned).
  StagingMemory memory() const noexcept;
  MemoryKind kind() const noexcept { return kind_.load(std::memory_order_relaxed); }
  // What slot `slot` got (its chunks' furthest step; pageable before its
  // first chunk). Throws std::out_of_range.
  MemoryKind kind(int slot) const;
  // True when kernels read the slots in place (zero_copy asked and mapped memory obtained).
  bool zero_copy() const noexcept { return zero_copy_; }
  std::size_t pinned_bytes() const noexcept;
  double wait_seconds() const noexcept { return wait_ns_.load() * 1e-9; }
  // Slots handed out by acquire() and not yet passed to release() (the GPU
  // may still be reading released ones). Any thread; for the run's timeline.
  int in_use() const noexcept {
    return static_cast<int>(acquires_.load(std::memory_order_relaxed) - releases_.load(std::memory_order_relaxed));
  }
  int fallbacks() const noexcept;
  std::string fallback_reason() const;
  StagingStats stats() const;
  // Steps of the fallback chain taken for the slots (empty when none).
  std::vector<FallbackRecord> fallback_records() const;
  // With `track`: the slots allocated now, each with its allocation site
  // (the TrackingAdaptor's report); empty without `track`.
  std::string tracking_report() const;

 private:
  struct Slot;
  void add_chunk(Slot& s, std::size_t bytes, bool initial);
  void free_chunk(const SlotChunk& c, bool initial) noexcept;
  std::unique_ptr<HostMemoryChain> chain_;
  std::unique_ptr<FixedSlotResource> slot_resource_;  // the slots' first chunks (none when no slot is made at first)
  std::unique_ptr<TrackingAdaptor<FixedSlotResource>> tracker_;  // with `track` only
  std::unique_ptr<TrackingAdaptor<HostMemoryChain>> grow_tracker_;  // with `track`: the chunks grow() adds
  std::vector<std::unique_ptr<Slot>> slots_;
  std::size_t slot_bytes_;
  std::size_t initial_bytes_;  // a slot's first chunk
  std::atomic<MemoryKind> kind_{MemoryKind::pageable};
  bool zero_copy_ = false;
  std::atomic<std::size_t> staged_bytes_{0};
  std::atomic<std::uint64_t> grown_{0};
  mutable std::mutex m_;  // next_ and each slot's held and release event
  std::condition_variable released_cv_;
  bool abandoned_ = false;
  bool prefer_written_ = false;
  int next_ = 0;
  std::atomic<long long> wait_ns_{0};
  std::atomic<std::uint64_t> acquires_{0};
  std::atomic<std::uint64_t> releases_{0};
};

std::string_view to_string(StagingMemory m) noexcept;

}  // namespace imgpipe::memory
