// The OpenCV backend of the image decoder interface (image_decoder.hpp):
// PNG, BMP, still WebP and TIFF (classic and BigTIFF) through cv::imdecode,
// from OpenCV's imgcodecs loaded on the first such image (codecs/opencv_io).
//  - 16-bit PNG and TIFF become 8-bit as round(v / 257), the inverse of the
//    usual 8 -> 16 bit expansion (v * 257), for every channel count (OpenCV
//    alone truncates v >> 8 for PNG and grey TIFF but rounds colour TIFF);
//    float and 32-bit samples take OpenCV's own conversion;
//  - grey becomes B = G = R, an alpha channel is dropped;
//  - OpenCV 4.6 applies a PNG's eXIf orientation unless told not to, and a
//    TIFF's orientation tag always: ImageDecoded says which was applied.
// It never reduces. The first decode loads imgcodecs and builds OpenCV's
// decoder registry once for every thread (see the .cpp); when imgcodecs
// cannot be loaded, each decode fails with the loader's reason. Never
// throws for bad data.
#pragma once

#include "codecs/image/image_decoder.hpp"

namespace imgpipe::codecs {

class OpenCvDecoder final : public ImageDecoder {
 public:
  OpenCvDecoder();  // loads nothing
  std::string_view name() const noexcept override { return "opencv"; }
  // PNG, BMP, TIFF, and WebP unless animated (OpenCV 4.6 reads still WebPs
  // only). Never JPEG: the libjpeg backend reports damage OpenCV hides.
  bool takes(const ImageHeader& h) const noexcept override;
  std::string decode(std::span<const unsigned char> bytes, const ImageHeader& h, const ImageDecodeOptions& o,
                     cv::Mat& out, ImageDecoded& done) const override;
};

}  // namespace imgpipe::codecs
