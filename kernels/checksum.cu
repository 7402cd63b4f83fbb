#include <cuda_runtime.h>

#include "checksum.hpp"
#include "core/cuda_check.hpp"

namespace imgpipe::kernels {
namespace {

__global__ void checksum_kernel(const unsigned char* __restrict__ p, size_t bytes,
                                unsigned long long* __restrict__ out) {
  const size_t words = bytes / 4;
  unsigned long long sum = 0;
  const bool aligned = (reinterpret_cast<size_t>(p) & 3) == 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    unsigned int w;
    if (aligned) {
      w = reinterpret_cast<const unsigned int*>(p)[i];
    } else {
      w = p[4 * i] | (p[4 * i + 1] << 8) | (p[4 * i + 2] << 16) | (static_cast<unsigned>(p[4 * i + 3]) << 24);
    }
    sum += static_cast<unsigned long long>(w) * (2ull * i + 1);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0 && (bytes & 3)) {
    unsigned int w = 0;
    for (size_t b = 0; b < (bytes & 3); ++b) w |= static_cast<unsigned>(p[4 * words + b]) << (8 * b);
    sum += static_cast<unsigned long long>(w) * (2ull * words + 1);
  }
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  __shared__ unsigned long long warp_sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < (blockDim.x >> 5) ? warp_sums[lane] : 0;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (lane == 0) atomicAdd(out, sum);
  }
}

}  // namespace

void checksum_gpu(const void* d_data, std::size_t bytes, std::uint64_t* d_result, CUstream_st* stream) {
  IMGPIPE_CUDA_TRY(cudaMemsetAsync(d_result, 0, sizeof(std::uint64_t), stream));
  const int threads = 256;
  size_t blocks = (bytes / 4 + threads - 1) / threads;
  if (blocks > 1024) blocks = 1024;
  if (blocks == 0) blocks = 1;
  checksum_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
      static_cast<const unsigned char*>(d_data), bytes, reinterpret_cast<unsigned long long*>(d_result));
  IMGPIPE_CUDA_TRY(cudaGetLastError());
}

}  // namespace imgpipe::kernels
