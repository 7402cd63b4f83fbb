// The nvJPEG backend's answer to what it takes (the question every image
// backend answers, image_decoder.hpp: takes), asked by the probe stage of
// each JPEG it may send to the GPU's JPEG engines. The JPEG's marker
// segments, parsed once (codecs/parse/jpeg_markers.hpp), serve the layout
// the hardware takes, the structural checks (codecs/parse/jpeg_checks.hpp)
// and, with decode.verify full, the entropy walk; nvJPEG's own parse of the
// header has the last word. The batched decode itself is GpuJpegDecoder's
// (jpeg_gpu.hpp). Never throws but std::bad_alloc and what
// GpuJpegDecoder::parse throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "codecs/parse/jpeg_checks.hpp"
#include "codecs/parse/jpeg_markers.hpp"

namespace imgpipe::codecs {

// The room a JPEG must fit to be taken: its frame and bitstream, within the
// caller's shares of its buffers.
struct GpuJpegRoom {
  std::int64_t max_pixels = 0;       // width x height
  std::size_t max_frame_bytes = 0;   // width x height x 3
  std::size_t max_bitstream = 0;     // the file's bytes
};

// The answer for one JPEG.
struct GpuJpegTake {
  bool taken = false;
  int width = 0, height = 0;  // the frame's, when taken
  // The structural check that kept it off the engines (none when another
  // reason did, or when it was taken).
  JpegRefusal refusal = JpegRefusal::none;
};

class NvjpegBackend {
 public:
  explicit NvjpegBackend(const GpuJpegDecoder& decoder) noexcept : decoder_(decoder) {}
  std::string_view name() const noexcept { return "nvjpeg"; }
  // Whether the engines take the JPEG in `bytes` (`segments`:
  // parse_jpeg_segments(bytes)) as libjpeg would decode it, within `room`:
  // a layout the hardware takes (gpu_route_refusal), no structural refusal
  // (check_jpeg), a frame and bitstream that fit, and nvJPEG's parse agreeing
  // (batch supported, the same size).
  GpuJpegTake takes(std::span<const unsigned char> bytes, const JpegSegments& segments, const GpuJpegRoom& room) const;

 private:
  const GpuJpegDecoder& decoder_;
};

}  // namespace imgpipe::codecs
