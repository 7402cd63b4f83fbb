// JPEG decoding straight through libjpeg(-turbo), the library OpenCV's own
// JPEG codec calls, so that the decode stage sees libjpeg's warnings (the
// libjpeg backend, libjpeg_decoder.hpp, decodes through it).
//
// libjpeg recovers from damaged entropy-coded data (a bad Huffman code, a
// stream cut short, bytes where a marker should be) by filling in and going
// on, and only *warns*; cv::imdecode prints the warning to stderr and returns
// the damaged image as if it were good. Here the warnings that mean damage
// are caught: the image is reported as corrupt with libjpeg's words unless
// the caller accepts damaged images (decode.accept_truncated). Warnings about
// writers' quirks that do not touch the pixels (see harmless() in the .cpp)
// are ignored. Nothing is printed.
//
// The output equals cv::imdecode(IMREAD_COLOR | IMREAD_REDUCED_*) bit for bit:
// the same library, the same default DCT and upsampling, grey expanded to
// B = G = R, and 4-component (CMYK, YCCK) JPEGs converted with OpenCV's
// formula, channel = k - ((255 - v) * k >> 8). The EXIF orientation, when
// asked for, is applied as OpenCV applies it.
#pragma once

#include <span>
#include <string>

#include <opencv2/core.hpp>

#include "codecs/image/image_decoder.hpp"  // apply_exif_orientation

namespace imgpipe::codecs {

// A rectangle of the image as stored (before any orientation), in pixels.
struct JpegRegion {
  int x = 0, y = 0, width = 0, height = 0;
  bool empty() const noexcept { return width <= 0 || height <= 0; }
};

struct JpegDecodeOptions {
  int scale_denom = 1;        // 1, 2, 4 or 8: libjpeg's scaled IDCT (1 with a region)
  // Only this part of the stored image (region decode; empty: all of it).
  // libjpeg-turbo's jpeg_crop_scanline and jpeg_skip_scanlines leave out the
  // IDCT, upsampling and colour conversion of the iMCU columns and rows
  // around it (one iMCU more on each side, so that fancy upsampling sees the
  // same neighbours as in a whole decode: the pixels are the whole decode's,
  // bit for bit). The entropy-coded data is still read to the end, so the
  // verdict on damage is the whole decode's. The orientation is applied to
  // the region afterwards.
  JpegRegion region;
  int orientation = 1;        // EXIF orientation to apply (1 = none)
  bool accept_damaged = false;  // deliver what libjpeg recovered despite warnings
  int* harmless_warnings = nullptr;  // when given: how many warnings were ignored as harmless
};

// Decodes `bytes` into `out` (CV_8UC3 BGR). Returns the reason on failure
// ("corrupt JPEG: ..."), empty on success; never throws for bad data.
std::string decode_jpeg(std::span<const unsigned char> bytes, const JpegDecodeOptions& opt, cv::Mat& out);

}  // namespace imgpipe::codecs
