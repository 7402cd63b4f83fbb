// The image decoder interface: what every CPU backend (libjpeg/, opencv/)
// promises, and the list the decode stage picks a backend from.
//
// A backend says which images it takes by their header
// (codecs/parse/image_header.hpp) and decodes one into a 3-channel BGR u8
// frame, returning "" or the reason it could not ("corrupt JPEG: ...").
// It never throws for bad data. Checks that hold for every backend (the
// format's and the configuration's size limits, truncation, features no
// backend reads) are the decode stage's and come first (stages/decode.hpp).
// The nvJPEG backend (nvjpeg/nvjpeg_backend.hpp) answers the same question
// of what it takes, for the probe stage; its batched decode keeps its own
// shape (nvjpeg/jpeg_gpu.hpp).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

#include "codecs/parse/image_header.hpp"

namespace imgpipe::codecs {

struct ImageDecodeOptions {
  // Apply the orientation the header states (decode.exif_orientation); each
  // backend says in ImageDecoded what it applied.
  bool orientation = true;
  // Deliver what the decoder recovered from damaged data instead of failing
  // (decode.accept_truncated).
  bool accept_damaged = false;
  // A reduced decode asked for: 1, 2, 4 or 8 (the largest the resize allows,
  // stages/decode.hpp: reduced_scale). A backend that cannot reduce decodes
  // at full size.
  int scale_denom = 1;
  // Region decode (decode.region, under transform.resize.mode random_crop):
  // only this box of the image as displayed (full size, orientation
  // applied) is wanted. A backend that can decode part of an image (libjpeg)
  // returns just the box, with scale_denom 1, and says so in ImageDecoded;
  // the others decode the whole image.
  struct Box {
    int x = 0, y = 0, width = 0, height = 0;
    bool empty() const noexcept { return width <= 0 || height <= 0; }
  } region;
};

// What a backend did to the stored image: the decode's part of a sample's
// geometry (stages/geometry.hpp).
struct ImageDecoded {
  // The image as stored: the header's size, or the frame's own where the
  // header was not read or disagrees with what the library made.
  int stored_width = 0, stored_height = 0;
  int orientation = 1;  // the orientation applied, 1..8 (1: none)
  int scale = 1;        // the reduction used: 1, 2, 4 or 8
  // The displayed image's coordinates of `out`'s first pixel: the region's
  // corner when only the region was decoded (region_decoded), else 0.
  int origin_x = 0, origin_y = 0;
  bool region_decoded = false;
};

class ImageDecoder {
 public:
  virtual ~ImageDecoder() = default;
  // "libjpeg", "opencv": for reports and tests.
  virtual std::string_view name() const noexcept = 0;
  // Whether this backend takes an image with header `h` (its format, and the
  // features of it the backend reads).
  virtual bool takes(const ImageHeader& h) const noexcept = 0;
  // Decodes `bytes` (whose header is `h`) into `out` as CV_8UC3 BGR; returns
  // "" and fills `done`, or the reason with `out` released. Never throws for
  // bad data.
  virtual std::string decode(std::span<const unsigned char> bytes, const ImageHeader& h, const ImageDecodeOptions& o,
                             cv::Mat& out, ImageDecoded& done) const = 0;
};

// The CPU backends, in the order they are asked: libjpeg (JPEG), then OpenCV
// (PNG, BMP, WebP, TIFF). The first call makes them, in the calling thread
// (OpenCV builds its decoder registry then: opencv/opencv_decoder.hpp).
std::span<const ImageDecoder* const> cpu_image_decoders();
// The first of cpu_image_decoders() that takes `h`; null when none does.
const ImageDecoder* cpu_image_decoder_for(const ImageHeader& h);

// Applies EXIF orientation `o` (1..8) to `img` as a viewer displays it.
void apply_exif_orientation(cv::Mat& img, int o);

}  // namespace imgpipe::codecs
