#include "codecs/image/libjpeg/libjpeg_decoder.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "codecs/image/libjpeg/jpeg_decode.hpp"

namespace imgpipe::codecs {

namespace {

// The stored image's rectangle that orientation `o` (1..8) turns into the
// displayed box `b` of a stored ws x hs image (the inverse of
// stored_to_displayed in core/src/geometry.cpp, applied to two corners).
JpegRegion stored_region(int o, int ws, int hs, const ImageDecodeOptions::Box& b) {
  const auto to_stored = [&](int dx, int dy) -> std::pair<int, int> {
    switch (o) {
      case 2: return {ws - dx, dy};
      case 3: return {ws - dx, hs - dy};
      case 4: return {dx, hs - dy};
      case 5: return {dy, dx};
      case 6: return {dy, hs - dx};
      case 7: return {ws - dy, hs - dx};
      case 8: return {ws - dy, dx};
      default: return {dx, dy};
    }
  };
  const auto [ax, ay] = to_stored(b.x, b.y);
  const auto [bx, by] = to_stored(b.x + b.width, b.y + b.height);
  return {std::min(ax, bx), std::min(ay, by), std::abs(bx - ax), std::abs(by - ay)};
}

}  // namespace

bool LibjpegDecoder::takes(const ImageHeader& h) const noexcept {
  if (h.format != "jpeg") return false;
  if (h.jpeg_sof == 0) return true;
  const int k = h.jpeg_sof - 0xC0;
  const bool lossless = k == 3 || k == 7 || k == 11 || k == 15;
  const bool hierarchical = k == 5 || k == 6 || k == 13 || k == 14;
  return !lossless && !hierarchical && h.precision == 8;
}

std::string LibjpegDecoder::decode(std::span<const unsigned char> bytes, const ImageHeader& h,
                                   const ImageDecodeOptions& o, cv::Mat& out, ImageDecoded& done) const {
  // libjpeg directly: its corrupt-data warnings become errors (jpeg_decode.hpp).
  JpegDecodeOptions opt;
  opt.orientation = o.orientation ? h.orientation : 1;
  opt.accept_damaged = o.accept_damaged;
  opt.scale_denom = o.scale_denom;
  // A region inside the image as the header states it (a box drawn on other
  // dimensions, or one that is the whole image, decodes whole).
  const bool turned = opt.orientation >= 5;
  const int disp_w = static_cast<int>(turned ? h.height : h.width), disp_h = static_cast<int>(turned ? h.width : h.height);
  const bool region = !o.region.empty() && o.region.x >= 0 && o.region.y >= 0 &&
                      o.region.x + o.region.width <= disp_w && o.region.y + o.region.height <= disp_h &&
                      (o.region.width < disp_w || o.region.height < disp_h);
  if (region) {
    opt.region = stored_region(opt.orientation, static_cast<int>(h.width), static_cast<int>(h.height), o.region);
    opt.scale_denom = 1;
  }
  std::string err;
  try {
    err = decode_jpeg(bytes, opt, out);
  } catch (const cv::Exception& e) {  // allocation of the output
    out.release();
    err = std::string("decode failed: ") + e.what();
  }
  if (!err.empty()) return err;
  done = {static_cast<int>(h.width), static_cast<int>(h.height), opt.orientation, opt.scale_denom};
  if (region) {
    done.origin_x = o.region.x;
    done.origin_y = o.region.y;
    done.region_decoded = true;
  }
  return {};
}

}  // namespace imgpipe::codecs
