// CPU one pass from YUV to the output tensor (yuv_fused.hpp). Compiled with
// -ffp-contract=off like every CPU twin: the tap positions (double) and the
// normalisation (float) must round as the definition does.
//
// The work, per call:
//   plan      the output columns' taps (full-frame luma and chroma columns,
//             11-bit weights) and the canvas placement, once;
//   rows      each source row the vertical taps name, converted at the tap
//             columns only and resampled horizontally into 3 planar int32
//             rows (B, G, R), two kept (a row serves every output row that
//             reads it); the chroma terms of a chroma row computed once for
//             the luma rows that share it (4:2:0);
//   output    per output row the two int32 rows combined (OpenCV's vertical
//             rounding) into values 0..255, pad columns and rows at the pad
//             value, then normalised and stored in the layout.
// The x86-64 AVX2 rows do the same integer and float operations eight lanes
// at a time; samples are fetched with 32-bit gathers, which read up to 3
// bytes past a sample, so a plane's last row takes the portable code.
#include "yuv_fused.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "half.hpp"
#include "normalize.hpp"
#include "resize_math.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define IMGPIPE_YUV_AVX2 1
#define IMGPIPE_AVX2 __attribute__((target("avx2,f16c")))
#else
#define IMGPIPE_YUV_AVX2 0
#endif

namespace imgpipe::kernels {

namespace {

constexpr int kMaxDim = 1 << 20;

struct Plan {
  int W = 0, H = 0;                  // canvas
  int bx = 0, by = 0, bw = 0, bh = 0;  // the box in the frame
  Placement pl;
  double scale_x = 1.0, scale_y = 1.0;
  int oa = 0, ob = 0;                // output columns [oa, ob) the frame covers
  bool two = false;                  // some column reads a second tap (its weight is not 0)
  // Per output column X in [oa, ob) (other entries unused): full-frame luma
  // column of each tap, its chroma column, the weights; wp = w0 | w1 << 16.
  std::vector<std::int32_t> l0, l1, c0, c1, w0, w1, wp;
  // 8-bit samples, per block of 8 output columns from oa: where the block's
  // samples of a row lie when all within 32 bytes of the row (base: the
  // first byte; lo/hi: byte shuffles of the two 16-byte halves), so the AVX2
  // rows load and shuffle instead of gathering; base -1: gather. Luma taps
  // 0 and 1; chroma taps 0 and 1, U (planar: U and V alike) and V (NV12).
  struct Window {
    std::int32_t base = -1;
    alignas(16) std::uint8_t lo[16];
    alignas(16) std::uint8_t hi[16];
  };
  std::vector<Window> wl[2], wu[2], wv[2];
};

struct Scratch {
  Plan plan;
  struct Row {
    int row = -1;  // box row it holds
    std::vector<std::int32_t> h[3];
  } rows[2];
  int chroma_row = -2;  // full-frame chroma row the terms are of (-1: monochrome terms)
  std::vector<std::int32_t> cr[2], cg[2], cb[2];  // chroma terms of tap 0 and 1
  std::vector<std::int32_t> v[3];                // one output row, B, G, R values 0..255
  float f32[3][256];
  std::uint16_t f16[3][256];
};

// One pixel of the definition from its samples (yuv.hpp detail::yuv_pixel),
// the chroma terms precomputed: channel values B, G, R.
inline void pixel(const YuvCoeffs& c, std::int32_t Y, std::int32_t cr, std::int32_t cg, std::int32_t cb,
                  std::int32_t* bgr) {
  const std::int32_t y = c.y * (Y - c.y_offset) + (1 << 15);
  bgr[2] = detail::clamp_u8((y + cr) >> 16);
  bgr[1] = detail::clamp_u8((y - cg) >> 16);
  bgr[0] = detail::clamp_u8((y + cb) >> 16);
}

void make_plan(const YuvFusedParams& p, Plan& plan) {
  plan.W = p.width;
  plan.H = p.height;
  plan.bx = p.box_width > 0 ? p.box_x : 0;
  plan.by = p.box_width > 0 ? p.box_y : 0;
  plan.bw = p.box_width > 0 ? p.box_width : p.src.width;
  plan.bh = p.box_width > 0 ? p.box_height : p.src.height;
  SrcImage img;
  img.width = plan.bw;
  img.height = plan.bh;
  ResizeBatch b;
  b.images = &img;
  b.batch = 1;
  b.width = p.width;
  b.height = p.height;
  b.fit = p.fit;
  b.interp = p.interp;
  plan.pl = placement(b, 0);
  const Placement& pl = plan.pl;
  if (pl.width == plan.bw && pl.height == plan.bh) {  // cv::resize copies (resize_plan.hpp's plan_image)
    plan.scale_x = plan.scale_y = 1.0;
  } else {
    plan.scale_x = 1.0 / pl.inv_scale_x;
    plan.scale_y = 1.0 / pl.inv_scale_y;
  }
  const std::size_t W = static_cast<std::size_t>(p.width);
  for (auto* v : {&plan.l0, &plan.l1, &plan.c0, &plan.c1, &plan.w0, &plan.w1, &plan.wp}) v->assign(W + 8, 0);
  plan.oa = p.width;
  plan.ob = 0;
  plan.two = false;
  const int sx = p.src.format.monochrome ? 0 : p.src.format.chroma_shift_x;
  for (int X = 0; X < p.width; ++X) {
    const int col = p.flip_x ? p.width - 1 - X : X;  // the canvas column output column X shows
    const int rx = col - pl.x0;
    if (rx < 0 || rx >= pl.width) continue;
    plan.oa = std::min(plan.oa, X);
    plan.ob = std::max(plan.ob, X + 1);
    int s0, s1, w0 = detail::kCoefScale, w1 = 0;
    if (p.interp == Interp::linear) {
      const detail::LinearTap t = detail::linear_tap(rx, plan.scale_x, plan.bw, true);
      s0 = t.s0, s1 = t.s1, w0 = t.w0, w1 = t.w1;
    } else {
      s0 = s1 = detail::nearest_index(rx, plan.scale_x, plan.bw);
    }
    if (w1 != 0) plan.two = true;
    plan.l0[X] = plan.bx + s0;
    plan.l1[X] = plan.bx + s1;
    plan.c0[X] = (plan.bx + s0) >> sx;
    plan.c1[X] = (plan.bx + s1) >> sx;
    plan.w0[X] = w0;
    plan.w1[X] = w1;
    plan.wp[X] = w0 | (w1 << 16);
  }
  // The covered columns are contiguous (a placement is one interval of the
  // canvas, mirrored or not).
  if (plan.ob < plan.oa) plan.oa = plan.ob = 0;
  // Windows of 8-bit rows: sample byte `index * mult + add` of a row of
  // `row_bytes` bytes.
  const YuvFormat& f = p.src.format;
  auto windows = [&](const std::vector<std::int32_t>& index, int mult, int add, int row_bytes,
                     std::vector<Plan::Window>& out) {
    out.clear();
    if (f.bytes != 1) return;
    for (int X = plan.oa; X + 8 <= plan.ob; X += 8) {
      Plan::Window w;
      int lo = INT32_MAX, hi = 0;
      for (int k = 0; k < 8; ++k) {
        lo = std::min(lo, index[X + k] * mult + add);
        hi = std::max(hi, index[X + k] * mult + add);
      }
      if (hi - lo < 32 && lo + 32 <= row_bytes) {  // no byte read past the row
        w.base = lo;
        for (int k = 0; k < 16; ++k) {
          const int at = k < 8 ? index[X + k] * mult + add - lo : -1;
          w.lo[k] = at >= 0 && at < 16 ? static_cast<std::uint8_t>(at) : 0x80;
          w.hi[k] = at >= 16 ? static_cast<std::uint8_t>(at - 16) : 0x80;
        }
      }
      out.push_back(w);
    }
  };
  const int cw = f.monochrome ? 0 : chroma_width(f, p.src.width);
  for (int t = 0; t < 2; ++t) {
    windows(t == 0 ? plan.l0 : plan.l1, 1, 0, p.src.width, plan.wl[t]);
    const std::vector<std::int32_t>& ci = t == 0 ? plan.c0 : plan.c1;
    if (f.monochrome) {
      plan.wu[t].clear(), plan.wv[t].clear();
    } else if (f.uv_interleaved) {
      windows(ci, 2, 0, 2 * cw, plan.wu[t]);
      windows(ci, 2, 1, 2 * cw, plan.wv[t]);
    } else {
      windows(ci, 1, 0, cw, plan.wu[t]);
      plan.wv[t].clear();
    }
  }
}

// ---- portable rows ---------------------------------------------------------

const std::uint8_t* luma_row(const YuvImage& s, int fy) { return s.plane[0] + static_cast<std::size_t>(fy) * s.pitch[0]; }

// Chroma terms of full-frame chroma row cy for the taps of [oa, ob).
void chroma_terms(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int cy, Scratch& sc, int from, int to) {
  const YuvFormat& f = s.format;
  const std::uint8_t* ur = s.plane[1] + static_cast<std::size_t>(cy) * s.pitch[1];
  const std::uint8_t* vr = f.uv_interleaved ? nullptr : s.plane[2] + static_cast<std::size_t>(cy) * s.pitch[2];
  for (int t = 0; t < (plan.two ? 2 : 1); ++t) {
    const std::int32_t* cx = t == 0 ? plan.c0.data() : plan.c1.data();
    for (int X = from; X < to; ++X) {
      std::int32_t U, V;
      if (f.uv_interleaved) {
        U = detail::sample(ur, 2 * cx[X], f.bytes, f.shift);
        V = detail::sample(ur, 2 * cx[X] + 1, f.bytes, f.shift);
      } else {
        U = detail::sample(ur, cx[X], f.bytes, f.shift);
        V = detail::sample(vr, cx[X], f.bytes, f.shift);
      }
      const std::int32_t u = U - c.c_offset, v = V - c.c_offset;
      sc.cr[t][X] = c.rv * v;
      sc.cg[t][X] = c.gu * u + c.gv * v;
      sc.cb[t][X] = c.bu * u;
    }
  }
}

// Source row fy resampled horizontally at columns [from, to).
void luma_pass(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int fy, Scratch& sc, Scratch::Row& out,
               int from, int to) {
  const YuvFormat& f = s.format;
  const std::uint8_t* yr = luma_row(s, fy);
  for (int X = from; X < to; ++X) {
    std::int32_t a[3], b[3] = {0, 0, 0};
    pixel(c, detail::sample(yr, plan.l0[X], f.bytes, f.shift), sc.cr[0][X], sc.cg[0][X], sc.cb[0][X], a);
    if (plan.two)
      pixel(c, detail::sample(yr, plan.l1[X], f.bytes, f.shift), sc.cr[1][X], sc.cg[1][X], sc.cb[1][X], b);
    for (int k = 0; k < 3; ++k) out.h[k][X] = a[k] * plan.w0[X] + b[k] * plan.w1[X];
  }
}

void vertical(const Scratch::Row& r0, const Scratch::Row& r1, int b0, int b1, Scratch& sc, int from,
              int to) {
  for (int k = 0; k < 3; ++k)
    for (int X = from; X < to; ++X) sc.v[k][X] = detail::vlinear(r0.h[k][X], r1.h[k][X], b0, b1);
}

// Output row Y from sc.v, by tables (every layout and dtype).
void emit(const YuvFusedParams& p, const Scratch& sc, int Y, int from, int to) {
  const std::size_t W = static_cast<std::size_t>(p.width), plane = W * static_cast<std::size_t>(p.height);
  for (int oc = 0; oc < 3; ++oc) {
    const int ic = p.swap_rb ? 2 - oc : oc;
    const std::int32_t* v = sc.v[ic].data();
    const std::size_t at = p.layout == Layout::nchw ? oc * plane + Y * W : Y * W * 3 + oc;
    const std::size_t step = p.layout == Layout::nchw ? 1 : 3;
    switch (p.dtype) {
      case DType::float32: {
        float* o = static_cast<float*>(p.dst) + at;
        for (int X = from; X < to; ++X) o[X * step] = sc.f32[oc][v[X]];
        break;
      }
      case DType::float16: {
        std::uint16_t* o = static_cast<std::uint16_t*>(p.dst) + at;
        for (int X = from; X < to; ++X) o[X * step] = sc.f16[oc][v[X]];
        break;
      }
      default: {
        std::uint8_t* o = static_cast<std::uint8_t*>(p.dst) + at;
        for (int X = from; X < to; ++X) o[X * step] = static_cast<std::uint8_t>(v[X]);
        break;
      }
    }
  }
}

// ---- AVX2 rows -------------------------------------------------------------

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
  // B, G, R of 8 samples with tap t's chroma terms at X (yuv.hpp's yuv_pixel).
  auto convert = [&](__m256i Y, int t, int X, __m256i& B, __m256i& G, __m256i& R) __attribute__((target("avx2,f16c"), always_inline)) {
    const __m256i y = _mm256_add_epi32(_mm256_mullo_epi32(cy, _mm256_sub_epi32(Y, yoff)), half);
    R = clamp255(_mm256_srai_epi32(_mm256_add_epi32(y, load8(cr[t] + X)), 16));
    G = clamp255(_mm256_srai_epi32(_mm256_sub_epi32(y, load8(cg[t] + X)), 16));
    B = clamp255(_mm256_srai_epi32(_mm256_add_epi32(y, load8(cb[t] + X)), 16));
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
      store8(hb + X, _mm256_madd_epi16(_mm256_or_si256(B0, _mm256_slli_epi32(B1, 16)), w));
      store8(hg + X, _mm256_madd_epi16(_mm256_or_si256(G0, _mm256_slli_epi32(G1, 16)), w));
      store8(hr + X, _mm256_madd_epi16(_mm256_or_si256(R0, _mm256_slli_epi32(R1, 16)), w));
    } else {  // every weight pair is (2048, 0)
      store8(hb + X, _mm256_slli_epi32(B0, detail::kCoefBits));
      store8(hg + X, _mm256_slli_epi32(G0, detail::kCoefBits));
      store8(hr + X, _mm256_slli_epi32(R0, detail::kCoefBits));
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

IMGPIPE_AVX2 void vertical_avx2(const Scratch::Row& r0, const Scratch::Row& r1, int b0, int b1,
                                Scratch& sc, int from, int to) {
  const __m256i B0 = _mm256_set1_epi32(b0), B1 = _mm256_set1_epi32(b1), two = _mm256_set1_epi32(2);
  int X = from;
  for (int k = 0; k < 3; ++k)
    for (X = from; X + 8 <= to; X += 8) {
      const __m256i h0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0.h[k].data() + X));
      const __m256i h1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1.h[k].data() + X));
      const __m256i a = _mm256_srai_epi32(_mm256_mullo_epi32(_mm256_srai_epi32(h0, 4), B0), 16);
      const __m256i b = _mm256_srai_epi32(_mm256_mullo_epi32(_mm256_srai_epi32(h1, 4), B1), 16);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(sc.v[k].data() + X),
                          _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(a, b), two), 2));
    }
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
      for (; X + 8 <= p.width; X += 8) {
        const __m256 f = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + X)));
        _mm256_storeu_ps(o + X, _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(f, scale), mean), sd));
      }
      for (; X < p.width; ++X) o[X] = sc.f32[oc][v[X]];
    } else {
      std::uint16_t* o = static_cast<std::uint16_t*>(p.dst) + at;
      for (; X + 8 <= p.width; X += 8) {
        const __m256 f = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + X)));
        const __m256 n = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(f, scale), mean), sd);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + X), _mm256_cvtps_ph(n, _MM_FROUND_TO_NEAREST_INT));
      }
      for (; X < p.width; ++X) o[X] = sc.f16[oc][v[X]];
    }
  }
}

bool cpu_has_avx2() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  return has;
}

#else
bool cpu_has_avx2() noexcept { return false; }
#endif

}  // namespace

void validate(const YuvFusedParams& p) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("yuv_fused: " + what); };
  validate(p.src);
  if (p.width < 1 || p.height < 1) fail("width and height must be >= 1");
  if (p.width > kMaxDim || p.height > kMaxDim) fail("width and height must be <= " + std::to_string(kMaxDim));
  if (!p.dst) fail("dst is null");
  if (p.box_width != 0) {
    if (p.box_width < 1 || p.box_height < 1 || p.box_x < 0 || p.box_y < 0 || p.box_x + p.box_width > p.src.width ||
        p.box_y + p.box_height > p.src.height)
      fail("the box " + std::to_string(p.box_width) + "x" + std::to_string(p.box_height) + " at (" +
           std::to_string(p.box_x) + ", " + std::to_string(p.box_y) + ") is not inside the " +
           std::to_string(p.src.width) + "x" + std::to_string(p.src.height) + " frame");
  }
  if (p.interp != Interp::linear && p.interp != Interp::nearest) fail("interp must be linear or nearest");
  if (p.fit != Fit::stretch && p.fit != Fit::letterbox && p.fit != Fit::center_crop)
    fail("fit must be stretch, letterbox or center_crop");
  if (p.layout != Layout::nchw && p.layout != Layout::nhwc) fail("layout must be nchw or nhwc");
  if (p.dtype != DType::float32 && p.dtype != DType::float16 && p.dtype != DType::uint8)
    fail("dtype must be float32, float16 or uint8");
  if (p.dtype != DType::uint8)
    for (int c = 0; c < 3; ++c)
      if (!(p.std[c] != 0.0f)) fail("std[" + std::to_string(c) + "] is zero");
}

bool yuv_fused_has_simd() noexcept { return cpu_has_avx2(); }

void yuv_fused_cpu(const YuvFusedParams& p, bool simd) {
  validate(p);
  thread_local Scratch sc;
  Plan& plan = sc.plan;
  make_plan(p, plan);
  const YuvImage& s = p.src;
  const YuvFormat& f = s.format;
  const YuvCoeffs c = make_coeffs(f.matrix, f.range, f.bits);
  const bool avx2 = simd && cpu_has_avx2();
  const std::size_t W = static_cast<std::size_t>(p.width) + 8;
  for (auto& r : sc.rows) {
    r.row = -1;
    for (auto& h : r.h) h.assign(W, 0);
  }
  for (int t = 0; t < 2; ++t)
    for (auto* v : {&sc.cr[t], &sc.cg[t], &sc.cb[t]}) v->assign(W, 0);
  for (auto& v : sc.v) v.assign(W, 0);
  sc.chroma_row = f.monochrome ? -1 : -2;  // monochrome: the terms stay 0
  if (p.dtype != DType::uint8) {
    NormalizeParams n;
    n.scale = p.scale;
    for (int k = 0; k < 3; ++k) {
      n.mean[k] = p.mean[k];
      n.std[k] = p.std[k];
    }
    for (int k = 0; k < 3; ++k)
      for (int v = 0; v < 256; ++v) {
        sc.f32[k][v] = normalize_value(n, k, static_cast<std::uint8_t>(v));
        sc.f16[k][v] = float_to_half_rn(sc.f32[k][v]);
      }
  }
  const int oa = plan.oa, ob = plan.ob;
  const int last_chroma = f.monochrome ? 0 : chroma_height(f, s.height) - 1;

  // Box row r resampled horizontally into one of the two kept rows (the one
  // that does not hold `keep`).
  auto row = [&](int r, int keep) -> Scratch::Row& {
    for (auto& k : sc.rows)
      if (k.row == r) return k;
    Scratch::Row& out = sc.rows[0].row == keep ? sc.rows[1] : sc.rows[0];
    const int fy = plan.by + r;
    if (!f.monochrome) {
      const int cy = fy >> f.chroma_shift_y;
      if (cy != sc.chroma_row) {
#if IMGPIPE_YUV_AVX2
        if (avx2 && cy < last_chroma) {
          chroma_terms_avx2(s, c, plan, cy, sc, oa, ob - (ob - oa) % 8);
          chroma_terms(s, c, plan, cy, sc, ob - (ob - oa) % 8, ob);
        } else
#endif
          chroma_terms(s, c, plan, cy, sc, oa, ob);
        sc.chroma_row = cy;
      }
    }
#if IMGPIPE_YUV_AVX2
    if (avx2 && fy < s.height - 1)
      luma_pass_avx2(s, c, plan, fy, sc, out, oa, ob);
    else
#endif
      luma_pass(s, c, plan, fy, sc, out, oa, ob);
    out.row = r;
    return out;
  };

  const Placement& pl = plan.pl;
  for (int Y = 0; Y < p.height; ++Y) {
    const int canvas_row = p.flip_y ? p.height - 1 - Y : Y;
    const int ry = canvas_row - pl.y0;
    const bool covered = ry >= 0 && ry < pl.height && ob > oa;
    for (auto& v : sc.v) {
      std::fill(v.begin(), v.begin() + (covered ? oa : p.width), p.pad_value);
      if (covered) std::fill(v.begin() + ob, v.begin() + p.width, p.pad_value);
    }
    if (covered) {
      int s0, s1, b0 = detail::kCoefScale, b1 = 0;
      if (p.interp == Interp::linear) {
        const detail::LinearTap t = detail::linear_tap(ry, plan.scale_y, plan.bh, false);
        s0 = t.s0, s1 = t.s1, b0 = t.w0, b1 = t.w1;
      } else {
        s0 = s1 = detail::nearest_index(ry, plan.scale_y, plan.bh);
      }
      const Scratch::Row& r0 = row(s0, s1);
      const Scratch::Row& r1 = row(s1, s0);
#if IMGPIPE_YUV_AVX2
      if (avx2)
        vertical_avx2(r0, r1, b0, b1, sc, oa, ob);
      else
#endif
        vertical(r0, r1, b0, b1, sc, oa, ob);
    }
#if IMGPIPE_YUV_AVX2
    if (avx2 && p.layout == Layout::nchw && p.dtype != DType::uint8) {
      emit_avx2(p, sc, Y);
      continue;
    }
#endif
    emit(p, sc, Y, 0, p.width);
  }
}

}  // namespace imgpipe::kernels
