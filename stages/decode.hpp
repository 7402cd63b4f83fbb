// Decode stage (parallel): OpenCV imdecode into the work item's pooled Mat
// (BGR u8, EXIF orientation applied). Before decoding it reads the image
// header: images that claim more than decode.max_pixels are rejected without
// allocating, and JPEGs without an end-of-image marker are reported as
// truncated (OpenCV would return a partly grey image without an error)
// unless decode.accept_truncated.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "imgpipe/config.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

struct ImageHeader {
  std::string format;  // "jpeg", "png", ...; empty when unknown
  std::int64_t width = 0, height = 0;  // 0 when the header does not say
};

// Sniffs the format and, for JPEG and PNG, the dimensions. Never throws.
ImageHeader sniff_header(std::span<const unsigned char> bytes) noexcept;

// True when JPEG data ends with the EOI marker (FFD9), allowing trailing
// padding bytes (00 or FF) after it.
bool jpeg_has_eoi(std::span<const unsigned char> bytes) noexcept;

class Decode {
 public:
  Decode(const DecodeConfig& cfg, StageStats& stats) : cfg_(cfg), stats_(stats) {}
  Work* operator()(Work* w) const;
  // Decodes `bytes` into `out` (BGR u8); returns the reason on failure.
  std::string decode(std::span<const unsigned char> bytes, cv::Mat& out) const;

 private:
  DecodeConfig cfg_;
  StageStats& stats_;
};

}  // namespace imgpipe::stages
