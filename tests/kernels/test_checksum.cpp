// Checksum twins. References: hand-computed sums of the documented formula
// (sum of 32-bit little-endian words w_i * (2i + 1) mod 2^64, last partial
// word zero-padded); GPU twin vs CPU twin: exactly equal (integer arithmetic)
// for every size 0..4 mod 4 and unaligned start.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_util.hpp"
#include "kernels/checksum.hpp"

namespace test = imgpipe::test;
using imgpipe::kernels::checksum_ref;

TEST_CASE("checksum: hand-computed values") {
  const std::uint8_t a[] = {1, 0, 0, 0, 2, 0, 0, 0};
  CHECK(checksum_ref(a, 8) == 1u * 1 + 2u * 3);
  const std::uint8_t b[] = {1, 2, 3};
  CHECK(checksum_ref(b, 3) == 0x030201u);
  const std::uint8_t c[] = {0, 0, 0, 0, 9};
  CHECK(checksum_ref(c, 5) == 27u);
  CHECK(checksum_ref(nullptr, 0) == 0u);
  // Wraps modulo 2^64: 0xffffffff * (2 * 1 + 1) + 0xffffffff * 1.
  const std::uint8_t d[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  CHECK(checksum_ref(d, 8) == 0xffffffffull * 4);
}

TEST_CASE("checksum: sensitive to order and to every byte") {
  std::vector<std::uint8_t> v(4096);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(i * 37 + 11);
  const std::uint64_t base = checksum_ref(v.data(), v.size());
  std::vector<std::uint8_t> w = v;
  std::swap(w[0], w[4]);  // swap two words' low bytes
  CHECK(checksum_ref(w.data(), w.size()) != base);
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4095}}) {
    w = v;
    w[i] ^= 0x10;
    CHECK(checksum_ref(w.data(), w.size()) != base);
  }
}

TEST_CASE("checksum: the CPU twin (AVX2 steps where the CPU has them) equals the definition at every length and alignment") {
  // The definition as checksum.hpp states it, one word at a time.
  auto definition = [](const std::uint8_t* p, std::size_t bytes) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; 4 * i < bytes; ++i) {
      std::uint64_t w = 0;
      for (std::size_t k = 0; k < 4 && 4 * i + k < bytes; ++k) w |= static_cast<std::uint64_t>(p[4 * i + k]) << (8 * k);
      sum += w * (2 * i + 1);
    }
    return sum;
  };
  std::vector<std::uint8_t> v(70001);
  std::uint32_t x = 12345;
  for (auto& b : v) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  for (std::size_t offset : {0, 1, 3})
    for (std::size_t bytes : {0, 1, 31, 32, 33, 63, 64, 65, 127, 4096, 4099, 65536, 70000 - 3}) {
      CAPTURE(offset);
      CAPTURE(bytes);
      CHECK(checksum_ref(v.data() + offset, bytes) == definition(v.data() + offset, bytes));
    }
  std::vector<std::uint8_t> ones(1 << 20, 0xff);  // the largest words: the 64-bit sums wrap as the definition's
  CHECK(checksum_ref(ones.data(), ones.size()) == definition(ones.data(), ones.size()));
}

TEST_CASE("checksum: parts summed where they were written, wherever they end up, give the whole's checksum") {
  std::vector<std::uint8_t> v(3 * 40000 + 12);
  std::uint32_t x = 777;
  for (auto& b : v) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  // The plain sum and the weighted one of a part, against their definitions.
  const imgpipe::kernels::ChecksumPart whole = imgpipe::kernels::checksum_part(v.data(), v.size());
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < v.size() / 4; ++i) {
    std::uint32_t w;
    std::memcpy(&w, v.data() + 4 * i, 4);
    sum += w;
  }
  CHECK(whole.sum == sum);
  CHECK(whole.weighted == checksum_ref(v.data(), v.size()));
  CHECK(whole.at(0) == checksum_ref(v.data(), v.size()));
  // Three parts of unequal lengths (not multiples of the AVX2 step), each
  // summed alone, combined at their places; then the same parts moved
  // (the last first), against the moved buffer's checksum.
  const std::size_t cut[4] = {0, 4 * 9999, 4 * 20003, v.size()};
  std::uint64_t combined = 0;
  imgpipe::kernels::ChecksumPart parts[3];
  for (int k = 0; k < 3; ++k) {
    parts[k] = imgpipe::kernels::checksum_part(v.data() + cut[k], cut[k + 1] - cut[k]);
    combined += parts[k].at(cut[k]);
  }
  CHECK(combined == checksum_ref(v.data(), v.size()));
  std::vector<std::uint8_t> moved(v.begin() + static_cast<std::ptrdiff_t>(cut[2]), v.end());
  moved.insert(moved.end(), v.begin(), v.begin() + static_cast<std::ptrdiff_t>(cut[2]));
  const std::size_t last = cut[3] - cut[2];
  CHECK(parts[2].at(0) + parts[0].at(last) + parts[1].at(last + cut[1]) == checksum_ref(moved.data(), moved.size()));
  CHECK(combined != checksum_ref(moved.data(), moved.size()));
  // The largest words: the 64-bit sums wrap as the whole's.
  std::vector<std::uint8_t> ones(1 << 20, 0xff);
  const auto a = imgpipe::kernels::checksum_part(ones.data(), ones.size() / 2);
  const auto b = imgpipe::kernels::checksum_part(ones.data() + ones.size() / 2, ones.size() / 2);
  CHECK(a.at(0) + b.at(ones.size() / 2) == checksum_ref(ones.data(), ones.size()));
}

TEST_CASE("checksum: GPU twin equals the CPU twin") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  std::vector<std::uint8_t> data((64u << 20) + 16);
  cv::RNG rng(42);
  rng.fill(data, cv::RNG::UNIFORM, 0, 256);
  const test::DeviceCopy d_data(data.data(), data.size(), s);
  imgpipe::gpu::DeviceBuffer d_sum(0, sizeof(std::uint64_t));
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{5},
                            std::size_t{1023}, std::size_t{1} << 20, (std::size_t{1} << 20) + 3, std::size_t{64} << 20})
    for (std::size_t offset : {0, 1, 2, 3}) {
      imgpipe::kernels::checksum_gpu(d_data.get() + offset, bytes, static_cast<std::uint64_t*>(d_sum.get()), s.get());
      const std::vector<std::uint8_t> h = test::download(d_sum, sizeof(std::uint64_t), s);
      std::uint64_t got;
      std::memcpy(&got, h.data(), sizeof got);
      INFO("bytes " << bytes << " offset " << offset);
      CHECK(got == checksum_ref(data.data() + offset, bytes));
    }
}
