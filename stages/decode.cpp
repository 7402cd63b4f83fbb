#include "decode.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "geometry.hpp"
#include "imgpipe/augment.hpp"
#include "transform.hpp"

namespace imgpipe::stages {

namespace {
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

int reduced_scale(std::int64_t w, std::int64_t h, const ResizeConfig& resize) noexcept {
  // A box of the full-size original is cut (a region decode, decode.region, instead).
  if (w <= 0 || h <= 0 || resize.boxed()) return 1;
  const std::int64_t W = resize.width, H = resize.height;
  for (const std::int64_t r : {8, 4, 2}) {
    bool covers = false;
    switch (resize.mode) {
      case ResizeMode::stretch: covers = (w + r - 1) / r >= W && (h + r - 1) / r >= H; break;
      // max(W/w, H/h) <= 1/r  <=>  W*r <= w and H*r <= h
      case ResizeMode::center_crop: covers = W * r <= w && H * r <= h; break;
      // min(W/w, H/h) <= 1/r  <=>  W*r <= w or H*r <= h
      case ResizeMode::letterbox: covers = W * r <= w || H * r <= h; break;
      case ResizeMode::random_crop: covers = false; break;  // boxed: above
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
std::string unsupported_feature(const codecs::ImageHeader& h) {
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

std::string Decode::check_header(std::span<const unsigned char> bytes, const codecs::ImageHeader& h) const {
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
  if (h.format == "jpeg" && !cfg_.accept_truncated && !codecs::jpeg_has_eoi(bytes))
    return "corrupt JPEG: truncated (no end-of-image marker)";
  if (h.format == "png" && !cfg_.accept_truncated && !codecs::png_has_iend(bytes))
    return "corrupt PNG: truncated (no IEND chunk)";
  return {};
}

Decode::Decode(const DecodeConfig& cfg, const TransformConfig& transform, bool video_orientation,
               std::size_t yuv_budget, std::uint64_t epoch)
    : Stage("decode", true), decoders_(codecs::cpu_image_decoders()), cfg_(cfg), resize_(transform.resize),
      transform_(transform), epoch_(epoch), video_orientation_(video_orientation), yuv_budget_(yuv_budget) {}

codecs::ImageDecodeOptions Decode::options_for(const codecs::ImageHeader& h, const SampleKey* sample) const {
  codecs::ImageDecodeOptions o;
  o.orientation = cfg_.exif_orientation;
  o.accept_damaged = cfg_.accept_truncated;
  // Orientations 5..8 transpose the image: the target applies to the turned one.
  const bool turned = (cfg_.exif_orientation ? h.orientation : 1) >= 5;
  const std::int64_t w = turned ? h.height : h.width, hh = turned ? h.width : h.height;
  if (cfg_.reduced) o.scale_denom = reduced_scale(w, hh, resize_);
  // The box the transform will cut (augment_of draws the same one from the
  // decoded size, which is the header's).
  if (sample && cfg_.region && resize_.boxed() && w > 0 && hh > 0 && w <= INT32_MAX &&
      hh <= INT32_MAX) {
    const Augment a =
        draw_augment(transform_, epoch_, sample->item, sample->frame, static_cast<int>(w), static_cast<int>(hh));
    o.region = {a.x, a.y, a.width, a.height};
  }
  return o;
}

std::string Decode::decode(std::span<const unsigned char> bytes, cv::Mat& out, int* scale,
                           SampleGeometry* geometry, const SampleKey* sample, cv::Point* origin) const {
  // `out` is a pooled Mat that may hold the previous image: a backend that
  // leaves its destination untouched on failure (cv::imdecode does, when no
  // decoder accepts the data) would pass that old image off as this one.
  out.release();
  if (scale) *scale = 1;
  if (origin) *origin = {0, 0};
  const codecs::ImageHeader h = codecs::sniff_header(bytes);
  if (std::string err = check_header(bytes, h); !err.empty()) return err;
  const codecs::ImageDecoder* backend = nullptr;
  for (const codecs::ImageDecoder* d : decoders_)
    if (d->takes(h)) {
      backend = d;
      break;
    }
  // The header's checks name every feature no backend reads: never met.
  if (backend == nullptr) return fmt::format("no decoder here takes this {} image", upper(h.format));
  codecs::ImageDecoded done;
  if (std::string err = backend->decode(bytes, h, options_for(h, sample), out, done); !err.empty()) return err;
  if (scale) *scale = done.scale;
  if (origin) *origin = {done.origin_x, done.origin_y};
  if (geometry) *geometry = decoded_geometry(done.stored_width, done.stored_height, done.orientation, done.scale);
  return {};
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
  if (o == 1 && (yuv_budget_ > 0 || cpu_one_pass(transform_))) {
    kernels::YuvImage img;
    // The GPU converts it (when its planes fit the frame's share of the
    // slot), or the transform stage in one pass to its output.
    if (f.yuv(img) && (yuv_budget_ == 0 || staged_yuv(img).bytes <= yuv_budget_)) {
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
  w.pixels.origin_x = w.pixels.origin_y = 0;
  if (w.pixels.video) return convert_video(w);
  const SampleKey key{w.sample.input ? w.sample.input->id : 0, w.sample.frame};
  cv::Point origin;
  w.sample.error = decode(w.pixels.bytes, w.pixels.decoded, nullptr, &w.sample.geometry, &key, &origin);
  if (w.failed()) return {1, 0};
  w.pixels.origin_x = origin.x;
  w.pixels.origin_y = origin.y;
  return {1, w.pixels.decoded.total() * w.pixels.decoded.elemSize()};
}

}  // namespace imgpipe::stages
