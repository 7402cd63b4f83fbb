#include "codecs/parse/image_header.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace imgpipe::codecs {

namespace {

std::uint32_t be32(const unsigned char* p) { return (p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }
std::uint32_t le32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// The Orientation tag (0x0112) of IFD0 of a classic TIFF structure (byte
// order, 42, offset of IFD0): an EXIF payload, or a TIFF file itself; 1 when
// absent or malformed.
int tiff_orientation(const unsigned char* t, std::size_t tn) noexcept {
  if (tn < 8) return 1;
  bool le;
  if (t[0] == 'I' && t[1] == 'I') le = true;
  else if (t[0] == 'M' && t[1] == 'M') le = false;
  else return 1;
  auto u16 = [&](std::size_t o) -> std::uint32_t { return le ? t[o] | (t[o + 1] << 8) : (t[o] << 8) | t[o + 1]; };
  auto u32 = [&](std::size_t o) -> std::uint32_t {
    return le ? t[o] | (t[o + 1] << 8) | (t[o + 2] << 16) | (static_cast<std::uint32_t>(t[o + 3]) << 24)
              : (static_cast<std::uint32_t>(t[o]) << 24) | (t[o + 1] << 16) | (t[o + 2] << 8) | t[o + 3];
  };
  if (u16(2) != 42) return 1;
  const std::size_t ifd = u32(4);
  if (ifd + 2 > tn) return 1;
  const std::size_t count = u16(ifd);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t e = ifd + 2 + 12 * k;
    if (e + 12 > tn) return 1;
    if (u16(e) != 0x0112) continue;
    if (u16(e + 2) != 3 || u32(e + 4) != 1) return 1;  // SHORT, one value (in the entry)
    const std::uint32_t v = u16(e + 8);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

// The Orientation tag of an APP1 Exif payload ("Exif\0\0" then a TIFF
// structure); 1 when absent or malformed.
int exif_orientation(const unsigned char* p, std::size_t n) noexcept {
  if (n < 6 + 8 || std::memcmp(p, "Exif\0\0", 6) != 0) return 1;
  return tiff_orientation(p + 6, n - 6);
}

// PNG: the orientation in an eXIf chunk (a TIFF structure, before or after
// the image data, as libpng reads it and OpenCV applies it); 1 when none.
int png_orientation(std::span<const unsigned char> b) noexcept {
  std::size_t i = 8;
  while (i <= b.size() && b.size() - i >= 12) {
    const std::size_t len = be32(&b[i]);
    if (len > b.size() - i - 12) return 1;
    if (std::memcmp(&b[i + 4], "eXIf", 4) == 0) return tiff_orientation(&b[i + 8], len);
    if (std::memcmp(&b[i + 4], "IEND", 4) == 0) return 1;
    i += 12 + len;
  }
  return 1;
}

// The frame size, coding process and sample precision of the first frame
// header, and the orientation of the first APP1 Exif segment.
void jpeg_fields(std::span<const unsigned char> b, const JpegMarkers& m, ImageHeader& h) noexcept {
  if (m.sof_marker != 0 && m.frame_at + 5 <= b.size()) {
    h.jpeg_sof = m.sof_marker;
    h.precision = b[m.frame_at];
    h.height = be16(&b[m.frame_at + 1]);
    h.width = be16(&b[m.frame_at + 3]);
  }
  if (m.exif_size != 0) h.orientation = exif_orientation(&b[m.exif_at], m.exif_size);
}

// TIFF: ImageWidth (256) and ImageLength (257) from IFD0, SHORT or LONG (or
// LONG8 in BigTIFF). Classic TIFF: 32-bit IFD offset, 16-bit entry count,
// 12-byte entries with a 32-bit count; BigTIFF: bytes 4-5 say 8 (offset size),
// 64-bit IFD offset and entry count, 20-byte entries with a 64-bit count.
void tiff_size(std::span<const unsigned char> b, ImageHeader& h) noexcept {
  const bool le = b[0] == 'I';
  const std::size_t n = b.size();
  auto u16 = [&](std::size_t o) -> std::uint32_t { return le ? b[o] | (b[o + 1] << 8) : (b[o] << 8) | b[o + 1]; };
  auto u32 = [&](std::size_t o) -> std::uint32_t { return le ? le32(&b[o]) : be32(&b[o]); };
  auto u64 = [&](std::size_t o) -> std::uint64_t {
    const std::uint64_t lo = u32(le ? o : o + 4), hi = u32(le ? o + 4 : o);
    return (hi << 32) | lo;
  };
  const bool big = h.bigtiff;
  if (n < (big ? 16u : 8u) || (big && u16(4) != 8)) return;
  const std::uint64_t ifd = big ? u64(8) : u32(4);
  const std::size_t count_size = big ? 8 : 2, entry_size = big ? 20 : 12, value_at = big ? 12 : 8;
  if (ifd > n || n - ifd < count_size) return;
  const std::uint64_t count = big ? u64(ifd) : u16(ifd);
  // Entries past the end of the data stop the walk (so a huge count is harmless).
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t e = ifd + count_size + entry_size * k;
    if (e + entry_size > n) return;
    const std::uint32_t tag = u16(e), type = u16(e + 2);
    if ((tag != 256 && tag != 257) || (big ? u64(e + 4) : u32(e + 4)) != 1) continue;
    std::uint64_t v = type == 3 ? u16(e + value_at) : type == 4 ? u32(e + value_at) : 0;
    if (big && type == 16)  // LONG8, kept within int64 (anything that large is beyond the limit anyway)
      v = std::min<std::uint64_t>(u64(e + value_at), std::numeric_limits<std::int64_t>::max());
    (tag == 256 ? h.width : h.height) = static_cast<std::int64_t>(v);
  }
}

// WebP: the number of whole ANMF (animation frame) chunks at the top level of
// the RIFF (each chunk: FourCC, 32-bit size, data padded to an even length).
int webp_frames(std::span<const unsigned char> b) noexcept {
  int frames = 0;
  std::size_t i = 12;
  while (b.size() - i >= 8) {
    const std::uint64_t len = le32(&b[i + 4]);
    if (len > b.size() - i - 8) break;  // cut short
    if (std::memcmp(&b[i], "ANMF", 4) == 0) ++frames;
    if (len + (len & 1) > b.size() - i - 8) break;  // no padding byte left
    i += 8 + len + (len & 1);
  }
  return frames;
}

// WebP: the canvas size of a VP8X file (and its animation flag), or the frame
// size of a simple lossy (VP8) or lossless (VP8L) file.
void webp_size(std::span<const unsigned char> b, ImageHeader& h) noexcept {
  const std::size_t n = b.size();
  if (n < 30) return;
  const unsigned char* c = &b[12];
  if (std::memcmp(c, "VP8X", 4) == 0) {
    h.width = 1 + (b[24] | (b[25] << 8) | (b[26] << 16));
    h.height = 1 + (b[27] | (b[28] << 8) | (b[29] << 16));
    h.animated = (b[20] & 0x02) != 0;
    if (h.animated) h.frames = webp_frames(b);
  } else if (std::memcmp(c, "VP8 ", 4) == 0 && b[23] == 0x9D && b[24] == 0x01 && b[25] == 0x2A) {
    h.width = (b[26] | (b[27] << 8)) & 0x3FFF;
    h.height = (b[28] | (b[29] << 8)) & 0x3FFF;
  } else if (std::memcmp(c, "VP8L", 4) == 0 && b[20] == 0x2F) {
    const std::uint32_t bits = le32(&b[21]);
    h.width = 1 + (bits & 0x3FFF);
    h.height = 1 + ((bits >> 14) & 0x3FFF);
  }
}

// sniff_header, with a JPEG's markers read here when `markers` is null.
ImageHeader sniff(std::span<const unsigned char> b, const JpegMarkers* markers) noexcept {
  static constexpr unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  ImageHeader h;
  const std::size_t n = b.size();
  if (jpeg_signature(b)) {
    h.format = "jpeg";
    jpeg_fields(b, markers ? *markers : read_jpeg_markers(b), h);
  } else if (n >= 8 && std::memcmp(b.data(), png_sig, 8) == 0) {
    h.format = "png";
    if (n >= 24 && std::memcmp(&b[12], "IHDR", 4) == 0) {
      h.width = be32(&b[16]);
      h.height = be32(&b[20]);
    }
    h.orientation = png_orientation(b);
  } else if (n >= 2 && b[0] == 'B' && b[1] == 'M') {
    h.format = "bmp";
    if (n >= 26) {  // BITMAPINFOHEADER and later; height < 0 means top-down
      h.width = static_cast<std::int32_t>(le32(&b[18]));
      h.height = static_cast<std::int32_t>(le32(&b[22]));
      if (h.width < 0) h.width = -h.width;
      if (h.height < 0) h.height = -h.height;
    }
  } else if (n >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(&b[8], "WEBP", 4) == 0) {
    h.format = "webp";
    webp_size(b, h);
  } else if (n >= 4 && ((b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
                        (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43)))) {
    h.format = "tiff";
    h.bigtiff = b[0] == 'I' ? b[2] == 43 : b[3] == 43;
    tiff_size(b, h);
    if (!h.bigtiff) h.orientation = tiff_orientation(b.data(), b.size());
  }
  return h;
}

}  // namespace

ImageHeader sniff_header(std::span<const unsigned char> b) noexcept { return sniff(b, nullptr); }

ImageHeader sniff_header(std::span<const unsigned char> b, const JpegMarkers& m) noexcept { return sniff(b, &m); }

bool jpeg_has_eoi(std::span<const unsigned char> b) noexcept { return jpeg_has_eoi(b, read_jpeg_markers(b)); }

bool jpeg_has_eoi(std::span<const unsigned char> b, const JpegMarkers& m) noexcept {
  // Entropy-coded data never contains FF D9 (a data FF is followed by 00), so
  // an EOI anywhere after the first scan starts means the stream was closed;
  // data some cameras append after EOI does not matter. An EOI before the
  // first scan (an EXIF thumbnail's) does not count.
  const std::size_t sos = m.sos;
  if (sos == 0) return false;
  for (std::size_t i = b.size() - 1; i > sos + 1; --i)
    if (b[i] == 0xD9 && b[i - 1] == 0xFF) return true;
  return false;
}

bool png_has_iend(std::span<const unsigned char> b) noexcept {
  std::size_t i = 8;  // after the signature: chunks of length, type, data, CRC
  while (i <= b.size() && b.size() - i >= 8) {
    const std::size_t len = be32(&b[i]);
    if (std::memcmp(&b[i + 4], "IEND", 4) == 0) return b.size() - i >= 12;  // with its CRC
    if (len > b.size() - i - 8) return false;
    i += 12 + len;
  }
  return false;
}

}  // namespace imgpipe::codecs
