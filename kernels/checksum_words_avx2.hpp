// Internal to kernels/: the checksum's AVX2 step (checksum.hpp), shared by
// its CPU twin (checksum_ref.cpp), which reads the words from memory, and by
// the one pass from YUV (yuv_fused_avx2.cpp), which adds the words it is
// about to store. Not a public header; x86-64 with GCC or Clang only.
#pragma once

#include <cstdint>

#include <immintrin.h>

#include "checksum.hpp"

namespace imgpipe::kernels::checksum_avx2 {

#define IMGPIPE_CHECKSUM_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

// The part of words 0, 1, 2, ... added 8 at a time (2n + 1 < 2^32 for the
// n words added): even words' multipliers 2i + 1 in one vector, odd ones' in
// another, each 64-bit lane's low half, products 32 x 32 -> 64 bits; the
// plain sum beside them. Modulo 2^64 in another order than the portable
// loop's: the same result.
struct Words {
  __m256i even, odd, a, b, s;

  IMGPIPE_CHECKSUM_AVX2_INLINE static Words start() {
    return {_mm256_setr_epi64x(1, 5, 9, 13), _mm256_setr_epi64x(3, 7, 11, 15), _mm256_setzero_si256(),
            _mm256_setzero_si256(), _mm256_setzero_si256()};
  }
  IMGPIPE_CHECKSUM_AVX2_INLINE void add(__m256i w) {
    const __m256i hi = _mm256_srli_epi64(w, 32);
    a = _mm256_add_epi64(a, _mm256_mul_epu32(w, even));
    b = _mm256_add_epi64(b, _mm256_mul_epu32(hi, odd));
    s = _mm256_add_epi64(s, _mm256_add_epi64(_mm256_and_si256(w, _mm256_set1_epi64x(0xffffffff)), hi));
    even = _mm256_add_epi64(even, _mm256_set1_epi64x(16));
    odd = _mm256_add_epi64(odd, _mm256_set1_epi64x(16));
  }
  // The part so far (`sum` only where the caller asks: the compiler drops
  // the plain sum's additions where nothing reads them).
  IMGPIPE_CHECKSUM_AVX2_INLINE ChecksumPart part(bool with_sum) const {
    return {with_sum ? lanes(s) : 0, lanes(_mm256_add_epi64(a, b))};
  }
  IMGPIPE_CHECKSUM_AVX2_INLINE static std::uint64_t lanes(__m256i v) {
    alignas(32) std::uint64_t l[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(l), v);
    return l[0] + l[1] + l[2] + l[3];
  }
};

}  // namespace imgpipe::kernels::checksum_avx2
