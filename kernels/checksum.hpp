// An order-sensitive 64-bit checksum of a byte buffer, the same on the CPU and
// the GPU: sum over 32-bit little-endian words w_i of w_i * (2i + 1), modulo
// 2^64, with a final partial word zero-padded. Integer arithmetic: both twins
// give identical results for identical bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "imgpipe/types.hpp"

namespace imgpipe::kernels {

std::uint64_t checksum_ref(const void* data, std::size_t bytes) noexcept;

// Enqueues the checksum of device (or mapped) memory on `stream`; the result
// lands in *d_result (device memory, or mapped/pinned host memory the device
// can write), which the call zeroes first. Throws imgpipe::CudaError.
void checksum_gpu(const void* d_data, std::size_t bytes, std::uint64_t* d_result, CUstream_st* stream);

}  // namespace imgpipe::kernels
