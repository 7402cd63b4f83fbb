// HostMemoryChain: host memory of a requested kind, composed from the small
// pieces (this is wiring, not a pool):
//
//   FallbackResource "kinds"      requested kind -> (pinned) -> host_registered    page-locked kinds
//   StatisticsAdaptor             page-locked bytes now / peak, allocation counts
//   LimitingAdaptor               the page-locked budget (BudgetError past it)
//   FallbackResource "chain"      [the budgeted page-locked kinds] -> pageable
//
// so a request walks write_combined -> pinned -> host_registered -> pageable
// (fallback_chain()), and hitting the budget goes straight to pageable memory,
// which is outside the budget (it is not the scarce resource). Each step is
// counted, logged once with its reason and listed by fallbacks(); kinds that
// failed for a reason other than the budget are not asked again. With
// fallback off the first failure (budget included) throws AllocationError.
//
// On the host backend (device -1, a build without CUDA, or no CUDA device) no
// page-locked kind is asked at all: the first step fails with the reason
// "no CUDA device (...)" and the chain goes to pageable memory.
//
// Blocks are owned by the chain until deallocated; blocks still live at
// destruction are freed (after a warning). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "imgpipe/memory/resources.hpp"
#include "memory/fallback_resource.hpp"
#include "memory/statistics_adaptor.hpp"

namespace imgpipe::memory {

struct HostChainOptions {
  MemoryKind kind = MemoryKind::pinned;  // the kind asked for (start of the chain)
  // PinnedResource::portable and/or PinnedResource::mapped, added to every
  // page-locked step (write_combined + mapped for zero-copy staging,
  // write_combined + portable for staging shared by several GPUs).
  unsigned extra_flags = 0;
  std::size_t budget_bytes = 0;  // page-locked bytes allowed; 0: no limit
  bool fallback = true;          // false: the first failure throws AllocationError
  // -1: host backend (no CUDA call at all). >= 0: page-locked kinds are asked
  // when CUDA has a device; blocks come from the calling thread's current
  // context, and mapped blocks get the current device's address.
  int device = 0;
  std::string name = "host memory";  // in log lines and errors
};

class HostMemoryChain {
 public:
  explicit HostMemoryChain(HostChainOptions options);
  ~HostMemoryChain();
  HostMemoryChain(const HostMemoryChain&) = delete;
  HostMemoryChain& operator=(const HostMemoryChain&) = delete;

  // A block of `bytes` at `alignment` (a power of two up to 4096). Throws
  // AllocationError, std::invalid_argument for a bad alignment.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;

  // What live block `p` really is after any fallback, and its device address
  // (nullptr unless mapped). Throw std::invalid_argument for other pointers.
  MemoryKind kind_of(const void* p) const;
  void* device_pointer(const void* p) const;

  // The StatisticsAdaptor's figures for page-locked blocks (all zero when the
  // kind asked for is pageable).
  AllocationStats page_locked() const;
  // Steps taken: those between page-locked kinds first, then those to pageable.
  std::vector<FallbackRecord> fallbacks() const;
  std::uint64_t fallback_count() const;
  std::uint64_t failures() const;  // allocate() calls that threw AllocationError
  // True when no page-locked kind can be used here (see above).
  bool host_backend() const noexcept { return host_backend_; }
  const HostChainOptions& options() const noexcept { return opt_; }

 private:
  struct PageLocked;
  HostChainOptions opt_;
  bool host_backend_ = false;
  PageableResource pageable_;
  std::unique_ptr<PageLocked> locked_;     // null when the kind asked for is pageable
  std::unique_ptr<FallbackResource> chain_;
};

}  // namespace imgpipe::memory
