// Test helpers (fault drills, core/fault.hpp): a kernel that traps, which puts
// the CUDA context into a sticky error state (cudaErrorLaunchFailure /
// IllegalInstruction), to check that the pipeline ends with a clear error
// instead of hanging; and a kernel that keeps a stream busy for a while, so
// that work which is not ordered after it shows (a missing event wait).
#pragma once

#include "imgpipe/types.hpp"

namespace imgpipe::kernels {
// Enqueues the trapping kernel on `stream`. std::logic_error without CUDA.
void trap_gpu(CUstream_st* stream);
// Enqueues a kernel that spins for about `ms` milliseconds on `stream`.
// std::logic_error without CUDA.
void stall_gpu(CUstream_st* stream, unsigned ms);
}  // namespace imgpipe::kernels
