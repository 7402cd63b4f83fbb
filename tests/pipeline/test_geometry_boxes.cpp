// Per-sample geometry against the pixels: a bright rectangle drawn into
// synthetic images (odd sizes, a PNG, a JPEG with each EXIF orientation 1..8,
// large JPEGs that decode at 1/8 size, also rotated) goes through the whole
// pipeline (stretch, letterbox, center_crop; resize on the CPU and on the GPU
// side, i.e. the fused kernel or its CPU twin; on the GPU machine also the GPU
// JPEG route); the rectangle found in each delivered tensor, mapped back with
// tensor_to_image(), must land on the rectangle drawn, in displayed and in
// stored coordinates. Then the dump manifest's geometry and label fields, and
// input.labels: folders through a run (SampleId::label, Report::classes, the
// JSON report).
//
// Every test runs on each backend of test_devices(): the host backend always,
// GPU 0 as well where there is one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "oriented.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using namespace imgpipe;
using Bytes = std::vector<unsigned char>;

namespace {

constexpr int kBackground = 40, kRect = 220;

// An APP1 Exif segment holding Orientation = o, spliced in after SOI.
Bytes with_orientation(const Bytes& jpeg, int o) {
  const unsigned char tiff[] = {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0,
                                static_cast<unsigned char>(o), 0, 0, 0, 0, 0, 0, 0};
  const std::size_t len = 2 + 6 + sizeof tiff;
  Bytes out{0xFF, 0xD8, 0xFF, 0xE1, static_cast<unsigned char>(len >> 8), static_cast<unsigned char>(len),
            'E', 'x', 'i', 'f', 0, 0};
  out.insert(out.end(), tiff, tiff + sizeof tiff);
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}


// One synthetic input: the rectangle in stored and in displayed coordinates.
struct Drawn {
  cv::Rect stored, displayed;
  int orientation = 1;
  cv::Size size;  // the image as displayed
};

// Writes `name` (a JPEG, or a PNG when the name says so): a sw x sh grey
// image with `rect` bright, stored so; EXIF orientation o for a JPEG.
Drawn draw(const fs::path& dir, const std::string& name, int sw, int sh, cv::Rect rect, int o = 1) {
  cv::Mat img(sh, sw, CV_8UC3, cv::Scalar::all(kBackground));
  img(rect).setTo(cv::Scalar::all(kRect));
  Bytes b;
  const bool png = name.ends_with(".png");
  REQUIRE(cv::imencode(png ? ".png" : ".jpg", img, b, {cv::IMWRITE_JPEG_QUALITY, 95}));
  if (!png && o != 1) b = with_orientation(b, o);
  test::write_bytes(dir / name, b);
  cv::Mat mask(sh, sw, CV_8UC1, cv::Scalar(0));
  mask(rect).setTo(255);
  const cv::Mat shown = imgpipe::test::oriented(mask, o);
  return {rect, cv::boundingRect(shown), o, shown.size()};
}

// The bright rectangle in sample i of a uint8 NHWC batch: the tensor pixels
// brighter than halfway, as a box of whole pixels.
Box find_rect(const std::vector<unsigned char>& host, int i, int w, int h) {
  const unsigned char* t = host.data() + static_cast<std::size_t>(i) * w * h * 3;
  int x0 = w, y0 = h, x1 = -1, y1 = -1;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      if (t[(static_cast<std::size_t>(y) * w + x) * 3] > (kBackground + kRect) / 2) {
        x0 = std::min(x0, x);
        y0 = std::min(y0, y);
        x1 = std::max(x1, x);
        y1 = std::max(y1, y);
      }
  REQUIRE(x1 >= 0);
  return {static_cast<double>(x0), static_cast<double>(y0), static_cast<double>(x1 + 1 - x0),
          static_cast<double>(y1 + 1 - y0)};
}

struct Seen {
  SampleId id;
  Box found;  // in tensor coordinates
};

Config box_config(const fs::path& dir, ResizeMode mode, int w, int h) {
  Config c;
  c.input.paths = {dir.string()};
  c.transform.resize.width = w;
  c.transform.resize.height = h;
  c.transform.resize.mode = mode;
  c.transform.dtype = DType::uint8;  // the resampled pixels themselves
  c.transform.layout = Layout::nhwc;
  c.transform.swap_rb = false;
  c.batch.size = 4;
  c.decode.threads = 2;
  c.decode.where = Where::cpu;
  return c;
}

std::map<std::string, Seen> run_and_find(const Config& c) {
  std::map<std::string, Seen> out;
  Pipeline p(c);
  const Report r = p.run([&](const DeviceBatch& b) {
    const std::vector<unsigned char> host = test::batch_to_host(b);
    for (std::size_t i = 0; i < b.samples.size(); ++i)
      out[fs::path(b.samples[i].path).filename().string()] = {
          b.samples[i], find_rect(host, static_cast<int>(i), c.transform.resize.width, c.transform.resize.height)};
  });
  CHECK(r.inputs.failed == 0);
  return out;
}

// Each edge of `got` within tol_x / tol_y of `want`.
void check_box(const Box& got, const cv::Rect& want, double tol_x, double tol_y) {
  CHECK(std::abs(got.x - want.x) <= tol_x);
  CHECK(std::abs(got.x + got.width - (want.x + want.width)) <= tol_x);
  CHECK(std::abs(got.y - want.y) <= tol_y);
  CHECK(std::abs(got.y + got.height - (want.y + want.height)) <= tol_y);
}

}  // namespace

TEST_CASE("geometry boxes: a rectangle found in the tensor maps back onto the one drawn (modes, odd sizes, EXIF 1..8, reduced decode)") {
  test::TempDir dir;
  std::map<std::string, Drawn> drawn;
  drawn["odd_301x187.jpg"] = draw(dir.path(), "odd_301x187.jpg", 301, 187, {120, 70, 61, 37});
  drawn["odd_97x203.png"] = draw(dir.path(), "odd_97x203.png", 97, 203, {31, 83, 29, 41});
  for (int o = 1; o <= 8; ++o) {
    const std::string name = "exif_" + std::to_string(o) + ".jpg";
    drawn[name] = draw(dir.path(), name, 257, 173, {100, 60, 50, 40}, o);
  }
  // Not multiples of 8: 1/8 decode leaves part of a block beyond the image.
  for (int o : {1, 3, 6}) {
    const std::string name = "big_" + std::to_string(o) + ".jpg";
    drawn[name] = draw(dir.path(), name, 1203, 805, {550, 350, 151, 101}, o);
  }
  for (const DeviceSelection& dev : test::test_devices()) {
    for (ResizeMode mode : {ResizeMode::stretch, ResizeMode::letterbox, ResizeMode::center_crop}) {
      for (Where resize_where : {Where::cpu, Where::gpu}) {
        std::vector<Where> decoders{Where::cpu};
        if (dev.kind != DeviceSelection::Kind::cpu) decoders.push_back(Where::gpu);  // the GPU JPEG route
        for (Where decode_where : decoders) {
          CAPTURE(dev.to_string());
          CAPTURE(enum_name(resize_mode_names, mode));
          CAPTURE(enum_name(where_names, resize_where));
          CAPTURE(enum_name(where_names, decode_where));
          Config c = box_config(dir.path(), mode, 96, 80);
          c.devices = dev;
          c.transform.resize.where = resize_where;
          c.decode.where = decode_where;
          const std::map<std::string, Seen> seen = run_and_find(c);
          REQUIRE(seen.size() == drawn.size());
          int on_gpu = 0;
          for (const auto& [name, d] : drawn) {
            CAPTURE(name);
            const Seen& s = seen.at(name);
            const SampleGeometry& g = s.id.geometry;
            on_gpu += s.id.decoded_on_gpu;
            CHECK(g.resize == mode);
            CHECK(g.orientation == d.orientation);
            CHECK(g.width == d.size.width);
            CHECK(g.height == d.size.height);
            CHECK(g.stored_width == (d.orientation >= 5 ? d.size.height : d.size.width));
            CHECK(g.tensor_width == 96);
            CHECK(g.tensor_height == 80);
            if (name.starts_with("big_") && !s.id.decoded_on_gpu) CHECK(g.decode_scale == 8);
            // The tolerance: one tensor pixel (where the halfway threshold
            // falls) plus one original pixel (JPEG ringing), in original pixels.
            const double tx = 1.0 / g.scale_x + 1, ty = 1.0 / g.scale_y + 1;
            CAPTURE(tx);
            CAPTURE(ty);
            check_box(tensor_to_image(g, s.found), d.displayed, tx, ty);
            const bool turned = d.orientation >= 5;
            check_box(tensor_to_image(g, s.found, ImageCoords::stored), d.stored, turned ? ty : tx, turned ? tx : ty);
          }
          if (decode_where == Where::gpu) CHECK(on_gpu > 0);
        }
      }
    }
  }
}

TEST_CASE("geometry boxes: the image's size, padding and crop in SampleId match the tensor it came with") {
  test::TempDir dir;
  draw(dir.path(), "wide.jpg", 300, 100, {0, 0, 300, 100});  // all bright: the image area itself
  draw(dir.path(), "tall.png", 50, 200, {0, 0, 50, 200});
  for (const DeviceSelection& dev : test::test_devices()) {
    CAPTURE(dev.to_string());
    Config c = box_config(dir.path(), ResizeMode::letterbox, 64, 64);
    c.devices = dev;
    const auto seen = run_and_find(c);
    const Seen& wide = seen.at("wide.jpg");
    CHECK(wide.id.geometry.width == 300);
    CHECK(wide.id.geometry.height == 100);
    CHECK(wide.id.geometry.resized_height == 21);  // lround(100 * 64 / 300)
    CHECK(wide.id.geometry.pad_top == 21);
    CHECK(wide.id.geometry.pad_left == 0);
    CHECK(wide.found == Box{0, 21, 64, 21});  // the image area is exactly the unpadded part
    const Seen& tall = seen.at("tall.png");
    CHECK(tall.id.geometry.pad_left == 24);
    CHECK(tall.found == Box{24, 0, 16, 64});
  }
}

TEST_CASE("geometry boxes: the dump manifest gives each sample's geometry and label as SampleId does") {
  test::TempDir dir, out;
  fs::create_directories(dir / "b");
  draw(dir.path() / "b", "x.jpg", 123, 45, {10, 10, 20, 20}, 6);
  draw(dir.path(), "root.png", 40, 30, {5, 5, 10, 10});
  fs::create_directories(dir / "a");
  for (const DeviceSelection& dev : test::test_devices()) {
    CAPTURE(dev.to_string());
    Config c = box_config(dir.path(), ResizeMode::center_crop, 32, 32);
    c.devices = dev;
    c.input.labels = Labels::folders;
    c.sink.type = SinkType::dump;
    c.sink.dir = (out / dev.to_string()).string();
    std::map<std::string, SampleId> ids;
    Pipeline p(c);
    const Report r = p.run([&](const DeviceBatch& b) {
      for (const auto& s : b.samples) ids[fs::path(s.path).filename().string()] = s;
    });
    CHECK(r.classes == std::vector<std::string>{"a", "b"});
    const nlohmann::json report = nlohmann::json::parse(r.to_json());
    CHECK(report.at("classes") == nlohmann::json::array({"a", "b"}));
    REQUIRE(ids.size() == 2);
    CHECK(ids.at("x.jpg").label == 1);
    CHECK(ids.at("root.png").label == -1);
    CHECK(ids.at("x.jpg").geometry.orientation == 6);
    std::ifstream manifest(fs::path(c.sink.dir) / "manifest.jsonl");
    std::string line;
    int lines = 0;
    while (std::getline(manifest, line)) {
      ++lines;
      const nlohmann::json j = nlohmann::json::parse(line);
      const std::string name = fs::path(j.at("path").get<std::string>()).filename().string();
      CAPTURE(name);
      const SampleId& id = ids.at(name);
      CHECK(j.at("label") == id.label);
      CHECK(j.contains("route"));  // the fields from before stay
      const nlohmann::json& g = j.at("geometry");
      const SampleGeometry& e = id.geometry;
      CHECK(g.at("width") == e.width);
      CHECK(g.at("height") == e.height);
      CHECK(g.at("stored_width") == e.stored_width);
      CHECK(g.at("stored_height") == e.stored_height);
      CHECK(g.at("orientation") == e.orientation);
      CHECK(g.at("decode_scale") == e.decode_scale);
      CHECK(g.at("resize") == "center_crop");
      CHECK(g.at("scale_x").get<double>() == e.scale_x);
      CHECK(g.at("scale_y").get<double>() == e.scale_y);
      CHECK(g.at("offset_x").get<double>() == e.offset_x);
      CHECK(g.at("offset_y").get<double>() == e.offset_y);
      CHECK(g.at("resized_width") == e.resized_width);
      CHECK(g.at("resized_height") == e.resized_height);
      CHECK(g.at("pad_left") == e.pad_left);
      CHECK(g.at("pad_top") == e.pad_top);
      CHECK(g.at("crop_x") == e.crop_x);
      CHECK(g.at("crop_y") == e.crop_y);
      CHECK(g.at("tensor_width") == 32);
      CHECK(g.at("tensor_height") == 32);
    }
    CHECK(lines == 2);
  }
}
