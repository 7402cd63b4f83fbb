// Fault injection for the memory layer: makes the next N allocations of a
// memory kind fail *before* CUDA (or the C library) is called, exactly as a
// real failure would surface. It is not a mock: resources call it first and
// then do their real work. Thread-safe; works on the host backend and in
// builds without CUDA.
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
};

// The next `count` allocations of `kind` fail with `failure` (adds to what is
// already pending for that kind; count <= 0 does nothing).
void fail_next(MemoryKind kind, int count, Failure failure = Failure::cuda_out_of_memory);
// Failures still pending for `kind`.
int pending(MemoryKind kind) noexcept;
// Failures injected so far (consumed), all kinds; reset by clear().
long long fired() noexcept;
// Drops every pending failure and resets fired().
void clear() noexcept;

// Called by the resources at the top of allocate(): throws the pending
// failure for `kind`, if any, consuming it. `bytes` goes into the message.
void check(MemoryKind kind, std::size_t bytes);

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
