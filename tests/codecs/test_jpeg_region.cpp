// Region decode (decode.region): libjpeg decodes only the iMCU rows and
// columns around random_crop's box. The box's pixels must be the whole
// decode's, bit for bit, on every sampling and coding libjpeg reads, at any
// position (edges included) and under any EXIF orientation; and the verdict
// on damage must be the whole decode's, wherever the damage lies.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "codecs/image/image_decoder.hpp"
#include "codecs/image/libjpeg/jpeg_decode.hpp"
#include "codecs/parse/image_header.hpp"
#include "common.hpp"
#include "imgpipe/augment.hpp"
#include "jpeg_writer.hpp"
#include "oriented.hpp"
#include "stages/decode.hpp"

using imgpipe::codecs::decode_jpeg;
using imgpipe::codecs::JpegDecodeOptions;
using imgpipe::codecs::JpegRegion;
using Bytes = std::vector<unsigned char>;

namespace {

// Texture at every scale (noise, blurred noise, edges), so that a pixel
// whose upsampling or IDCT saw other neighbours shows.
cv::Mat textured(int width, int height, int channels, unsigned seed) {
  cv::Mat noise(height, width, CV_8UC(channels)), smooth;
  cv::theRNG().state = seed;
  cv::randu(noise, 0, 256);
  cv::GaussianBlur(noise, smooth, cv::Size(0, 0), 3.0);
  cv::Mat m;
  cv::addWeighted(noise, 0.35, smooth, 0.65, 0, m);
  for (int y = 0; y < height; y += 23) m.row(y).setTo(cv::Scalar::all(255));
  for (int x = 0; x < width; x += 17) m.col(x).setTo(cv::Scalar::all(0));
  return m;
}

Bytes jpeg_of(const cv::Mat& m, const imgpipe::test::JpegWriteOptions& o) {
  return imgpipe::test::write_jpeg(m.ptr(), m.cols, m.rows, m.step, o);
}

bool same_image(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// Boxes at the corners and edges, one pixel wide or tall, the whole width or
// height, and `random` drawn uniformly.
std::vector<cv::Rect> boxes(int w, int h, int random, unsigned seed) {
  std::vector<cv::Rect> b{{0, 0, 1, 1},         {w - 1, h - 1, 1, 1}, {0, 0, w, 1},     {0, h - 1, w, 1},
                          {0, 0, 1, h},         {w - 1, 0, 1, h},     {0, 0, w, h - 1}, {1, 1, w - 1, h - 1},
                          {w / 3, 0, w / 3, h}, {0, h / 3, w, h / 3}, {7, 9, 33, 17},   {15, 15, 2, 2}};
  std::mt19937 rng(seed);
  for (int i = 0; i < random; ++i) {
    const int bw = 1 + static_cast<int>(rng() % static_cast<unsigned>(w));
    const int bh = 1 + static_cast<int>(rng() % static_cast<unsigned>(h));
    b.emplace_back(static_cast<int>(rng() % static_cast<unsigned>(w - bw + 1)),
                   static_cast<int>(rng() % static_cast<unsigned>(h - bh + 1)), bw, bh);
  }
  return b;
}

// Each box decoded alone against the whole decode cut there; how many were.
int check_boxes(const Bytes& bytes, const cv::Mat& whole, const std::vector<cv::Rect>& list) {
  int checked = 0;
  for (const cv::Rect& b : list) {
    CAPTURE(b);
    JpegDecodeOptions o;
    o.region = {b.x, b.y, b.width, b.height};
    cv::Mat part;
    REQUIRE(decode_jpeg(bytes, o, part).empty());
    CHECK(same_image(part, whole(b)));
    ++checked;
  }
  return checked;
}

struct Variant {
  const char* name;
  int components;
  imgpipe::test::JpegWriteOptions opt;
};

std::vector<Variant> variants() {
  using imgpipe::test::JpegColour;
  auto with = [](int h, int v) {
    imgpipe::test::JpegWriteOptions o;
    o.h_samp = h;
    o.v_samp = v;
    return o;
  };
  std::vector<Variant> out{{"4:2:0", 3, with(2, 2)}, {"4:2:2", 3, with(2, 1)}, {"4:4:0", 3, with(1, 2)},
                           {"4:4:4", 3, with(1, 1)}, {"4:1:1", 3, with(4, 1)}};
  Variant grey{"grey", 1, {}};
  grey.opt.components = 1;
  out.push_back(grey);
  Variant cmyk{"cmyk", 4, {}};
  cmyk.opt.components = 4;
  cmyk.opt.colour = JpegColour::cmyk;
  out.push_back(cmyk);
  Variant progressive{"progressive 4:2:0", 3, with(2, 2)};
  progressive.opt.progressive = true;
  out.push_back(progressive);
  Variant arithmetic{"arithmetic 4:2:2", 3, with(2, 1)};
  arithmetic.opt.arithmetic = true;
  out.push_back(arithmetic);
  Variant restarts{"restart markers 4:2:0", 3, with(2, 2)};
  restarts.opt.restart_interval = 3;
  out.push_back(restarts);
  return out;
}

}  // namespace

TEST_CASE("jpeg region: a box decoded alone is the whole decode cut at the box, bit for bit, on every sampling and coding") {
  // Sizes that are and are not multiples of the iMCU.
  for (const cv::Size size : {cv::Size(301, 217), cv::Size(64, 48), cv::Size(97, 160)}) {
    for (const Variant& v : variants()) {
      CAPTURE(v.name);
      CAPTURE(size);
      const Bytes bytes = jpeg_of(textured(size.width, size.height, v.components, 11), v.opt);
      cv::Mat whole;
      REQUIRE(decode_jpeg(bytes, {}, whole).empty());
      REQUIRE(whole.size() == size);
      CHECK(check_boxes(bytes, whole, boxes(size.width, size.height, 40, 3)) == 52);
    }
  }
}

TEST_CASE("jpeg region: on a real photograph the box's pixels are the whole decode's") {
  for (const auto& p : imgpipe::test::sample_images()) {
    if (p.extension() != ".jpg") continue;
    CAPTURE(p);
    const Bytes bytes = imgpipe::test::read_bytes(p);
    cv::Mat whole;
    REQUIRE(decode_jpeg(bytes, {}, whole).empty());
    CHECK(check_boxes(bytes, whole, boxes(whole.cols, whole.rows, 20, 5)) == 32);
  }
}

TEST_CASE("jpeg region: under EXIF orientations 1 to 8 the box is cut from the image as displayed") {
  const cv::Mat stored = textured(150, 94, 3, 5);
  imgpipe::test::JpegWriteOptions wo;
  wo.h_samp = wo.v_samp = 2;
  for (int o = 1; o <= 8; ++o) {
    CAPTURE(o);
    wo.exif_orientation = o;
    const Bytes bytes = jpeg_of(stored, wo);
    const imgpipe::codecs::ImageHeader h = imgpipe::codecs::sniff_header(bytes);
    REQUIRE(h.orientation == o);
    const imgpipe::codecs::ImageDecoder* d = imgpipe::codecs::cpu_image_decoder_for(h);
    REQUIRE(d != nullptr);
    REQUIRE(d->name() == "libjpeg");
    cv::Mat whole;
    imgpipe::codecs::ImageDecoded done;
    REQUIRE(d->decode(bytes, h, {}, whole, done).empty());
    // The reference: the stored pixels decoded whole, turned by OpenCV's own flips.
    cv::Mat plain;
    REQUIRE(decode_jpeg(bytes, {}, plain).empty());
    REQUIRE(same_image(whole, imgpipe::test::oriented(plain, o)));
    CHECK_FALSE(done.region_decoded);
    for (const cv::Rect& b : boxes(whole.cols, whole.rows, 25, static_cast<unsigned>(o))) {
      CAPTURE(b);
      imgpipe::codecs::ImageDecodeOptions opt;
      opt.region = {b.x, b.y, b.width, b.height};
      cv::Mat part;
      imgpipe::codecs::ImageDecoded pd;
      REQUIRE(d->decode(bytes, h, opt, part, pd).empty());
      CHECK(same_image(part, whole(b)));
      const bool all = b.width == whole.cols && b.height == whole.rows;
      CHECK(pd.region_decoded == !all);
      CHECK(pd.origin_x == (all ? 0 : b.x));
      CHECK(pd.origin_y == (all ? 0 : b.y));
      CHECK(pd.orientation == o);
      CHECK(pd.stored_width == 150);
    }
    // A box not inside the image as displayed (drawn on other dimensions) decodes whole.
    imgpipe::codecs::ImageDecodeOptions outside;
    outside.region = {whole.cols - 5, 0, 10, 10};
    cv::Mat all;
    imgpipe::codecs::ImageDecoded ad;
    REQUIRE(d->decode(bytes, h, outside, all, ad).empty());
    CHECK_FALSE(ad.region_decoded);
    CHECK(same_image(all, whole));
  }
}

TEST_CASE("jpeg region: damage outside the box gets the whole decode's verdict, damage inside the same pixels when accepted") {
  imgpipe::test::JpegWriteOptions wo;
  wo.h_samp = wo.v_samp = 2;
  const Bytes good = jpeg_of(textured(320, 240, 3, 9), wo);
  const std::size_t data = imgpipe::test::first_scan_data(good);
  REQUIRE(data > 0);
  const std::size_t scan = good.size() - 2 - data;
  std::mt19937 rng(3);
  // Damage near the end of the scan (the image's last rows), and near its start.
  for (const double where : {0.9, 0.1}) {
    CAPTURE(where);
    Bytes bad = good;
    const std::size_t at = data + static_cast<std::size_t>(where * static_cast<double>(scan));
    for (std::size_t k = 0; k < 200; ++k) bad[at + k] = static_cast<unsigned char>(rng() % 255);
    cv::Mat whole;
    const std::string whole_err = decode_jpeg(bad, {}, whole);
    REQUIRE(whole_err.rfind("corrupt JPEG: ", 0) == 0);
    // A box far from the damage: the top-left corner, and the bottom-right one.
    for (const cv::Rect b : {cv::Rect(0, 0, 40, 24), cv::Rect(280, 216, 40, 24)}) {
      CAPTURE(b);
      JpegDecodeOptions o;
      o.region = {b.x, b.y, b.width, b.height};
      cv::Mat part;
      CHECK(decode_jpeg(bad, o, part) == whole_err);
      CHECK(part.empty());
      // decode.accept_truncated: what libjpeg recovered there, as in the whole decode.
      JpegDecodeOptions lenient = o;
      lenient.accept_damaged = true;
      JpegDecodeOptions lenient_whole;
      lenient_whole.accept_damaged = true;
      cv::Mat recovered;
      REQUIRE(decode_jpeg(bad, lenient_whole, recovered).empty());
      REQUIRE(decode_jpeg(bad, lenient, part).empty());
      CHECK(same_image(part, recovered(b)));
    }
  }
  // A file cut short (no EOI, the last rows missing): the same verdict.
  const Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(data + scan / 2));
  cv::Mat whole;
  const std::string cut_err = decode_jpeg(cut, {}, whole);
  REQUIRE_FALSE(cut_err.empty());
  JpegDecodeOptions o;
  o.region = {0, 0, 16, 16};
  cv::Mat part;
  CHECK(decode_jpeg(cut, o, part) == cut_err);
}

TEST_CASE("jpeg region: the decode stage decodes random_crop's box alone (decode.region), at its corner, and off decodes whole") {
  imgpipe::TransformConfig t;
  t.resize.mode = imgpipe::ResizeMode::random_crop;
  t.resize.width = 32;
  t.resize.height = 32;
  t.seed = 77;
  imgpipe::test::JpegWriteOptions wo;
  wo.h_samp = wo.v_samp = 2;
  const cv::Mat stored = textured(200, 120, 3, 4);
  for (const int o : {1, 6}) {
    CAPTURE(o);
    wo.exif_orientation = o;
    const Bytes bytes = jpeg_of(stored, wo);
    imgpipe::DecodeConfig whole_cfg;
    whole_cfg.region = false;
    const imgpipe::stages::Decode whole_stage(whole_cfg, t, true, 0, 3);
    cv::Mat whole;
    cv::Point origin{-1, -1};
    const imgpipe::stages::Decode::SampleKey key{5, -1};
    REQUIRE(whole_stage.decode(bytes, whole, nullptr, nullptr, &key, &origin).empty());
    CHECK(origin == cv::Point(0, 0));
    const imgpipe::stages::Decode stage(imgpipe::DecodeConfig{}, t, true, 0, 3);
    int region_decoded = 0;
    for (std::uint64_t item = 0; item < 20; ++item) {
      CAPTURE(item);
      const imgpipe::stages::Decode::SampleKey k{item, -1};
      const imgpipe::Augment a = imgpipe::draw_augment(t, 3, item, -1, whole.cols, whole.rows);
      cv::Mat part;
      imgpipe::SampleGeometry g;
      REQUIRE(stage.decode(bytes, part, nullptr, &g, &k, &origin).empty());
      // The geometry is the original's: the box is drawn on it.
      CHECK(g.width == whole.cols);
      CHECK(g.height == whole.rows);
      const cv::Rect box(a.x, a.y, a.width, a.height);
      if (box.size() == whole.size()) {
        CHECK(origin == cv::Point(0, 0));
        CHECK(same_image(part, whole));
        continue;
      }
      ++region_decoded;
      CHECK(origin == box.tl());
      CHECK(same_image(part, whole(box)));
    }
    CHECK(region_decoded >= 15);
    // Another epoch, other boxes.
    const imgpipe::stages::Decode next(imgpipe::DecodeConfig{}, t, true, 0, 4);
    cv::Mat part;
    REQUIRE(next.decode(bytes, part, nullptr, nullptr, &key, &origin).empty());
    const imgpipe::Augment a4 = imgpipe::draw_augment(t, 4, 5, -1, whole.cols, whole.rows);
    const imgpipe::Augment a3 = imgpipe::draw_augment(t, 3, 5, -1, whole.cols, whole.rows);
    CHECK_FALSE(a4 == a3);
    CHECK(same_image(part, whole(cv::Rect(a4.x, a4.y, a4.width, a4.height))));
  }
}
