// The integer arithmetic of the resize family, shared by the CPU twins
// (*_ref.cpp) and the kernels (resize.cu) so that both give the same bits.
// Not a public header. Plain C++: in .cu files the functions are also
// __device__; nothing here needs a CUDA header.
//
// What it reproduces (cv::resize on 8-bit images, OpenCV 4.x generic path):
//
// INTER_LINEAR, per axis, for destination index d with scale = 1 / inv_scale:
//   f  = float((d + 0.5) * scale - 0.5)     (double arithmetic, one rounding to float)
//   s  = floor(f);  f = f - s               (float)
//   w0 = round_half_even((1 - f) * 2048),  w1 = round_half_even(f * 2048)   (11-bit weights)
//   x axis: s < 0 gives s = 0, f = 0; s >= n-1 gives s = n-1, f = 0 (weights 2048, 0)
//   y axis: the weights keep f; the two rows are clamp(s, 0, n-1) and clamp(s+1, 0, n-1)
// Horizontal pass (exact, 32-bit): h = p[s0] * w0 + p[s1] * w1  (at most 255 * 2048)
// Vertical pass, OpenCV's rounding (VResizeLinear for u8, SIMD and scalar):
//   v = ((((h0 >> 4) * b0) >> 16) + (((h1 >> 4) * b1) >> 16) + 2) >> 2
// which truncates twice before rounding; it is what cv::resize returns, and
// is within 1 of round((h0 * b0 + h1 * b1) / 2^22).
//
// Exact 2x downscale in both axes (scale_x == scale_y == 2.0): OpenCV takes
// its INTER_AREA fast path, (a + b + c + d + 2) >> 2 over each 2x2 block,
// which is what the formulas above give (weights 1024/1024, no truncation
// loss). OpenCV averages a 2x2 block cut by the image edge differently (float,
// half to even), but no canvas pixel can come from such a block: with a
// destination size, scale 2.0 means src == 2 * dst (no cut block); with an
// explicit factor 0.5 (centre crop), a cut block is the last row/column of the
// resized image, and the crop window int(0.5 * (th - H)) .. + H - 1 never
// reaches row th - 1 when th > H (and th == H would need H / h > 0.5 = f).
// So one formula is exact everywhere.
//
// INTER_NEAREST: s = min(floor(d * scale), n - 1) in double (OpenCV's resizeNN).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define IMGPIPE_HD __host__ __device__ __forceinline__
#else
#include <cmath>
#define IMGPIPE_HD inline
#endif

namespace imgpipe::kernels::detail {

constexpr int kCoefBits = 11;  // OpenCV's INTER_RESIZE_COEF_BITS
constexpr int kCoefScale = 1 << kCoefBits;

IMGPIPE_HD int floor_to_int(float v) {
#if defined(__CUDA_ARCH__)
  return __float2int_rd(v);
#else
  return static_cast<int>(std::floor(v));
#endif
}

IMGPIPE_HD int floor_to_int(double v) {
#if defined(__CUDA_ARCH__)
  return __double2int_rd(v);
#else
  return static_cast<int>(std::floor(v));
#endif
}

// Round to nearest, ties to even (cvRound / saturate_cast<short> on floats).
IMGPIPE_HD int round_half_even(float v) {
#if defined(__CUDA_ARCH__)
  return __float2int_rn(v);
#else
  return static_cast<int>(std::lrint(v));  // default rounding mode: to nearest even
#endif
}

// Source position for destination index d along one axis: float((d + 0.5) * scale - 0.5).
// The three double operations must stay separate (no FMA): the kernels target
// compiles device code with -fmad=false and host code with -ffp-contract=off.
IMGPIPE_HD float source_position(int d, double scale) {
  const double p = (static_cast<double>(d) + 0.5) * scale;
  return static_cast<float>(p - 0.5);
}

struct LinearTap {
  int s0, s1;  // source indices (clamped)
  int w0, w1;  // 11-bit weights
};

// clamp_weights: x axis (OpenCV resets the fraction at the edges); false: y axis.
IMGPIPE_HD LinearTap linear_tap(int d, double scale, int n, bool clamp_weights) {
  float f = source_position(d, scale);
  int s = floor_to_int(f);
  f -= static_cast<float>(s);
  LinearTap t;
  if (clamp_weights) {
    if (s < 0) { s = 0; f = 0.0f; }
    if (s >= n - 1) { s = n - 1; f = 0.0f; }
    t.s0 = s;
    t.s1 = s + 1 < n ? s + 1 : n - 1;
  } else {
    t.s0 = s < 0 ? 0 : (s > n - 1 ? n - 1 : s);
    t.s1 = s + 1 < 0 ? 0 : (s + 1 > n - 1 ? n - 1 : s + 1);
  }
  const float one_minus = 1.0f - f;
  t.w0 = round_half_even(one_minus * static_cast<float>(kCoefScale));
  t.w1 = round_half_even(f * static_cast<float>(kCoefScale));
  return t;
}

IMGPIPE_HD int nearest_index(int d, double scale, int n) {
  const int s = floor_to_int(static_cast<double>(d) * scale);
  return s < n - 1 ? s : n - 1;
}

// Vertical combination of two horizontal sums (OpenCV's u8 fixed-point rounding).
IMGPIPE_HD int vlinear(int h0, int h1, int b0, int b1) {
  return ((((h0 >> 4) * b0) >> 16) + (((h1 >> 4) * b1) >> 16) + 2) >> 2;
}

}  // namespace imgpipe::kernels::detail
