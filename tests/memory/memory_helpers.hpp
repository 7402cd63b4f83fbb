// Helpers shared by the memory suites: byte patterns, and GPU round trips for
// host memory the CPU must not read (write-combined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common.hpp"
#include "kernels/memread.hpp"
#include "memory/gpu.hpp"

namespace imgpipe::test {

inline void fill(void* p, std::size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 31u + seed);
}

inline bool matches(const void* p, std::size_t n, unsigned seed) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] != static_cast<unsigned char>(i * 31u + seed)) return false;
  return true;
}

inline std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  fill(v.data(), n, seed);
  return v;
}

// Reads `n` bytes of host memory the CPU must not read (write-combined)
// through the GPU: H2D into device memory, then D2H into pageable memory.
inline std::vector<unsigned char> read_through_device(const void* h, std::size_t n) {
  gpu::Stream s(0);
  gpu::DeviceBuffer d(0, n);
  gpu::copy_h2d_async(d.get(), h, n, s);
  std::vector<unsigned char> out(n);
  gpu::copy_d2h_async(out.data(), d.get(), n, s);
  s.synchronize();
  return out;
}

// Writes `src` from the GPU into host memory (D2H), the other direction.
inline void write_through_device(void* h, const std::vector<unsigned char>& src) {
  gpu::Stream s(0);
  gpu::DeviceBuffer d(0, src.size());
  gpu::copy_h2d_async(d.get(), src.data(), src.size(), s);
  gpu::copy_d2h_async(h, d.get(), src.size(), s);
  s.synchronize();
}

// The memread kernel's sum over `bytes` at device address `d_data`.
inline std::uint64_t gpu_memread(const void* d_data, std::size_t bytes) {
  gpu::Stream s(0);
  gpu::DeviceBuffer result(0, sizeof(std::uint64_t));
  kernels::memread_gpu(d_data, bytes, static_cast<std::uint64_t*>(result.get()), s.get());
  std::uint64_t sum = 0;
  gpu::copy_d2h_async(&sum, result.get(), sizeof sum, s);
  s.synchronize();
  return sum;
}

// The staging ring's suites: the backends a ring is tested on (-1 the host
// backend, 0 a GPU when there is one), bytes that also change from one 256-byte
// block to the next (a copy misplaced by a chunk shows), and a device (or
// host-backend) buffer read back to pageable memory.
inline std::vector<int> ring_devices() {
  std::vector<int> v{-1};
  if (have_gpu()) v.push_back(0);
  return v;
}

inline std::vector<unsigned char> ring_pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

inline std::vector<unsigned char> read_back(const gpu::DeviceBuffer& d, std::size_t n, const gpu::Stream& s) {
  std::vector<unsigned char> h(n);
  gpu::copy_d2h_async(h.data(), d.get(), n, s);
  s.synchronize();
  return h;
}

}  // namespace imgpipe::test
