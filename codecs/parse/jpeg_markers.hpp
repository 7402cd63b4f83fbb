// The JPEG marker parser: one walk over a JPEG's marker segments, from SOI
// to the first start-of-scan, without decoding. The probe stage reads the
// layout the GPU's JPEG engines must take from it (jpeg_layout()); the CPU
// decoder reads the frame size, coding process and EXIF orientation from it
// (stages/decode.hpp: sniff_header) and where the entropy-coded data starts.
// Never throws, never reads out of bounds (tests/fuzz: fuzz_probe,
// fuzz_decode).
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace imgpipe::codecs {

// What the walk found. Offsets are from the start of the bytes.
struct JpegMarkers {
  bool soi = false;   // the bytes start with SOI (FF D8)
  // The first start-of-scan marker's offset, 0 when the walk did not reach
  // one (damaged or cut short).
  std::size_t sos = 0;
  // A segment the walk could not take as it is before that scan: a
  // standalone marker (SOI, EOI, RSTn, TEM) or a segment past the end.
  bool irregular = false;
  // The first frame header (SOFn): its marker (0xC0..0xCF; 0 when none was
  // found), where its body starts (after the length field) and its length
  // field. frame_complete: the whole segment lies within the bytes.
  int sof_marker = 0;
  std::size_t frame_at = 0;
  std::size_t frame_length = 0;
  bool frame_complete = false;
  int restart_interval = 0;  // DRI, in MCUs, before the scan; 0 = none
  // The first APP1 Exif segment's payload ("Exif\0\0" and a TIFF structure);
  // exif_size 0 when none was found whole.
  std::size_t exif_at = 0;
  std::size_t exif_size = 0;
};
// Walks from offset 2 (after SOI, whether or not it is there) to the first
// start-of-scan, skipping fill bytes and standalone markers.
JpegMarkers read_jpeg_markers(std::span<const unsigned char> bytes) noexcept;

// The big-endian 16-bit value at `p`.
inline unsigned be16(const unsigned char* p) noexcept { return (static_cast<unsigned>(p[0]) << 8) | p[1]; }

// What a JPEG's markers say about its layout. Never throws.
struct JpegLayout {
  bool valid = false;        // SOI, a frame header and a scan header were found, in bounds, nothing irregular
  int sof = -1;              // the frame marker's number: 0 baseline, 1 extended, 2 progressive, 3 lossless, 9.. arithmetic
  int precision = 0;         // bits per sample
  int width = 0, height = 0;
  int components = 0;
  int h_max = 0, v_max = 0;  // largest sampling factors
  int restart_interval = 0;  // DRI, in MCUs; 0 = none
  std::string subsampling;   // "444", "422", "420", "440", "411", "410", "gray" or "other"
};
JpegLayout jpeg_layout(std::span<const unsigned char> bytes, const JpegMarkers& m);
inline JpegLayout parse_jpeg_layout(std::span<const unsigned char> bytes) {
  return jpeg_layout(bytes, read_jpeg_markers(bytes));
}

// Why a JPEG cannot take the GPU route, or empty when its layout can. The
// hardware's own rules (docs/gpu-decode.md); nvJPEG has the last word.
std::string gpu_route_refusal(const JpegLayout& j);

}  // namespace imgpipe::codecs
