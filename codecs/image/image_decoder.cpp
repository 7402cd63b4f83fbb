#include "codecs/image/image_decoder.hpp"

#include <array>

#include "codecs/image/libjpeg/libjpeg_decoder.hpp"
#include "codecs/image/opencv/opencv_decoder.hpp"

namespace imgpipe::codecs {

std::span<const ImageDecoder* const> cpu_image_decoders() {
  // Made once (a function-local static is initialised thread-safely), never
  // destroyed before exit; the backends hold no state beyond that.
  static const LibjpegDecoder libjpeg;
  static const OpenCvDecoder opencv;
  static const std::array<const ImageDecoder*, 2> all{&libjpeg, &opencv};
  return all;
}

const ImageDecoder* cpu_image_decoder_for(const ImageHeader& h) {
  for (const ImageDecoder* d : cpu_image_decoders())
    if (d->takes(h)) return d;
  return nullptr;
}

void apply_exif_orientation(cv::Mat& img, int o) {
  switch (o) {
    case 2: cv::flip(img, img, 1); break;
    case 3: cv::flip(img, img, -1); break;
    case 4: cv::flip(img, img, 0); break;
    case 5: cv::transpose(img, img); break;
    case 6: cv::transpose(img, img); cv::flip(img, img, 1); break;
    case 7: cv::transpose(img, img); cv::flip(img, img, -1); break;
    case 8: cv::transpose(img, img); cv::flip(img, img, 0); break;
    default: break;
  }
}

}  // namespace imgpipe::codecs
