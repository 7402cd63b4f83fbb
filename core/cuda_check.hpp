// IMGPIPE_CUDA_TRY for code compiled against the CUDA runtime (kernels/ and the
// CUDA parts of the memory layer). Not a public header.
#pragma once

#include <cuda_runtime_api.h>

#include "imgpipe/error.hpp"

namespace imgpipe::detail {
[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError(call, file, line, static_cast<int>(e), cudaGetErrorName(e), cudaGetErrorString(e));
}
}  // namespace imgpipe::detail

// Throws imgpipe::CudaError carrying the call text, file:line and the error name.
#define IMGPIPE_CUDA_TRY(expr)                                                          \
  do {                                                                                  \
    const cudaError_t imgpipe_err_ = (expr);                                            \
    if (imgpipe_err_ != cudaSuccess) ::imgpipe::detail::throw_cuda(imgpipe_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// For destructors: never throws; ignores cudaErrorCudartUnloading (process
// exit) and reports anything else on stderr once per call site.
#define IMGPIPE_CUDA_TRY_NOTHROW(expr)                                                  \
  do {                                                                                  \
    const cudaError_t imgpipe_err_ = (expr);                                            \
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
