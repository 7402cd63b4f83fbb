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
// per chroma sample. 2-byte samples are read as bytes and reinterpreted
// little-endian, like detail::sample.
using cv::v_int16, cv::v_int32, cv::v_uint16, cv::v_uint32;
constexpr int kLanes = cv::v_uint8::nlanes;

v_int16 s16(const v_uint16& a) { return cv::v_reinterpret_as_s16(a); }
v_int32 s32(const v_uint32& a) { return cv::v_reinterpret_as_s32(a); }

// 8-bit samples: exact products c * x in int16 multiply-adds, as the pair
// (x * 2^7, x) . (c >> 7, c & 127), for |x| < 2^8 and 0 <= c < 2^18 (every
// 8-bit coefficient of make_coeffs).
v_int16 split(std::int32_t c) { return cv::v_reinterpret_as_s16(cv::vx_setall_s32((c & 127) << 16 | c >> 7)); }
void mul8(const v_int16& x, const v_int16& c, v_int32& lo, v_int32& hi) {
  v_int16 a, b;
  cv::v_zip(x << 7, x, a, b);
  lo = cv::v_dotprod(a, c);
  hi = cv::v_dotprod(b, c);
}

struct SimdCoeffs {
  v_int16 y8, rv8, gu8, gv8, bu8, y_offset16, c_offset16;           // 8-bit samples
  v_int32 y, rv, gu, gv, bu, y_offset, c_offset, half, mask16;      // 2-byte samples
  explicit SimdCoeffs(const YuvCoeffs& c)
      : y8(split(c.y)), rv8(split(c.rv)), gu8(split(c.gu)), gv8(split(c.gv)), bu8(split(c.bu)),
        y_offset16(cv::vx_setall_s16(static_cast<std::int16_t>(c.y_offset))),
        c_offset16(cv::vx_setall_s16(static_cast<std::int16_t>(c.c_offset))), y(cv::vx_setall_s32(c.y)),
        rv(cv::vx_setall_s32(c.rv)), gu(cv::vx_setall_s32(c.gu)), gv(cv::vx_setall_s32(c.gv)),
        bu(cv::vx_setall_s32(c.bu)), y_offset(cv::vx_setall_s32(c.y_offset)), c_offset(cv::vx_setall_s32(c.c_offset)),
        half(cv::vx_setall_s32(1 << 15)), mask16(cv::vx_setall_s32(0xffff)) {}
};

// The terms of kLanes pixels: luma c.y * y + 2^15, chroma rv v, gu u + gv v,
// bu u (n vectors: one per pixel, or per chroma sample when n == 2).
struct Terms {
  v_int32 y[4], r[4], g[4], b[4];
  int n = 4;
};

// 8-bit samples, x: the block's first pixel.
void terms8(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* yr, const std::uint8_t* ur,
            const std::uint8_t* vr, int x, Terms& t) {
  v_uint16 y0, y1;
  cv::v_expand(cv::vx_load(yr + x), y0, y1);
  mul8(s16(y0) - c.y_offset16, c.y8, t.y[0], t.y[1]);
  mul8(s16(y1) - c.y_offset16, c.y8, t.y[2], t.y[3]);
  for (v_int32& v : t.y) v = v + c.half;
  if (f.monochrome) {
    for (int k = 0; k < 4; ++k) t.r[k] = t.g[k] = t.b[k] = cv::vx_setzero_s32();
    return;
  }
  t.n = 4 >> f.chroma_shift_x;
  const int cx = x >> f.chroma_shift_x;
  v_uint16 u[2], v[2];  // t.n / 2 vectors
  if (f.uv_interleaved) {
    for (int k = 0; k < t.n / 2; ++k) {
      const v_uint16 uv = cv::v_reinterpret_as_u16(cv::vx_load(ur + 2 * cx + k * kLanes));
      u[k] = uv & cv::vx_setall_u16(0xff);
      v[k] = uv >> 8;
    }
  } else if (t.n == 2) {
    u[0] = cv::vx_load_expand(ur + cx);
    v[0] = cv::vx_load_expand(vr + cx);
  } else {
    cv::v_expand(cv::vx_load(ur + cx), u[0], u[1]);
    cv::v_expand(cv::vx_load(vr + cx), v[0], v[1]);
  }
  for (int k = 0; k < t.n / 2; ++k) {
    const v_int16 uk = s16(u[k]) - c.c_offset16, vk = s16(v[k]) - c.c_offset16;
    v_int32 g0, g1;
    mul8(vk, c.rv8, t.r[2 * k], t.r[2 * k + 1]);
    mul8(uk, c.bu8, t.b[2 * k], t.b[2 * k + 1]);
    mul8(uk, c.gu8, t.g[2 * k], t.g[2 * k + 1]);
    mul8(vk, c.gv8, g0, g1);
    t.g[2 * k] = t.g[2 * k] + g0;
    t.g[2 * k + 1] = t.g[2 * k + 1] + g1;
  }
}

// `count` vectors of consecutive 2-byte samples from sample i of a row.
void load16(const std::uint8_t* row, int i, int shift, int count, v_uint16* out) {
  for (int k = 0; k < count; ++k) out[k] = cv::v_reinterpret_as_u16(cv::vx_load(row + 2 * i + k * kLanes)) >> shift;
}

void expand(const v_uint16& a, v_int32& lo, v_int32& hi) {
  v_uint32 l, h;
  cv::v_expand(a, l, h);
  lo = s32(l);
  hi = s32(h);
}

// 2-byte samples: int32 products.
void terms16(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* yr, const std::uint8_t* ur,
             const std::uint8_t* vr, int x, Terms& t) {
  v_uint16 s[4];
  load16(yr, x, f.shift, 2, s);
  expand(s[0], t.y[0], t.y[1]);
  expand(s[1], t.y[2], t.y[3]);
  for (v_int32& v : t.y) v = c.y * (v - c.y_offset) + c.half;
  if (f.monochrome) {
    for (int k = 0; k < 4; ++k) t.r[k] = t.g[k] = t.b[k] = cv::vx_setzero_s32();
    return;
  }
  t.n = 4 >> f.chroma_shift_x;
  const int cx = x >> f.chroma_shift_x;
  v_int32 u[4], v[4];
  if (f.uv_interleaved) {
    load16(ur, 2 * cx, f.shift, t.n, s);
    for (int k = 0; k < t.n; ++k) {
      const v_int32 uv = cv::v_reinterpret_as_s32(s[k]);
      u[k] = uv & c.mask16;
      v[k] = s32(cv::v_reinterpret_as_u32(uv) >> 16);
    }
  } else {
    for (auto [row, dst] : {std::pair{ur, u}, std::pair{vr, v}}) {
      load16(row, cx, f.shift, t.n / 2, s);
      for (int k = 0; k < t.n / 2; ++k) expand(s[k], dst[2 * k], dst[2 * k + 1]);
    }
  }
  for (int k = 0; k < t.n; ++k) {
    u[k] = u[k] - c.c_offset;
    v[k] = v[k] - c.c_offset;
    t.r[k] = c.rv * v[k];
    t.g[k] = c.gu * u[k] + c.gv * v[k];
    t.b[k] = c.bu * u[k];
  }
}

// Pixels [x, x + kLanes) of a row from its luma and chroma rows.
void block(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* yr, const std::uint8_t* ur,
           const std::uint8_t* vr, int x, std::uint8_t* out) {
  Terms t;
  if (f.bytes == 1) {
    terms8(f, c, yr, ur, vr, x, t);
  } else {
    terms16(f, c, yr, ur, vr, x, t);
  }
  if (t.n == 2)  // 4:2:0 / 4:2:2: each chroma term serves two neighbouring pixels
    for (v_int32* v : {t.r, t.g, t.b}) {
      const v_int32 v0 = v[0], v1 = v[1];
      cv::v_zip(v0, v0, v[0], v[1]);
      cv::v_zip(v1, v1, v[2], v[3]);
    }
  v_int32 r[4], g[4], b[4];
  for (int k = 0; k < 4; ++k) {
    r[k] = (t.y[k] + t.r[k]) >> 16;
    g[k] = (t.y[k] - t.g[k]) >> 16;
    b[k] = (t.y[k] + t.b[k]) >> 16;
  }
  // Saturating packs: the clamp to 0..255 (a value >> 16 fits in int16).
  auto u8 = [](const v_int32* v) { return cv::v_pack_u(cv::v_pack(v[0], v[1]), cv::v_pack(v[2], v[3])); };
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
