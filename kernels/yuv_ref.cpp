#include "yuv.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/tsan.hpp"

namespace imgpipe::kernels {

std::string_view name(ColorMatrix m) noexcept {
  switch (m) {
    case ColorMatrix::bt601: return "bt601";
    case ColorMatrix::bt709: return "bt709";
    case ColorMatrix::bt2020: return "bt2020";
    case ColorMatrix::smpte240m: return "smpte240m";
  }
  return "?";
}

std::string_view name(ColorRange r) noexcept { return r == ColorRange::full ? "full" : "limited"; }

ColorMatrix default_matrix(int width, int height) noexcept {
  return width > 1024 || height > 576 ? ColorMatrix::bt709 : ColorMatrix::bt601;
}

YuvCoeffs make_coeffs(ColorMatrix m, ColorRange r, int bits) {
  if (bits < 8 || bits > 16) throw std::invalid_argument("yuv: bits must be 8..16, not " + std::to_string(bits));
  double kr = 0.299, kb = 0.114;
  switch (m) {
    case ColorMatrix::bt601: break;
    case ColorMatrix::bt709: kr = 0.2126, kb = 0.0722; break;
    case ColorMatrix::bt2020: kr = 0.2627, kb = 0.0593; break;
    case ColorMatrix::smpte240m: kr = 0.212, kb = 0.087; break;
  }
  const double kg = 1.0 - kr - kb;
  const double unit = std::ldexp(1.0, bits - 8);  // one 8-bit level in `bits`-bit samples
  double ys, cs;  // 8-bit output levels per sample step
  YuvCoeffs c;
  if (r == ColorRange::limited) {
    ys = 255.0 / (219.0 * unit);
    cs = 255.0 / (224.0 * unit);
    c.y_offset = static_cast<std::int32_t>(16 * unit);
  } else {
    const double max = std::ldexp(1.0, bits) - 1.0;
    ys = cs = 255.0 / max;
    c.y_offset = 0;
  }
  c.c_offset = static_cast<std::int32_t>(128 * unit);
  const auto q = [](double v) { return static_cast<std::int32_t>(std::lround(v * 65536.0)); };
  c.y = q(ys);
  c.rv = q(cs * 2.0 * (1.0 - kr));
  c.bu = q(cs * 2.0 * (1.0 - kb));
  c.gu = q(cs * 2.0 * (1.0 - kb) * kb / kg);
  c.gv = q(cs * 2.0 * (1.0 - kr) * kr / kg);
  return c;
}

void validate(const YuvImage& img) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("yuv: " + what); };
  const YuvFormat& f = img.format;
  if (img.width <= 0 || img.height <= 0)
    fail("size " + std::to_string(img.width) + "x" + std::to_string(img.height) + " is empty");
  if (f.bits < 8 || f.bits > 16) fail("format.bits must be 8..16");
  if (f.bytes != 1 && f.bytes != 2) fail("format.bytes must be 1 or 2");
  if (f.bytes == 1 && (f.bits != 8 || f.shift != 0)) fail("1-byte samples are 8 bits with shift 0");
  if (f.bytes == 2 && (f.shift < 0 || f.shift + f.bits > 16)) fail("format.shift + format.bits exceeds 16");
  if (f.chroma_shift_x < 0 || f.chroma_shift_x > 1 || f.chroma_shift_y < 0 || f.chroma_shift_y > 1)
    fail("chroma shifts must be 0 or 1");
  if (!img.plane[0]) fail("plane[0] is null");
  if (img.pitch[0] < static_cast<std::size_t>(img.width) * f.bytes) fail("pitch[0] is shorter than a row");
  if (f.monochrome) return;
  const std::size_t cw = static_cast<std::size_t>(chroma_width(f, img.width)) * f.bytes;
  if (!img.plane[1]) fail("plane[1] is null");
  if (img.pitch[1] < cw * (f.uv_interleaved ? 2 : 1)) fail("pitch[1] is shorter than a chroma row");
  if (!f.uv_interleaved) {
    if (!img.plane[2]) fail("plane[2] is null");
    if (img.pitch[2] < cw) fail("pitch[2] is shorter than a chroma row");
  }
}

namespace {

// 8-bit planar rows (I420, I422, I444): the common case, kept free of the
// per-pixel format branches so that the compiler can vectorise it.
void row_planar8(const YuvImage& img, const YuvCoeffs& c, int y, std::uint8_t* out) {
  const YuvFormat& f = img.format;
  const int cy = y >> f.chroma_shift_y;
  const std::uint8_t* yr = img.plane[0] + static_cast<std::size_t>(y) * img.pitch[0];
  const std::uint8_t* ur = img.plane[1] + static_cast<std::size_t>(cy) * img.pitch[1];
  const std::uint8_t* vr = img.plane[2] + static_cast<std::size_t>(cy) * img.pitch[2];
  const int sx = f.chroma_shift_x;
  for (int x = 0; x < img.width; ++x) detail::yuv_pixel(c, yr[x], ur[x >> sx], vr[x >> sx], out + 3 * x);
}

}  // namespace

void yuv_to_bgr_ref(const YuvImage& img, std::uint8_t* dst, std::size_t dst_pitch, bool parallel) {
  validate(img);
  const YuvFormat& f = img.format;
  const YuvCoeffs c = make_coeffs(f.matrix, f.range, f.bits);
  if (dst_pitch == 0) dst_pitch = static_cast<std::size_t>(img.width) * 3;
  const bool fast = f.bytes == 1 && !f.uv_interleaved && !f.monochrome;
  auto row = [&](int y) {
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * dst_pitch;
    if (fast) return row_planar8(img, c, y, out);
    for (int x = 0; x < img.width; ++x) detail::yuv_at(img, c, x, y, out + 3 * x);
  };
  if (parallel) {
    imgpipe::detail::annotated_parallel_for(0, img.height, row);
  } else {
    for (int y = 0; y < img.height; ++y) row(y);
  }
}

}  // namespace imgpipe::kernels
