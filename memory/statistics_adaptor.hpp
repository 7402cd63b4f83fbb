// StatisticsAdaptor: counts what goes through it to an upstream resource
// (RMM's statistics_resource_adaptor): bytes held now and at the peak,
// allocation and deallocation counts, failed allocations. It changes nothing
// else: every call is forwarded as is.
//
//   PinnedResource pinned;
//   StatisticsAdaptor<PinnedResource> counted(pinned);
//   ... counted.stats().peak_bytes ...
//
// Bytes are counted as requested. Thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "memory/resource_ref.hpp"

namespace imgpipe::memory {

struct AllocationStats {
  std::size_t bytes = 0;            // held now (allocated, not yet deallocated)
  std::size_t peak_bytes = 0;       // the most `bytes` ever
  std::size_t total_bytes = 0;      // allocated over the adaptor's lifetime
  std::uint64_t allocations = 0;    // allocate() calls that returned a block
  std::uint64_t deallocations = 0;  // deallocate() calls
  std::uint64_t failures = 0;       // allocate() calls that threw
  std::uint64_t blocks() const noexcept { return allocations - deallocations; }  // held now
};

template <HostResource Upstream>
class StatisticsAdaptor {
 public:
  // Does not own `upstream`: it must outlive the adaptor.
  explicit StatisticsAdaptor(Upstream& upstream) noexcept : upstream_(upstream) {}
  StatisticsAdaptor(const StatisticsAdaptor&) = delete;
  StatisticsAdaptor& operator=(const StatisticsAdaptor&) = delete;

  // Throws what the upstream throws (counted as a failure).
  void* allocate(std::size_t bytes, std::size_t alignment = 256) {
    void* p = nullptr;
    try {
      p = upstream_.allocate(bytes, alignment);
    } catch (...) {
      std::lock_guard lock(m_);
      ++s_.failures;
      throw;
    }
    std::lock_guard lock(m_);
    ++s_.allocations;
    s_.bytes += bytes;
    s_.total_bytes += bytes;
    s_.peak_bytes = std::max(s_.peak_bytes, s_.bytes);
    return p;
  }

  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept {
    upstream_.deallocate(p, bytes, alignment);
    std::lock_guard lock(m_);
    ++s_.deallocations;
    s_.bytes -= bytes;
  }

  AllocationStats stats() const {
    std::lock_guard lock(m_);
    return s_;
  }
  Upstream& upstream() const noexcept { return upstream_; }

 private:
  Upstream& upstream_;
  mutable std::mutex m_;
  AllocationStats s_;
};

}  // namespace imgpipe::memory
