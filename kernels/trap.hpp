// A kernel that traps: a test helper that puts the CUDA context into a sticky
// error state (cudaErrorLaunchFailure / IllegalInstruction), to check that the
// pipeline ends with a clear error instead of hanging.
#pragma once

#include "imgpipe/types.hpp"

namespace imgpipe::kernels {
// Enqueues the trapping kernel on `stream`. std::logic_error without CUDA.
void trap_gpu(CUstream_st* stream);
}  // namespace imgpipe::kernels
