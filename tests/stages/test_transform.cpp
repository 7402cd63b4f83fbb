// Transform stage: resize modes against OpenCV, and the CPU normalise path
// against the formula written out by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "stages/transform.hpp"

using imgpipe::DType;
using imgpipe::Interpolation;
using imgpipe::Layout;
using imgpipe::ResizeMode;
using imgpipe::TransformConfig;
using imgpipe::stages::Transform;

namespace {

cv::Mat sample(int i = 0) {
  const auto images = imgpipe::test::sample_images();
  const cv::Mat m = cv::imread(images.at(static_cast<std::size_t>(i)).string(), cv::IMREAD_COLOR);
  REQUIRE_FALSE(m.empty());
  return m;
}

TransformConfig target(int w, int h, ResizeMode mode, Interpolation interp = Interpolation::linear) {
  TransformConfig c;
  c.resize.width = w;
  c.resize.height = h;
  c.resize.mode = mode;
  c.resize.interpolation = interp;
  return c;
}

cv::Mat run_resize(const TransformConfig& cfg, const cv::Mat& in) {
  Transform t(cfg, false);
  cv::Mat out, scratch;
  t.resize(in, out, scratch);
  CHECK(out.isContinuous());
  CHECK(out.type() == CV_8UC3);
  CHECK(out.cols == cfg.resize.width);
  CHECK(out.rows == cfg.resize.height);
  return out;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// Every pixel of `m` equals `v` in every channel.
bool all_equal(const cv::Mat& m, int v) {
  if (m.empty()) return true;
  std::vector<cv::Mat> ch;
  cv::split(m, ch);
  for (const auto& c : ch) {
    double lo, hi;
    cv::minMaxLoc(c, &lo, &hi);
    if (lo != v || hi != v) return false;
  }
  return true;
}

// The formula, one rounded float32 operation at a time.
float formula(std::uint8_t v, float scale, float mean, float std_) {
  volatile float s = static_cast<float>(v) * scale;
  volatile float c = s - mean;
  volatile float o = c / std_;
  return o;
}

}  // namespace

TEST_CASE("transform: stretch equals cv::resize for every interpolation") {
  const cv::Mat in = sample();
  const std::pair<Interpolation, int> modes[] = {{Interpolation::linear, cv::INTER_LINEAR},
                                                 {Interpolation::nearest, cv::INTER_NEAREST},
                                                 {Interpolation::area, cv::INTER_AREA},
                                                 {Interpolation::cubic, cv::INTER_CUBIC}};
  for (const auto& [interp, cv_interp] : modes) {
    for (const auto& size : {cv::Size(64, 48), cv::Size(1, 1), cv::Size(33, 97), cv::Size(1000, 700)}) {
      CAPTURE(cv_interp);
      CAPTURE(size);
      cv::Mat ref;
      cv::resize(in, ref, size, 0, 0, cv_interp);
      CHECK(same(run_resize(target(size.width, size.height, ResizeMode::stretch, interp), in), ref));
    }
  }
  // Same size: an exact copy.
  CHECK(same(run_resize(target(640, 480, ResizeMode::stretch), in), in));
  // A non-continuous input (a view) works too.
  const cv::Mat view = in(cv::Rect(10, 20, 300, 200));
  cv::Mat ref;
  cv::resize(view, ref, cv::Size(64, 48));
  CHECK(same(run_resize(target(64, 48, ResizeMode::stretch), view), ref));
}

TEST_CASE("transform: letterbox keeps the aspect, centres the image and pads with pad_value") {
  const cv::Mat wide = sample();  // 640 x 480
  cv::Mat tall;
  cv::transpose(wide, tall);  // 480 x 640
  struct Case {
    cv::Mat in;
    int W, H;
    cv::Rect image;  // where the resized image must land
  };
  const Case cases[] = {
      {wide, 64, 64, cv::Rect(0, 8, 64, 48)},       // bars top and bottom
      {wide, 64, 63, cv::Rect(0, 7, 64, 48)},       // odd padding: 7 above, 8 below
      {tall, 64, 64, cv::Rect(8, 0, 48, 64)},       // bars left and right
      {tall, 65, 64, cv::Rect(8, 0, 48, 64)},       // odd padding: 8 left, 9 right
      {wide, 320, 240, cv::Rect(0, 0, 320, 240)},   // same aspect: no padding
      {wide, 640, 480, cv::Rect(0, 0, 640, 480)},   // same size: a copy
      {wide, 640, 640, cv::Rect(0, 80, 640, 480)},  // upscale-free letterbox at the W1 size
      {wide(cv::Rect(0, 0, 3, 2)), 64, 64, cv::Rect(0, 10, 64, 43)},  // tiny image, upscaled
  };
  for (int pad : {114, 0, 255}) {
    for (const auto& c : cases) {
      CAPTURE(pad);
      CAPTURE(c.W);
      CAPTURE(c.H);
      CAPTURE(c.image);
      TransformConfig cfg = target(c.W, c.H, ResizeMode::letterbox);
      cfg.resize.pad_value = pad;
      const cv::Mat out = run_resize(cfg, c.in);
      cv::Mat ref;
      cv::resize(c.in, ref, c.image.size(), 0, 0, cv::INTER_LINEAR);
      CHECK(same(out(c.image), ref));
      // Everything outside the image rectangle is padding.
      CHECK(all_equal(out.rowRange(0, c.image.y), pad));
      CHECK(all_equal(out.rowRange(c.image.y + c.image.height, c.H), pad));
      CHECK(all_equal(out(cv::Rect(0, c.image.y, c.image.x, c.image.height)), pad));
      const int right = c.image.x + c.image.width;
      CHECK(all_equal(out(cv::Rect(right, c.image.y, c.W - right, c.image.height)), pad));
    }
  }
}

TEST_CASE("transform: center_crop equals cv::dnn::blobFromImage(crop=true)") {
  const cv::Mat wide = sample(3);
  cv::Mat tall;
  cv::transpose(wide, tall);
  for (const cv::Mat* in : {&wide, static_cast<const cv::Mat*>(&tall)}) {
    for (const auto& size : {cv::Size(64, 64), cv::Size(64, 48), cv::Size(100, 30), cv::Size(31, 200),
                             cv::Size(640, 640), cv::Size(640, 480)}) {
      CAPTURE(in->size());
      CAPTURE(size);
      const cv::Mat out = run_resize(target(size.width, size.height, ResizeMode::center_crop), *in);
      const cv::Mat blob = cv::dnn::blobFromImage(*in, 1.0, size, cv::Scalar(), false, true, CV_8U);
      REQUIRE(blob.dims == 4);
      REQUIRE(blob.size[2] == size.height);
      REQUIRE(blob.size[3] == size.width);
      std::vector<cv::Mat> planes;
      cv::split(out, planes);
      bool equal = true;
      for (int c = 0; c < 3; ++c) {
        const cv::Mat ref(size.height, size.width, CV_8U, const_cast<std::uint8_t*>(blob.ptr<std::uint8_t>(0, c)));
        equal = equal && same(planes[static_cast<std::size_t>(c)], ref);
      }
      CHECK(equal);
    }
  }
}

TEST_CASE("transform: the CPU normalise path writes the formula's values in the configured layout and dtype") {
  const cv::Mat img = sample(5);
  for (DType dtype : {DType::float32, DType::float16, DType::uint8}) {
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      for (bool swap : {true, false}) {
        CAPTURE(std::string(imgpipe::to_string(dtype)));
        CAPTURE(std::string(imgpipe::to_string(layout)));
        CAPTURE(swap);
        TransformConfig cfg = target(37, 23, ResizeMode::stretch);
        cfg.layout = layout;
        cfg.dtype = dtype;
        cfg.swap_rb = swap;
        cfg.normalize.mean = {0.485f, 0.456f, 0.406f};
        cfg.normalize.std = {0.229f, 0.224f, 0.225f};
        cfg.normalize.scale = 1.0f / 255.0f;
        Transform t(cfg, true);
        CHECK(t.normalize_on_cpu());
        imgpipe::stages::Work w;
        imgpipe::stages::InputItem item{"x.jpg", -1, {}};
        w.reset_for(imgpipe::stages::Work::Kind::image, 0, &item);
        w.pixels.decoded = img;
        CHECK(t(&w) == &w);
        CHECK(w.sample.error.empty());
        const std::size_t H = 23, W = 37, C = 3, n = H * W * C;
        REQUIRE(w.pixels.out.bytes == n * imgpipe::dtype_size(dtype));
        REQUIRE(t.frame_bytes() == w.pixels.out.bytes);
        REQUIRE(w.pixels.out.data != nullptr);
        cv::Mat resized;
        cv::resize(img, resized, cv::Size(37, 23), 0, 0, cv::INTER_LINEAR);
        std::size_t mismatches = 0;
        for (std::size_t y = 0; y < H; ++y)
          for (std::size_t x = 0; x < W; ++x)
            for (std::size_t c = 0; c < C; ++c) {
              const std::size_t src_c = swap ? 2 - c : c;  // output channel c reads input channel src_c
              const std::uint8_t v = resized.at<cv::Vec3b>(static_cast<int>(y), static_cast<int>(x))[static_cast<int>(src_c)];
              const std::size_t i = layout == Layout::nchw ? (c * H + y) * W + x : (y * W + x) * C + c;
              const float f = formula(v, cfg.normalize.scale, cfg.normalize.mean[c], cfg.normalize.std[c]);
              bool ok = false;
              if (dtype == DType::float32) {
                float got;
                std::memcpy(&got, static_cast<const float*>(w.pixels.out.data) + i, 4);
                ok = got == f;
              } else if (dtype == DType::float16) {
                std::uint16_t got;
                std::memcpy(&got, static_cast<const std::uint16_t*>(w.pixels.out.data) + i, 2);
                ok = got == cv::float16_t(f).bits();
              } else {
                ok = static_cast<const std::uint8_t*>(w.pixels.out.data)[i] == v;
              }
              if (!ok) ++mismatches;
            }
        CHECK(mismatches == 0);
        CHECK(t.stats().items.load() == 1);
      }
    }
  }
}

TEST_CASE("transform: without CPU normalisation the frame is the resized u8 BGR image") {
  const cv::Mat img = sample(9);  // a PNG
  TransformConfig cfg = target(64, 48, ResizeMode::stretch);
  cfg.dtype = DType::float32;
  Transform t(cfg, false);
  CHECK(t.frame_bytes() == 64u * 48u * 3u);
  imgpipe::stages::Work w;
  imgpipe::stages::InputItem item{"x.png", -1, {}};
  w.reset_for(imgpipe::stages::Work::Kind::image, 0, &item);
  w.pixels.decoded = img;
  t(&w);
  CHECK(w.sample.error.empty());
  REQUIRE(w.pixels.out.bytes == 64u * 48u * 3u);
  cv::Mat ref;
  cv::resize(img, ref, cv::Size(64, 48));
  CHECK(std::memcmp(w.pixels.out.data, ref.data, w.pixels.out.bytes) == 0);
  // A failed item passes through untouched.
  imgpipe::stages::Work bad;
  bad.reset_for(imgpipe::stages::Work::Kind::image, 1, &item);
  bad.sample.error = "earlier failure";
  t(&bad);
  CHECK(bad.sample.error == "earlier failure");
  CHECK(bad.pixels.out.data == nullptr);
}
