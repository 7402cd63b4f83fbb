// The whole pipeline, end to end, on the sample images: the dumped tensors
// against an independent computation with cv::dnn::blobFromImage, the
// manifest, the callback, input accounting, error policies, drop_last,
// checksums, request_stop and exceptions from the callback.
//
// Every test runs on each backend of test_devices(): the host backend always,
// GPU 0 as well where there is one.
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

namespace {

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
Npy read_npy(const fs::path& p) {
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

std::size_t descr_size(const std::string& d) {
  if (d == "<f4") return 4;
  if (d == "<f2") return 2;
  if (d == "|u1" || d == "<u1") return 1;
  FAIL("unexpected dtype " << d);
  return 0;
}

std::string descr_of(DType t) { return t == DType::float32 ? "<f4" : t == DType::float16 ? "<f2" : "|u1"; }

// ------------------------------------------------------------------ runs
struct DumpRun {
  Report report;
  std::vector<Npy> batches;
  std::vector<nlohmann::json> manifest;
};

std::vector<nlohmann::json> read_manifest(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  std::vector<nlohmann::json> v;
  std::string line;
  while (std::getline(in, line)) v.push_back(nlohmann::json::parse(line));
  return v;
}

// Runs `cfg` with a dump sink into `out` (emptied first: a dump folder that
// is not empty is refused) on `dev` and reads everything back.
DumpRun run_dump(Config cfg, const fs::path& out, const DeviceSelection& dev,
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

Config base_config(int w, int h, int batch) {
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
const std::vector<cv::Mat>& sample_mats() {
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
std::vector<float> reference_nchw(const cv::Mat& img, const imgpipe::TransformConfig& t) {
  const cv::Size size(t.resize.width, t.resize.height);
  const bool crop = t.resize.mode == imgpipe::ResizeMode::center_crop;
  REQUIRE(t.resize.mode != imgpipe::ResizeMode::letterbox);  // blobFromImage has no letterbox
  REQUIRE(t.resize.interpolation == imgpipe::Interpolation::linear);
  const std::size_t plane = static_cast<std::size_t>(size.area());
  std::vector<float> out(plane * 3);
  if (t.dtype == DType::uint8) {
    const cv::Mat blob = cv::dnn::blobFromImage(img, 1.0, size, cv::Scalar(), t.swap_rb, crop, CV_8U);
    const auto* p = blob.ptr<std::uint8_t>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = p[i];
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
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t i = 0; i < plane; ++i) out[c * plane + i] /= n.std[c];
  return out;
}

// Compares sample `s` of a dumped batch with the reference; returns the
// number of mismatching elements (and describes the first one).
std::size_t compare_sample(const Npy& batch, std::size_t s, const std::vector<float>& ref,
                           const imgpipe::TransformConfig& t, std::string* first) {
  const std::size_t H = static_cast<std::size_t>(t.resize.height), W = static_cast<std::size_t>(t.resize.width);
  const std::size_t per = H * W * 3;
  const std::size_t esize = imgpipe::dtype_size(t.dtype);
  const unsigned char* base = batch.data.data() + s * per * esize;
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
void check_against_reference(const DumpRun& r, const Config& cfg, const std::vector<std::size_t>& order) {
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

std::vector<std::size_t> all_samples() {
  std::vector<std::size_t> v(sample_mats().size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

std::string dev_name(const DeviceSelection& d) { return d.to_string(); }

// The grid of the accuracy tests: both normalize.where, both layouts.
void check_grid(DType dtype, const std::array<float, 3>& std_) {
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

void make_mixed(MixedFolder& m) {
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

}  // namespace

// ======================================================================== accuracy

TEST_CASE("pipeline: float32 tensors equal cv::dnn::blobFromImage (cpu|gpu normalise, nchw|nhwc)") {
  check_grid(DType::float32, {0.25f, 0.25f, 0.25f});
}

TEST_CASE("pipeline: float16 tensors equal cv::dnn::blobFromImage within one half ulp (cpu|gpu, nchw|nhwc)") {
  check_grid(DType::float16, {0.25f, 0.25f, 0.25f});
}

TEST_CASE("pipeline: uint8 tensors equal cv::dnn::blobFromImage(ddepth=CV_8U) exactly (cpu|gpu, nchw|nhwc)") {
  check_grid(DType::uint8, {0.25f, 0.25f, 0.25f});
}

TEST_CASE("pipeline: ImageNet mean/std at 640x640 (the W1 transform) equal blobFromImage / std") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      CAPTURE(dev_name(dev));
      CAPTURE(where == Where::cpu ? "cpu" : "gpu");
      Config cfg = base_config(640, 640, 8);  // default mean/std/scale: ImageNet
      cfg.transform.normalize.where = where;
      TempDir dir;
      const DumpRun r = run_dump(cfg, dir / "out", dev);
      CHECK(r.report.inputs.delivered == 20);
      check_against_reference(r, cfg, all_samples());
    }
  }
}

TEST_CASE("pipeline: color bgr (no channel swap) and center_crop match blobFromImage") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      CAPTURE(dev_name(dev));
      CAPTURE(where == Where::cpu ? "cpu" : "gpu");
      Config cfg = base_config(48, 64, 6);
      cfg.transform.swap_rb = false;
      cfg.transform.resize.mode = imgpipe::ResizeMode::center_crop;
      cfg.transform.normalize.where = where;
      cfg.transform.normalize.mean = {0.1f, 0.5f, 0.9f};  // distinct, so a swap would show
      cfg.transform.normalize.std = {0.5f, 0.25f, 0.125f};
      TempDir dir;
      const DumpRun r = run_dump(cfg, dir / "out", dev);
      CHECK(r.report.batches == 4);  // 6 + 6 + 6 + 2
      check_against_reference(r, cfg, all_samples());
    }
  }
}

// ======================================================================== manifest, callback

TEST_CASE("pipeline: manifest.jsonl names every sample in input order") {
  const auto samples = imgpipe::test::sample_images();
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    TempDir dir;
    const DumpRun r = run_dump(base_config(32, 24, 8), dir / "out", dev);
    REQUIRE(r.manifest.size() == samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      CAPTURE(i);
      const auto& m = r.manifest[i];
      CHECK(fs::equivalent(m.at("path").get<std::string>(), samples[i]));
      CHECK(fs::path(m.at("path").get<std::string>()).filename() == samples[i].filename());
      CHECK(m.at("frame").get<std::int64_t>() == -1);
      CHECK(m.at("input_index").get<std::uint64_t>() == i);
      CHECK(m.at("batch").get<std::uint64_t>() == i / 8);
      CHECK(m.at("index").get<std::uint64_t>() == i % 8);
    }
  }
}

TEST_CASE("pipeline: the callback receives each DeviceBatch with its shape, dtype, layout and samples") {
  const auto samples = imgpipe::test::sample_images();
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (DType dtype : {DType::float32, DType::float16, DType::uint8}) {
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        CAPTURE(dev_name(dev));
        CAPTURE(std::string(imgpipe::to_string(dtype)));
        CAPTURE(std::string(imgpipe::to_string(layout)));
        Config cfg = base_config(40, 30, 7);
        cfg.transform.dtype = dtype;
        cfg.transform.layout = layout;
        std::vector<std::vector<unsigned char>> seen;
        std::vector<std::uint64_t> indices;
        std::vector<std::uint64_t> input_indices;
        bool fields_ok = true;
        const int want_device = dev.kind == DeviceSelection::Kind::cpu ? -1 : dev.ordinal;
        auto cb = [&](const DeviceBatch& b) {
          const auto n = static_cast<std::int64_t>(b.size());
          const std::vector<std::int64_t> shape =
              layout == Layout::nchw ? std::vector<std::int64_t>{n, 3, 30, 40} : std::vector<std::int64_t>{n, 30, 40, 3};
          CHECK(b.shape == shape);
          CHECK(b.dtype == dtype);
          CHECK(b.layout == layout);
          CHECK(b.device == want_device);
          CHECK(b.data != nullptr);
          CHECK(b.bytes == static_cast<std::size_t>(n) * 30 * 40 * 3 * imgpipe::dtype_size(dtype));
          if (want_device >= 0) {
            CHECK(b.stream != nullptr);
            CHECK(b.ready != nullptr);
          }
          fields_ok = fields_ok && b.samples.size() == static_cast<std::size_t>(n);
          indices.push_back(b.index);
          for (const auto& s : b.samples) {
            CHECK(s.frame == -1);
            CHECK(fs::equivalent(s.path, samples.at(s.input_index)));
            input_indices.push_back(s.input_index);
          }
          seen.push_back(imgpipe::test::batch_to_host(b));
        };
        TempDir dir;
        const DumpRun r = run_dump(cfg, dir / "out", dev, cb);
        CHECK(fields_ok);
        CHECK(indices == std::vector<std::uint64_t>{0, 1, 2});  // 7 + 7 + 6, in order
        std::vector<std::uint64_t> want(20);
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = i;
        CHECK(input_indices == want);
        // The callback sees the same bytes as the dump sink.
        REQUIRE(seen.size() == r.batches.size());
        for (std::size_t b = 0; b < seen.size(); ++b) CHECK(seen[b] == r.batches[b].data);
      }
    }
  }
}

TEST_CASE("pipeline: a batch's data stays valid until its callback returns, however far decode runs ahead") {
  // Many frames in flight, tiny batches, a slow consumer: the packer must not
  // reuse a slot (its device buffers and metadata) that the sink or the
  // callback still holds.
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      for (int batch : {1, 2}) {
        CAPTURE(dev_name(dev));
        CAPTURE(where == Where::cpu ? "cpu" : "gpu");
        CAPTURE(batch);
        Config cfg = base_config(32, 24, batch);
        cfg.staging.slots = 2;
        cfg.pipeline.max_tokens = 12;
        cfg.decode.threads = 2;
        cfg.transform.normalize.where = where;
        cfg.devices = dev;
        struct Seen {
          std::uint64_t index;
          std::vector<std::uint64_t> inputs;
          std::vector<unsigned char> data;
        };
        std::vector<Seen> seen;
        bool stable = true;
        Pipeline p(cfg);
        const Report r = p.run([&](const DeviceBatch& b) {
          Seen s{b.index, {}, imgpipe::test::batch_to_host(b)};
          for (const auto& id : b.samples) s.inputs.push_back(id.input_index);
          if (b.index < 2) {
            // Give the upstream stages time to run ahead, then look again.
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            stable = stable && imgpipe::test::batch_to_host(b) == s.data && b.size() == s.inputs.size();
            for (std::size_t i = 0; i < b.samples.size() && i < s.inputs.size(); ++i)
              stable = stable && b.samples[i].input_index == s.inputs[i];
          }
          seen.push_back(std::move(s));
        });
        CHECK(stable);
        CHECK(r.inputs.delivered == 20);
        REQUIRE(seen.size() == static_cast<std::size_t>(20 / batch));
        std::size_t next = 0;
        for (std::size_t k = 0; k < seen.size(); ++k) {
          CAPTURE(k);
          CHECK(seen[k].index == k);
          REQUIRE(seen[k].inputs.size() == static_cast<std::size_t>(batch));
          Npy n;
          n.shape = {batch, 3, 24, 32};
          n.data = seen[k].data;
          for (std::size_t i = 0; i < seen[k].inputs.size(); ++i, ++next) {
            CHECK(seen[k].inputs[i] == next);
            std::string first;
            CHECK(compare_sample(n, i, reference_nchw(sample_mats()[next], cfg.transform), cfg.transform, &first) == 0);
          }
        }
      }
    }
  }
}

// ======================================================================== accounting and errors

TEST_CASE("pipeline: discovered = delivered + failed, each failure with path and reason (skip mode)") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    MixedFolder m;
    make_mixed(m);
    Config cfg = base_config(32, 24, 3);
    // A missing entry of input.list is a failed item (one in input.paths is a
    // config error: test_input_errors.cpp).
    TempDir out;
    std::ofstream(out / "list.txt") << (m.dir / "missing.jpg").string() << "\n";
    cfg.input.paths = {m.dir.path().string()};
    cfg.input.list = (out / "list.txt").string();
    // Two work items: each bad file lands in a work item that held an image.
    cfg.pipeline.max_tokens = 2;
    const DumpRun r = run_dump(cfg, out / "out", dev);
    const auto& in = r.report.inputs;
    CHECK(in.discovered == m.total + 1);
    CHECK(in.delivered == m.good.size());
    CHECK(in.failed == m.bad.size() + 1);
    CHECK(in.discovered == in.delivered + in.failed);
    CHECK(in.dropped == 0);
    CHECK(in.not_processed == 0);
    CHECK_FALSE(r.report.interrupted);
    REQUIRE(in.failures.size() == m.bad.size() + 1);
    for (std::size_t i = 0; i < m.bad.size(); ++i) {
      CAPTURE(i);
      CHECK(in.failures[i].path == m.bad[i].string());
      CHECK(in.failures[i].frame == -1);
      CAPTURE(in.failures[i].reason);
      CHECK(in.failures[i].reason.find(m.bad_words[i]) != std::string::npos);
    }
    CHECK(in.failures.back().path == (m.dir / "missing.jpg").string());
    CHECK(in.failures.back().reason.find("no such file") != std::string::npos);
    // The good images are delivered, in order, with the right pixels.
    REQUIRE(r.manifest.size() == m.good.size());
    const std::vector<std::string> names{"a0.jpg", "a1.png", "c0.jpg", "e0.jpg", "g0.jpg", "g1.png"};
    for (std::size_t i = 0; i < names.size(); ++i)
      CHECK(fs::path(r.manifest[i].at("path").get<std::string>()).filename() == names[i]);
    check_against_reference(r, cfg, m.good);
  }
}

TEST_CASE("pipeline: a run in which every input fails delivers nothing and reports every failure") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    TempDir in;
    imgpipe::test::write_bytes(in / "a.jpg", {});
    imgpipe::test::write_bytes(in / "b.png", {1, 2, 3});
    Config cfg = base_config(32, 24, 4);
    cfg.input.paths = {in.path().string()};
    int calls = 0;
    TempDir out;
    const DumpRun r = run_dump(cfg, out / "out", dev, [&](const DeviceBatch&) { ++calls; });
    CHECK(calls == 0);
    CHECK(r.report.batches == 0);
    CHECK(r.manifest.empty());
    CHECK(r.report.inputs.discovered == 2);
    CHECK(r.report.inputs.delivered == 0);
    CHECK(r.report.inputs.failed == 2);
    REQUIRE(r.report.inputs.failures.size() == 2);
    CHECK(r.report.inputs.failures[0].path == (in / "a.jpg").string());
    CHECK(r.report.inputs.failures[1].path == (in / "b.png").string());
  }
}

TEST_CASE("pipeline: on_error fail throws InputError naming the first bad file") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    MixedFolder m;
    make_mixed(m);
    Config cfg = base_config(32, 24, 2);
    cfg.input.paths = {m.dir.path().string()};
    cfg.input.on_error = imgpipe::OnError::fail;
    cfg.devices = dev;
    Pipeline p(cfg);
    bool thrown = false;
    try {
      (void)p.run();
    } catch (const imgpipe::InputError& e) {
      thrown = true;
      CHECK(e.path() == m.bad.front().string());
      CHECK(e.frame() == -1);
      CHECK(e.reason().find("empty") != std::string::npos);
      CHECK(std::string(e.what()).find(m.bad.front().string()) != std::string::npos);
    }
    CHECK(thrown);
    // Without the bad files, the same pipeline succeeds.
    TempDir clean;
    for (const char* n : {"a0.jpg", "a1.png", "c0.jpg"}) fs::copy_file(m.dir / n, clean / n);
    cfg.input.paths = {clean.path().string()};
    const Report r = Pipeline(cfg).run();
    CHECK(r.inputs.delivered == 3);
    CHECK(r.inputs.failed == 0);
  }
}

TEST_CASE("pipeline: drop_last drops the partial batch and counts it") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 8);
    cfg.batch.drop_last = true;
    TempDir dir;
    const DumpRun r = run_dump(cfg, dir / "out", dev);
    CHECK(r.report.inputs.discovered == 20);
    CHECK(r.report.inputs.delivered == 16);
    CHECK(r.report.inputs.dropped == 4);
    CHECK(r.report.inputs.discovered ==
          r.report.inputs.delivered + r.report.inputs.failed + r.report.inputs.dropped);
    CHECK(r.report.batches == 2);
    CHECK(r.manifest.size() == 16);
    for (const auto& b : r.batches) CHECK(b.shape[0] == 8);
    std::vector<std::size_t> first16(16);
    for (std::size_t i = 0; i < 16; ++i) first16[i] = i;
    check_against_reference(r, cfg, first16);
    // A batch size that divides the input drops nothing.
    cfg.batch.size = 5;
    TempDir dir2;
    const DumpRun r2 = run_dump(cfg, dir2 / "out", dev);
    CHECK(r2.report.inputs.delivered == 20);
    CHECK(r2.report.inputs.dropped == 0);
    CHECK(r2.report.batches == 4);
  }
}

TEST_CASE("pipeline: discard-mode checksums equal checksum_ref of the dumped tensors") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      for (DType dtype : {DType::float32, DType::float16, DType::uint8}) {
        CAPTURE(dev_name(dev));
        CAPTURE(where == Where::cpu ? "cpu" : "gpu");
        CAPTURE(std::string(imgpipe::to_string(dtype)));
        Config cfg = base_config(64, 48, 8);
        cfg.transform.dtype = dtype;
        cfg.transform.normalize.where = where;
        TempDir dir;
        const DumpRun dumped = run_dump(cfg, dir / "out", dev);
        cfg.sink.type = imgpipe::SinkType::discard;
        cfg.devices = dev;
        const Report discarded = Pipeline(cfg).run();
        REQUIRE(discarded.batch_records.size() == dumped.batches.size());
        REQUIRE(discarded.batch_records.size() == 3);
        for (std::size_t b = 0; b < dumped.batches.size(); ++b) {
          CAPTURE(b);
          const auto& d = dumped.batches[b].data;
          CHECK(discarded.batch_records[b].index == b);
          CHECK(discarded.batch_records[b].samples == static_cast<std::uint64_t>(dumped.batches[b].shape[0]));
          CHECK(discarded.batch_records[b].checksum == imgpipe::kernels::checksum_ref(d.data(), d.size()));
          // The dump sink records the same checksums.
          CHECK(dumped.report.batch_records.at(b).checksum == discarded.batch_records[b].checksum);
        }
        // Different batches (different images) give different checksums.
        CHECK(discarded.batch_records[0].checksum != discarded.batch_records[1].checksum);
      }
    }
  }
}

// ======================================================================== stop and exceptions

TEST_CASE("pipeline: request_stop() from the callback ends the run, interrupted, with full accounting") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 2);
    cfg.pipeline.max_tokens = 2;  // few frames in flight: the stop lands early
    cfg.decode.threads = 1;
    cfg.devices = dev;
    Pipeline p(cfg);
    int calls = 0;
    std::uint64_t seen = 0;
    const Report r = p.run([&](const DeviceBatch& b) {
      ++calls;
      seen += b.size();
      p.request_stop();
    });
    CHECK(r.interrupted);
    const auto& in = r.inputs;
    CHECK(in.discovered == 20);
    CHECK(in.delivered == seen);
    CHECK(in.delivered >= 2);
    CHECK(in.delivered < 20);
    CHECK(in.not_processed > 0);
    CHECK(in.discovered == in.delivered + in.failed + in.not_processed + in.dropped);
    CHECK(r.batches == static_cast<std::uint64_t>(calls));
    // A stop request belongs to one run: the next run goes to the end.
    const Report again = p.run();
    CHECK_FALSE(again.interrupted);
    CHECK(again.inputs.delivered == 20);
    CHECK(again.inputs.not_processed == 0);
  }
}

TEST_CASE("pipeline: request_stop() with drop_last still accounts for every input") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 3);
    cfg.pipeline.max_tokens = 2;
    cfg.decode.threads = 1;
    cfg.batch.drop_last = true;
    cfg.devices = dev;
    Pipeline p(cfg);
    const Report r = p.run([&](const DeviceBatch&) { p.request_stop(); });
    const auto& in = r.inputs;
    CHECK(r.interrupted);
    CHECK(in.delivered % 3 == 0);
    CHECK(in.discovered == in.delivered + in.failed + in.not_processed + in.dropped);
  }
}

TEST_CASE("pipeline: an exception from the callback propagates, the pipeline runs again afterwards") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 4);
    cfg.devices = dev;
    Pipeline p(cfg);
    int calls = 0;
    CHECK_THROWS_WITH_AS(p.run([&](const DeviceBatch& b) {
      ++calls;
      if (b.index == 1) throw std::runtime_error("callback failed on purpose");
    }),
                         "callback failed on purpose", std::runtime_error);
    CHECK(calls >= 2);
    // Same Pipeline object, second run: everything delivered, correct data.
    TempDir dir;
    Config dump = cfg;
    dump.sink.type = imgpipe::SinkType::dump;
    dump.sink.dir = (dir / "out").string();
    dump.sink.overwrite = true;  // the second run replaces the first one's batches
    Pipeline p2(dump);
    CHECK_THROWS_AS(p2.run([](const DeviceBatch&) { throw std::logic_error("first"); }), std::logic_error);
    const Report r = p2.run();
    CHECK(r.inputs.delivered == 20);
    CHECK(r.batches == 5);
    DumpRun d;
    d.report = r;
    for (std::uint64_t i = 0; i < r.batches; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "batch_%06llu.npy", static_cast<unsigned long long>(i));
      d.batches.push_back(read_npy(dir / "out" / name));
    }
    check_against_reference(d, dump, all_samples());
    CHECK(read_manifest(dir / "out" / "manifest.jsonl").size() == 20);  // rewritten, not appended
    // And the first pipeline too.
    const Report r1 = p.run();
    CHECK(r1.inputs.delivered == 20);
  }
}

TEST_CASE("pipeline: later runs of a Pipeline reuse its staging ring and buffers, and deliver the same batches") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 4);
    cfg.devices = dev;
    Pipeline p(cfg);
    std::vector<Report> runs;
    for (int i = 0; i < 3; ++i) runs.push_back(p.run());
    // Stopped at the start, and asked to stop from a callback (on a GPU all
    // 20 inputs may be handed out by then), then run again: the kept
    // resources are still good.
    p.request_stop();
    const Report stopped = p.run();
    CHECK(stopped.interrupted);
    CHECK(stopped.inputs.delivered < 20);
    int seen = 0;
    (void)p.run([&](const DeviceBatch&) {
      if (++seen == 2) p.request_stop();
    });
    runs.push_back(p.run());
    const Report& first = runs.front();
    REQUIRE(first.batch_records.size() == 5);
    CHECK(first.memory.slot_allocations > 0);  // the ring made in run 1
    for (std::size_t i = 1; i < runs.size(); ++i) {
      CAPTURE(i);
      const Report& r = runs[i];
      CHECK(r.memory.slot_allocations == 0);  // nothing allocated: the ring was kept
      CHECK(r.memory.slot_reuses == r.batches);
      CHECK(r.memory.staging_bytes == first.memory.staging_bytes);
      CHECK(r.inputs.delivered == 20);
      REQUIRE(r.batch_records.size() == first.batch_records.size());
      for (std::size_t b = 0; b < r.batch_records.size(); ++b) {
        CHECK(r.batch_records[b].samples == first.batch_records[b].samples);
        CHECK(r.batch_records[b].checksum == first.batch_records[b].checksum);
      }
    }
  }
}

TEST_CASE("pipeline: no inputs is an error naming the paths, the report names every stage") {
  TempDir empty;
  Config cfg = base_config(32, 24, 4);
  cfg.input.paths = {empty.path().string()};
  cfg.devices = DeviceSelection::parse("cpu");
  bool thrown = false;
  try {
    (void)Pipeline(cfg).run();
  } catch (const imgpipe::ConfigError& e) {
    thrown = true;
    CHECK(e.key() == "input.paths");
    CHECK(std::string(e.what()).find(empty.path().string()) != std::string::npos);
    CHECK(std::string(e.what()).find("no inputs") != std::string::npos);
  }
  CHECK(thrown);
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config c = base_config(32, 24, 4);
    c.devices = dev;
    const Report r = Pipeline(c).run();
    std::vector<std::string> names;
    for (const auto& s : r.stages) names.push_back(s.name);
    std::vector<std::string> expected{"source", "read", "decode", "transform", "pack", "pack_copy", "transfer",
                                      "gpu_ops", "sink"};
    if (r.decode.where != "cpu") expected.insert(expected.begin() + 2, "probe");  // GPU decode routes JPEGs
    CHECK(names == expected);
    for (const auto& s : r.stages) {
      CAPTURE(s.name);
      CHECK(s.busy_s >= 0);
      if (s.name == "source" || s.name == "read" || s.name == "decode" || s.name == "transform" || s.name == "pack" ||
          s.name == "pack_copy")
        CHECK(s.items == 20);
      if (s.name == "transfer" || s.name == "gpu_ops" || s.name == "sink") CHECK(s.items == 5);
    }
    if (dev.kind == DeviceSelection::Kind::cpu) CHECK(r.backend == "host");
    else CHECK(r.backend.rfind("cuda:0", 0) == 0);
    CHECK(r.images_per_s > 0);
    CHECK(r.transfer.bytes == 20u * 32u * 24u * 3u * (dev.kind == DeviceSelection::Kind::cpu ? 4u : 1u));
  }
}
