#include "decode.hpp"

#include <opencv2/imgcodecs.hpp>

#include <fmt/format.h>

namespace imgpipe::stages {

namespace {
std::uint32_t be32(const unsigned char* p) { return (p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }
std::uint16_t be16(const unsigned char* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }
}  // namespace

namespace {
// Walks JPEG marker segments from SOI. Fills the frame size from the first
// SOFn and returns the offset of the first start-of-scan (0 if none found).
std::size_t walk_jpeg(std::span<const unsigned char> b, ImageHeader* h) noexcept {
  const std::size_t n = b.size();
  std::size_t i = 2;
  while (i + 4 <= n) {
    if (b[i] != 0xFF) return 0;
    const unsigned char m = b[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) {
      i += 2;
      continue;
    }
    if (m == 0xDA) return i;
    const std::size_t len = be16(&b[i + 2]);
    if (len < 2) return 0;
    const bool sof = (m >= 0xC0 && m <= 0xCF) && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof && h && h->width == 0 && i + 9 <= n) {
      h->height = be16(&b[i + 5]);
      h->width = be16(&b[i + 7]);
    }
    i += 2 + len;
  }
  return 0;
}
}  // namespace

ImageHeader sniff_header(std::span<const unsigned char> b) noexcept {
  ImageHeader h;
  const std::size_t n = b.size();
  if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    h.format = "jpeg";
    walk_jpeg(b, &h);
  } else if (n >= 24 && b[0] == 0x89 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G') {
    h.format = "png";
    if (b[12] == 'I' && b[13] == 'H' && b[14] == 'D' && b[15] == 'R') {
      h.width = be32(&b[16]);
      h.height = be32(&b[20]);
    }
  } else if (n >= 2 && b[0] == 'B' && b[1] == 'M') {
    h.format = "bmp";
  } else if (n >= 12 && b[0] == 'R' && b[1] == 'I' && b[2] == 'F' && b[3] == 'F' && b[8] == 'W' && b[9] == 'E' &&
             b[10] == 'B' && b[11] == 'P') {
    h.format = "webp";
  } else if (n >= 4 && ((b[0] == 'I' && b[1] == 'I' && b[2] == 42 && b[3] == 0) ||
                        (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && b[3] == 42))) {
    h.format = "tiff";
  }
  return h;
}

bool jpeg_has_eoi(std::span<const unsigned char> b) noexcept {
  // Entropy-coded data never contains FF D9 (a data FF is followed by 00), so
  // an EOI anywhere after the first scan starts means the stream was closed;
  // data some cameras append after EOI does not matter. An EOI before the
  // first scan (an EXIF thumbnail's) does not count.
  const std::size_t sos = walk_jpeg(b, nullptr);
  if (sos == 0) return false;
  for (std::size_t i = b.size() - 1; i > sos + 1; --i)
    if (b[i] == 0xD9 && b[i - 1] == 0xFF) return true;
  return false;
}

std::string Decode::decode(std::span<const unsigned char> bytes, cv::Mat& out) const {
  // `out` is a pooled Mat that may hold the previous image: cv::imdecode
  // leaves its destination untouched when no decoder accepts the data or the
  // header cannot be read, so a failure would pass for that old image.
  out.release();
  const ImageHeader h = sniff_header(bytes);
  if (h.width > 0 && h.height > 0 && h.width * h.height > cfg_.max_pixels)
    return fmt::format("image of {}x{} ({} pixels) exceeds decode.max_pixels ({})", h.width, h.height,
                       h.width * h.height, cfg_.max_pixels);
  if (h.format == "jpeg" && !cfg_.accept_truncated && !jpeg_has_eoi(bytes))
    return "corrupt JPEG: truncated (no end-of-image marker)";
  try {
    // cv::Mat header over the pooled bytes: no copy.
    const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<unsigned char*>(bytes.data()));
    cv::imdecode(buf, cv::IMREAD_COLOR, &out);
  } catch (const cv::Exception& e) {
    out.release();
    return std::string("decode failed: ") + e.what();
  }
  if (out.empty())
    return h.format.empty() ? "not a recognised image format" : "corrupt " + h.format + ": OpenCV could not decode it";
  return {};
}

Work* Decode::operator()(Work* w) const {
  if (w->flush || !w->error.empty()) return w;
  BusyTimer t(stats_);
  w->error = decode(w->bytes, w->decoded);
  ++stats_.items;
  if (w->error.empty()) stats_.bytes += w->decoded.total() * w->decoded.elemSize();
  return w;
}

}  // namespace imgpipe::stages
