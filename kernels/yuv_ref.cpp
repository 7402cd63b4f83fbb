#include "yuv.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include <opencv2/core/hal/intrin.hpp>

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

#if CV_SIMD
// The rows in universal intrinsics: the definition's int32 arithmetic lane for
// lane (bit-identical), kLanes pixels a block, the chroma terms computed once
// per chroma sample. Samples are read as bytes and 2-byte samples reinterpreted
// little-endian, like detail::sample.
constexpr int kLanes = cv::v_uint8::nlanes;

// `count` vectors of consecutive samples from sample i of a row, as u16.
void load_u16(const std::uint8_t* row, int i, const YuvFormat& f, int count, cv::v_uint16* out) {
  constexpr int n16 = cv::v_uint16::nlanes;
  for (int k = 0; k < count; ++k) {
    if (f.bytes == 2) {
      out[k] = cv::v_reinterpret_as_u16(cv::vx_load(row + 2 * (i + k * n16))) >> f.shift;
    } else if (k + 1 < count) {
      cv::v_expand(cv::vx_load(row + i + k * n16), out[k], out[k + 1]);
      ++k;
    } else {
      out[k] = cv::vx_load_expand(row + i + k * n16);
    }
  }
}

void to_s32(const cv::v_uint16& a, cv::v_int32& lo, cv::v_int32& hi) {
  cv::v_uint32 l, h;
  cv::v_expand(a, l, h);
  lo = cv::v_reinterpret_as_s32(l);
  hi = cv::v_reinterpret_as_s32(h);
}

struct SimdCoeffs {
  cv::v_int32 y, rv, gu, gv, bu, y_offset, c_offset, half;
  explicit SimdCoeffs(const YuvCoeffs& c)
      : y(cv::vx_setall_s32(c.y)), rv(cv::vx_setall_s32(c.rv)), gu(cv::vx_setall_s32(c.gu)),
        gv(cv::vx_setall_s32(c.gv)), bu(cv::vx_setall_s32(c.bu)), y_offset(cv::vx_setall_s32(c.y_offset)),
        c_offset(cv::vx_setall_s32(c.c_offset)), half(cv::vx_setall_s32(1 << 15)) {}
};

// Pixels [x, x + kLanes) of a row from its luma and chroma rows.
void block(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* yr, const std::uint8_t* ur,
           const std::uint8_t* vr, int x, std::uint8_t* out) {
  cv::v_uint16 s[4];
  cv::v_int32 y[4], r[4], g[4], b[4];
  load_u16(yr, x, f, 2, s);
  to_s32(s[0], y[0], y[1]);
  to_s32(s[1], y[2], y[3]);
  // R, G, B chroma terms (rv v, gu u + gv v, bu u) of n vectors of chroma samples.
  const int n = 4 >> f.chroma_shift_x, cx = x >> f.chroma_shift_x;
  if (f.monochrome) {
    for (int k = 0; k < 4; ++k) r[k] = g[k] = b[k] = cv::vx_setzero_s32();
  } else {
    cv::v_int32 u[4], v[4];
    if (f.uv_interleaved) {
      load_u16(ur, 2 * cx, f, n, s);
      for (int k = 0; k < n; ++k) {
        const cv::v_uint32 uv = cv::v_reinterpret_as_u32(s[k]);
        u[k] = cv::v_reinterpret_as_s32(uv & cv::vx_setall_u32(0xffff));
        v[k] = cv::v_reinterpret_as_s32(uv >> 16);
      }
    } else {
      for (auto [row, dst] : {std::pair{ur, u}, std::pair{vr, v}}) {
        load_u16(row, cx, f, n / 2, s);
        for (int k = 0; k < n / 2; ++k) to_s32(s[k], dst[2 * k], dst[2 * k + 1]);
      }
    }
    for (int k = 0; k < n; ++k) {
      u[k] = u[k] - c.c_offset;
      v[k] = v[k] - c.c_offset;
      r[k] = c.rv * v[k];
      g[k] = c.gu * u[k] + c.gv * v[k];
      b[k] = c.bu * u[k];
    }
    if (n == 2)  // 4:2:0 / 4:2:2: each chroma term serves two neighbouring pixels
      for (cv::v_int32* t : {r, g, b}) {
        const cv::v_int32 t0 = t[0], t1 = t[1];
        cv::v_zip(t0, t0, t[0], t[1]);
        cv::v_zip(t1, t1, t[2], t[3]);
      }
  }
  for (int k = 0; k < 4; ++k) {
    const cv::v_int32 yt = c.y * (y[k] - c.y_offset) + c.half;
    r[k] = (yt + r[k]) >> 16;
    g[k] = (yt - g[k]) >> 16;
    b[k] = (yt + b[k]) >> 16;
  }
  // Saturating packs: the clamp to 0..255 (a value >> 16 fits in int16).
  auto u8 = [](const cv::v_int32* t) { return cv::v_pack_u(cv::v_pack(t[0], t[1]), cv::v_pack(t[2], t[3])); };
  cv::v_store_interleave(out + 3 * x, u8(b), u8(g), u8(r));
}
#endif

// Row y; the pixels from the last whole SIMD block on by the scalar definition.
void convert_row(const YuvImage& img, const YuvCoeffs& c, int y, std::uint8_t* out) {
  int x = 0;
#if CV_SIMD
  const YuvFormat& f = img.format;
  const int cy = y >> f.chroma_shift_y;
  const std::uint8_t* yr = img.plane[0] + static_cast<std::size_t>(y) * img.pitch[0];
  const std::uint8_t* ur = f.monochrome ? nullptr : img.plane[1] + static_cast<std::size_t>(cy) * img.pitch[1];
  const std::uint8_t* vr =
      f.monochrome || f.uv_interleaved ? nullptr : img.plane[2] + static_cast<std::size_t>(cy) * img.pitch[2];
  const SimdCoeffs vc(c);
  for (; x + kLanes <= img.width; x += kLanes) block(f, vc, yr, ur, vr, x, out);
#endif
  for (; x < img.width; ++x) detail::yuv_at(img, c, x, y, out + 3 * x);
}

}  // namespace

void yuv_to_bgr_ref(const YuvImage& img, std::uint8_t* dst, std::size_t dst_pitch, bool parallel) {
  validate(img);
  const YuvCoeffs c = make_coeffs(img.format.matrix, img.format.range, img.format.bits);
  if (dst_pitch == 0) dst_pitch = static_cast<std::size_t>(img.width) * 3;
  auto row = [&](int y) { convert_row(img, c, y, dst + static_cast<std::size_t>(y) * dst_pitch); };
  if (parallel) {
    imgpipe::detail::annotated_parallel_for(0, img.height, row);
  } else {
    for (int y = 0; y < img.height; ++y) row(y);
  }
}

}  // namespace imgpipe::kernels
