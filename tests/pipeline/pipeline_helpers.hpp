// Helpers of the end-to-end pipeline tests (test_pipeline_*.cpp): a .npy
// reader independent of the sink's writer, dump runs read back, the
// cv::dnn::blobFromImage reference and the comparison with it, the accuracy
// grid, and a folder of good and bad inputs.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgcodecs.hpp>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "kernels/checksum.hpp"

namespace pipeline_test {

namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::DeviceSelection;
using imgpipe::DType;
using imgpipe::Layout;
using imgpipe::Pipeline;
using imgpipe::Report;
using imgpipe::Where;
using imgpipe::test::TempDir;

// ------------------------------------------------------------------ .npy
struct Npy {
  std::string descr;
  bool fortran_order = true;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;
  std::size_t count() const {
    std::size_t n = 1;
    for (auto d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }
};

// Parses a version 1.0 .npy file written by anyone (not the sink's writer).
inline Npy read_npy(const fs::path& p) {
  const std::vector<unsigned char> b = imgpipe::test::read_bytes(p);
  REQUIRE(b.size() >= 10);
  REQUIRE(std::memcmp(b.data(), "\x93NUMPY", 6) == 0);
  REQUIRE(b[6] == 1);
  REQUIRE(b[7] == 0);
  const std::size_t hlen = b[8] | (static_cast<std::size_t>(b[9]) << 8);
  REQUIRE(b.size() >= 10 + hlen);
  CHECK((10 + hlen) % 64 == 0);  // data aligned as numpy writes it
  const std::string h(b.begin() + 10, b.begin() + 10 + static_cast<std::ptrdiff_t>(hlen));
  CHECK(h.back() == '\n');
  Npy n;
  auto value_of = [&](const std::string& key) {
    const auto k = h.find("'" + key + "':");
    REQUIRE(k != std::string::npos);
    return k + key.size() + 3;
  };
  {
    auto i = h.find('\'', value_of("descr"));
    const auto j = h.find('\'', i + 1);
    n.descr = h.substr(i + 1, j - i - 1);
  }
  {
    auto i = value_of("fortran_order");
    while (h[i] == ' ') ++i;
    n.fortran_order = h.compare(i, 4, "True") == 0;
    CHECK((n.fortran_order || h.compare(i, 5, "False") == 0));
  }
  {
    const auto i = h.find('(', value_of("shape"));
    const auto j = h.find(')', i);
    std::stringstream ss(h.substr(i + 1, j - i - 1));
    std::string item;
    while (std::getline(ss, item, ','))
      if (item.find_first_not_of(' ') != std::string::npos) n.shape.push_back(std::stoll(item));
  }
  n.data.assign(b.begin() + 10 + static_cast<std::ptrdiff_t>(hlen), b.end());
  return n;
}

inline std::size_t descr_size(const std::string& d) {
  if (d == "<f4") return 4;
  if (d == "<f2") return 2;
  if (d == "|u1" || d == "<u1") return 1;
  FAIL("unexpected dtype " << d);
  return 0;
}

inline std::string descr_of(DType t) { return t == DType::float32 ? "<f4" : t == DType::float16 ? "<f2" : "|u1"; }

// ------------------------------------------------------------------ runs
struct DumpRun {
  Report report;
  std::vector<Npy> batches;
  std::vector<nlohmann::json> manifest;
};

inline std::vector<nlohmann::json> read_manifest(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  std::vector<nlohmann::json> v;
  std::string line;
  while (std::getline(in, line)) v.push_back(nlohmann::json::parse(line));
  return v;
}

// Runs `cfg` with a dump sink into `out` (emptied first: a dump folder that
// is not empty is refused) on `dev` and reads everything back.
inline DumpRun run_dump(Config cfg, const fs::path& out, const DeviceSelection& dev,
                 const imgpipe::BatchCallback& cb = {}) {
  fs::remove_all(out);
  cfg.sink.type = imgpipe::SinkType::dump;
  cfg.sink.dir = out.string();
  cfg.devices = dev;
  Pipeline p(cfg);
  DumpRun r;
  r.report = p.run(cb);
  for (std::uint64_t i = 0; i < r.report.batches; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "batch_%06llu.npy", static_cast<unsigned long long>(i));
    CAPTURE(name);
    REQUIRE(fs::exists(out / name));
    r.batches.push_back(read_npy(out / name));
  }
  std::size_t npy_files = 0;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().extension() == ".npy") ++npy_files;
  CHECK(npy_files == r.report.batches);
  r.manifest = read_manifest(out / "manifest.jsonl");
  return r;
}

inline Config base_config(int w, int h, int batch) {
  Config c;
  c.input.paths = {imgpipe::test::sample_dir().string()};
  c.transform.resize.width = w;
  c.transform.resize.height = h;
  c.batch.size = batch;
  // The references decode at full size; reduced decode has its own tests
  // (tests/stages/test_decode_formats.cpp).
  c.decode.reduced = false;
  return c;
}

// ------------------------------------------------------------------ reference
inline const std::vector<cv::Mat>& sample_mats() {
  static const std::vector<cv::Mat> mats = [] {
    std::vector<cv::Mat> v;
    for (const auto& p : imgpipe::test::sample_images()) v.push_back(cv::imread(p.string(), cv::IMREAD_COLOR));
    return v;
  }();
  return mats;
}

// The expected tensor of one image in NCHW float32 (uint8 values as floats for
// dtype uint8), computed with OpenCV's blobFromImage (OpenCV 4.6:
// (resize(img) [BGR->RGB] - mean) * scalefactor, mean in output order).
inline std::vector<float> reference_nchw(const cv::Mat& img, const imgpipe::TransformConfig& t) {
  const cv::Size size(t.resize.width, t.resize.height);
  const bool crop = t.resize.mode == imgpipe::ResizeMode::center_crop;
  REQUIRE(t.resize.mode != imgpipe::ResizeMode::letterbox);  // blobFromImage has no letterbox
  REQUIRE(t.resize.interpolation == imgpipe::Interpolation::linear);
  const std::size_t plane = static_cast<std::size_t>(size.area());
  std::vector<float> out(plane * 3);
  // Element-wise work through OpenCV: the suite's own code is compiled at
  // -O0, and instrumented under the sanitizers (tests/CMakeLists.txt).
  cv::Mat all(1, static_cast<int>(out.size()), CV_32F, out.data());
  if (t.dtype == DType::uint8) {
    const cv::Mat blob = cv::dnn::blobFromImage(img, 1.0, size, cv::Scalar(), t.swap_rb, crop, CV_8U);
    REQUIRE(blob.total() == out.size());
    blob.reshape(1, 1).convertTo(all, CV_32F);  // into `out` (same size and type: not reallocated)
    return out;
  }
  const auto& n = t.normalize;
  const bool uniform_std = n.std[0] == n.std[1] && n.std[1] == n.std[2];
  // out = (v * scale - mean) / std = (v - mean / scale) * (scale / std)
  const double factor = uniform_std ? static_cast<double>(n.scale) / n.std[0] : n.scale;
  const cv::Scalar mean(n.mean[0] / static_cast<double>(n.scale), n.mean[1] / static_cast<double>(n.scale),
                        n.mean[2] / static_cast<double>(n.scale));
  const cv::Mat blob = cv::dnn::blobFromImage(img, factor, size, mean, t.swap_rb, crop, CV_32F);
  REQUIRE(blob.total() == out.size());
  std::memcpy(out.data(), blob.ptr<float>(), out.size() * sizeof(float));
  if (!uniform_std)
    for (std::size_t c = 0; c < 3; ++c) {
      cv::Mat p = all.colRange(static_cast<int>(c * plane), static_cast<int>((c + 1) * plane));
      p.convertTo(p, CV_32F, 1.0 / n.std[c]);
    }
  return out;
}

// Compares sample `s` of a dumped batch with the reference; returns the
// number of mismatching elements (and describes the first one).
inline std::size_t compare_sample(const Npy& batch, std::size_t s, const std::vector<float>& ref,
                           const imgpipe::TransformConfig& t, std::string* first) {
  const std::size_t H = static_cast<std::size_t>(t.resize.height), W = static_cast<std::size_t>(t.resize.width);
  const std::size_t per = H * W * 3;
  const std::size_t esize = imgpipe::dtype_size(t.dtype);
  const unsigned char* base = batch.data.data() + s * per * esize;
  if (t.dtype == DType::float32) {
    // OpenCV compares first (the loop below, at -O0 and instrumented under
    // the sanitizers, took most of the 640x640 cases' time), against a
    // tolerance 1% tighter than the loop's: a sample it passes, the loop
    // passes too. Where it finds anything, the loop decides and describes.
    const int n = static_cast<int>(per);
    cv::Mat got(1, n, CV_32F);  // in the reference's order, NCHW
    const cv::Mat raw(t.layout == Layout::nchw ? 1 : static_cast<int>(H * W), t.layout == Layout::nchw ? n : 3, CV_32F,
                      const_cast<unsigned char*>(base));
    if (t.layout == Layout::nchw) raw.copyTo(got);
    else cv::Mat(raw.t()).reshape(1, 1).copyTo(got);
    const cv::Mat want(1, n, CV_32F, const_cast<float*>(ref.data()));
    cv::Mat diff, tol, ok;
    cv::absdiff(got, want, diff);
    cv::max(cv::Mat(cv::abs(want)), 1.0, tol);
    tol.convertTo(tol, CV_32F, 0.99e-5);
    cv::compare(diff, tol, ok, cv::CMP_LE);  // NaN compares false: not passed
    if (cv::countNonZero(ok) == n) return 0;
  }
  std::size_t bad = 0;
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t y = 0; y < H; ++y)
      for (std::size_t x = 0; x < W; ++x) {
        const float want = ref[(c * H + y) * W + x];
        const std::size_t i = t.layout == Layout::nchw ? (c * H + y) * W + x : (y * W + x) * 3 + c;
        float got = 0;
        bool ok = false;
        if (t.dtype == DType::float32) {
          std::memcpy(&got, base + i * 4, 4);
          ok = std::fabs(got - want) <= 1e-5f * std::max(1.0f, std::fabs(want));
        } else if (t.dtype == DType::float16) {
          std::uint16_t bits;
          std::memcpy(&bits, base + i * 2, 2);
          got = static_cast<float>(cv::float16_t::fromBits(bits));
          // One unit in the last place of half precision at the reference's
          // magnitude (normal range: 2^(e-10); subnormals: 2^-24).
          const int e = std::max(static_cast<int>(std::floor(std::log2(std::max(std::fabs(want), 1e-30f)))), -14);
          ok = std::fabs(got - want) <= std::ldexp(1.0f, e - 10);
        } else {
          got = base[i];
          ok = got == want;
        }
        if (!ok && bad++ == 0 && first) {
          std::ostringstream os;
          os << "sample " << s << " c=" << c << " y=" << y << " x=" << x << ": got " << got << ", expected " << want;
          *first = os.str();
        }
      }
  return bad;
}

// Checks every dumped sample against blobFromImage; `order` maps the k-th
// delivered sample to its index in sample_mats().
inline void check_against_reference(const DumpRun& r, const Config& cfg, const std::vector<std::size_t>& order) {
  const auto& t = cfg.transform;
  const std::int64_t H = t.resize.height, W = t.resize.width;
  std::size_t k = 0;
  for (std::size_t b = 0; b < r.batches.size(); ++b) {
    const Npy& n = r.batches[b];
    CAPTURE(b);
    CHECK(n.descr == descr_of(t.dtype));
    CHECK_FALSE(n.fortran_order);
    REQUIRE(n.shape.size() == 4);
    const std::int64_t count = n.shape[0];
    CHECK(count >= 1);
    CHECK(count <= cfg.batch.size);
    if (t.layout == Layout::nchw) CHECK(n.shape == std::vector<std::int64_t>{count, 3, H, W});
    else CHECK(n.shape == std::vector<std::int64_t>{count, H, W, 3});
    REQUIRE(n.data.size() == n.count() * descr_size(n.descr));
    for (std::int64_t s = 0; s < count; ++s, ++k) {
      REQUIRE(k < order.size());
      const auto ref = reference_nchw(sample_mats()[order[k]], t);
      std::string first;
      const std::size_t bad = compare_sample(n, static_cast<std::size_t>(s), ref, t, &first);
      CAPTURE(first);
      CHECK(bad == 0);
    }
  }
  CHECK(k == order.size());
}

inline std::vector<std::size_t> all_samples() {
  std::vector<std::size_t> v(sample_mats().size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

inline std::string dev_name(const DeviceSelection& d) { return d.to_string(); }

// The grid of the accuracy tests: both normalize.where, both layouts.
inline void check_grid(DType dtype, const std::array<float, 3>& std_) {
  REQUIRE(sample_mats().size() == 20);
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        CAPTURE(dev_name(dev));
        CAPTURE(where == Where::cpu ? "cpu" : "gpu");
        CAPTURE(std::string(imgpipe::to_string(layout)));
        Config cfg = base_config(64, 48, 8);
        cfg.transform.dtype = dtype;
        cfg.transform.layout = layout;
        cfg.transform.normalize.where = where;
        cfg.transform.normalize.std = std_;
        TempDir dir;
        const DumpRun r = run_dump(cfg, dir / "out", dev);
        CHECK(r.report.normalize_where == (where == Where::cpu ? "cpu" : "gpu"));
        CHECK(r.report.inputs.discovered == 20);
        CHECK(r.report.inputs.delivered == 20);
        CHECK(r.report.inputs.failed == 0);
        CHECK(r.report.batches == 3);  // 8 + 8 + 4: full and partial batches
        REQUIRE(r.batches.size() == 3);
        CHECK(r.batches[0].shape[0] == 8);
        CHECK(r.batches[1].shape[0] == 8);
        CHECK(r.batches[2].shape[0] == 4);
        check_against_reference(r, cfg, all_samples());
      }
    }
  }
}

// A folder with good sample images and bad files, in a known order.
struct MixedFolder {
  TempDir dir;
  std::vector<std::size_t> good;       // indices into sample_mats(), in input order
  std::vector<fs::path> bad;           // in input order
  std::vector<std::string> bad_words;  // a word each reason must contain
  std::size_t total = 0;
};

inline void make_mixed(MixedFolder& m) {
  const auto samples = imgpipe::test::sample_images();
  auto copy = [&](std::size_t i, const std::string& name) {
    fs::copy_file(samples[i], m.dir / name);
    m.good.push_back(i);
  };
  copy(0, "a0.jpg");
  copy(9, "a1.png");
  // An empty file.
  imgpipe::test::write_bytes(m.dir / "b_empty.jpg", {});
  m.bad.push_back(m.dir / "b_empty.jpg");
  m.bad_words.push_back("empty");
  copy(2, "c0.jpg");
  // A text file named .jpg.
  {
    std::ofstream(m.dir / "d_text.jpg") << "this is not an image\n";
  }
  m.bad.push_back(m.dir / "d_text.jpg");
  m.bad_words.push_back("not a recognised image");
  copy(3, "e0.jpg");
  // A truncated JPEG.
  {
    auto bytes = imgpipe::test::read_bytes(samples[4]);
    bytes.resize(bytes.size() / 2);
    imgpipe::test::write_bytes(m.dir / "f_truncated.jpg", bytes);
  }
  m.bad.push_back(m.dir / "f_truncated.jpg");
  m.bad_words.push_back("truncated");
  copy(5, "g0.jpg");
  copy(19, "g1.png");
  // Not an image name: not discovered at all.
  {
    std::ofstream(m.dir / "notes.txt") << "ignored\n";
  }
  m.total = m.good.size() + m.bad.size();
}

}  // namespace pipeline_test
