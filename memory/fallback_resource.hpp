// FallbackResource: asks a chain of resources in order and hands out the first
// block one of them gives. Each step is labelled with the MemoryKind its blocks
// are; the usual chains are fallback_chain(kind):
//
//   write_combined -> pinned -> host_registered -> pageable
//   portable -> host_registered|portable -> pageable     (mapped likewise)
//
// Rules, the same for every chain:
// - A step taken (step i failed, step i+1 asked) is counted for every
//   allocation that takes it, logged once per resource with the first
//   failure's reason (imgpipe::logger(), warn), and listed by records().
// - A page-locked step that failed for a reason other than the budget
//   (BudgetError from a LimitingAdaptor) is not asked again: a failing
//   cudaHostAlloc is slow and pinned memory rarely comes back by itself. A
//   pageable step, or a budget refusal, is asked again next time.
// - A step marked `unavailable` is never asked; it fails with that reason
//   (the host backend: "no CUDA device (...)").
// - With fallback off, the first step's failure throws AllocationError at
//   once; with fallback on, AllocationError when every step failed.
//
// The resource remembers which step gave each live block, so deallocate()
// returns it there; kind_of() and device_pointer() answer for live blocks.
// Blocks still live at destruction are freed (after a warning). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "imgpipe/memory/resources.hpp"
#include "memory/errors.hpp"
#include "memory/resource_ref.hpp"

namespace imgpipe::memory {

// The kinds tried for a request of `first`, `first` included, in order.
std::vector<MemoryKind> fallback_chain(MemoryKind first);

// One step of a chain. The resource is not owned: it must outlive the
// FallbackResource.
struct FallbackStep {
  MemoryKind kind = MemoryKind::pageable;  // what this step's blocks are
  HostResourceRef resource;
  bool mapped = false;      // its blocks have a device address (cudaHostGetDevicePointer at allocation)
  std::string unavailable;  // non-empty: never asked, fails with this reason
};

// One step of the chain as taken: `count` allocations (`bytes` in total) went
// from `from` to `to`; `reason` is the first failure's.
struct FallbackRecord {
  MemoryKind from = MemoryKind::pinned;
  MemoryKind to = MemoryKind::pageable;
  std::string reason;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

class FallbackResource {
 public:
  // `name` starts log lines and errors. Throws std::invalid_argument for an
  // empty chain.
  FallbackResource(std::string name, std::vector<FallbackStep> steps, bool fallback = true);
  ~FallbackResource();
  FallbackResource(const FallbackResource&) = delete;
  FallbackResource& operator=(const FallbackResource&) = delete;

  // A block from the first step that gives one. `alignment`: a power of two
  // up to 4096 (what every kind honours). Throws AllocationError (see above),
  // std::invalid_argument for a bad alignment.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  // Returns a live block to the step that gave it. A pointer this resource did
  // not hand out is logged and ignored.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;

  // Whether `p` is a live block of this resource.
  bool owns(const void* p) const;
  // The kind of the step that gave live block `p`; throws std::invalid_argument
  // for any other pointer.
  MemoryKind kind_of(const void* p) const;
  // The device address of live block `p` from a mapped step, else nullptr;
  // throws std::invalid_argument for a pointer that is not a live block.
  void* device_pointer(const void* p) const;

  std::vector<FallbackRecord> records() const;
  std::uint64_t fallbacks() const;  // steps taken, in total (sum of the records' counts)
  std::uint64_t failures() const;   // allocate() calls that threw AllocationError
  MemoryKind requested() const noexcept;  // the first step's kind
  bool fallback() const noexcept;
  const std::string& name() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace imgpipe::memory
