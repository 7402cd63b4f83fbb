// CPU twin of the checksum (checksum.hpp). On x86-64 CPUs with AVX2 the sum
// runs four 32 x 32 -> 64-bit products a step per vector half (the same
// products, added modulo 2^64 in another order: the same result); the
// portable loop does the rest and buffers past 2^33 bytes, whose
// multipliers leave 32 bits.
#include <algorithm>
#include <cstring>

#include "checksum.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define IMGPIPE_CHECKSUM_AVX2 1
#else
#define IMGPIPE_CHECKSUM_AVX2 0
#endif

namespace imgpipe::kernels {

namespace {

// Words [from, to) of p, added to sum.
std::uint64_t words_portable(const unsigned char* p, std::size_t from, std::size_t to, std::uint64_t sum) noexcept {
  for (std::size_t i = from; i < to; ++i) {
    std::uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    sum += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(i) + 1);
  }
  return sum;
}

#if IMGPIPE_CHECKSUM_AVX2
bool has_avx2() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
}

// Words [0, n) (n a multiple of 8, 2n + 1 < 2^32): even words' multipliers
// in one vector, odd ones' in another, each 64-bit lane's low half.
__attribute__((target("avx2"))) std::uint64_t words_avx2(const unsigned char* p, std::size_t n) noexcept {
  __m256i even = _mm256_setr_epi64x(1, 5, 9, 13);  // 2i + 1 of words 0, 2, 4, 6
  __m256i odd = _mm256_setr_epi64x(3, 7, 11, 15);  // of words 1, 3, 5, 7
  const __m256i step = _mm256_set1_epi64x(16);
  __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
  for (std::size_t i = 0; i < n; i += 8) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4 * i));
    a = _mm256_add_epi64(a, _mm256_mul_epu32(w, even));
    b = _mm256_add_epi64(b, _mm256_mul_epu32(_mm256_srli_epi64(w, 32), odd));
    even = _mm256_add_epi64(even, step);
    odd = _mm256_add_epi64(odd, step);
  }
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(a, b));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

}  // namespace

std::uint64_t checksum_ref(const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t words = bytes / 4;
  std::uint64_t sum = 0;
  std::size_t done = 0;
#if IMGPIPE_CHECKSUM_AVX2
  if (has_avx2()) {
    constexpr std::size_t kMaxWords = (std::size_t{1} << 31) - 8;  // 2i + 1 stays below 2^32
    done = std::min(words, kMaxWords) / 8 * 8;
    sum = words_avx2(p, done);
  }
#endif
  sum = words_portable(p, done, words, sum);
  if (bytes % 4) {
    std::uint32_t w = 0;
    std::memcpy(&w, p + 4 * words, bytes % 4);
    sum += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(words) + 1);
  }
  return sum;
}

}  // namespace imgpipe::kernels
