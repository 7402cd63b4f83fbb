// Internal to kernels/: the plan and scratch rows of the CPU one pass from
// YUV (yuv_fused.hpp), shared by its driver and portable rows
// (yuv_fused_cpu.cpp) and its AVX2 rows (yuv_fused_avx2.cpp). Not a public
// header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "resize_math.hpp"
#include "yuv_fused.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#define IMGPIPE_YUV_AVX2 1
#define IMGPIPE_AVX2 __attribute__((target("avx2,f16c")))
#else
#define IMGPIPE_YUV_AVX2 0
#define IMGPIPE_AVX2
#endif

namespace imgpipe::kernels::yuv_rows {

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

inline const std::uint8_t* luma_row(const YuvImage& s, int fy) {
  return s.plane[0] + static_cast<std::size_t>(fy) * s.pitch[0];
}

// The taps of destination index d along one axis: linear (x axis: OpenCV's
// edge weights; y axis: clamped rows), or nearest as one tap of weight 2048.
inline detail::LinearTap axis_tap(Interp interp, int d, double scale, int n, bool x_axis) {
  if (interp == Interp::linear) return detail::linear_tap(d, scale, n, x_axis);
  const int s = detail::nearest_index(d, scale, n);
  return {s, s, detail::kCoefScale, 0};
}

// The plan of one call (yuv_fused_cpu.cpp).
void make_plan(const YuvFusedParams& p, Plan& plan);

// Portable rows (yuv_fused_cpu.cpp): the chroma terms of chroma row cy, a
// source row resampled horizontally, two rows combined into sc.v, an output
// row stored; each over output columns [from, to).
void chroma_terms(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int cy, Scratch& sc, int from, int to);
void luma_pass(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int fy, Scratch& sc, Scratch::Row& out,
               int from, int to);
void vertical(const Scratch::Row& r0, const Scratch::Row& r1, int b0, int b1, Scratch& sc, int from, int to);
void emit(const YuvFusedParams& p, const Scratch& sc, int Y, int from, int to);

// AVX2 rows (yuv_fused_avx2.cpp): the same, 8 columns at a time; the
// chroma and luma rows read up to 3 bytes past a sample (not a plane's last
// row), emit_avx2 takes NCHW float32 and float16 rows. cpu_has_avx2() is
// false where they are not built.
bool cpu_has_avx2() noexcept;
void chroma_terms_avx2(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int cy, Scratch& sc, int from, int to);
void luma_pass_avx2(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int fy, Scratch& sc, Scratch::Row& out,
                    int from, int to);
IMGPIPE_AVX2 void vertical_avx2(const Scratch::Row& r0, const Scratch::Row& r1, int b0, int b1, Scratch& sc, int from,
                                int to);
IMGPIPE_AVX2 void emit_avx2(const YuvFusedParams& p, const Scratch& sc, int Y);
// vertical_avx2 and emit_avx2 at once for a float32 NCHW row whose every
// column the frame covers, the value never leaving its register: into
// parts[0..2] (null: none) the checksum part of each channel's row, as
// checksum_part sums it. Aligned rows are written with non-temporal stores;
// true when some were, and the caller fences before the output is read
// elsewhere.
IMGPIPE_AVX2 bool vertical_emit_f32_avx2(const YuvFusedParams& p, const Scratch::Row& r0, const Scratch::Row& r1,
                                         int b0, int b1, Scratch& sc, int Y, ChecksumPart* parts);

}  // namespace imgpipe::kernels::yuv_rows
