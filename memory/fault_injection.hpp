// Fault injection for the memory layer: makes the next N allocations of a
// memory kind fail, either *before* CUDA (or the C library) is called, as a
// real failure would surface, or by making the real call fail (real_call).
// It is not a mock: resources call it first and then do their real work.
// It also makes staging-slot releases fail (fail_next_release). Thread-safe;
// works on the host backend and in builds without CUDA.
//
//   fault_injection::Scope guard;                       // clears on exit
//   fault_injection::fail_next(MemoryKind::write_combined, 2);
//   chain.allocate(...);  // the write-combined step fails: cudaErrorMemoryAllocation
//
// Which kind an allocation counts as: PageableResource -> pageable,
// HostRegisteredResource and HostRegistration -> host_registered,
// PinnedResource -> its kind() (write_combined, then mapped, then portable,
// then pinned).
#pragma once

#include "imgpipe/memory/resources.hpp"

namespace imgpipe::memory::fault_injection {

enum class Failure : std::uint8_t {
  cuda_out_of_memory,  // imgpipe::CudaError with code cudaErrorMemoryAllocation (2)
  bad_alloc,           // std::bad_alloc
  // The resource makes its real call for impossible_bytes (cudaHostAlloc,
  // cudaHostRegister, aligned_alloc), so CUDA or the C library refuses it as
  // on a host out of page-locked memory, leaving behind whatever a real
  // failure leaves (the CUDA runtime's per-thread last error too). Needs a
  // CUDA device for the page-locked kinds; pageable fails with std::bad_alloc.
  real_call,
};

// What a real_call failure asks for: more than any host has.
inline constexpr std::size_t impossible_bytes = std::size_t{1} << 56;

// The next `count` allocations of `kind` fail with `failure`, after the
// `skip` allocations of that kind before them succeed (adds to what is
// already pending for that kind; count <= 0 does nothing).
void fail_next(MemoryKind kind, int count, Failure failure = Failure::cuda_out_of_memory, int skip = 0);
// Failures still pending for `kind`.
int pending(MemoryKind kind) noexcept;
// Failures injected so far (consumed), all kinds; reset by clear().
long long fired() noexcept;
// Drops every pending failure (releases too) and resets fired().
void clear() noexcept;

// Called by the resources at the top of allocate(): throws the pending
// failure for `kind`, if any, consuming it. `bytes` goes into the message.
// Returns the bytes the resource asks its real call for: `bytes`, or
// impossible_bytes for a pending real_call failure.
std::size_t check(MemoryKind kind, std::size_t bytes);

// The next `count` staging-slot releases (StagingRing::release) throw
// imgpipe::CudaError cudaErrorInvalidResourceHandle where the release makes
// and records its event, as a release on a stream of another device would.
void fail_next_release(int count);
int pending_releases() noexcept;
// Called by StagingRing::release: throws the pending release failure, if any.
void check_release();

// Clears at construction and destruction, so a test cannot leak pending
// failures into the next one.
class Scope {
 public:
  Scope() noexcept { clear(); }
  ~Scope() { clear(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace imgpipe::memory::fault_injection
