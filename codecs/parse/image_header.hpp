// The image header parsers: what an image file says about itself before any
// decoder runs. The format by its signature (JPEG, PNG, BMP, WebP, TIFF and
// BigTIFF), the stored size, the orientation tag (JPEG: EXIF; PNG: eXIf;
// TIFF: tag 274), a JPEG's coding process and sample precision, whether a
// WebP is animated; and whether a JPEG or a PNG was closed (EOI, IEND).
// The decode stage checks its limits on them and picks a decoder by them;
// the probe reads them before the JPEG's own checks. Never throw, never read
// out of bounds (tests/fuzz: fuzz_decode, fuzz_probe).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "codecs/parse/jpeg_markers.hpp"

namespace imgpipe::codecs {

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
// marker) and the sample precision; for WebP whether it is animated.
ImageHeader sniff_header(std::span<const unsigned char> bytes) noexcept;
// The same, for bytes whose JPEG markers the caller has read already
// (`m`: read_jpeg_markers(bytes), or parse_jpeg_segments(bytes).markers).
ImageHeader sniff_header(std::span<const unsigned char> bytes, const JpegMarkers& m) noexcept;

// The signature sniff_header takes as a JPEG's: SOI and the FF of the next
// marker.
inline bool jpeg_signature(std::span<const unsigned char> b) noexcept {
  return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
}

// True when JPEG data holds an EOI marker (FFD9) after its first scan
// starts, whatever follows it (some cameras append data). The second form takes the markers read
// already, as sniff_header does.
bool jpeg_has_eoi(std::span<const unsigned char> bytes) noexcept;
bool jpeg_has_eoi(std::span<const unsigned char> bytes, const JpegMarkers& m) noexcept;

// True when PNG data holds an IEND chunk, walking the chunks from the
// signature (a cut inside any chunk, or before IEND, gives false).
bool png_has_iend(std::span<const unsigned char> bytes) noexcept;

}  // namespace imgpipe::codecs
