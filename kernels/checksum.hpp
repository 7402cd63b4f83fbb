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

// The checksum in parts: over a run of words w_j (j from 0 at the run's
// start), `sum` is the sum of w_j and `weighted` the sum of w_j * (2j + 1),
// both modulo 2^64. A run that starts at word o of a buffer adds
// weighted + 2 * o * sum to the buffer's checksum (at()), so the parts of a
// buffer, summed as they are written, give checksum_ref of the whole
// wherever each part ends up.
struct ChecksumPart {
  std::uint64_t sum = 0, weighted = 0;

  // The part's share of the checksum of a buffer in which it starts at byte
  // `offset` (a multiple of 4).
  std::uint64_t at(std::size_t offset) const noexcept { return weighted + 2 * static_cast<std::uint64_t>(offset / 4) * sum; }
  // Adds part p, which starts at byte `offset` (a multiple of 4) of this one.
  void add(const ChecksumPart& p, std::size_t offset) noexcept {
    weighted += p.at(offset);
    sum += p.sum;
  }
};

// The part of `bytes` (a multiple of 4) at `data`.
ChecksumPart checksum_part(const void* data, std::size_t bytes) noexcept;
// The parts of the three equal thirds of `bytes` at `data` into parts[0..2]
// (a channel each of a planar image); false, and parts left alone, unless
// the thirds are whole words (bytes a multiple of 12).
bool checksum_thirds(const void* data, std::size_t bytes, ChecksumPart* parts) noexcept;

// Enqueues the checksum of device (or mapped) memory on `stream`; the result
// lands in *d_result (device memory, or mapped/pinned host memory the device
// can write), which the call zeroes first. Throws imgpipe::CudaError.
void checksum_gpu(const void* d_data, std::size_t bytes, std::uint64_t* d_result, CUstream_st* stream);

}  // namespace imgpipe::kernels
