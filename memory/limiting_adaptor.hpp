// LimitingAdaptor: a byte budget in front of an upstream resource (RMM's
// limiting_resource_adaptor). A request that would take the bytes allocated
// through the adaptor past the limit throws BudgetError without asking the
// upstream; the bytes come back when the block is deallocated.
//
//   PinnedResource pinned;
//   LimitingAdaptor<PinnedResource> budget(pinned, 256 << 20);  // 256 MiB of pinned memory at most
//   void* p = budget.allocate(n, 4096);                         // BudgetError past the limit
//
// Bytes are counted as requested (the `bytes` argument), not as the upstream
// rounds them. Thread-safe.
#pragma once

#include <cstddef>
#include <limits>
#include <mutex>

#include "memory/errors.hpp"
#include "memory/resource_ref.hpp"

namespace imgpipe::memory {

template <HostResource Upstream>
class LimitingAdaptor {
 public:
  static constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();

  // Does not own `upstream`: it must outlive the adaptor.
  LimitingAdaptor(Upstream& upstream, std::size_t limit_bytes) noexcept : upstream_(upstream), limit_(limit_bytes) {}
  LimitingAdaptor(const LimitingAdaptor&) = delete;
  LimitingAdaptor& operator=(const LimitingAdaptor&) = delete;

  // Throws BudgetError (the upstream is not asked), or what the upstream
  // throws (the bytes are not counted then).
  void* allocate(std::size_t bytes, std::size_t alignment = 256) {
    {
      std::lock_guard lock(m_);
      if (bytes > limit_ - used_) throw BudgetError(limit_, used_, bytes);
      used_ += bytes;
    }
    try {
      return upstream_.allocate(bytes, alignment);
    } catch (...) {
      std::lock_guard lock(m_);
      used_ -= bytes;
      throw;
    }
  }

  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept {
    upstream_.deallocate(p, bytes, alignment);
    std::lock_guard lock(m_);
    used_ -= bytes;
  }

  std::size_t limit() const noexcept { return limit_; }
  // Bytes allocated through the adaptor and not yet deallocated.
  std::size_t used() const {
    std::lock_guard lock(m_);
    return used_;
  }
  Upstream& upstream() const noexcept { return upstream_; }

 private:
  Upstream& upstream_;
  const std::size_t limit_;
  mutable std::mutex m_;
  std::size_t used_ = 0;
};

}  // namespace imgpipe::memory
