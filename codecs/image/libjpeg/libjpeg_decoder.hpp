// The libjpeg backend of the image decoder interface (image_decoder.hpp):
// JPEGs of the processes libjpeg(-turbo) implements with 8-bit samples
// (baseline, extended, progressive, arithmetic-coded), decoded through
// decode_jpeg (jpeg_decode.hpp), so that damaged data is reported with
// libjpeg's words. It reduces in the DCT domain (scaled IDCT) when asked,
// and applies the EXIF orientation when asked. Never throws for bad data.
#pragma once

#include "codecs/image/image_decoder.hpp"

namespace imgpipe::codecs {

class LibjpegDecoder final : public ImageDecoder {
 public:
  std::string_view name() const noexcept override { return "libjpeg"; }
  // JPEG, unless its header names a process or precision libjpeg does not
  // decode here (lossless, hierarchical, 12-bit); one whose frame header was
  // not read is taken, for libjpeg to say what is wrong with it.
  bool takes(const ImageHeader& h) const noexcept override;
  std::string decode(std::span<const unsigned char> bytes, const ImageHeader& h, const ImageDecodeOptions& o,
                     cv::Mat& out, ImageDecoded& done) const override;
};

}  // namespace imgpipe::codecs
