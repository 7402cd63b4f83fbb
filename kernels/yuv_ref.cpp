#include "yuv.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

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
// per chroma sample (and once for the two rows of a 4:2:0 chroma row). 2-byte
// samples are read as bytes and reinterpreted little-endian, like
// detail::sample.
using cv::v_int16, cv::v_int32, cv::v_uint16, cv::v_uint32;
constexpr int kLanes = cv::v_uint8::nlanes;

v_int16 s16(const v_uint16& a) { return cv::v_reinterpret_as_s16(a); }
v_int32 s32(const v_uint32& a) { return cv::v_reinterpret_as_s32(a); }

// 8-bit samples: exact products c * x in int16 multiply-adds, as the pair
// (x * 2^7, x) . (c >> 7, c & 127), for |x| < 2^8 and 0 <= c < 2^18 (every
// 8-bit coefficient of make_coeffs). 2-byte samples take int32 products.
v_int16 split(std::int32_t c) { return cv::v_reinterpret_as_s16(cv::vx_setall_s32((c & 127) << 16 | c >> 7)); }
void mul8(const v_int16& x, const v_int16& c, v_int32& lo, v_int32& hi) {
  v_int16 a, b;
  cv::v_zip(x << 7, x, a, b);
  lo = cv::v_dotprod(a, c);
  hi = cv::v_dotprod(b, c);
}

struct SimdCoeffs {
  v_int16 y8, rv8, gu8, gv8, bu8, y_offset16, c_offset16;       // 8-bit samples
  v_int32 y, rv, gu, gv, bu, y_offset, c_offset, half, mask16;  // 2-byte samples
  explicit SimdCoeffs(const YuvCoeffs& c)
      : y8(split(c.y)), rv8(split(c.rv)), gu8(split(c.gu)), gv8(split(c.gv)), bu8(split(c.bu)),
        y_offset16(cv::vx_setall_s16(static_cast<std::int16_t>(c.y_offset))),
        c_offset16(cv::vx_setall_s16(static_cast<std::int16_t>(c.c_offset))), y(cv::vx_setall_s32(c.y)),
        rv(cv::vx_setall_s32(c.rv)), gu(cv::vx_setall_s32(c.gu)), gv(cv::vx_setall_s32(c.gv)),
        bu(cv::vx_setall_s32(c.bu)), y_offset(cv::vx_setall_s32(c.y_offset)), c_offset(cv::vx_setall_s32(c.c_offset)),
        half(cv::vx_setall_s32(1 << 15)), mask16(cv::vx_setall_s32(0xffff)) {}
};

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

// Luma terms c.y * y + 2^15 of pixels [x, x + kLanes) of a row.
void luma_terms(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* row, int x, v_int32* t) {
  v_uint16 s[2];
  if (f.bytes == 1) {
    cv::v_expand(cv::vx_load(row + x), s[0], s[1]);
    mul8(s16(s[0]) - c.y_offset16, c.y8, t[0], t[1]);
    mul8(s16(s[1]) - c.y_offset16, c.y8, t[2], t[3]);
    for (int k = 0; k < 4; ++k) t[k] = t[k] + c.half;
  } else {
    load16(row, x, f.shift, 2, s);
    expand(s[0], t[0], t[1]);
    expand(s[1], t[2], t[3]);
    for (int k = 0; k < 4; ++k) t[k] = c.y * (t[k] - c.y_offset) + c.half;
  }
}

// n vectors of chroma samples from chroma sample cx, u and v less c_offset.
void chroma8(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* ur, const std::uint8_t* vr, int cx, int n,
             v_int16* u, v_int16* v) {
  v_uint16 a[2], b[2];
  if (f.uv_interleaved) {
    for (int k = 0; k < n; ++k) {
      const v_uint16 uv = cv::v_reinterpret_as_u16(cv::vx_load(ur + 2 * cx + k * kLanes));
      a[k] = uv & cv::vx_setall_u16(0xff);
      b[k] = uv >> 8;
    }
  } else if (n == 1) {
    a[0] = cv::vx_load_expand(ur + cx);
    b[0] = cv::vx_load_expand(vr + cx);
  } else {
    cv::v_expand(cv::vx_load(ur + cx), a[0], a[1]);
    cv::v_expand(cv::vx_load(vr + cx), b[0], b[1]);
  }
  for (int k = 0; k < n; ++k) {
    u[k] = s16(a[k]) - c.c_offset16;
    v[k] = s16(b[k]) - c.c_offset16;
  }
}

void chroma16(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* ur, const std::uint8_t* vr, int cx, int n,
              v_int32* u, v_int32* v) {
  v_uint16 s[4];
  if (f.uv_interleaved) {
    load16(ur, 2 * cx, f.shift, n, s);
    for (int k = 0; k < n; ++k) {
      const v_int32 uv = cv::v_reinterpret_as_s32(s[k]);
      u[k] = uv & c.mask16;
      v[k] = s32(cv::v_reinterpret_as_u32(uv) >> 16);
    }
  } else {
    for (auto [row, dst] : {std::pair{ur, u}, std::pair{vr, v}}) {
      load16(row, cx, f.shift, n / 2, s);
      for (int k = 0; k < n / 2; ++k) expand(s[k], dst[2 * k], dst[2 * k + 1]);
    }
  }
  for (int k = 0; k < n; ++k) {
    u[k] = u[k] - c.c_offset;
    v[k] = v[k] - c.c_offset;
  }
}

// Chroma terms rv v, gu u + gv v, bu u of pixels [x, x + kLanes).
void chroma_terms(const YuvFormat& f, const SimdCoeffs& c, const std::uint8_t* ur, const std::uint8_t* vr, int x,
                  v_int32* r, v_int32* g, v_int32* b) {
  if (f.monochrome) {
    for (int k = 0; k < 4; ++k) r[k] = g[k] = b[k] = cv::vx_setzero_s32();
    return;
  }
  const int n = 4 >> f.chroma_shift_x, cx = x >> f.chroma_shift_x;  // n int32 vectors of chroma samples
  if (f.bytes == 1) {
    v_int16 u[2], v[2];
    chroma8(f, c, ur, vr, cx, n / 2, u, v);
    for (int k = 0; k < n / 2; ++k) {
      v_int32 g0, g1;
      mul8(v[k], c.rv8, r[2 * k], r[2 * k + 1]);
      mul8(u[k], c.bu8, b[2 * k], b[2 * k + 1]);
      mul8(u[k], c.gu8, g[2 * k], g[2 * k + 1]);
      mul8(v[k], c.gv8, g0, g1);
      g[2 * k] = g[2 * k] + g0;
      g[2 * k + 1] = g[2 * k + 1] + g1;
    }
  } else {
    v_int32 u[4], v[4];
    chroma16(f, c, ur, vr, cx, n, u, v);
    for (int k = 0; k < n; ++k) {
      r[k] = c.rv * v[k];
      g[k] = c.gu * u[k] + c.gv * v[k];
      b[k] = c.bu * u[k];
    }
  }
  if (n == 2)  // 4:2:0 / 4:2:2: each chroma term serves two neighbouring pixels
    for (v_int32* t : {r, g, b}) {
      const v_int32 t0 = t[0], t1 = t[1];
      cv::v_zip(t0, t0, t[0], t[1]);
      cv::v_zip(t1, t1, t[2], t[3]);
    }
}

// The kLanes BGR pixels of luma and chroma terms.
void store(const v_int32* y, const v_int32* r, const v_int32* g, const v_int32* b, std::uint8_t* out) {
  v_int32 R[4], G[4], B[4];
  for (int k = 0; k < 4; ++k) {
    R[k] = (y[k] + r[k]) >> 16;
    G[k] = (y[k] - g[k]) >> 16;
    B[k] = (y[k] + b[k]) >> 16;
  }
  // Saturating packs: the clamp to 0..255 (a value >> 16 fits in int16).
  auto u8 = [](const v_int32* v) { return cv::v_pack_u(cv::v_pack(v[0], v[1]), cv::v_pack(v[2], v[3])); };
  cv::v_store_interleave(out, u8(B), u8(G), u8(R));
}
#endif

// Rows y .. y + rows - 1, rows that share one chroma row, to out (rows `pitch`
// bytes apart); the pixels from the last whole SIMD block on by the scalar
// definition.
void convert_rows(const YuvImage& img, const YuvCoeffs& c, int y, int rows, std::uint8_t* out, std::size_t pitch) {
  int x = 0;
#if CV_SIMD
  const YuvFormat& f = img.format;
  const std::size_t cy = static_cast<std::size_t>(y >> f.chroma_shift_y);
  const std::uint8_t* ur = f.monochrome ? nullptr : img.plane[1] + cy * img.pitch[1];
  const std::uint8_t* vr = f.monochrome || f.uv_interleaved ? nullptr : img.plane[2] + cy * img.pitch[2];
  const SimdCoeffs vc(c);
  for (; x + kLanes <= img.width; x += kLanes) {
    v_int32 r[4], g[4], b[4];
    chroma_terms(f, vc, ur, vr, x, r, g, b);
    for (int k = 0; k < rows; ++k) {
      v_int32 yt[4];
      luma_terms(f, vc, img.plane[0] + static_cast<std::size_t>(y + k) * img.pitch[0], x, yt);
      store(yt, r, g, b, out + k * pitch + 3 * x);
    }
  }
#endif
  for (int k = 0; k < rows; ++k)
    for (int i = x; i < img.width; ++i) detail::yuv_at(img, c, i, y + k, out + k * pitch + 3 * i);
}

}  // namespace

void yuv_to_bgr_ref(const YuvImage& img, std::uint8_t* dst, std::size_t dst_pitch, bool parallel) {
  validate(img);
  const YuvCoeffs c = make_coeffs(img.format.matrix, img.format.range, img.format.bits);
  if (dst_pitch == 0) dst_pitch = static_cast<std::size_t>(img.width) * 3;
  const int step = 1 << img.format.chroma_shift_y;  // the luma rows of one chroma row
  auto rows = [&](int i) {
    const int y = i * step;
    convert_rows(img, c, y, std::min(step, img.height - y), dst + static_cast<std::size_t>(y) * dst_pitch, dst_pitch);
  };
  const int groups = (img.height + step - 1) / step;
  if (parallel) {
    imgpipe::detail::annotated_parallel_for(0, groups, rows);
  } else {
    for (int i = 0; i < groups; ++i) rows(i);
  }
}

}  // namespace imgpipe::kernels
