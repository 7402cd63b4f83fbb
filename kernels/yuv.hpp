// YUV -> BGR u8: the one colour conversion every video route uses (the CPU
// route converts decoded frames with yuv_to_bgr_ref; the GPU converts staged
// or NVDEC frames with the same arithmetic), so that the routes give the same
// pixels for the same decoded samples (docs/video.md).
//
// Definition, integer arithmetic only (bit-identical on both twins):
//   samples: Y, U, V as unsigned integers of `bits` bits (8..16); a 2-byte
//   sample is read little-endian and shifted right by `shift` (P016/P010 hold
//   their bits at the top: shift = 16 - bits; yuv420p10le at the bottom:
//   shift = 0).
//   chroma: nearest, the chroma sample (x >> chroma_shift_x, y >> chroma_shift_y)
//   serves luma sample (x, y) (as cv::cvtColor's NV12/I420 conversions do).
//   With YuvCoeffs c (make_coeffs) and y = Y - c.y_offset, u = U - c.c_offset,
//   v = V - c.c_offset:
//     R = clamp((c.y * y + c.rv * v + 2^15) >> 16)
//     G = clamp((c.y * y - c.gu * u - c.gv * v + 2^15) >> 16)
//     B = clamp((c.y * y + c.bu * u + 2^15) >> 16)
//   (>> is an arithmetic shift, clamp to 0..255.) The coefficients are the
//   matrix's Kr/Kb (BT.601, BT.709, BT.2020 non-constant, SMPTE 240M) scaled
//   for the range: limited Y 16..235, C 16..240 (times 2^(bits-8)); full Y and
//   C 0..2^bits-1, C centred at 2^(bits-1). Each is round(2^16 * value).
//   A monochrome image (no chroma planes) converts as u = v = 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "resize_math.hpp"  // IMGPIPE_HD

namespace imgpipe::kernels {

enum class ColorMatrix : std::uint8_t { bt601, bt709, bt2020, smpte240m };
enum class ColorRange : std::uint8_t { limited, full };

std::string_view name(ColorMatrix m) noexcept;
std::string_view name(ColorRange r) noexcept;

// The matrix for a stream that does not say: BT.709 for HD sizes (wider than
// 1024 or taller than 576), BT.601 below, as FFmpeg's players and most
// decoders assume.
ColorMatrix default_matrix(int width, int height) noexcept;

struct YuvCoeffs {
  std::int32_t y = 0, rv = 0, gu = 0, gv = 0, bu = 0;
  std::int32_t y_offset = 0, c_offset = 0;
};

// Coefficients for `bits`-bit samples (8..16). Throws std::invalid_argument
// for bits outside 8..16.
YuvCoeffs make_coeffs(ColorMatrix m, ColorRange r, int bits);

// How one image's samples lie in memory.
struct YuvFormat {
  int bits = 8;             // significant bits per sample, 8..16
  int bytes = 1;            // bytes per sample: 1, or 2 (little-endian)
  int shift = 0;            // right shift of a 2-byte sample to its value
  int chroma_shift_x = 1;   // 4:2:0 and 4:2:2: 1; 4:4:4: 0
  int chroma_shift_y = 1;   // 4:2:0: 1; 4:2:2 and 4:4:4: 0
  bool uv_interleaved = false;  // NV12/P016: plane 1 holds U,V pairs; plane 2 unused
  bool monochrome = false;      // no chroma planes (grey)
  ColorMatrix matrix = ColorMatrix::bt601;
  ColorRange range = ColorRange::limited;
};

struct YuvImage {
  const std::uint8_t* plane[3] = {nullptr, nullptr, nullptr};  // Y, U (or UV), V
  std::size_t pitch[3] = {0, 0, 0};                             // bytes between rows
  int width = 0, height = 0;                                    // luma size
  YuvFormat format;
};

// Throws std::invalid_argument naming the offending field.
void validate(const YuvImage& img);

// Chroma plane size of a luma size: ceil(width / 2^shift_x) x ceil(height / 2^shift_y).
inline int chroma_width(const YuvFormat& f, int width) noexcept {
  return (width + (1 << f.chroma_shift_x) - 1) >> f.chroma_shift_x;
}
inline int chroma_height(const YuvFormat& f, int height) noexcept {
  return (height + (1 << f.chroma_shift_y) - 1) >> f.chroma_shift_y;
}

namespace detail {

IMGPIPE_HD std::uint8_t clamp_u8(std::int32_t v) {
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

IMGPIPE_HD std::int32_t sample(const std::uint8_t* row, int i, int bytes, int shift) {
  if (bytes == 1) return row[i];
  const std::uint8_t* p = row + 2 * i;
  return static_cast<std::int32_t>((static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8)) >>
                                   shift);
}

// One pixel from its samples: bgr[0] = B, bgr[1] = G, bgr[2] = R.
IMGPIPE_HD void yuv_pixel(const YuvCoeffs& c, std::int32_t Y, std::int32_t U, std::int32_t V, std::uint8_t* bgr) {
  const std::int32_t y = c.y * (Y - c.y_offset) + (1 << 15);
  const std::int32_t u = U - c.c_offset;
  const std::int32_t v = V - c.c_offset;
  bgr[2] = clamp_u8((y + c.rv * v) >> 16);
  bgr[1] = clamp_u8((y - c.gu * u - c.gv * v) >> 16);
  bgr[0] = clamp_u8((y + c.bu * u) >> 16);
}

// Pixel (x, y) of an image.
IMGPIPE_HD void yuv_at(const YuvImage& img, const YuvCoeffs& c, int x, int y, std::uint8_t* bgr) {
  const YuvFormat& f = img.format;
  const std::int32_t Y = sample(img.plane[0] + static_cast<std::size_t>(y) * img.pitch[0], x, f.bytes, f.shift);
  std::int32_t U = c.c_offset, V = c.c_offset;
  if (!f.monochrome) {
    const int cx = x >> f.chroma_shift_x, cy = y >> f.chroma_shift_y;
    if (f.uv_interleaved) {
      const std::uint8_t* row = img.plane[1] + static_cast<std::size_t>(cy) * img.pitch[1];
      U = sample(row, 2 * cx, f.bytes, f.shift);
      V = sample(row, 2 * cx + 1, f.bytes, f.shift);
    } else {
      U = sample(img.plane[1] + static_cast<std::size_t>(cy) * img.pitch[1], cx, f.bytes, f.shift);
      V = sample(img.plane[2] + static_cast<std::size_t>(cy) * img.pitch[2], cx, f.bytes, f.shift);
    }
  }
  yuv_pixel(c, Y, U, V, bgr);
}

}  // namespace detail

// CPU twin: the whole image to BGR u8 (3 bytes per pixel, rows `dst_pitch`
// bytes apart; 0 means width * 3). Rows in parallel with oneTBB when
// `parallel`.
void yuv_to_bgr_ref(const YuvImage& img, std::uint8_t* dst, std::size_t dst_pitch = 0, bool parallel = false);

}  // namespace imgpipe::kernels
