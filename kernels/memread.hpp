// Memory-read kernels for the memory layer's calibration and tests: they read
// device memory or mapped (zero-copy) host memory and fold what they read
// into a 64-bit sum, so the loads cannot be optimised away and the result can
// be checked against the CPU twin.
//
// Sum definition (both twins): the bytes as little-endian 64-bit words, a final
// partial word zero-padded, added modulo 2^64. Integer arithmetic: identical
// results for identical bytes, whatever the order of the additions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "imgpipe/types.hpp"

namespace imgpipe::kernels {

// CPU twin of memread_gpu.
inline std::uint64_t memread_ref(const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t sum = 0;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    sum += w;
  }
  std::uint64_t tail = 0;
  for (std::size_t b = 0; i + b < bytes; ++b) tail |= static_cast<std::uint64_t>(p[i + b]) << (8 * b);
  return sum + tail;
}

// CPU twin of gather_read_gpu: the sum over records indices[i] (each
// `record_bytes` long, starting at base + index * record_bytes).
inline std::uint64_t gather_read_ref(const void* base, std::size_t record_bytes, const std::uint32_t* indices,
                                     std::size_t count) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < count; ++i)
    sum += memread_ref(static_cast<const unsigned char*>(base) + std::size_t{indices[i]} * record_bytes, record_bytes);
  return sum;
}

// Enqueues a read of every byte of `d_data` (device memory, or the device
// address of mapped host memory) on `stream`, with 16-byte loads, many in
// flight; *d_result (device or mapped memory) receives the sum (the call zeroes
// it first). `d_data` must be 16-byte aligned. Throws std::invalid_argument,
// imgpipe::CudaError; std::logic_error in a build without CUDA.
void memread_gpu(const void* d_data, std::size_t bytes, std::uint64_t* d_result, CUstream_st* stream);

// Enqueues a read of `count` records of `record_bytes` (a multiple of 16; base
// 16-byte aligned) at d_base + d_indices[i] * record_bytes, one block per
// record; *d_result receives the sum. d_indices is device (or mapped) memory.
void gather_read_gpu(const void* d_base, std::size_t record_bytes, const std::uint32_t* d_indices, std::size_t count,
                     std::uint64_t* d_result, CUstream_st* stream);

// Enqueues a single thread that spins for `microseconds` (GPU global timer):
// a test helper that keeps a stream busy so that events stay pending.
void spin_gpu(std::uint32_t microseconds, CUstream_st* stream);

}  // namespace imgpipe::kernels
