// Decode stage (parallel): OpenCV imdecode into the work item's pooled Mat.
// Every image comes out as 3-channel BGR u8, whatever it was stored as:
//  - JPEG (libjpeg directly), PNG, BMP, WebP, TIFF (OpenCV);
//  - grey becomes B = G = R; an alpha channel is dropped (not composited);
//  - CMYK JPEGs (Adobe, inverted as Photoshop writes them) become BGR;
//  - 16-bit PNG and TIFF become 8-bit as round(v / 257), the inverse of the
//    usual 8 -> 16 bit expansion (v * 257), for every format and channel count
//    (OpenCV alone truncates v >> 8 for PNG and grey TIFF but rounds colour TIFF);
//  - the EXIF orientation of a JPEG is applied unless decode.exif_orientation
//    is false.
// Before decoding it reads the image header: images that claim more than
// decode.max_pixels are rejected without allocating, and JPEGs without an
// end-of-image marker, PNGs without an IEND chunk, and JPEGs on which libjpeg
// warns (damaged entropy-coded data, which OpenCV decodes to a partly grey or
// smeared image without an error; see jpeg_decode.hpp) are reported as
// corrupt unless decode.accept_truncated. Only JPEG, PNG, BMP, WebP and TIFF
// (classic and BigTIFF) reach a decoder; anything else is "not a recognised
// image format". Format features no decoder here handles are reported by name
// before any decoder runs: JPEGs of a precision other than 8 bits (12-bit),
// lossless and hierarchical JPEGs, and animated WebPs.
//
// Reduced decode (decode.reduced: auto): a JPEG is decoded at 1/2, 1/4 or 1/8
// scale in the DCT domain (libjpeg's scaled IDCT, cv::IMREAD_REDUCED_COLOR_r,
// several times faster) when the reduced image still covers what the
// transform's resize takes from it; see reduced_scale(). Video frames (Work
// items marked `predecoded` by the source stage) pass through untouched.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "imgpipe/config.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

struct ImageHeader {
  std::string format;  // "jpeg", "png", ...; empty when unknown
  std::int64_t width = 0, height = 0;  // as stored; 0 when the header does not say
  // The orientation tag (1..8; 1 when absent or invalid): JPEG: EXIF (APP1);
  // PNG: its eXIf chunk (OpenCV applies it unless told to ignore it); classic
  // TIFF: tag 274 of IFD0 (OpenCV 4.6 applies it always).
  int orientation = 1;
  int jpeg_sof = 0;     // JPEG: the first SOFn marker (0xC0 baseline, 0xC1 extended, 0xC2 progressive,
                        // 0xC9/0xCA arithmetic, 0xC3 lossless, ...); 0 when none was read
  int precision = 0;    // JPEG: bits per sample from that SOF (8, 12, ...); 0 when not read
  bool bigtiff = false;  // TIFF: BigTIFF (magic 43, 64-bit offsets) rather than classic TIFF (42)
  bool animated = false;  // WebP: the VP8X animation flag is set
  int frames = 0;         // WebP: the ANMF (animation frame) chunks counted
};

// Sniffs the format and the dimensions (JPEG, PNG, BMP, WebP, TIFF and
// BigTIFF); for JPEG also the EXIF orientation, the coding process (SOF
// marker) and the sample precision; for WebP whether it is animated. Never
// throws.
ImageHeader sniff_header(std::span<const unsigned char> bytes) noexcept;

// The largest r in {8, 4, 2} for which an image of width x height (as
// displayed, i.e. after orientation), decoded at ceil(width / r) x
// ceil(height / r), still covers what `resize` takes from it, else 1:
//   stretch:     ceil(width / r) >= W and ceil(height / r) >= H;
//   center_crop: the cover scale max(W / width, H / height) <= 1 / r;
//   letterbox:   the fit scale min(W / width, H / height) <= 1 / r.
// So the transform never enlarges a reduced image where it would have shrunk
// the full one. 1 when a dimension is unknown (<= 0).
int reduced_scale(std::int64_t width, std::int64_t height, const ResizeConfig& resize) noexcept;

// True when JPEG data ends with the EOI marker (FFD9), allowing trailing
// padding bytes (00 or FF) after it.
bool jpeg_has_eoi(std::span<const unsigned char> bytes) noexcept;

// True when PNG data holds an IEND chunk, walking the chunks from the
// signature (a cut inside any chunk, or before IEND, gives false).
bool png_has_iend(std::span<const unsigned char> bytes) noexcept;

class Decode : public Stage<Decode, Takes::to_decode> {
 public:
  // `transform` gives the resize target that reduced decode must cover.
  // Builds OpenCV's decoder registry in this thread, before any run's
  // threads use it (see decode.cpp).
  // `yuv_budget` > 0: the GPU resizes (transform.resize.where), so a video
  // frame that needs no turning and whose planes fit that many bytes is left
  // YUV, for the transform stage to stage as it is (the GPU converts it).
  Decode(const DecodeConfig& cfg, const TransformConfig& transform, bool video_orientation = true,
         std::size_t yuv_budget = 0);
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
  std::string decode(std::span<const unsigned char> bytes, cv::Mat& out, int* scale = nullptr,
                     SampleGeometry* geometry = nullptr) const;

 private:
  // The checks made on the header before any decoder runs: format, size limits, truncation.
  std::string check_header(std::span<const unsigned char> bytes, const ImageHeader& h) const;
  Tally convert_video(Work& w) const;  // pixels.video -> pixels.decoded
  std::string decode_jpeg_bytes(std::span<const unsigned char> bytes, const ImageHeader& h, cv::Mat& out,
                                int* scale) const;
  std::string decode_with_opencv(std::span<const unsigned char> bytes, const ImageHeader& h, cv::Mat& out) const;
  // What OpenCV's decode of `h` applied, checked against the frame it made.
  SampleGeometry opencv_geometry(const ImageHeader& h, const cv::Mat& out) const;
  DecodeConfig cfg_;
  ResizeConfig resize_;
  bool video_orientation_ = true;
  std::size_t yuv_budget_ = 0;
};

}  // namespace imgpipe::stages
