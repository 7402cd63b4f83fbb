// The staging ring: N >= 2 host slots, each large enough for one batch, that
// the pack stage fills and the transfer stage copies to the GPU. Slots are
// write-combined pinned memory by default: the CPU only ever writes them,
// sequentially and in bulk; the API has no way to read a slot back.
//
// Protocol (one packer thread, then one transfer thread, in ring order):
//   SlotWriter w = ring.acquire();          // waits until slot w.slot() is free
//   w.write(offset, src, bytes) ...          // fill it
//   gpu::copy_h2d_async(d, ring.dma(w.slot()) ...) via transfer_from()
//   ring.release(w.slot(), stream);          // event: slot is free once the copy is done
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "imgpipe/config.hpp"
#include "imgpipe/gpu.hpp"

namespace imgpipe::memory {

class StagingRing;

// Write-only view of one slot. Cheap to copy; valid until the slot is released.
class SlotWriter {
 public:
  // Copies `bytes` from cached memory `src` into the slot at `offset`.
  // Throws std::out_of_range if it would pass the slot's end.
  void write(std::size_t offset, const void* src, std::size_t bytes);
  std::size_t capacity() const noexcept { return capacity_; }
  int slot() const noexcept { return slot_; }

 private:
  friend class StagingRing;
  SlotWriter(unsigned char* p, std::size_t capacity, int slot) : p_(p), capacity_(capacity), slot_(slot) {}
  unsigned char* p_;
  std::size_t capacity_;
  int slot_;
};

class StagingRing {
 public:
  // Allocates every slot now (never on the hot path). With device -1 (host
  // backend) slots are pageable memory. When a pinned kind cannot be
  // allocated, falls back write_combined -> pinned -> pageable, logging the
  // reason once; the effective kind is memory().
  StagingRing(int device, int slots, std::size_t slot_bytes, StagingMemory requested);
  ~StagingRing();
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // Next slot in ring order; blocks until the GPU has finished reading it
  // (its release event). Time spent blocked is added to wait_seconds().
  SlotWriter acquire();

  // Enqueue a host->device copy of the first `bytes` of `slot` on `stream`.
  void copy_to_device(int slot, void* d_dst, std::size_t bytes, const gpu::Stream& stream) const;

  // Records the slot's event on `stream` after the work that reads it.
  void release(int slot, const gpu::Stream& stream);

  // Waits for every slot's outstanding work (used at shutdown).
  void drain();

  int slots() const noexcept { return static_cast<int>(slots_.size()); }
  std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  StagingMemory memory() const noexcept { return memory_; }
  std::size_t pinned_bytes() const noexcept;
  double wait_seconds() const noexcept { return wait_ns_.load() * 1e-9; }
  int fallbacks() const noexcept { return fallbacks_; }
  const std::string& fallback_reason() const noexcept { return fallback_reason_; }

 private:
  struct Slot;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::size_t slot_bytes_;
  StagingMemory memory_;
  int device_;
  int next_ = 0;
  std::atomic<long long> wait_ns_{0};
  int fallbacks_ = 0;
  std::string fallback_reason_;
};

std::string_view to_string(StagingMemory m) noexcept;

}  // namespace imgpipe::memory
