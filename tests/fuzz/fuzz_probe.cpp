// libFuzzer target: the JPEG marker parser (codecs/jpeg_markers.hpp) as the
// routing probe reads it, to decide what may go to the GPU's JPEG engines
// (SOF type, precision, components, subsampling, restart interval). It must never crash or read out of bounds,
// its result must be self-consistent, and it must agree with the decode
// stage's own header sniffer where both read the same frame header.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "codecs/jpeg_markers.hpp"
#include "stages/decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  const imgpipe::codecs::JpegLayout j = imgpipe::codecs::parse_jpeg_layout(bytes);
  const std::string refusal = imgpipe::codecs::gpu_route_refusal(j);
  if (!j.valid) {
    if (refusal != "header not understood") std::abort();
    return 0;
  }
  if (j.width <= 0 || j.height <= 0 || j.components <= 0 || j.subsampling.empty()) std::abort();
  // What the engines are offered: baseline or extended 8-bit Huffman, 1 or 3
  // components, a subsampling they take.
  if (refusal.empty() &&
      ((j.sof != 0 && j.sof != 1) || j.precision != 8 || (j.components != 1 && j.components != 3) ||
       j.subsampling == "411" || j.subsampling == "410" || j.subsampling == "other"))
    std::abort();
  const imgpipe::stages::ImageHeader h = imgpipe::stages::sniff_header(bytes);
  if (h.format != "jpeg") std::abort();  // a valid layout starts with SOI
  if (h.jpeg_sof == 0xC0 + j.sof && h.width > 0 && (h.width != j.width || h.height != j.height)) std::abort();
  return 0;
}
