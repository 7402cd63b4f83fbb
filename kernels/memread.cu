#include <cuda_runtime.h>

#include <stdexcept>

#include "core/cuda_check.hpp"
#include "memread.hpp"

namespace imgpipe::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // loads in flight per thread: what hides PCIe latency for mapped memory

__device__ inline unsigned long long fold(uint4 v) {
  const unsigned long long lo = (static_cast<unsigned long long>(v.y) << 32) | v.x;
  const unsigned long long hi = (static_cast<unsigned long long>(v.w) << 32) | v.z;
  return lo + hi;
}

__device__ inline void block_add(unsigned long long sum, unsigned long long* out) {
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  __shared__ unsigned long long warp_sums[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < (kThreads / 32) ? warp_sums[lane] : 0;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (lane == 0 && sum) atomicAdd(out, sum);
  }
}

// Reads n16 16-byte vectors, then the tail (< 16 bytes) in thread 0 of block 0.
__global__ void memread_kernel(const uint4* __restrict__ p, size_t n16, const unsigned char* __restrict__ tail,
                               unsigned tail_bytes, unsigned long long* __restrict__ out) {
  unsigned long long sum = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n16; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = p[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) sum += fold(v[u]);
  }
  for (; i < n16; i += stride) sum += fold(p[i]);
  if (blockIdx.x == 0 && threadIdx.x == 0 && tail_bytes) {
    unsigned long long w = 0;
    unsigned b = 0;
    for (; b + 8 <= tail_bytes; b += 8) {
      unsigned long long x = 0;
      for (unsigned k = 0; k < 8; ++k) x |= static_cast<unsigned long long>(tail[b + k]) << (8 * k);
      sum += x;
    }
    for (unsigned k = 0; b + k < tail_bytes; ++k) w |= static_cast<unsigned long long>(tail[b + k]) << (8 * k);
    sum += w;
  }
  block_add(sum, out);
}

__global__ void gather_kernel(const unsigned char* __restrict__ base, size_t record_bytes,
                              const unsigned* __restrict__ idx, size_t count, unsigned long long* __restrict__ out) {
  unsigned long long sum = 0;
  const size_t n16 = record_bytes / 16;
  for (size_t r = blockIdx.x; r < count; r += gridDim.x) {
    const uint4* rec = reinterpret_cast<const uint4*>(base + static_cast<size_t>(idx[r]) * record_bytes);
    for (size_t i = threadIdx.x; i < n16; i += blockDim.x) sum += fold(rec[i]);
  }
  block_add(sum, out);
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

int blocks_for(size_t work_items) {
  int dev = 0, sms = 0;
  IMGPIPE_CUDA_TRY(cudaGetDevice(&dev));
  IMGPIPE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  size_t blocks = (work_items + kThreads - 1) / kThreads;
  const size_t cap = static_cast<size_t>(sms) * 8;
  if (blocks > cap) blocks = cap;
  return blocks ? static_cast<int>(blocks) : 1;
}

}  // namespace

void memread_gpu(const void* d_data, std::size_t bytes, std::uint64_t* d_result, CUstream_st* stream) {
  if (reinterpret_cast<std::uintptr_t>(d_data) % 16)
    throw std::invalid_argument("memread_gpu: the data must be 16-byte aligned");
  IMGPIPE_CUDA_TRY(cudaMemsetAsync(d_result, 0, sizeof(std::uint64_t), stream));
  const size_t n16 = bytes / 16;
  const auto* p = static_cast<const unsigned char*>(d_data);
  memread_kernel<<<blocks_for(n16 / kUnroll + 1), kThreads, 0, stream>>>(
      reinterpret_cast<const uint4*>(p), n16, p + n16 * 16, static_cast<unsigned>(bytes % 16),
      reinterpret_cast<unsigned long long*>(d_result));
  IMGPIPE_CUDA_TRY(cudaGetLastError());
}

void gather_read_gpu(const void* d_base, std::size_t record_bytes, const std::uint32_t* d_indices, std::size_t count,
                     std::uint64_t* d_result, CUstream_st* stream) {
  if (record_bytes == 0 || record_bytes % 16 || reinterpret_cast<std::uintptr_t>(d_base) % 16)
    throw std::invalid_argument("gather_read_gpu: records must be a non-zero multiple of 16 bytes, 16-byte aligned");
  IMGPIPE_CUDA_TRY(cudaMemsetAsync(d_result, 0, sizeof(std::uint64_t), stream));
  if (count == 0) return;
  int dev = 0, sms = 0;
  IMGPIPE_CUDA_TRY(cudaGetDevice(&dev));
  IMGPIPE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const size_t cap = static_cast<size_t>(sms) * 16;
  const unsigned blocks = static_cast<unsigned>(count < cap ? count : cap);
  gather_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const unsigned char*>(d_base), record_bytes,
                                                 reinterpret_cast<const unsigned*>(d_indices), count,
                                                 reinterpret_cast<unsigned long long*>(d_result));
  IMGPIPE_CUDA_TRY(cudaGetLastError());
}

void spin_gpu(std::uint32_t microseconds, CUstream_st* stream) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(microseconds) * 1000ull);
  IMGPIPE_CUDA_TRY(cudaGetLastError());
}

}  // namespace imgpipe::kernels
