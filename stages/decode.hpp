// Decode stage (parallel): an image's bytes into the work item's pooled Mat,
// through the CPU backend that takes it (codecs/image/image_decoder.hpp:
// libjpeg for JPEG, OpenCV for PNG, BMP, WebP and TIFF; each backend's header
// says what it does to the pixels). Every image comes out as 3-channel BGR
// u8, whatever it was stored as:
//  - grey becomes B = G = R; an alpha channel is dropped (not composited);
//  - CMYK JPEGs (Adobe, inverted as Photoshop writes them) become BGR;
//  - 16-bit PNG and TIFF become 8-bit as round(v / 257), the inverse of the
//    usual 8 -> 16 bit expansion (v * 257), for every format and channel count
//    (OpenCV alone truncates v >> 8 for PNG and grey TIFF but rounds colour TIFF);
//  - the EXIF orientation of a JPEG is applied unless decode.exif_orientation
//    is false.
// Before decoding it reads the image header (codecs/parse/image_header.hpp):
// images that claim more than decode.max_pixels are rejected without
// allocating, and JPEGs without an end-of-image marker, PNGs without an IEND
// chunk, and JPEGs on which libjpeg warns (damaged entropy-coded data, which
// OpenCV decodes to a partly grey or smeared image without an error; see
// codecs/image/libjpeg/jpeg_decode.hpp) are reported as corrupt unless
// decode.accept_truncated. Only JPEG, PNG, BMP, WebP and TIFF (classic and
// BigTIFF) reach a decoder; anything else is "not a recognised image format".
// Format features no decoder here handles are reported by name before any
// decoder runs: JPEGs of a precision other than 8 bits (12-bit), lossless and
// hierarchical JPEGs, and animated WebPs.
//
// Reduced decode (decode.reduced: auto): a JPEG is decoded at 1/2, 1/4 or 1/8
// scale in the DCT domain (libjpeg's scaled IDCT, cv::IMREAD_REDUCED_COLOR_r,
// several times faster) when the reduced image still covers what the
// transform's resize takes from it; see reduced_scale(). Video frames (Work
// items marked `predecoded` by the source stage) are converted to BGR here.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "codecs/image/image_decoder.hpp"
#include "codecs/parse/image_header.hpp"
#include "imgpipe/config.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

// The largest r in {8, 4, 2} for which an image of width x height (as
// displayed, i.e. after orientation), decoded at ceil(width / r) x
// ceil(height / r), still covers what `resize` takes from it, else 1:
//   stretch:     ceil(width / r) >= W and ceil(height / r) >= H;
//   center_crop: the cover scale max(W / width, H / height) <= 1 / r;
//   letterbox:   the fit scale min(W / width, H / height) <= 1 / r.
// So the transform never enlarges a reduced image where it would have shrunk
// the full one. 1 when a dimension is unknown (<= 0).
int reduced_scale(std::int64_t width, std::int64_t height, const ResizeConfig& resize) noexcept;

class Decode : public Stage<Decode, Takes::to_decode> {
 public:
  // `transform` gives the resize target that reduced decode must cover.
  // Makes the CPU backends in this thread, the first time (OpenCV's decoder
  // registry is built then, before any run's threads use it: see
  // codecs/image/opencv/opencv_decoder.cpp).
  // `yuv_budget` > 0: the GPU resizes (transform.resize.where), so a video
  // frame that needs no turning and whose planes fit that many bytes is left
  // YUV, for the transform stage to stage as it is (the GPU converts it).
  // 0: the CPU resizes, and a video frame that needs no turning is left YUV
  // when the transform stage takes it to its output in one pass
  // (cpu_one_pass, transform.hpp).
  // `epoch`: the run's, from which random_crop's boxes are drawn (region
  // decode, decode.region: a JPEG's box alone is decoded).
  Decode(const DecodeConfig& cfg, const TransformConfig& transform, bool video_orientation = true,
         std::size_t yuv_budget = 0, std::uint64_t epoch = 0);
  // Decodes w.pixels.bytes into w.pixels.decoded, or sets w.sample.error;
  // a video file's frame (w.pixels.video) is converted to BGR with the
  // stream's matrix and range (kernels/yuv.hpp), turned as its container
  // says unless input.video.orientation is false.
  Tally run(Work& w) const;
  // Decodes `bytes` into `out` (BGR u8); returns the reason on failure.
  // `scale`, when given, receives the reduction used (1, 2, 4 or 8);
  // `geometry`, the decode part of the sample's geometry (stages/geometry.hpp:
  // the original's stored and displayed size, the orientation applied, the
  // reduction).
  // `sample`, when given (its place in the looped input list and its frame,
  // as augment_of takes them), names the sample whose random_crop box is all
  // that is wanted (decode.region): a backend that can decodes only that box
  // of a JPEG, and `origin` receives the displayed original's coordinates of
  // out's first pixel (0, 0 when the whole image was decoded).
  struct SampleKey {
    std::uint64_t item = 0;
    std::int64_t frame = -1;
  };
  std::string decode(std::span<const unsigned char> bytes, cv::Mat& out, int* scale = nullptr,
                     SampleGeometry* geometry = nullptr, const SampleKey* sample = nullptr,
                     cv::Point* origin = nullptr) const;

 private:
  // The checks made on the header before any decoder runs: format, size limits, truncation.
  std::string check_header(std::span<const unsigned char> bytes, const codecs::ImageHeader& h) const;
  Tally convert_video(Work& w) const;  // pixels.video -> pixels.decoded
  // What the backend that takes `h` is asked for.
  codecs::ImageDecodeOptions options_for(const codecs::ImageHeader& h, const SampleKey* sample) const;
  std::span<const codecs::ImageDecoder* const> decoders_;  // codecs::cpu_image_decoders(), asked in order
  DecodeConfig cfg_;
  ResizeConfig resize_;
  TransformConfig transform_;  // its augmentations: the boxes region decode draws
  std::uint64_t epoch_ = 0;
  bool video_orientation_ = true;
  std::size_t yuv_budget_ = 0;
};

}  // namespace imgpipe::stages
