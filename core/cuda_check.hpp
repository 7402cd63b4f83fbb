// IMGPIPE_CUDA_TRY for code compiled against the CUDA runtime (kernels/ and the
// CUDA parts of the memory layer). Not a public header.
#pragma once

#include <cuda_runtime_api.h>

#include "imgpipe/error.hpp"

namespace imgpipe::detail {
// A failed runtime call also leaves its error as the thread's last error,
// which the next launch check (IMGPIPE_CUDA_TRY(cudaGetLastError())) would
// report as its own: a handled failure (a pinned allocation that falls back)
// would fail an unrelated kernel. The exception carries the error, so the
// thread's record of it is cleared (a sticky error stays: nothing clears it).
inline void clear_last_error() noexcept { (void)cudaGetLastError(); }

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  clear_last_error();
  throw CudaError(call, file, line, static_cast<int>(e), cudaGetErrorName(e), cudaGetErrorString(e));
}
}  // namespace imgpipe::detail

// Throws imgpipe::CudaError carrying the call text, file:line and the error
// name, and clears the thread's last error (detail::clear_last_error).
#define IMGPIPE_CUDA_TRY(expr)                                                          \
  do {                                                                                  \
    const cudaError_t imgpipe_err_ = (expr);                                            \
    if (imgpipe_err_ != cudaSuccess) ::imgpipe::detail::throw_cuda(imgpipe_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// For destructors: never throws; ignores cudaErrorCudartUnloading (process
// exit) and reports anything else on stderr once per call site. Clears the
// thread's last error too, as IMGPIPE_CUDA_TRY does.
#define IMGPIPE_CUDA_TRY_NOTHROW(expr)                                                  \
  do {                                                                                  \
    const cudaError_t imgpipe_err_ = (expr);                                            \
    if (imgpipe_err_ != cudaSuccess) ::imgpipe::detail::clear_last_error();             \
    if (imgpipe_err_ != cudaSuccess && imgpipe_err_ != cudaErrorCudartUnloading) {      \
      static bool imgpipe_once_ = false;                                                \
      if (!imgpipe_once_) {                                                             \
        imgpipe_once_ = true;                                                           \
        ::imgpipe::detail::report_cuda_nothrow(#expr, __FILE__, __LINE__, cudaGetErrorName(imgpipe_err_)); \
      }                                                                                 \
    }                                                                                   \
  } while (0)

namespace imgpipe::detail {
void report_cuda_nothrow(const char* call, const char* file, int line, const char* name) noexcept;
}
