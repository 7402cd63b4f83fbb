// Training augmentations through whole runs (transform.resize.mode
// random_crop, transform.flip; imgpipe/augment.hpp): each sample's tensor is
// its recorded box of the image, resized and mirrored as recorded; epochs
// draw new boxes and a replayed epoch the same; the GPU's resize (staged
// frames and frames its JPEG engines decoded) gives the CPU route's pixels,
// whose JPEGs decode the box alone (decode.region). The evaluation recipe
// (center_crop with short_side) goes the same way with a fixed box.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"

using namespace imgpipe;

namespace {

struct Seen {
  cv::Mat tensor;  // H x W x 3 u8, BGR
  SampleGeometry geometry;
  bool on_gpu = false;
};

Config augment_config(int n) {
  Config c;
  const auto samples = test::sample_images();
  for (int i = 0; i < n; ++i) c.input.paths.push_back(samples[static_cast<std::size_t>(i)].string());
  c.input.shuffle_seed = 3;
  c.transform.resize.width = 64;
  c.transform.resize.height = 48;
  c.transform.resize.mode = ResizeMode::random_crop;
  c.transform.flip.horizontal = 0.5f;
  c.transform.flip.vertical = 0.25f;
  c.transform.seed = 5;
  c.transform.dtype = DType::uint8;
  c.transform.layout = Layout::nhwc;
  c.transform.swap_rb = false;
  c.batch.size = 4;
  c.devices = DeviceSelection::parse("cpu");
  return c;
}

// torchvision's evaluation recipe at this size: Resize(73), CenterCrop(48, 64).
Config eval_config(int n) {
  Config c = augment_config(n);
  c.transform.resize.mode = ResizeMode::center_crop;
  c.transform.resize.short_side = 73;
  c.transform.flip = {};
  return c;
}

std::map<std::string, Seen> run_once(Pipeline& p) {
  std::map<std::string, Seen> out;
  p.run([&](const DeviceBatch& b) {
    const std::vector<unsigned char> host = test::batch_to_host(b);
    const std::size_t per = host.size() / b.size();
    for (std::size_t i = 0; i < b.size(); ++i) {
      Seen s;
      s.tensor = cv::Mat(48, 64, CV_8UC3);
      std::memcpy(s.tensor.data, host.data() + i * per, per);
      s.geometry = b.samples[i].geometry;
      s.on_gpu = b.samples[i].decoded_on_gpu;
      out[b.samples[i].path] = s;
    }
  });
  return out;
}

double most_off(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat d;
  cv::absdiff(a, b, d);
  double m = 0;
  cv::minMaxLoc(d.reshape(1), nullptr, &m);
  return m;
}

}  // namespace

TEST_CASE("augment runs: each tensor is its recorded box resized and mirrored, epochs differ, a replay is identical") {
  const Config c = augment_config(8);
  Pipeline p(c);
  const auto e0 = run_once(p);
  REQUIRE(e0.size() == 8);
  for (const auto& [path, s] : e0) {
    CAPTURE(path);
    const SampleGeometry& g = s.geometry;
    CHECK(g.resize == ResizeMode::random_crop);
    CHECK(g.epoch == 0);
    CHECK(g.decode_scale == 1);  // random_crop decodes whole
    REQUIRE(g.box_width > 0);
    REQUIRE(g.box_x + g.box_width <= g.width);
    REQUIRE(g.box_y + g.box_height <= g.height);
    // The definition: cv::resize of the box, then the flips.
    const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
    cv::Mat want;
    cv::resize(img(cv::Rect(g.box_x, g.box_y, g.box_width, g.box_height)), want, cv::Size(64, 48), 0, 0,
               cv::INTER_LINEAR);
    if (g.flip_x || g.flip_y) cv::flip(want, want, g.flip_x && g.flip_y ? -1 : g.flip_x ? 1 : 0);
    CHECK(most_off(s.tensor, want) == 0);
    // The geometry maps the box onto the whole tensor, flips included.
    const Box t = image_to_tensor(g, Box{static_cast<double>(g.box_x), static_cast<double>(g.box_y),
                                         static_cast<double>(g.box_width), static_cast<double>(g.box_height)});
    CHECK(t.x == doctest::Approx(0).epsilon(1e-9));
    CHECK(t.y == doctest::Approx(0).epsilon(1e-9));
    CHECK(t.width == doctest::Approx(64));
    CHECK(t.height == doctest::Approx(48));
    // The box's top-left corner is the tensor's, mirrored where flipped.
    const Point corner = image_to_tensor(g, Point{static_cast<double>(g.box_x), static_cast<double>(g.box_y)});
    CHECK(corner.x == doctest::Approx(g.flip_x ? 64.0 : 0.0));
    CHECK(corner.y == doctest::Approx(g.flip_y ? 48.0 : 0.0));
  }
  int flipped = 0;
  for (const auto& [path, s] : e0) flipped += s.geometry.flip_x ? 1 : 0;
  MESSAGE("epoch 0: " << flipped << " of 8 mirrored left to right");
  const auto e1 = run_once(p);
  int same_box = 0;
  for (const auto& [path, s] : e1) {
    CHECK(s.geometry.epoch == 1);
    const SampleGeometry& a = e0.at(path).geometry;
    same_box += a.box_x == s.geometry.box_x && a.box_y == s.geometry.box_y && a.box_width == s.geometry.box_width ? 1 : 0;
  }
  CHECK(same_box < 2);
  p.set_epoch(0);
  const auto again = run_once(p);
  for (const auto& [path, s] : again) {
    CAPTURE(path);
    CHECK(s.geometry == e0.at(path).geometry);
    CHECK(most_off(s.tensor, e0.at(path).tensor) == 0);
  }
  // A fresh Pipeline (another process, another rank) draws the same for the same epoch.
  Pipeline fresh(c);
  const auto other = run_once(fresh);
  for (const auto& [path, s] : other) CHECK(s.geometry == e0.at(path).geometry);
}

TEST_CASE("augment runs: center_crop with short_side is torchvision's Resize then CenterCrop, as a box of the original") {
  const Config c = eval_config(8);
  Pipeline p(c);
  const auto seen = run_once(p);
  REQUIRE(seen.size() == 8);
  for (const auto& [path, s] : seen) {
    CAPTURE(path);
    const SampleGeometry& g = s.geometry;
    CHECK(g.resize == ResizeMode::center_crop);
    const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
    // The box: the centre of the original that the 64 x 48 window of the
    // image scaled to a short side of 73 covers.
    const double back = std::min(img.cols, img.rows) / 73.0;
    CHECK(g.box_width == static_cast<int>(std::nearbyint(64 * back)));
    CHECK(g.box_height == static_cast<int>(std::nearbyint(48 * back)));
    CHECK(std::abs(g.box_x - (img.cols - g.box_width) / 2.0) <= 0.5);
    CHECK(std::abs(g.box_y - (img.rows - g.box_height) / 2.0) <= 0.5);
    CHECK_FALSE(g.flip_x);
    // The tensor is that box resized (the CPU route decodes it alone: decode.region).
    cv::Mat want;
    cv::resize(img(cv::Rect(g.box_x, g.box_y, g.box_width, g.box_height)), want, cv::Size(64, 48), 0, 0,
               cv::INTER_LINEAR);
    CHECK(most_off(s.tensor, want) == 0);
    // The geometry maps the box onto the whole tensor.
    const Box t = image_to_tensor(g, Box{static_cast<double>(g.box_x), static_cast<double>(g.box_y),
                                         static_cast<double>(g.box_width), static_cast<double>(g.box_height)});
    CHECK(t.x == doctest::Approx(0).epsilon(1e-9));
    CHECK(t.width == doctest::Approx(64));
    CHECK(t.height == doctest::Approx(48));
  }
  // torchvision's two steps: Resize(73) makes the short side 73 and the long
  // one int(73 * long / short); CenterCrop cuts whole pixels from
  // round((size - crop) / 2). Its window, mapped back to the original, is
  // ours to within one pixel of the scaled image (its integer sizes and
  // offsets against our box's whole original pixels).
  for (const auto& [path, s] : seen) {
    CAPTURE(path);
    const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
    const bool wide = img.cols >= img.rows;
    const int sw = wide ? static_cast<int>(73.0 * img.cols / img.rows) : 73;
    const int sh = wide ? 73 : static_cast<int>(73.0 * img.rows / img.cols);
    const double fx = static_cast<double>(sw) / img.cols, fy = static_cast<double>(sh) / img.rows;
    const double left = std::nearbyint((sw - 64) / 2.0), top = std::nearbyint((sh - 48) / 2.0);
    const SampleGeometry& g = s.geometry;
    CHECK(std::abs(g.box_x - left / fx) <= 1.0 / fx);
    CHECK(std::abs(g.box_y - top / fy) <= 1.0 / fy);
    CHECK(std::abs(g.box_width - 64 / fx) <= 1.0 / fx);
    CHECK(std::abs(g.box_height - 48 / fy) <= 1.0 / fy);
  }
  // Epochs draw nothing: the same pixels every epoch.
  const auto again = run_once(p);
  for (const auto& [path, s] : again) CHECK(most_off(s.tensor, seen.at(path).tensor) == 0);
  // The same recipe with region decode off: the same pixels.
  Config whole = c;
  whole.decode.region = false;
  Pipeline pw(whole);
  for (const auto& [path, s] : run_once(pw)) CHECK(most_off(s.tensor, seen.at(path).tensor) == 0);
}

TEST_CASE("augment runs: region decode off gives random_crop's pixels and geometry bit for bit") {
  const Config c = augment_config(8);
  Config whole = c;
  whole.decode.region = false;
  Pipeline pr(c), pw(whole);
  pr.set_epoch(3);
  pw.set_epoch(3);
  const auto r = run_once(pr), w = run_once(pw);
  REQUIRE(r.size() == 8);
  for (const auto& [path, s] : r) {
    CAPTURE(path);
    CHECK(s.geometry == w.at(path).geometry);
    CHECK(most_off(s.tensor, w.at(path).tensor) == 0);
  }
}

TEST_CASE("augment runs (GPU): the GPU's resize of staged frames and of engine-decoded JPEGs gives the CPU route's pixels") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  for (const bool eval : {false, true}) {
    CAPTURE(eval);
    Config cpu = eval ? eval_config(12) : augment_config(12);
    cpu.decode.where = Where::cpu;
    cpu.transform.resize.where = Where::cpu;
    Pipeline pc(cpu);
    pc.set_epoch(2);
    const auto want = run_once(pc);
    for (const Where decode : {Where::cpu, Where::gpu}) {
      CAPTURE(static_cast<int>(decode));
      Config gpu = eval ? eval_config(12) : augment_config(12);
      gpu.devices = DeviceSelection::parse("0");
      gpu.decode.where = decode;
      gpu.transform.resize.where = Where::gpu;
      Pipeline pg(gpu);
      pg.set_epoch(2);
      const auto got = run_once(pg);
      REQUIRE(got.size() == want.size());
      int engines = 0;
      for (const auto& [path, s] : got) {
        CAPTURE(path);
        engines += s.on_gpu ? 1 : 0;
        CHECK(s.geometry == want.at(path).geometry);
        // The engines' IDCT differs from libjpeg's by a level here and there.
        CHECK(most_off(s.tensor, want.at(path).tensor) <= (s.on_gpu ? 1 : 0));
      }
      if (decode == Where::gpu) CHECK(engines > 0);
    }
  }
}
