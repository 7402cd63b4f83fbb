// Decode stage on the images users have: every format, grey and alpha images
// (real ones from Debian's opencv-doc), 16-bit PNG and TIFF, CMYK and YCCK
// JPEGs (written with libjpeg: tests/jpeg_writer.hpp), EXIF orientation (an APP1 segment spliced
// in by hand), and reduced-size JPEG decode against the full-size path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "codecs/parse/image_header.hpp"
#include "common.hpp"
#include "jpeg_writer.hpp"
#include "oriented.hpp"
#include "stages/decode.hpp"
#include "stages/transform.hpp"

using imgpipe::DecodeConfig;
using imgpipe::ResizeConfig;
using imgpipe::ResizeMode;
using imgpipe::TransformConfig;
using imgpipe::stages::Decode;
using imgpipe::stages::reduced_scale;
using imgpipe::codecs::sniff_header;
using imgpipe::stages::Transform;
using Bytes = std::vector<unsigned char>;

namespace {

TransformConfig target(int w, int h, ResizeMode mode = ResizeMode::stretch) {
  TransformConfig t;
  t.resize.width = w;
  t.resize.height = h;
  t.resize.mode = mode;
  return t;
}

// Decodes with `cfg` for resize target `t`; `scale` receives the reduction.
cv::Mat decode(const Bytes& b, DecodeConfig cfg = {}, TransformConfig t = target(640, 640), int* scale = nullptr) {
  const Decode d(cfg, t);
  cv::Mat out;
  const std::string err = d.decode(b, out, scale);
  CAPTURE(err);
  REQUIRE(err.empty());
  REQUIRE(out.type() == CV_8UC3);
  return out;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

Bytes encode(const std::string& ext, const cv::Mat& m, std::vector<int> params = {}) {
  Bytes b;
  REQUIRE_MESSAGE(cv::imencode(ext, m, b, params), "this OpenCV build cannot write " << ext);
  return b;
}

// A smooth picture with distinct corners (any flip or turn changes it).
cv::Mat test_picture(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<std::uint8_t>(255 * x / std::max(1, w - 1)),
                                        static_cast<std::uint8_t>(255 * y / std::max(1, h - 1)),
                                        static_cast<std::uint8_t>(255 * (x + y) / std::max(1, w + h - 2)));
  cv::rectangle(m, cv::Rect(1, 1, w / 4, h / 5), cv::Scalar(0, 0, 255), cv::FILLED);
  return m;
}

// ------------------------------------------------------------------ libjpeg writer (CMYK / YCCK)
// A 4-component JPEG of `cmyk` (CV_8UC4, the values stored as given) in
// colour space `space` (cmyk or ycck; libjpeg adds the Adobe marker).
Bytes write_cmyk_jpeg(const cv::Mat& cmyk, imgpipe::test::JpegColour space) {
  imgpipe::test::JpegWriteOptions o;
  o.components = 4;
  o.colour = space;
  o.quality = 95;
  return imgpipe::test::write_jpeg(cmyk.ptr<std::uint8_t>(), cmyk.cols, cmyk.rows, cmyk.step, o);
}

// ------------------------------------------------------------------ EXIF
// An APP1 Exif segment whose IFD0 holds one entry, Orientation = `o`, in
// little- (II) or big-endian (MM) TIFF byte order.
Bytes exif_segment(int o, bool little_endian) {
  const Bytes payload = imgpipe::test::exif_orientation_payload(o, little_endian);
  Bytes seg{0xFF, 0xE1};
  const std::size_t len = 2 + payload.size();
  seg.push_back(static_cast<unsigned char>(len >> 8));
  seg.push_back(static_cast<unsigned char>(len));
  seg.insert(seg.end(), payload.begin(), payload.end());
  return seg;
}

// `jpeg` (from cv::imencode: SOI then APP0 JFIF) with an Exif segment after SOI.
Bytes with_orientation(const Bytes& jpeg, int o, bool little_endian = true) {
  REQUIRE(jpeg.size() > 4);
  REQUIRE(jpeg[0] == 0xFF);
  REQUIRE(jpeg[1] == 0xD8);
  const Bytes seg = exif_segment(o, little_endian);
  Bytes out;
  out.reserve(jpeg.size() + seg.size());
  out.push_back(0xFF);
  out.push_back(0xD8);
  out.insert(out.end(), seg.begin(), seg.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}


double psnr(const cv::Mat& a, const cv::Mat& b) {
  const double mse = cv::norm(a, b, cv::NORM_L2SQR) / static_cast<double>(a.total() * a.channels());
  return mse == 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 / mse);
}

double mean_abs(const cv::Mat& a, const cv::Mat& b) {
  return cv::norm(a, b, cv::NORM_L1) / static_cast<double>(a.total() * a.channels());
}

cv::Mat resize_as_transform(const TransformConfig& t, const cv::Mat& in) {
  const Transform tr(t, false);
  cv::Mat out, scratch;
  tr.resize(in, out, scratch);
  return out;
}

}  // namespace

// ======================================================================== formats

TEST_CASE("decode formats: JPEG, PNG, BMP, WebP and TIFF decode to the same BGR image as cv::imdecode") {
  const cv::Mat pic = test_picture(67, 45);
  struct F {
    const char* ext;
    std::vector<int> params;
    const char* format;
    bool lossless;
  };
  const std::vector<F> formats{{".jpg", {cv::IMWRITE_JPEG_QUALITY, 90}, "jpeg", false},
                               {".png", {}, "png", true},
                               {".bmp", {}, "bmp", true},
                               {".webp", {cv::IMWRITE_WEBP_QUALITY, 101}, "webp", true},  // > 100: lossless
                               {".tiff", {}, "tiff", true}};
  for (const auto& f : formats) {
    CAPTURE(f.ext);
    const Bytes b = encode(f.ext, pic, f.params);
    CHECK(sniff_header(b).format == f.format);
    const cv::Mat out = decode(b);
    CHECK(same(out, cv::imdecode(b, cv::IMREAD_COLOR)));
    if (f.lossless) CHECK(same(out, pic));
    else CHECK(mean_abs(out, pic) < 3);
  }
}

TEST_CASE("decode formats: real grey and RGBA PNGs (opencv-doc basketball1.png, cards.png) become BGR as cv::imread") {
  const auto dir = imgpipe::test::opencv_data_dir();
  for (const auto& png : {std::pair{"basketball1.png", 1}, std::pair{"cards.png", 4}}) {
    // (no structured bindings: clang 14 cannot capture them in doctest's CAPTURE)
    const std::string name = png.first;
    const int channels = png.second;
    CAPTURE(name);
    const auto path = dir / name;
    REQUIRE(cv::imread(path.string(), cv::IMREAD_UNCHANGED).channels() == channels);  // what the test is about
    const cv::Mat out = decode(imgpipe::test::read_bytes(path));
    CHECK(same(out, cv::imread(path.string(), cv::IMREAD_COLOR)));
    if (channels == 1) {  // grey: B = G = R
      std::vector<cv::Mat> ch;
      cv::split(out, ch);
      CHECK(cv::norm(ch[0], ch[1], cv::NORM_INF) == 0);
      CHECK(cv::norm(ch[0], ch[2], cv::NORM_INF) == 0);
      CHECK(same(ch[0], cv::imread(path.string(), cv::IMREAD_GRAYSCALE)));
    } else {  // alpha dropped, colour kept
      cv::Mat rgba = cv::imread(path.string(), cv::IMREAD_UNCHANGED), bgr;
      cv::cvtColor(rgba, bgr, cv::COLOR_BGRA2BGR);
      CHECK(same(out, bgr));
    }
  }
}

TEST_CASE("decode formats: 16-bit PNG and TIFF, grey, colour and with alpha, become 8 bits as round(v / 257)") {
  // Values around every rounding edge: v / 257 = k + 0.5 falls between
  // 257k + 128 and 257k + 129.
  const std::vector<std::uint16_t> values{0,     1,     128,   129,   255,   256,   385,   386,   1000,
                                          32767, 32768, 32896, 32897, 65279, 65407, 65408, 65534, 65535};
  const int n = static_cast<int>(values.size());
  cv::Mat bgr16(1, n, CV_16UC3), grey16(1, n, CV_16UC1), bgra16(1, n, CV_16UC4);
  for (int i = 0; i < n; ++i) {
    const std::uint16_t v = values[static_cast<std::size_t>(i)];
    const std::uint16_t w = values[static_cast<std::size_t>(n - 1 - i)];
    bgr16.at<cv::Vec<std::uint16_t, 3>>(0, i) = {v, w, v};
    bgra16.at<cv::Vec<std::uint16_t, 4>>(0, i) = {v, w, v, 1234};
    grey16.at<std::uint16_t>(0, i) = v;
  }
  auto expect = [](std::uint16_t v) { return static_cast<int>(std::lround(v / 257.0)); };
  for (const char* ext : {".png", ".tiff"}) {
    for (const cv::Mat* m : {&bgr16, &grey16, &bgra16}) {
      CAPTURE(ext);
      CAPTURE(m->channels());
      const Bytes b = encode(ext, *m);
      const cv::Mat out = decode(b);
      REQUIRE(out.size() == m->size());
      for (int i = 0; i < n; ++i) {
        CAPTURE(values[static_cast<std::size_t>(i)]);
        const cv::Vec3b px = out.at<cv::Vec3b>(0, i);
        const int v = expect(values[static_cast<std::size_t>(i)]);
        const int w = m->channels() == 1 ? v : expect(values[static_cast<std::size_t>(n - 1 - i)]);
        CHECK(px[0] == v);
        CHECK(px[1] == w);
        CHECK(px[2] == v);
      }
    }
  }
  // The usual expansion v8 * 257 round-trips exactly (as cv::imread gives it).
  cv::Mat pic = test_picture(9, 7), wide;
  pic.convertTo(wide, CV_16UC3, 257.0);
  for (const char* ext : {".png", ".tiff"}) CHECK(same(decode(encode(ext, wide)), pic));
  // Float TIFF: OpenCV's own conversion, as cv::imdecode(IMREAD_COLOR) gives it.
  cv::Mat fl;
  pic.convertTo(fl, CV_32FC3, 1.0 / 255);
  const Bytes ft = encode(".tiff", fl);
  const cv::Mat ref = cv::imdecode(ft, cv::IMREAD_COLOR);
  if (!ref.empty()) CHECK(same(decode(ft), ref));
}

TEST_CASE("decode formats: CMYK and YCCK JPEGs (Adobe, inverted as Photoshop stores them) decode to the right colours") {
  // Colour patches of 16x16 (whole MCUs, so JPEG keeps them flat).
  const std::vector<cv::Vec3b> rgb{{255, 0, 0},     {0, 200, 0},   {20, 40, 230},  {255, 255, 255},
                                   {0, 0, 0},       {128, 128, 128}, {250, 180, 40}, {90, 30, 150}};
  const int P = 16;
  cv::Mat cmyk(2 * P, 4 * P, CV_8UC4);
  for (std::size_t k = 0; k < rgb.size(); ++k) {
    const double r = rgb[k][0] / 255.0, g = rgb[k][1] / 255.0, b = rgb[k][2] / 255.0;
    const double K = 1 - std::max({r, g, b});
    const double C = K < 1 ? (1 - r - K) / (1 - K) : 0, M = K < 1 ? (1 - g - K) / (1 - K) : 0,
                 Y = K < 1 ? (1 - b - K) / (1 - K) : 0;
    // Adobe's convention: the stored samples are inverted (255 = no ink).
    const cv::Vec4b stored(cv::saturate_cast<std::uint8_t>(255 * (1 - C)), cv::saturate_cast<std::uint8_t>(255 * (1 - M)),
                           cv::saturate_cast<std::uint8_t>(255 * (1 - Y)), cv::saturate_cast<std::uint8_t>(255 * (1 - K)));
    cmyk(cv::Rect(static_cast<int>(k % 4) * P, static_cast<int>(k / 4) * P, P, P)).setTo(stored);
  }
  using imgpipe::test::JpegColour;
  for (const JpegColour space : {JpegColour::cmyk, JpegColour::ycck}) {
    CAPTURE(space == JpegColour::cmyk ? "CMYK" : "YCCK");
    const Bytes jpg = write_cmyk_jpeg(cmyk, space);
    const cv::Mat out = decode(jpg);
    REQUIRE(out.size() == cmyk.size());
    for (std::size_t k = 0; k < rgb.size(); ++k) {
      CAPTURE(k);
      // The patch interior (JPEG rounding at patch borders aside).
      const cv::Scalar m = cv::mean(out(cv::Rect(static_cast<int>(k % 4) * P + 4, static_cast<int>(k / 4) * P + 4, 8, 8)));
      // Tolerance 4: quality-95 JPEG plus OpenCV's k - ((255 - c) * k >> 8) approximation.
      CHECK(std::abs(m[2] - rgb[k][0]) <= 4);
      CHECK(std::abs(m[1] - rgb[k][1]) <= 4);
      CHECK(std::abs(m[0] - rgb[k][2]) <= 4);
    }
  }
}

TEST_CASE("decode formats: EXIF orientation 1..8 is applied (both byte orders), or ignored with exif_orientation false") {
  const cv::Mat pic = test_picture(48, 32);  // whole 16x16 MCUs: no edge padding artefacts
  const Bytes plain = encode(".jpg", pic, {cv::IMWRITE_JPEG_QUALITY, 95});
  const cv::Mat stored = cv::imdecode(plain, cv::IMREAD_COLOR);
  DecodeConfig keep;
  keep.exif_orientation = false;
  for (int o = 1; o <= 8; ++o) {
    for (const bool le : {true, false}) {
      CAPTURE(o);
      CAPTURE(le);
      const Bytes b = with_orientation(plain, o, le);
      const auto h = sniff_header(b);
      CHECK(h.orientation == o);
      CHECK(h.width == 48);
      CHECK(h.height == 32);
      const cv::Mat out = decode(b);
      CHECK(out.size() == (o >= 5 ? cv::Size(32, 48) : cv::Size(48, 32)));
      CHECK(same(out, imgpipe::test::oriented(stored, o)));
      CHECK(same(decode(b, keep), stored));
    }
  }
  // Orientation 6 is the camera held upright: the first stored row becomes
  // the last column.
  const cv::Mat turned = decode(with_orientation(plain, 6));
  CHECK(same(turned.col(turned.cols - 1).t(), stored.row(0).reshape(3, 1)));
  // Out-of-range values and a missing tag leave the image as stored.
  CHECK(sniff_header(with_orientation(plain, 9)).orientation == 1);
  CHECK(sniff_header(plain).orientation == 1);
  CHECK(same(decode(with_orientation(plain, 0)), stored));
}

// ======================================================================== reduced decode

TEST_CASE("decode formats: reduced_scale picks the largest 1/r that still covers the resize, per mode") {
  auto rs = [](std::int64_t w, std::int64_t h, int W, int H, ResizeMode m) {
    ResizeConfig r;
    r.width = W;
    r.height = H;
    r.mode = m;
    return reduced_scale(w, h, r);
  };
  using M = ResizeMode;
  // stretch: ceil(w/r) >= W and ceil(h/r) >= H
  CHECK(rs(1920, 1080, 640, 640, M::stretch) == 1);  // 1080/2 = 540 < 640
  CHECK(rs(1920, 1080, 640, 360, M::stretch) == 2);  // 1920/4 = 480 < 640
  CHECK(rs(1920, 1080, 320, 320, M::stretch) == 2);  // 1080/4 = 270 < 320
  CHECK(rs(1920, 1080, 240, 135, M::stretch) == 8);
  CHECK(rs(1913, 1073, 240, 135, M::stretch) == 8);  // ceil: 240 x 135 exactly
  CHECK(rs(1911, 1080, 240, 135, M::stretch) == 4);  // ceil(1911/8) = 239
  CHECK(rs(640, 480, 64, 48, M::stretch) == 8);
  CHECK(rs(640, 480, 640, 480, M::stretch) == 1);
  CHECK(rs(640, 480, 1280, 960, M::stretch) == 1);   // upscaling
  // center_crop: max(W/w, H/h) <= 1/r
  CHECK(rs(1920, 1080, 320, 320, M::center_crop) == 2);  // 320/1080 > 1/4
  CHECK(rs(1920, 1080, 270, 270, M::center_crop) == 4);
  CHECK(rs(1920, 1080, 136, 136, M::center_crop) == 4);  // 136 * 8 > 1080
  CHECK(rs(1920, 1080, 135, 135, M::center_crop) == 8);
  // letterbox: min(W/w, H/h) <= 1/r: the long side decides
  CHECK(rs(1920, 1080, 320, 320, M::letterbox) == 4);  // 320/1920 <= 1/4, > 1/8
  CHECK(rs(1920, 1080, 240, 640, M::letterbox) == 8);
  CHECK(rs(1920, 1080, 640, 640, M::letterbox) == 2);
  CHECK(rs(1920, 1080, 961, 961, M::letterbox) == 1);
  // Unknown size: no reduction.
  CHECK(rs(0, 1080, 64, 64, M::stretch) == 1);
  CHECK(rs(1920, -1, 64, 64, M::letterbox) == 1);
}

TEST_CASE("decode formats: reduced JPEG decode is never smaller than the resize needs, and its tensor is close to the full path") {
  // The sample photos at 640x480 and scaled up to 1920x1080 (re-encoded).
  std::vector<std::pair<std::string, Bytes>> jpegs;
  const auto samples = imgpipe::test::sample_images();
  for (std::size_t i = 0; i < samples.size(); i += 4) {
    if (samples[i].extension() != ".jpg") continue;
    jpegs.emplace_back(samples[i].filename().string(), imgpipe::test::read_bytes(samples[i]));
    cv::Mat big;
    cv::resize(cv::imread(samples[i].string()), big, cv::Size(1920, 1080), 0, 0, cv::INTER_CUBIC);
    jpegs.emplace_back(samples[i].filename().string() + "@1080p", encode(".jpg", big, {cv::IMWRITE_JPEG_QUALITY, 90}));
  }
  REQUIRE(jpegs.size() >= 6);
  DecodeConfig full;
  full.reduced = false;
  int reduced_runs = 0;
  for (const auto& jpeg : jpegs) {
    const std::string& name = jpeg.first;
    const Bytes& bytes = jpeg.second;
    const auto h = sniff_header(bytes);
    const cv::Mat whole = decode(bytes, full);
    for (const ResizeMode mode : {ResizeMode::stretch, ResizeMode::center_crop, ResizeMode::letterbox}) {
      for (const auto& size : {std::pair{64, 48}, std::pair{224, 224}, std::pair{320, 180}, std::pair{640, 360}}) {
        const int W = size.first, H = size.second;
        CAPTURE(name);
        CAPTURE(static_cast<int>(mode));
        CAPTURE(W);
        CAPTURE(H);
        const TransformConfig t = target(W, H, mode);
        int r = 0;
        const cv::Mat small = decode(bytes, {}, t, &r);
        CHECK(r == reduced_scale(h.width, h.height, t.resize));
        CHECK(small.cols == (h.width + r - 1) / r);
        CHECK(small.rows == (h.height + r - 1) / r);
        // Never smaller than what the resize takes from it.
        if (mode == ResizeMode::letterbox) CHECK((small.cols >= W || small.rows >= H));
        else CHECK((small.cols >= W && small.rows >= H));
        if (r == 1) {
          CHECK(same(small, whole));
          continue;
        }
        ++reduced_runs;
        TransformConfig t_area = t;
        t_area.resize.interpolation = imgpipe::Interpolation::area;
        const cv::Mat a = resize_as_transform(t, small), b = resize_as_transform(t, whole);
        const cv::Mat ideal = resize_as_transform(t_area, whole);  // area-averaged: no aliasing
        REQUIRE(a.size() == b.size());
        // How much the full path shrinks: bilinear (OpenCV's, no
        // antialiasing) samples 2x2 pixels, so beyond ~8x it aliases and
        // itself strays from the picture; the DCT-domain reduction averages.
        const double fx = static_cast<double>(whole.cols) / W, fy = static_cast<double>(whole.rows) / H;
        const double shrink = mode == ResizeMode::center_crop ? std::min(fx, fy) : std::max(fx, fy);
        CAPTURE(shrink);
        CAPTURE(mean_abs(a, b));
        CAPTURE(psnr(a, b));
        CAPTURE(psnr(a, ideal));
        CAPTURE(psnr(b, ideal));
        if (shrink <= 8) {
          // Measured on these photos: mean abs diff <= 1.4, PSNR >= 37 dB.
          CHECK(mean_abs(a, b) < 3.0);
          CHECK(psnr(a, b) > 30.0);
        } else {
          // 640x480 -> 64x48 (10x), 1920x1080 -> 64x48 (30x): the full
          // path is 27-36 dB from the area-averaged picture; measured: mean
          // abs diff <= 5.2, PSNR >= 26.4 dB between the two paths.
          CHECK(mean_abs(a, b) < 6.0);
          CHECK(psnr(a, b) > 25.0);
        }
        // Content: the reduced path is as faithful to the picture as the
        // full one (measured: never more than 2.1 dB behind, usually ahead;
        // at an exact 2x OpenCV's bilinear is the area average, hence the cap).
        CHECK(psnr(a, ideal) > 30.0);  // measured >= 32 dB
        CHECK(psnr(a, ideal) >= std::min(psnr(b, ideal) - 3.0, 45.0));
      }
    }
  }
  CHECK(reduced_runs > 20);
}

TEST_CASE("decode formats: reduced decode of an EXIF-turned JPEG covers the target as displayed") {
  cv::Mat pic;
  cv::resize(cv::imread(imgpipe::test::sample_images().front().string()), pic, cv::Size(640, 480));
  const Bytes b = with_orientation(encode(".jpg", pic), 6);  // displayed as 480 x 640
  int r = 0;
  const cv::Mat out = decode(b, {}, target(60, 80), &r);
  CHECK(r == 8);
  CHECK(out.size() == cv::Size(60, 80));
  DecodeConfig keep;
  keep.exif_orientation = false;  // stored 640 x 480: 1/8 would give 80 x 60, too short for 80
  const cv::Mat stored = decode(b, keep, target(60, 80), &r);
  CHECK(r == 4);
  CHECK(stored.size() == cv::Size(160, 120));
  // Reduced and full agree on the turn.
  DecodeConfig full;
  full.reduced = false;
  const cv::Mat whole = decode(b, full);
  CHECK(whole.size() == cv::Size(480, 640));
  cv::Mat shrunk;
  cv::resize(whole, shrunk, out.size(), 0, 0, cv::INTER_AREA);
  CHECK(mean_abs(out, shrunk) < 4.0);
}

TEST_CASE("decode formats: reduced: off always decodes full size, and PNGs are never reduced") {
  DecodeConfig off;
  off.reduced = false;
  const auto samples = imgpipe::test::sample_images();
  for (const auto& p : samples) {
    CAPTURE(p);
    int r = 0;
    const cv::Mat a = decode(imgpipe::test::read_bytes(p), off, target(32, 24), &r);
    CHECK(r == 1);
    CHECK(a.size() == cv::Size(640, 480));
    if (p.extension() == ".png") {
      const cv::Mat b = decode(imgpipe::test::read_bytes(p), {}, target(32, 24), &r);
      CHECK(r == 1);
      CHECK(same(a, b));
    }
  }
}
