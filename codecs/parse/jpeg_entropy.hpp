// The entropy check: libjpeg's verdict on a baseline JPEG's entropy-coded
// data without decoding a pixel.
//
// The GPU's JPEG engines decode damaged scans without a word (a scan cut
// short and closed with EOI, flipped or zeroed bytes, a marker inside the
// scan): they deliver an image where libjpeg, and so imgpipe's CPU route,
// reports "corrupt JPEG". With `decode.verify: full` the probe runs this check
// on every JPEG it sends to the engines; a JPEG that is not clean takes the
// CPU route instead, which then gives libjpeg's verdict (docs/gpu-decode.md,
// "Entropy check"). The check walks the Huffman codes of every block, as
// libjpeg does, and skips what libjpeg computes from them (coefficients,
// IDCT, colour): about half a CPU decode's cost
// (docs/benchmarks.md#entropy-check).
//
// It is stricter than libjpeg, never looser: "clean" means libjpeg decodes the
// file without a warning that imgpipe's CPU route counts as damage. It also
// fails what libjpeg decodes silently but differently from the engines (a
// coefficient index past 63, a DC difference category above 11, an AC size
// above 10) and what it merely tolerates (stray bytes before a marker, a
// segment between the scan and EOI); those files take the CPU route too.
// Baseline and extended sequential Huffman JPEGs with 8-bit samples and one
// scan holding every component: what the engines take
// (codecs/parse/jpeg_markers.hpp: gpu_route_refusal). Never throws, never reads out
// of bounds (tests/fuzz: fuzz_probe).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "codecs/parse/jpeg_markers.hpp"

namespace imgpipe::codecs {

struct EntropyCheck {
  bool clean = false;
  // Why not, when not clean (a constant string: "bad Huffman code", ...).
  std::string_view reason;
  std::uint64_t mcus = 0;  // MCUs walked
};

// Walks the JPEG from its marker segments (`segments`:
// parse_jpeg_segments(bytes), the parse the probe's layout and structural
// checks read too) through the entropy-coded data to EOI.
EntropyCheck check_entropy(std::span<const unsigned char> bytes, const JpegSegments& segments) noexcept;
// The same, parsing the segments itself.
EntropyCheck check_entropy(std::span<const unsigned char> bytes) noexcept;

}  // namespace imgpipe::codecs
