// FixedSlotResource: `count` equal blocks ("slots") taken from an upstream
// resource once, at construction, and handed out again and again without
// asking the upstream: the allocator behind the staging ring, whose N slots
// are made at start-up, never on the hot path.
//
//   HostMemoryChain chain({.kind = MemoryKind::write_combined, .device = 0});
//   FixedSlotResource slots(chain, slot_bytes, 3);   // three upstream allocations, now
//   void* p = slots.allocate(slot_bytes, 4096);      // a free slot; std::bad_alloc when none is
//   slots.deallocate(p, slot_bytes, 4096);           // free again, at once
//
// It knows nothing of the GPU: a caller whose slots are read by queued GPU
// work waits for that work (StagingRing waits on each slot's release event)
// before deallocating or reusing a slot. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "memory/resource_ref.hpp"

namespace imgpipe::memory {

class FixedSlotResource {
 public:
  static constexpr std::size_t slot_alignment = 4096;  // every slot starts on a page

  // Allocates `count` blocks of slot_bytes() bytes (`slot_bytes` rounded up
  // to whole pages, at least one page) from `upstream` now, in order. The
  // upstream is not owned and must outlive this resource. Throws
  // std::invalid_argument for count 0, or what the upstream throws (the
  // blocks already made are returned to it first).
  FixedSlotResource(HostResourceRef upstream, std::size_t slot_bytes, std::size_t count);
  // Returns every slot to the upstream; slots still handed out are logged
  // (imgpipe::logger(), warn) and returned too.
  ~FixedSlotResource();
  FixedSlotResource(const FixedSlotResource&) = delete;
  FixedSlotResource& operator=(const FixedSlotResource&) = delete;

  // A free slot for a request of at most slot_bytes() bytes (0 included) at
  // `alignment` (a power of two up to 4096). Never asks the upstream. Throws
  // std::bad_alloc when every slot is in use, std::invalid_argument for a
  // larger request or a bad alignment.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  // Frees a slot this resource handed out; other pointers are logged and ignored.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;

  std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  std::size_t slots() const noexcept { return blocks_.size(); }
  std::size_t free_slots() const;
  // Blocks taken from the upstream (one per slot, all at construction).
  std::uint64_t upstream_allocations() const noexcept { return blocks_.size(); }
  // allocate() calls served (each by a slot made at construction).
  std::uint64_t hits() const;

 private:
  HostResourceRef upstream_;
  std::size_t slot_bytes_;
  std::vector<void*> blocks_;  // every slot, in upstream allocation order
  mutable std::mutex m_;
  std::vector<void*> free_;    // free slots; allocate() takes the back
  std::uint64_t hits_ = 0;
};

}  // namespace imgpipe::memory
