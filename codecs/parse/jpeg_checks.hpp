// The probe's structural checks of a JPEG before it may go to the GPU's JPEG
// engines (docs/gpu-decode.md, "What the probe checks"). They read the
// marker segments the parser listed (jpeg_markers.hpp: JpegSegments, parsed
// once for the layout, these checks and the entropy walk), then walk the
// entropy-coded segment's markers and the trailer, keeping the tables they
// parsed. The engines decode what libjpeg rejects and
// decode some valid files with other colours; a JPEG that fails a check goes
// to the CPU route, which gives libjpeg's verdict. Never throws, never reads
// out of bounds (tests/fuzz: fuzz_probe).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "codecs/parse/jpeg_markers.hpp"

namespace imgpipe::codecs {

// Why a JPEG stays on the CPU route. Keep jpeg_refusal_name() in step.
enum class JpegRefusal : std::uint8_t {
  none = 0,
  not_jpeg,               // no SOI, or a segment walk that fails before the scan
  segment_length,         // a segment length that runs past the end or disagrees with its content
  huffman_table,          // a DHT with a bad class/id or more than 256 symbols
  huffman_oversubscribed, // Kraft sum over 1, or the all-ones code used (libjpeg: bad Huffman table)
  dc_symbol_range,        // a DC table symbol over 15 (libjpeg rejects it)
  dc_category_large,      // a DC symbol over 11: valid for libjpeg, the engines' colours differ
  table_missing,          // a quant or Huffman table the frame or scan names was never defined
  frame,                  // not one baseline/extended frame, or a SOF field out of range
  component_ids,          // SOF component ids repeated
  sampling,               // sampling factors the engines decode differently (grey not 1x1, chroma not 1x1, >2)
  scan_components,        // SOS components not those of SOF, in order, once each; or a bad SOS field
  colour_transform,       // RGB stored without YCbCr (Adobe transform 0, ids 'R','G','B')
  coarse_quantisation,    // a quant table's DC step >= 128 (quality ~10 and below)
  extreme_aspect,         // a side under 8 pixels or an aspect over 64:1
  marker_in_scan,         // a marker other than RSTn/EOI inside the entropy-coded segment (a segment, a second scan)
  restart_without_dri,    // RSTn in the scan with no restart interval
  restart_sequence,       // RSTn out of sequence, or not the number the restart interval asks for
  no_eoi,                 // the scan is not closed by EOI
  empty_scan,             // no entropy-coded bytes between SOS and EOI
  count_                  // number of reasons
};
constexpr std::size_t jpeg_refusal_count = static_cast<std::size_t>(JpegRefusal::count_);
// A stable snake_case name for reports ("huffman_oversubscribed").
std::string_view jpeg_refusal_name(JpegRefusal r) noexcept;

struct JpegHuffmanTable {
  bool defined = false;
  std::array<std::uint8_t, 17> bits{};  // bits[l]: codes of length l (1..16)
  std::vector<std::uint8_t> vals;
};
struct JpegQuantTable {
  bool defined = false;
  int precision = 0;                  // 0: 8-bit entries, 1: 16-bit
  std::array<std::uint16_t, 64> q{};  // zig-zag order
};
struct JpegFrameComponent {
  int id = 0, h = 0, v = 0, tq = 0;
};
struct JpegScanComponent {
  int id = 0, td = 0, ta = 0;
};

// What the walk parsed. Offsets are from the start of the bytes.
struct JpegStructure {
  std::array<std::array<JpegHuffmanTable, 4>, 2> huffman;  // [class 0 DC / 1 AC][id]
  std::array<JpegQuantTable, 4> quant;
  int sof = -1;  // frame marker - 0xC0
  int precision = 0, width = 0, height = 0;
  std::vector<JpegFrameComponent> frame;
  std::vector<JpegScanComponent> scan;
  int ss = 0, se = 0, ah = 0, al = 0;
  int restart_interval = 0;    // DRI before the scan, in MCUs
  bool jfif = false;           // APP0 "JFIF\0"
  int adobe_transform = -1;    // APP14 "Adobe": its transform flag; -1 none
  std::size_t scan_at = 0;     // first entropy-coded byte
  std::size_t scan_size = 0;   // bytes from scan_at to EOI (RSTn markers and fill bytes included)
  std::size_t eoi_at = 0;      // offset of FF D9 closing the scan; 0 when none
  int restarts = 0;            // RSTn markers in the scan
};

// Reads the whole JPEG into `s`, from its segments (`segments`:
// parse_jpeg_segments(bytes)) through the scan, and returns the first reason
// it may not go to the engines, or JpegRefusal::none. Data after EOI is
// ignored, as libjpeg ignores it.
JpegRefusal check_jpeg(std::span<const unsigned char> bytes, const JpegSegments& segments,
                       JpegStructure& s) noexcept;
// The same, parsing the segments itself.
inline JpegRefusal check_jpeg(std::span<const unsigned char> bytes, JpegStructure& s) noexcept {
  return check_jpeg(bytes, parse_jpeg_segments(bytes), s);
}
inline JpegRefusal check_jpeg(std::span<const unsigned char> bytes) noexcept {
  JpegStructure s;
  return check_jpeg(bytes, s);
}

// libjpeg's test of a Huffman table (jdhuff.c jpeg_make_d_derived_tbl): the
// codes of each length must fit in that length without the all-ones code;
// DC tables hold symbols 0..15 only. True when libjpeg accepts it.
bool huffman_table_ok(const JpegHuffmanTable& t, bool dc) noexcept;

}  // namespace imgpipe::codecs
