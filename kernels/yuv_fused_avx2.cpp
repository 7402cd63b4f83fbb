// The AVX2 rows of the CPU one pass from YUV (yuv_fused_rows.hpp): the
// portable rows' integer and float operations, eight lanes at a time. 8-bit
// samples of a block of 8 columns within 32 bytes of a row come with two
// 16-byte loads and byte shuffles (Plan::Window), others with 32-bit
// gathers, which read up to 3 bytes past a sample (the driver keeps a
// plane's last row to the portable rows). Compiled with -ffp-contract=off:
// the normalisation rounds as the definition does.
#include "yuv_fused_rows.hpp"

#include <cstring>

#if IMGPIPE_YUV_AVX2
#include <cpuid.h>
#include <immintrin.h>

#include "checksum_words_avx2.hpp"
#endif

namespace imgpipe::kernels::yuv_rows {

#if IMGPIPE_YUV_AVX2

#define IMGPIPE_AVX2_INLINE __attribute__((target("avx2,f16c"), always_inline)) inline

// Samples idx of a row (8 lanes) as yuv.hpp's detail::sample reads them: a
// 32-bit gather at the sample's first byte, masked to its 1 or 2 bytes and
// shifted.
template <int Bytes>
IMGPIPE_AVX2_INLINE __m256i fetch(const std::uint8_t* row, __m256i idx, __m128i shift) {
  const int* base = reinterpret_cast<const int*>(row);
  if constexpr (Bytes == 1) {
    (void)shift;
    return _mm256_and_si256(_mm256_i32gather_epi32(base, idx, 1), _mm256_set1_epi32(0xff));
  } else {
    const __m256i v = _mm256_i32gather_epi32(base, _mm256_add_epi32(idx, idx), 1);
    return _mm256_srl_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), shift);
  }
}

// The U, V pairs of interleaved chroma samples idx (NV12, P016).
template <int Bytes>
IMGPIPE_AVX2_INLINE void fetch_pairs(const std::uint8_t* row, __m256i idx, __m128i shift, __m256i& U, __m256i& V) {
  const int* base = reinterpret_cast<const int*>(row);
  if constexpr (Bytes == 1) {
    (void)shift;
    const __m256i uv = _mm256_i32gather_epi32(base, _mm256_add_epi32(idx, idx), 1);
    U = _mm256_and_si256(uv, _mm256_set1_epi32(0xff));
    V = _mm256_and_si256(_mm256_srli_epi32(uv, 8), _mm256_set1_epi32(0xff));
  } else {
    const __m256i uv = _mm256_i32gather_epi32(base, _mm256_slli_epi32(idx, 2), 1);
    U = _mm256_srl_epi32(_mm256_and_si256(uv, _mm256_set1_epi32(0xffff)), shift);
    V = _mm256_srl_epi32(_mm256_srli_epi32(uv, 16), shift);
  }
}

// The 8 samples of a block through its window (8-bit samples).
IMGPIPE_AVX2_INLINE __m256i window8(const std::uint8_t* row, const Plan::Window& w) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + w.base));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + w.base + 16));
  const __m128i v = _mm_or_si128(_mm_shuffle_epi8(a, _mm_load_si128(reinterpret_cast<const __m128i*>(w.lo))),
                                 _mm_shuffle_epi8(b, _mm_load_si128(reinterpret_cast<const __m128i*>(w.hi))));
  return _mm256_cvtepu8_epi32(v);
}

IMGPIPE_AVX2_INLINE __m256i clamp255(__m256i v) {
  return _mm256_max_epi32(_mm256_min_epi32(v, _mm256_set1_epi32(255)), _mm256_setzero_si256());
}

IMGPIPE_AVX2_INLINE __m256i load8(const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
IMGPIPE_AVX2_INLINE void store8(std::int32_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// The row is not its plane's last (the gathers read past a sample).
template <int Bytes, bool Interleaved>
IMGPIPE_AVX2 void chroma_terms_avx2(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int cy, Scratch& sc,
                                    int from, int to) {
  const YuvFormat& f = s.format;
  const std::uint8_t* ur = s.plane[1] + static_cast<std::size_t>(cy) * s.pitch[1];
  const std::uint8_t* vr = Interleaved ? nullptr : s.plane[2] + static_cast<std::size_t>(cy) * s.pitch[2];
  const __m256i off = _mm256_set1_epi32(c.c_offset), rv = _mm256_set1_epi32(c.rv), gu = _mm256_set1_epi32(c.gu),
                gv = _mm256_set1_epi32(c.gv), bu = _mm256_set1_epi32(c.bu);
  const __m128i shift = _mm_cvtsi32_si128(f.shift);
  for (int t = 0; t < (plan.two ? 2 : 1); ++t) {
    const std::int32_t* __restrict cx = t == 0 ? plan.c0.data() : plan.c1.data();
    std::int32_t* __restrict cr = sc.cr[t].data();
    std::int32_t* __restrict cg = sc.cg[t].data();
    std::int32_t* __restrict cb = sc.cb[t].data();
    const Plan::Window* wu = plan.wu[t].data();
    const Plan::Window* wv = plan.wv[t].data();
    for (int X = from, b = 0; X + 8 <= to; X += 8, ++b) {
      __m256i U, V;
      if (Bytes == 1 && wu[b].base >= 0 && (!Interleaved || wv[b].base >= 0)) {  // a load and a shuffle
        U = window8(ur, wu[b]);
        V = Interleaved ? window8(ur, wv[b]) : window8(vr, wu[b]);
      } else if constexpr (Interleaved) {
        fetch_pairs<Bytes>(ur, load8(cx + X), shift, U, V);
      } else {
        U = fetch<Bytes>(ur, load8(cx + X), shift);
        V = fetch<Bytes>(vr, load8(cx + X), shift);
      }
      const __m256i u = _mm256_sub_epi32(U, off), v = _mm256_sub_epi32(V, off);
      store8(cr + X, _mm256_mullo_epi32(rv, v));
      store8(cg + X, _mm256_add_epi32(_mm256_mullo_epi32(gu, u), _mm256_mullo_epi32(gv, v)));
      store8(cb + X, _mm256_mullo_epi32(bu, u));
    }
  }
}

void chroma_terms_avx2(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int cy, Scratch& sc, int from, int to) {
  const YuvFormat& f = s.format;
  if (f.bytes == 1)
    (f.uv_interleaved ? chroma_terms_avx2<1, true> : chroma_terms_avx2<1, false>)(s, c, plan, cy, sc, from, to);
  else
    (f.uv_interleaved ? chroma_terms_avx2<2, true> : chroma_terms_avx2<2, false>)(s, c, plan, cy, sc, from, to);
}

// Source row fy at columns [from, to) in blocks of 8; returns where the
// blocks end.
template <int Bytes, bool Two>
IMGPIPE_AVX2 int luma_blocks_avx2(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int fy, const Scratch& sc,
                                  Scratch::Row& out, int from, int to) {
  const std::uint8_t* yr = luma_row(s, fy);
  const __m128i shift = _mm_cvtsi32_si128(s.format.shift);
  const __m256i cy = _mm256_set1_epi32(c.y), yoff = _mm256_set1_epi32(c.y_offset), half = _mm256_set1_epi32(1 << 15);
  const std::int32_t* __restrict l0 = plan.l0.data();
  const std::int32_t* __restrict l1 = plan.l1.data();
  const std::int32_t* __restrict wp = plan.wp.data();
  const std::int32_t* __restrict cr[2] = {sc.cr[0].data(), sc.cr[1].data()};
  const std::int32_t* __restrict cg[2] = {sc.cg[0].data(), sc.cg[1].data()};
  const std::int32_t* __restrict cb[2] = {sc.cb[0].data(), sc.cb[1].data()};
  std::int32_t* __restrict hb = out.h[0].data();
  std::int32_t* __restrict hg = out.h[1].data();
  std::int32_t* __restrict hr = out.h[2].data();
  // B, G, R of 8 samples with tap t's chroma terms at X (yuv.hpp's
  // yuv_pixel), not yet clamped to 0..255.
  auto convert = [&](__m256i Y, int t, int X, __m256i& B, __m256i& G, __m256i& R) __attribute__((target("avx2,f16c"), always_inline)) {
    const __m256i y = _mm256_add_epi32(_mm256_mullo_epi32(cy, _mm256_sub_epi32(Y, yoff)), half);
    R = _mm256_srai_epi32(_mm256_add_epi32(y, load8(cr[t] + X)), 16);
    G = _mm256_srai_epi32(_mm256_sub_epi32(y, load8(cg[t] + X)), 16);
    B = _mm256_srai_epi32(_mm256_add_epi32(y, load8(cb[t] + X)), 16);
  };
  // Tap 0's and tap 1's unclamped values of 8 columns clamped to 0..255 and
  // paired per column as 16-bit halves (tap 0 low), for one multiply-add.
  const __m256i pairs = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                         0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
  auto paired = [&](__m256i a, __m256i b) __attribute__((target("avx2,f16c"), always_inline)) {
    return _mm256_shuffle_epi8(_mm256_min_epu16(_mm256_packus_epi32(a, b), _mm256_set1_epi16(255)), pairs);
  };
  const Plan::Window* w0 = plan.wl[0].data();
  const Plan::Window* w1 = plan.wl[1].data();
  // Tap t's samples of block b (columns X...): a load and a shuffle, or a gather.
  auto samples = [&](int t, int b, int X) __attribute__((target("avx2,f16c"), always_inline)) {
    const Plan::Window& w = t == 0 ? w0[b] : w1[b];
    if (Bytes == 1 && w.base >= 0) return window8(yr, w);
    return fetch<Bytes>(yr, load8((t == 0 ? l0 : l1) + X), shift);
  };
  int X = from;
  for (int b = 0; X + 8 <= to; X += 8, ++b) {
    __m256i B0, G0, R0;
    convert(samples(0, b, X), 0, X, B0, G0, R0);
    if constexpr (Two) {
      __m256i B1, G1, R1;
      convert(samples(1, b, X), 1, X, B1, G1, R1);
      // a * w0 + b * w1 as one int16 multiply-add (values <= 255, weights <= 2048)
      const __m256i w = load8(wp + X);
      store8(hb + X, _mm256_madd_epi16(paired(B0, B1), w));
      store8(hg + X, _mm256_madd_epi16(paired(G0, G1), w));
      store8(hr + X, _mm256_madd_epi16(paired(R0, R1), w));
    } else {  // every weight pair is (2048, 0)
      store8(hb + X, _mm256_slli_epi32(clamp255(B0), detail::kCoefBits));
      store8(hg + X, _mm256_slli_epi32(clamp255(G0), detail::kCoefBits));
      store8(hr + X, _mm256_slli_epi32(clamp255(R0), detail::kCoefBits));
    }
  }
  return X;
}

void luma_pass_avx2(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int fy, Scratch& sc, Scratch::Row& out,
                    int from, int to) {
  int X;
  if (s.format.bytes == 1)
    X = (plan.two ? luma_blocks_avx2<1, true> : luma_blocks_avx2<1, false>)(s, c, plan, fy, sc, out, from, to);
  else
    X = (plan.two ? luma_blocks_avx2<2, true> : luma_blocks_avx2<2, false>)(s, c, plan, fy, sc, out, from, to);
  if (X < to) luma_pass(s, c, plan, fy, sc, out, X, to);
}

// Two resampled rows' values h0, h1 combined with row weights B0, B1
// (resize_math.hpp's vlinear).
IMGPIPE_AVX2_INLINE __m256i vlinear8(__m256i h0, __m256i h1, __m256i B0, __m256i B1) {
  const __m256i a = _mm256_srai_epi32(_mm256_mullo_epi32(_mm256_srai_epi32(h0, 4), B0), 16);
  const __m256i b = _mm256_srai_epi32(_mm256_mullo_epi32(_mm256_srai_epi32(h1, 4), B1), 16);
  return _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_set1_epi32(2)), 2);
}

// Values 0..255 normalised: normalize.hpp's three float operations.
IMGPIPE_AVX2_INLINE __m256 normalize8(__m256i v, __m256 scale, __m256 mean, __m256 sd) {
  return _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), scale), mean), sd);
}

IMGPIPE_AVX2 void vertical_avx2(const Scratch::Row& r0, const Scratch::Row& r1, int b0, int b1,
                                Scratch& sc, int from, int to) {
  const __m256i B0 = _mm256_set1_epi32(b0), B1 = _mm256_set1_epi32(b1);
  int X = from;
  for (int k = 0; k < 3; ++k)
    for (X = from; X + 8 <= to; X += 8)
      store8(sc.v[k].data() + X, vlinear8(load8(r0.h[k].data() + X), load8(r1.h[k].data() + X), B0, B1));
  if (X < to) vertical(r0, r1, b0, b1, sc, X, to);
}

// NCHW float32 / float16 rows: the three float operations of normalize.hpp.
IMGPIPE_AVX2 void emit_avx2(const YuvFusedParams& p, const Scratch& sc, int Y) {
  const std::size_t W = static_cast<std::size_t>(p.width), plane = W * static_cast<std::size_t>(p.height);
  for (int oc = 0; oc < 3; ++oc) {
    const int ic = p.swap_rb ? 2 - oc : oc;
    const std::int32_t* v = sc.v[ic].data();
    const __m256 scale = _mm256_set1_ps(p.scale), mean = _mm256_set1_ps(p.mean[oc]), sd = _mm256_set1_ps(p.std[oc]);
    const std::size_t at = oc * plane + Y * W;
    int X = 0;
    if (p.dtype == DType::float32) {
      float* o = static_cast<float*>(p.dst) + at;
      for (; X + 8 <= p.width; X += 8) _mm256_storeu_ps(o + X, normalize8(load8(v + X), scale, mean, sd));
      for (; X < p.width; ++X) o[X] = sc.f32[oc][v[X]];
    } else {
      std::uint16_t* o = static_cast<std::uint16_t*>(p.dst) + at;
      for (; X + 8 <= p.width; X += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + X),
                         _mm256_cvtps_ph(normalize8(load8(v + X), scale, mean, sd), _MM_FROUND_TO_NEAREST_INT));
      for (; X < p.width; ++X) o[X] = sc.f16[oc][v[X]];
    }
  }
}

IMGPIPE_AVX2 bool vertical_emit_f32_avx2(const YuvFusedParams& p, const Scratch::Row& r0, const Scratch::Row& r1,
                                         int b0, int b1, Scratch& sc, int Y, ChecksumPart* parts) {
  const int W = p.width;
  const int blocks_end = W / 8 * 8;
  if (blocks_end < W) vertical(r0, r1, b0, b1, sc, blocks_end, W);  // the last columns by the portable row
  const std::size_t plane = static_cast<std::size_t>(W) * static_cast<std::size_t>(p.height);
  const __m256i B0 = _mm256_set1_epi32(b0), B1 = _mm256_set1_epi32(b1);
  bool streamed = false;
  for (int oc = 0; oc < 3; ++oc) {
    const int ic = p.swap_rb ? 2 - oc : oc;
    const std::int32_t* h0 = r0.h[ic].data();
    const std::int32_t* h1 = r1.h[ic].data();
    const __m256 scale = _mm256_set1_ps(p.scale), mean = _mm256_set1_ps(p.mean[oc]), sd = _mm256_set1_ps(p.std[oc]);
    float* o = static_cast<float*>(p.dst) + oc * plane + static_cast<std::size_t>(Y) * W;
    // Stores that bypass the caches where the row is aligned: the batch is
    // larger than they are, and nothing reads the row again here.
    const bool stream = (reinterpret_cast<std::uintptr_t>(o) & 31) == 0;
    streamed = streamed || stream;
    checksum_avx2::Words sum = checksum_avx2::Words::start();
    int X = 0;
    for (; X < blocks_end; X += 8) {
      const __m256 n = normalize8(vlinear8(load8(h0 + X), load8(h1 + X), B0, B1), scale, mean, sd);
      if (stream)
        _mm256_stream_ps(o + X, n);
      else
        _mm256_storeu_ps(o + X, n);
      if (parts != nullptr) sum.add(_mm256_castps_si256(n));
    }
    ChecksumPart part = sum.part(true);
    for (; X < W; ++X) {
      const float f = sc.f32[oc][sc.v[ic][X]];
      o[X] = f;  // summed from the register too: the output may be write-combined memory
      std::uint32_t w;
      std::memcpy(&w, &f, 4);
      part.sum += w;
      part.weighted += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(X) + 1);
    }
    if (parts != nullptr) parts[oc] = part;
  }
  return streamed;
}

bool cpu_has_avx2() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    // F16C from CPUID leaf 1 (clang's __builtin_cpu_supports does not name it).
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  }();
  return has;
}

#else
bool cpu_has_avx2() noexcept { return false; }
void chroma_terms_avx2(const YuvImage&, const YuvCoeffs&, const Plan&, int, Scratch&, int, int) {}
void luma_pass_avx2(const YuvImage&, const YuvCoeffs&, const Plan&, int, Scratch&, Scratch::Row&, int, int) {}
IMGPIPE_AVX2 void vertical_avx2(const Scratch::Row&, const Scratch::Row&, int, int, Scratch&, int, int) {}
IMGPIPE_AVX2 void emit_avx2(const YuvFusedParams&, const Scratch&, int) {}
IMGPIPE_AVX2 bool vertical_emit_f32_avx2(const YuvFusedParams&, const Scratch::Row&, const Scratch::Row&, int, int,
                                         Scratch&, int, ChecksumPart*) {
  return false;
}
#endif

}  // namespace imgpipe::kernels::yuv_rows
