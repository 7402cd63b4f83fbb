#include "codecs/image/libjpeg/libjpeg_decoder.hpp"

#include "codecs/image/libjpeg/jpeg_decode.hpp"

namespace imgpipe::codecs {

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
  std::string err;
  try {
    err = decode_jpeg(bytes, opt, out);
  } catch (const cv::Exception& e) {  // allocation of the output
    out.release();
    err = std::string("decode failed: ") + e.what();
  }
  if (!err.empty()) return err;
  done = {static_cast<int>(h.width), static_cast<int>(h.height), opt.orientation, opt.scale_denom};
  return {};
}

}  // namespace imgpipe::codecs
