// CPU twin of the checksum (checksum.hpp), whole or in parts. On x86-64
// CPUs with AVX2 the sum runs four 32 x 32 -> 64-bit products a step per
// vector half (the same products, added modulo 2^64 in another order: the
// same result); the portable loop does the rest and buffers past 2^33
// bytes, whose multipliers leave 32 bits.
#include <algorithm>
#include <cstring>

#include "checksum.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include "checksum_words_avx2.hpp"
#define IMGPIPE_CHECKSUM_AVX2 1
#else
#define IMGPIPE_CHECKSUM_AVX2 0
#endif

namespace imgpipe::kernels {

namespace {

// Words [from, to) of p, added to part (its plain sum too when kSum).
template <bool kSum>
void words_portable(const unsigned char* p, std::size_t from, std::size_t to, ChecksumPart& part) noexcept {
  for (std::size_t i = from; i < to; ++i) {
    std::uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    part.weighted += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(i) + 1);
    if constexpr (kSum) part.sum += w;
  }
}

#if IMGPIPE_CHECKSUM_AVX2
bool has_avx2() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
}

// Words [0, n) (n a multiple of 8, 2n + 1 < 2^32); with kSum the plain sum
// too.
template <bool kSum>
__attribute__((target("avx2"))) ChecksumPart words_avx2(const unsigned char* p, std::size_t n) noexcept {
  checksum_avx2::Words acc = checksum_avx2::Words::start();
  for (std::size_t i = 0; i < n; i += 8) acc.add(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4 * i)));
  return acc.part(kSum);
}
#endif

// Every whole word of `bytes` at p: AVX2 steps where the CPU has them, the
// portable loop for the rest (and past 2^33 bytes, whose multipliers leave
// 32 bits).
template <bool kSum>
ChecksumPart words(const unsigned char* p, std::size_t bytes) noexcept {
  const std::size_t n = bytes / 4;
  ChecksumPart part;
  std::size_t done = 0;
#if IMGPIPE_CHECKSUM_AVX2
  if (has_avx2()) {
    constexpr std::size_t kMaxWords = (std::size_t{1} << 31) - 8;  // 2i + 1 stays below 2^32
    done = std::min(n, kMaxWords) / 8 * 8;
    part = words_avx2<kSum>(p, done);
  }
#endif
  words_portable<kSum>(p, done, n, part);
  return part;
}

}  // namespace

std::uint64_t checksum_ref(const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t n = bytes / 4;
  std::uint64_t sum = words<false>(p, bytes).weighted;
  if (bytes % 4) {
    std::uint32_t w = 0;
    std::memcpy(&w, p + 4 * n, bytes % 4);
    sum += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(n) + 1);
  }
  return sum;
}

ChecksumPart checksum_part(const void* data, std::size_t bytes) noexcept {
  return words<true>(static_cast<const unsigned char*>(data), bytes);
}

bool checksum_thirds(const void* data, std::size_t bytes, ChecksumPart* parts) noexcept {
  if (bytes % 12 != 0) return false;
  const std::size_t third = bytes / 3;
  for (std::size_t k = 0; k < 3; ++k) parts[k] = checksum_part(static_cast<const unsigned char*>(data) + k * third, third);
  return true;
}

}  // namespace imgpipe::kernels
