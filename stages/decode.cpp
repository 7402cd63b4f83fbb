#include "decode.hpp"

#include "codecs/parse/jpeg_markers.hpp"
#include "geometry.hpp"
#include "codecs/image/libjpeg/jpeg_decode.hpp"
#include "transform.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <mutex>

#include <opencv2/imgcodecs.hpp>

#include <fmt/format.h>

namespace imgpipe::stages {

namespace {
std::uint32_t be32(const unsigned char* p) { return (p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

namespace {
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
void jpeg_fields(std::span<const unsigned char> b, const codecs::JpegMarkers& m, ImageHeader& h) noexcept {
  if (m.sof_marker != 0 && m.frame_at + 5 <= b.size()) {
    h.jpeg_sof = m.sof_marker;
    h.precision = b[m.frame_at];
    h.height = codecs::be16(&b[m.frame_at + 1]);
    h.width = codecs::be16(&b[m.frame_at + 3]);
  }
  if (m.exif_size != 0) h.orientation = exif_orientation(&b[m.exif_at], m.exif_size);
}
}  // namespace

namespace {
std::uint32_t le32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
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
}  // namespace

ImageHeader sniff_header(std::span<const unsigned char> b) noexcept {
  static constexpr unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  ImageHeader h;
  const std::size_t n = b.size();
  if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    h.format = "jpeg";
    jpeg_fields(b, codecs::read_jpeg_markers(b), h);
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

bool jpeg_has_eoi(std::span<const unsigned char> b) noexcept {
  // Entropy-coded data never contains FF D9 (a data FF is followed by 00), so
  // an EOI anywhere after the first scan starts means the stream was closed;
  // data some cameras append after EOI does not matter. An EOI before the
  // first scan (an EXIF thumbnail's) does not count.
  const std::size_t sos = codecs::read_jpeg_markers(b).sos;
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

int reduced_scale(std::int64_t w, std::int64_t h, const ResizeConfig& resize) noexcept {
  if (w <= 0 || h <= 0) return 1;
  const std::int64_t W = resize.width, H = resize.height;
  for (const std::int64_t r : {8, 4, 2}) {
    bool covers = false;
    switch (resize.mode) {
      case ResizeMode::stretch: covers = (w + r - 1) / r >= W && (h + r - 1) / r >= H; break;
      // max(W/w, H/h) <= 1/r  <=>  W*r <= w and H*r <= h
      case ResizeMode::center_crop: covers = W * r <= w && H * r <= h; break;
      // min(W/w, H/h) <= 1/r  <=>  W*r <= w or H*r <= h
      case ResizeMode::letterbox: covers = W * r <= w || H * r <= h; break;
    }
    if (covers) return static_cast<int>(r);
  }
  return 1;
}

namespace {

// The largest width or height each format's header can state (JPEG: 16 bits;
// PNG and BMP: signed 32 bits; WebP: 14 bits; TIFF: 32 bits).
std::int64_t format_limit(const std::string& format) noexcept {
  if (format == "jpeg") return 65535;
  if (format == "webp") return 16383;
  if (format == "tiff") return 4294967295LL;
  return 2147483647LL;  // png, bmp
}

// Features of a recognised format that no decoder here reads, named (or a
// sample precision no JPEG process allows, as corrupt); empty when there are
// none. libjpeg(-turbo) as built here decodes 8-bit baseline, extended,
// progressive and arithmetic-coded JPEGs only: 12-bit samples need its
// separate 12-bit build or API, and the lossless and hierarchical processes
// are not implemented (it would fail with "Unsupported JPEG data precision
// 12" or "Unsupported JPEG process", reported as corrupt). OpenCV 4.6 reads
// still WebPs only: an animated one comes back empty, as if damaged.
std::string unsupported_feature(const ImageHeader& h) {
  if (h.format == "jpeg" && h.jpeg_sof != 0) {
    const int k = h.jpeg_sof - 0xC0;
    if (k == 3 || k == 7 || k == 11 || k == 15)
      return fmt::format("lossless JPEG (SOF{}) is not supported", k);
    if (k == 5 || k == 6 || k == 13 || k == 14)
      return fmt::format("hierarchical JPEG (SOF{}) is not supported", k);
    if (h.precision == 12)
      return fmt::format("12-bit JPEG (sample precision 12, SOF{}) is not supported: 8-bit samples only", k);
    if (h.precision != 8)
      return fmt::format("corrupt JPEG: sample precision {} in SOF{} (8 or 12 for DCT-based JPEG)", h.precision, k);
  }
  if (h.format == "webp" && h.animated)
    return h.frames > 0
               ? fmt::format("animated WebP ({} frames) is not supported: still WebP only", h.frames)
               : std::string("animated WebP is not supported: still WebP only");
  return {};
}

}  // namespace

std::string Decode::check_header(std::span<const unsigned char> bytes, const ImageHeader& h) const {
  // Only the formats above reach OpenCV. Its other decoders (DICOM through
  // GDCM, Sun raster, PFM, HDR, ...) are left out on purpose: GDCM, as Debian
  // builds it, aborts the process on a malformed file (found by fuzzing), and
  // a file that is not a supported image is an input error, not a crash.
  if (h.format.empty())
    return bytes.empty() ? "empty file (0 bytes)"
                         : "not a recognised image format (supported: JPEG, PNG, BMP, WebP, TIFF)";
  // OpenCV picks its decoder by its own signature test. For PNG, BMP and TIFF
  // that test is the magic number checked above, but its WebP test is
  // stricter (libwebp must parse the first 32 bytes): when it refuses a file,
  // OpenCV goes on to the only readers that do not look at the first bytes,
  // GDCM ("DICM" at offset 128, and it aborts on malformed data) and GDAL
  // ("DTED" at 140). A WebP with either marker is not let through (a real
  // one has them by chance with a probability of 2^-32).
  if (h.format == "webp" && ((bytes.size() >= 132 && std::memcmp(&bytes[128], "DICM", 4) == 0) ||
                             (bytes.size() >= 144 && std::memcmp(&bytes[140], "DTED", 4) == 0)))
    return "corrupt WebP: not a WebP header OpenCV accepts (and DICOM/DTED markers inside)";
  if (std::string what = unsupported_feature(h); !what.empty()) return what;
  const std::int64_t limit = format_limit(h.format);
  if (h.width > limit || h.height > limit)
    return fmt::format("corrupt {}: header claims {}x{}, beyond the format's limit of {} per side", upper(h.format),
                       h.width, h.height, limit);
  // Both sides are below 2^32 now; compare without multiplying (no overflow).
  if (h.width > 0 && h.height > 0 && h.width > cfg_.max_pixels / h.height)
    return fmt::format("image of {}x{} ({} pixels) exceeds decode.max_pixels ({})", h.width, h.height,
                       static_cast<unsigned long long>(h.width) * static_cast<unsigned long long>(h.height),
                       cfg_.max_pixels);
  if (h.format == "jpeg" && !cfg_.accept_truncated && !jpeg_has_eoi(bytes))
    return "corrupt JPEG: truncated (no end-of-image marker)";
  if (h.format == "png" && !cfg_.accept_truncated && !png_has_iend(bytes))
    return "corrupt PNG: truncated (no IEND chunk)";
  return {};
}

std::string Decode::decode_jpeg_bytes(std::span<const unsigned char> bytes, const ImageHeader& h, cv::Mat& out,
                                      int* scale) const {
  // libjpeg directly: its corrupt-data warnings become errors (jpeg_decode.hpp).
  codecs::JpegDecodeOptions opt;
  opt.orientation = cfg_.exif_orientation ? h.orientation : 1;
  opt.accept_damaged = cfg_.accept_truncated;
  if (cfg_.reduced) {
    // Orientations 5..8 transpose the image: the target applies to the turned one.
    const bool turned = opt.orientation >= 5;
    opt.scale_denom = reduced_scale(turned ? h.height : h.width, turned ? h.width : h.height, resize_);
  }
  std::string err;
  try {
    err = codecs::decode_jpeg(bytes, opt, out);
  } catch (const cv::Exception& e) {  // allocation of the output
    out.release();
    err = std::string("decode failed: ") + e.what();
  }
  if (err.empty() && scale) *scale = opt.scale_denom;
  return err;
}

std::string Decode::decode_with_opencv(std::span<const unsigned char> bytes, const ImageHeader& h,
                                       cv::Mat& out) const {
  const int orient = cfg_.exif_orientation ? 0 : cv::IMREAD_IGNORE_ORIENTATION;
  int flags = cv::IMREAD_COLOR | orient;
  // PNG and TIFF may hold 16-bit samples: decode them as they are and scale
  // here, the same way for every format (see decode.hpp).
  const bool wide = h.format == "png" || h.format == "tiff";
  if (wide) flags |= cv::IMREAD_ANYDEPTH;
  try {
    // cv::Mat header over the pooled bytes: no copy.
    const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<unsigned char*>(bytes.data()));
    cv::imdecode(buf, flags, &out);
    if (wide && !out.empty() && out.depth() != CV_8U) {
      if (out.depth() == CV_16U) {
        out.convertTo(out, CV_8U, 1.0 / 257.0);  // rounds; v / 257 is never halfway
      } else {
        // Float or 32-bit samples: OpenCV's own conversion to 8 bits.
        out.release();
        cv::imdecode(buf, cv::IMREAD_COLOR | orient, &out);
      }
    }
  } catch (const cv::Exception& e) {
    out.release();
    return std::string("decode failed: ") + e.what();
  }
  if (out.empty()) return "corrupt " + upper(h.format) + ": OpenCV could not decode it";
  if (out.type() != CV_8UC3) {
    out.release();
    return "decode produced an unexpected pixel format";
  }
  return {};
}

namespace {
// OpenCV builds its list of image decoders on the first cv::imdecode, as a
// function-local static. Threads that come later see it built through the
// guard's inline check, in OpenCV's own (uninstrumented) code, which
// ThreadSanitizer cannot see: it reported the decode threads' reads of the
// decoders' signatures as racing with the thread that built them (CI, TSan,
// the dump test's mpirun ranks). Building it here, in the thread that sets a
// run up, orders it before every stage call (pipeline/src/handoff.hpp); it
// costs one call a process.
void build_opencv_decoders() {
  static std::once_flag once;
  std::call_once(once, [] {
    const unsigned char byte = 0;  // no decoder's signature: nothing is decoded
    (void)cv::imdecode(cv::Mat(1, 1, CV_8UC1, const_cast<unsigned char*>(&byte)), cv::IMREAD_COLOR);
  });
}
}  // namespace

Decode::Decode(const DecodeConfig& cfg, const TransformConfig& transform, bool video_orientation,
               std::size_t yuv_budget)
    : Stage("decode", true), cfg_(cfg), resize_(transform.resize), video_orientation_(video_orientation),
      yuv_budget_(yuv_budget) {
  build_opencv_decoders();
}

SampleGeometry Decode::opencv_geometry(const ImageHeader& h, const cv::Mat& out) const {
  // OpenCV 4.6 applies a PNG's eXIf orientation unless told to ignore it, and
  // a TIFF's orientation tag always (the flag notwithstanding).
  const int o = h.format == "tiff" || (h.format == "png" && cfg_.exif_orientation) ? h.orientation : 1;
  const bool turned = o >= 5;
  const std::int64_t w = turned ? h.height : h.width, hh = turned ? h.width : h.height;
  if (w == out.cols && hh == out.rows) return decoded_geometry(static_cast<int>(h.width), static_cast<int>(h.height), o, 1);
  // A header this code misreads (or none): the frame as OpenCV made it.
  return decoded_geometry(out.cols, out.rows, 1, 1);
}

std::string Decode::decode(std::span<const unsigned char> bytes, cv::Mat& out, int* scale,
                           SampleGeometry* geometry) const {
  // `out` is a pooled Mat that may hold the previous image: cv::imdecode
  // leaves its destination untouched when no decoder accepts the data or the
  // header cannot be read, so a failure would pass for that old image.
  out.release();
  int used = 1;
  if (scale) *scale = 1;
  const ImageHeader h = sniff_header(bytes);
  if (std::string err = check_header(bytes, h); !err.empty()) return err;
  if (h.format == "jpeg") {
    std::string err = decode_jpeg_bytes(bytes, h, out, &used);
    if (!err.empty()) return err;
    if (scale) *scale = used;
    const int o = cfg_.exif_orientation ? h.orientation : 1;
    if (geometry) *geometry = decoded_geometry(static_cast<int>(h.width), static_cast<int>(h.height), o, used);
    return {};
  }
  std::string err = decode_with_opencv(bytes, h, out);
  if (err.empty() && geometry) *geometry = opencv_geometry(h, out);
  return err;
}

namespace {

// The EXIF orientation (1..8) that turns a picture `rotation` degrees
// clockwise (0, 90, 180, 270), then mirrors it left to right when `flip`.
int orientation_of(int rotation, bool flip) noexcept {
  switch (rotation) {
    case 90: return flip ? 5 : 6;
    case 180: return flip ? 4 : 3;
    case 270: return flip ? 7 : 8;
    default: return flip ? 2 : 1;
  }
}

}  // namespace

Tally Decode::convert_video(Work& w) const {
  const codecs::VideoFrame& f = *w.pixels.video;
  const int stored_width = f.width(), stored_height = f.height();
  const int o = video_orientation_ ? orientation_of(w.pixels.video_rotation, w.pixels.video_flip) : 1;
  SampleGeometry& g = w.sample.geometry;
  if (yuv_budget_ > 0 && o == 1) {
    kernels::YuvImage img;
    if (f.yuv(img) && staged_yuv(img).bytes <= yuv_budget_) {  // the GPU converts it
      g.stored_width = g.width = stored_width;
      g.stored_height = g.height = stored_height;
      return {1, 0};
    }
  }
  cv::Mat& out = w.pixels.decoded;
  out.create(stored_height, stored_width, CV_8UC3);
  try {
    f.to_bgr(out.data, out.step);
  } catch (const std::exception& e) {
    w.sample.error = fmt::format("frame {} cannot be converted: {}", w.sample.frame, e.what());
  }
  w.pixels.video.reset();  // the decoder's buffer goes back to its pool
  if (w.failed()) return {1, 0};
  codecs::apply_exif_orientation(out, o);
  g.stored_width = stored_width;
  g.stored_height = stored_height;
  g.width = out.cols;
  g.height = out.rows;
  g.orientation = o;
  return {1, out.total() * out.elemSize()};
}

Tally Decode::run(Work& w) const {
  if (w.pixels.video) return convert_video(w);
  w.sample.error = decode(w.pixels.bytes, w.pixels.decoded, nullptr, &w.sample.geometry);
  if (w.failed()) return {1, 0};
  return {1, w.pixels.decoded.total() * w.pixels.decoded.elemSize()};
}

}  // namespace imgpipe::stages
