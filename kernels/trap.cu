#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "trap.hpp"

namespace imgpipe::kernels {
namespace {
__global__ void trap_kernel() { __trap(); }
__global__ void stall_kernel(unsigned long long ns) {
  unsigned long long t0 = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (unsigned long long t = t0; t - t0 < ns;) {
    __nanosleep(100000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  }
}
}  // namespace

void trap_gpu(CUstream_st* stream) {
  trap_kernel<<<1, 1, 0, stream>>>();
  IMGPIPE_CUDA_TRY(cudaGetLastError());
}

void stall_gpu(CUstream_st* stream, unsigned ms) {
  stall_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(ms) * 1000000ull);
  IMGPIPE_CUDA_TRY(cudaGetLastError());
}
}  // namespace imgpipe::kernels
