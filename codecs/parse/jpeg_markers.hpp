// The JPEG marker parser: one walk over a JPEG's marker segments, from SOI
// to the first start-of-scan, without decoding. Its result (JpegSegments)
// is parsed once and read by everything that needs a JPEG's headers: the
// probe's layout (jpeg_layout(), here), its structural checks
// (jpeg_checks.hpp) and the entropy walk (jpeg_entropy.hpp), and the image
// header sniffer (image_header.hpp: the frame size, coding process and EXIF
// orientation; where the entropy-coded data starts). Never reads out of
// bounds (tests/fuzz: fuzz_probe, fuzz_decode, fuzz_entropy); throws
// nothing but std::bad_alloc (parse_jpeg_segments' list).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace imgpipe::codecs {

// The big-endian 16-bit value at `p`.
inline unsigned be16(const unsigned char* p) noexcept { return (static_cast<unsigned>(p[0]) << 8) | p[1]; }

// What the walk found, summed up. Offsets are from the start of the bytes.
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

// One marker the walk met: FF, the marker code, and the two bytes after it,
// read as a length field for every marker (a standalone marker has none;
// the readers that refuse such a marker look at it only after the length).
struct JpegSegment {
  unsigned char marker = 0;  // the code after FF (0xC4 DHT, 0xDA SOS, 0xD8 SOI, ...)
  std::size_t at = 0;        // offset of the FF before the code (the last of any fill bytes)
  std::size_t length = 0;    // the 16-bit field after the code (it counts itself)
  std::size_t body() const noexcept { return at + 4; }         // the first byte after the length field
  std::size_t end() const noexcept { return at + 2 + length; }  // one past the segment
  // A length of at least 2 whose segment lies within `size` bytes.
  bool whole(std::size_t size) const noexcept { return length >= 2 && at + 2 + length <= size; }
  // SOI, RSTn or TEM: a marker without a segment.
  bool standalone() const noexcept {
    return marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01;
  }
};

// A JPEG's marker segments before its first scan, parsed once.
struct JpegSegments {
  JpegMarkers markers;
  // Every marker the walk met, in order. It ends at the first SOS, or at a
  // segment whose length field is under 2 or runs past the end (both
  // included); standalone markers are listed and walked over.
  std::vector<JpegSegment> list;
  // Where the walk stopped when the list ends otherwise: at a byte that is
  // not FF where a marker should be, or with fewer than four bytes left
  // (0 when the list ends at a segment).
  std::size_t stop_at = 0;
  // The list's last entry is the first SOS.
  bool reached_scan() const noexcept { return markers.sos != 0; }
};

// Walks from offset 2 (after SOI, whether or not it is there) to the first
// start-of-scan, skipping fill bytes and standalone markers.
JpegSegments parse_jpeg_segments(std::span<const unsigned char> bytes);
// The same walk's summary alone (no list: nothing allocated).
JpegMarkers read_jpeg_markers(std::span<const unsigned char> bytes) noexcept;

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
inline JpegLayout jpeg_layout(std::span<const unsigned char> bytes, const JpegSegments& s) {
  return jpeg_layout(bytes, s.markers);
}
inline JpegLayout parse_jpeg_layout(std::span<const unsigned char> bytes) {
  return jpeg_layout(bytes, read_jpeg_markers(bytes));
}

// Why a JPEG cannot take the GPU route, or empty when its layout can. The
// hardware's own rules (docs/gpu-decode.md); nvJPEG has the last word.
std::string gpu_route_refusal(const JpegLayout& j);

}  // namespace imgpipe::codecs
