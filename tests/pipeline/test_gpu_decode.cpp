// GPU JPEG decode in the pipeline (decode.where): the routes each file takes,
// every good image delivered and every bad one reported on both routes, the
// GPU route's tensors close to the CPU route's, and the host backend's
// fallback. The GPU parts run where a GPU with nvJPEG's engines exists (the
// GPU machine); elsewhere they skip visibly (IMGPIPE-SKIPPED, with the reason).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <fmt/format.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "jpeg_writer.hpp"
#include "imgpipe/pipeline.hpp"
#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "codecs/parse/jpeg_markers.hpp"

namespace fs = std::filesystem;
using namespace imgpipe;
using Bytes = std::vector<unsigned char>;

namespace {

bool have_engines(std::string* why) {
  if (!test::have_gpu()) {
    *why = "no CUDA device";
    return false;
  }
  return codecs::GpuJpegDecoder::probe(0, why).has_value();
}

cv::Mat photo(int w, int h, int seed) {
  const auto samples = test::sample_images();
  cv::Mat src = cv::imread(samples[static_cast<std::size_t>(seed) % samples.size()].string());
  cv::Mat out;
  cv::resize(src, out, cv::Size(w, h), 0, 0, cv::INTER_AREA);
  return out;
}

// A CMYK JPEG (libjpeg's defaults: quality 75, stored as CMYK).
void write_cmyk_jpeg(const fs::path& p, int w, int h) {
  std::vector<unsigned char> samples(static_cast<std::size_t>(w) * h * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < 4; ++k)
        samples[(static_cast<std::size_t>(y) * w + x) * 4 + k] = static_cast<unsigned char>(x * (k + 1) + y);
  test::JpegWriteOptions o;
  o.components = 4;
  o.quality = 75;
  test::write_bytes(p, test::write_jpeg(samples.data(), w, h, static_cast<std::size_t>(w) * 4, o));
}

// The mixed folder: what each file is, and the route it must take with
// decode.where gpu ("gpu", "cpu") or "bad" (reported on every route) or
// "corrupt-data" (damaged entropy-coded data: libjpeg reports it, the
// engines may decode it).
std::map<std::string, std::string> make_mixed(const fs::path& dir) {
  std::map<std::string, std::string> want;
  auto put = [&](const std::string& name, const cv::Mat& m, std::vector<int> params, const std::string& route) {
    REQUIRE(cv::imwrite((dir / name).string(), m, params));
    want[name] = route;
  };
  put("a_baseline.jpg", photo(640, 480, 0), {cv::IMWRITE_JPEG_QUALITY, 90}, "gpu");
  put("b_odd.jpg", photo(333, 211, 1), {}, "gpu");
  put("c_progressive.jpg", photo(320, 240, 2), {cv::IMWRITE_JPEG_PROGRESSIVE, 1}, "cpu");
  cv::Mat grey;
  cv::cvtColor(photo(300, 200, 3), grey, cv::COLOR_BGR2GRAY);
  put("d_grey.jpg", grey, {}, "gpu");
  put("e_image.png", photo(200, 150, 4), {}, "cpu");
  write_cmyk_jpeg(dir / "f_cmyk.jpg", 120, 80);
  want["f_cmyk.jpg"] = "cpu";
  Bytes full;
  REQUIRE(cv::imencode(".jpg", photo(400, 300, 5), full));
  test::write_bytes(dir / "g_truncated.jpg", Bytes(full.begin(), full.begin() + static_cast<long>(full.size() / 2)));
  want["g_truncated.jpg"] = "bad";
  Bytes damaged = full;  // entropy-coded data overwritten mid-scan, EOI kept
  for (std::size_t i = damaged.size() / 2; i < damaged.size() / 2 + 64; ++i) damaged[i] = 0xFF;
  test::write_bytes(dir / "h_corrupt_data.jpg", damaged);
  want["h_corrupt_data.jpg"] = "corrupt-data";
  test::write_bytes(dir / "i_not_an_image.jpg", Bytes{'h', 'e', 'l', 'l', 'o'});
  want["i_not_an_image.jpg"] = "bad";
  put("j_baseline.jpg", photo(1920, 1080, 6), {cv::IMWRITE_JPEG_QUALITY, 90}, "gpu");
  return want;
}

struct Outcome {
  Report report;
  std::map<std::string, std::string> route;  // file name -> "gpu" | "cpu" for delivered samples
  std::map<std::string, std::vector<float>> tensor;
  std::map<std::string, std::string> failure;
};

Config config_for(const fs::path& dir, const std::string& device, Where where) {
  Config c;
  c.input.paths = {dir.string()};
  c.batch.size = 4;
  c.decode.threads = 2;
  c.decode.where = where;
  c.decode.reduced = false;  // both routes decode full size: the comparison is decoder against decoder
  c.transform.resize.width = 96;
  c.transform.resize.height = 64;
  c.devices = DeviceSelection::parse(device);
  return c;
}

Outcome run_once(Pipeline& p) {
  Outcome o;
  o.report = p.run([&](const DeviceBatch& b) {
    const Bytes host = test::batch_to_host(b);
    const std::size_t per = host.size() / b.size();
    for (std::size_t i = 0; i < b.size(); ++i) {
      const std::string name = fs::path(b.samples[i].path).filename().string();
      o.route[name] = b.samples[i].decoded_on_gpu ? "gpu" : "cpu";
      std::vector<float> t(per / sizeof(float));
      std::memcpy(t.data(), host.data() + i * per, per);
      o.tensor[name] = std::move(t);
    }
  });
  for (const auto& f : o.report.inputs.failures) o.failure[fs::path(f.path).filename().string()] = f.reason;
  return o;
}

Outcome run(const fs::path& dir, const std::string& device, Where where) {
  Pipeline p(config_for(dir, device, where));
  return run_once(p);
}

}  // namespace

TEST_CASE("gpu decode: a mixed folder on the host backend: CPU route, every good image delivered, every bad one reported") {
  test::TempDir dir;
  const auto want = make_mixed(dir.path());
  const Outcome o = run(dir.path(), "cpu", Where::automatic);
  CHECK(o.report.decode.where == "cpu");
  CHECK(o.report.decode.note == "no GPU in use");
  for (const auto& [name, route] : want) {
    CAPTURE(name);
    if (route == "bad" || route == "corrupt-data") {
      CHECK(o.failure.count(name) == 1);
    } else {
      REQUIRE(o.route.count(name) == 1);
      CHECK(o.route.at(name) == "cpu");
    }
  }
  CHECK(o.report.inputs.discovered == o.report.inputs.delivered + o.report.inputs.failed);
  // decode.where gpu without a GPU is a clear error, before any work.
  Config c;
  c.input.paths = {dir.path().string()};
  c.decode.where = Where::gpu;
  c.devices = DeviceSelection::parse("cpu");
  CHECK_THROWS_WITH_AS(Pipeline{c}, doctest::Contains("decode.where"), ConfigError);
}

TEST_CASE("gpu decode: on the GPU, routes as stated, good images delivered, bad ones reported, tensors close to the CPU route") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_engines(&why), "GPU decode not exercised here: " + why);
  test::TempDir dir;
  const auto want = make_mixed(dir.path());
  const Outcome gpu = run(dir.path(), "0", Where::gpu);
  const Outcome cpu = run(dir.path(), "0", Where::cpu);
  CHECK(gpu.report.decode.where == "gpu");
  CHECK(gpu.report.decode.jpeg_engines > 0);
  CHECK(cpu.report.decode.where == "cpu");
  for (const auto& [name, route] : want) {
    CAPTURE(name);
    if (route == "bad") {
      CHECK(gpu.failure.count(name) == 1);
      CHECK(cpu.failure.count(name) == 1);
    } else if (route == "corrupt-data") {
      // libjpeg's corrupt-data warning makes the CPU route report it; the
      // engines either decode it (no such check) or reject it (then the CPU
      // fallback reports it). Never lost.
      CHECK(cpu.failure.count(name) == 1);
      CHECK(gpu.failure.count(name) + gpu.route.count(name) == 1);
    } else {
      REQUIRE(gpu.route.count(name) == 1);
      CHECK(gpu.route.at(name) == route);
      REQUIRE(cpu.route.count(name) == 1);
      CHECK(cpu.route.at(name) == "cpu");
      // Fidelity: in pixel levels (x std x 255), per element.
      const auto& a = gpu.tensor.at(name);
      const auto& b = cpu.tensor.at(name);
      REQUIRE(a.size() == b.size());
      const double most = test::max_level_diff(a, b);
      MESSAGE(name << ": max |diff| " << most << " levels");
      CHECK(most <= 1.001);
    }
  }
  for (const Outcome* o : {&gpu, &cpu})
    CHECK(o->report.inputs.discovered == o->report.inputs.delivered + o->report.inputs.failed);
  CHECK(gpu.report.decode.gpu >= 4);
}

TEST_CASE("gpu decode: a Pipeline keeps its decoder from run to run, the runs agree to the bit") {
  test::TempDir dir;
  const auto want = make_mixed(dir.path());
  std::string why;
  if (!have_engines(&why)) {
    // Host backend: no decoder is made, and the report says none was ready.
    Pipeline p(config_for(dir.path(), "cpu", Where::automatic));
    const Outcome o = run_once(p);
    CHECK(o.report.decode.engines_ready_s < 0);
    MESSAGE("decoder reuse not exercised here: " << why);
    return;
  }
  // Made and dropped while its decoder is still being made: no leak, no crash.
  { Pipeline dropped(config_for(dir.path(), "0", Where::gpu)); }
  Pipeline p(config_for(dir.path(), "0", Where::gpu));
  std::vector<Outcome> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(run_once(p));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    CAPTURE(i);
    const Outcome& o = runs[i];
    CHECK(o.report.decode.gpu >= 4);
    CHECK(o.report.decode.engines_ready_s >= 0);
    if (i > 0) {
      CHECK(o.report.decode.engines_ready_s == 0);  // kept: ready before the run began
      CHECK(o.report.decode.gpu == runs[0].report.decode.gpu);
      CHECK(o.route == runs[0].route);
      CHECK(o.failure == runs[0].failure);
      for (const auto& [name, t] : runs[0].tensor) {
        CAPTURE(name);
        REQUIRE(o.tensor.count(name) == 1);
        CHECK(o.tensor.at(name) == t);
      }
    }
  }
  for (const auto& [name, route] : want)
    if (route == "gpu") CHECK(runs.back().route.at(name) == "gpu");
}

TEST_CASE("gpu decode: with decode.where auto, each run of a Pipeline starts its steering at share 1") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_engines(&why), "route steering not exercised here: " + why);
  // Enough JPEGs for the steering's windows (64 samples apart, 16 engine
  // images each).
  test::TempDir dir;
  for (int i = 0; i < 1500; ++i)
    REQUIRE(cv::imwrite((dir.path() / fmt::format("{:04}.jpg", i)).string(), photo(320, 240, i)));
  Config c = config_for(dir.path(), "0", Where::automatic);
  c.batch.size = 32;
  c.decode.threads = 4;
  Pipeline p(c);
  int judged = 0;
  for (int run = 0; run < 5; ++run) {
    CAPTURE(run);
    const Outcome o = run_once(p);
    const std::vector<double>& h = o.report.decode.gpu_share;
    REQUIRE(!h.empty());
    MESSAGE("run " << run << ": " << h.size() - 1 << " steering updates, share " << h.front() << " -> " << h.back()
                   << ", " << o.report.decode.cpu << " CPU-route JPEGs");
    CHECK(o.report.inputs.delivered == 1500);
    CHECK(h.front() == 1.0);  // nothing carried over: every JPEG to the engines
    for (std::size_t i = 1; i < h.size(); ++i) judged += h[i] < 1.0;
  }
  CHECK(judged > 0);  // some window found a balance
}

namespace {

// What a run delivered, batch by batch, in the order the batches came.
struct Delivered {
  Report report;
  std::vector<std::uint64_t> indices;                     // DeviceBatch::index, in arrival order
  std::vector<std::vector<std::string>> names;            // per batch, its samples' file names
  std::map<std::string, std::string> route;               // "gpu" | "cpu"
  std::map<std::string, Bytes> tensor;                    // the sample's output, as bytes
  std::map<std::string, std::string> failure;
};

void take(Delivered& d, const DeviceBatch& b) {
  const Bytes host = test::batch_to_host(b);
  const std::size_t per = host.size() / b.size();
  d.indices.push_back(b.index);
  d.names.emplace_back();
  for (std::size_t i = 0; i < b.size(); ++i) {
    const std::string name = fs::path(b.samples[i].path).filename().string();
    d.names.back().push_back(name);
    d.route[name] = b.samples[i].decoded_on_gpu ? "gpu" : "cpu";
    d.tensor[name] = Bytes(host.begin() + static_cast<long>(i * per), host.begin() + static_cast<long>((i + 1) * per));
  }
}

Delivered deliver(const Config& c, bool pull) {
  Delivered d;
  Pipeline p(c);
  if (pull) {
    BatchStream s = p.start();
    while (Batch b = s.next()) take(d, *b);  // each released when the next is asked for
    d.report = s.report();
  } else {
    d.report = p.run([&](const DeviceBatch& b) { take(d, b); });
  }
  for (const auto& f : d.report.inputs.failures) d.failure[fs::path(f.path).filename().string()] = f.reason;
  return d;
}

}  // namespace

TEST_CASE("gpu decode: engine calls spanning batches deliver what one call a batch does, in order") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_engines(&why), "engine calls spanning batches not exercised here: " + why);
  test::TempDir dir;
  // 61 inputs, most of them baseline JPEGs of varied sizes (frames up to
  // 560x400, under 1 MiB), with progressive JPEGs, PNGs and damaged files
  // among them; the last is a lone baseline JPEG in a partial batch.
  int bad = 0;
  for (int i = 0; i < 61; ++i) {
    const std::string stem = fmt::format("{:03d}", i);
    const cv::Mat m = photo(160 + (i * 37) % 400, 120 + (i * 53) % 280, i);
    if (i % 17 == 5) {
      REQUIRE(cv::imwrite((dir.path() / (stem + ".jpg")).string(), m, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
    } else if (i % 13 == 7) {
      Bytes full;
      REQUIRE(cv::imencode(".jpg", m, full));
      test::write_bytes(dir.path() / (stem + ".jpg"), Bytes(full.begin(), full.begin() + static_cast<long>(full.size() / 3)));
      ++bad;
    } else if (i % 19 == 11) {
      test::write_bytes(dir.path() / (stem + ".jpg"), Bytes{'n', 'o', 'p', 'e'});
      ++bad;
    } else if (i % 23 == 13) {
      REQUIRE(cv::imwrite((dir.path() / (stem + ".png")).string(), m));
    } else {
      REQUIRE(cv::imwrite((dir.path() / (stem + ".jpg")).string(), m, {cv::IMWRITE_JPEG_QUALITY, 90}));
    }
  }
  auto config = [&](int gpu_batch, int frames_mb) {
    Config c = config_for(dir.path(), "0", Where::gpu);
    c.batch.size = 4;
    c.decode.gpu_batch = gpu_batch;
    c.memory.gpu_frames_mb = frames_mb;
    return c;
  };
  // One engine call a batch (gpu_batch = batch.size): the reference.
  const Delivered ref = deliver(config(4, 0), false);
  REQUIRE(ref.report.inputs.failed == static_cast<std::uint64_t>(bad));
  REQUIRE(ref.report.decode.gpu >= 40);
  std::uint64_t batches_with_gpu = 0;
  for (const auto& names : ref.names)
    batches_with_gpu += std::any_of(names.begin(), names.end(), [&](const std::string& n) { return ref.route.at(n) == "gpu"; });
  CHECK(ref.report.decode.gpu_calls == batches_with_gpu);
  struct Case {
    const char* what;
    Config cfg;
    bool pull;
  };
  const std::vector<Case> cases{
      {"10 JPEGs a call", config(10, 0), false},
      {"auto (128 a call, at most 8 batches of 4: 32)", config(0, 0), false},
      {"16 a call in a 4 MiB frame area: calls cut by the area, the ring wraps", config(16, 4), false},
      {"10 a call through the pull API", config(10, 0), true},
  };
  for (const Case& k : cases) {
    CAPTURE(k.what);
    const Delivered d = deliver(k.cfg, k.pull);
    // The same batches, in the same order, with the same samples and routes.
    REQUIRE(d.names == ref.names);
    for (std::size_t i = 0; i < d.indices.size(); ++i) CHECK(d.indices[i] == i);
    CHECK(d.route == ref.route);
    CHECK(d.failure == ref.failure);
    CHECK(d.report.inputs.discovered == d.report.inputs.delivered + d.report.inputs.failed);
    CHECK(d.report.decode.gpu == ref.report.decode.gpu);
    // Fewer engine calls, the same pixels.
    CHECK(d.report.decode.gpu_calls < ref.report.decode.gpu_calls);
    CHECK(d.report.decode.gpu_calls > 0);
    for (const auto& [name, t] : ref.tensor) {
      CAPTURE(name);
      REQUIRE(d.tensor.count(name) == 1);
      CHECK(d.tensor.at(name) == t);
    }
  }
}

TEST_CASE("gpu decode: with decode.verify full, gpu and auto deliver and report exactly what cpu does") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_engines(&why), "GPU decode not exercised here: " + why);
  test::TempDir dir;
  auto want = make_mixed(dir.path());
  // The damage the engines decode silently (docs/gpu-decode.md, "Entropy check").
  Bytes full;
  REQUIRE(cv::imencode(".jpg", photo(480, 320, 7), full, {cv::IMWRITE_JPEG_QUALITY, 92}));
  const auto markers = imgpipe::codecs::read_jpeg_markers(full);
  REQUIRE(markers.sos > 0);
  const std::size_t scan = markers.sos + 2 + imgpipe::codecs::be16(&full[markers.sos + 2]);
  const std::size_t eoi = full.size() - 2;
  for (int pct : {10, 50, 90}) {
    Bytes cut(full.begin(), full.begin() + static_cast<long>(scan + (eoi - scan) * pct / 100));
    cut.insert(cut.end(), {0xFF, 0xD9});
    const std::string name = "k_cut_" + std::to_string(pct) + ".jpg";
    test::write_bytes(dir.path() / name, cut);
    want[name] = "corrupt-data";
  }
  Bytes rst = full;
  rst.insert(rst.begin() + static_cast<long>(scan + (eoi - scan) / 2), {0xFF, 0xD2});
  test::write_bytes(dir.path() / "l_rst_without_dri.jpg", rst);
  want["l_rst_without_dri.jpg"] = "corrupt-data";
  Bytes zeroed = full;
  std::fill(zeroed.begin() + static_cast<long>(scan + (eoi - scan) / 4), zeroed.begin() + static_cast<long>(eoi), 0);
  test::write_bytes(dir.path() / "m_zeroed.jpg", zeroed);
  want["m_zeroed.jpg"] = "corrupt-data";

  auto verdict = [](const Outcome& o) {
    std::map<std::string, std::string> v;
    for (const auto& [name, route] : o.route) v[name] = "delivered";
    for (const auto& [name, reason] : o.failure) v[name] = "failed: " + reason;
    return v;
  };
  const Outcome cpu = run(dir.path(), "0", Where::cpu);
  for (const auto& [name, route] : want) {
    CAPTURE(name);
    CHECK(cpu.failure.count(name) == (route == "bad" || route == "corrupt-data" ? 1u : 0u));
  }
  for (Where where : {Where::gpu, Where::automatic}) {
    Config c = config_for(dir.path(), "0", where);
    c.decode.verify = imgpipe::Verify::full;
    Pipeline p(c);
    for (int run_no = 0; run_no < 2; ++run_no) {
      const Outcome o = run_once(p);
      CAPTURE(static_cast<int>(where));
      CAPTURE(run_no);
      CHECK(verdict(o) == verdict(cpu));
      CHECK(o.report.decode.verify == "full");
      CHECK(o.report.decode.unchecked_on_engines == 0);
      if (where == Where::gpu) {
        // The three cuts and the zeroed scan pass every marker check: the
        // entropy check keeps them on the CPU (the RST inside the scan is the
        // probe's marker scan's, counted in cpu_route_reasons).
        CHECK(o.report.decode.entropy_to_cpu >= 4);
        CHECK(o.report.decode.entropy_checked >= o.report.decode.gpu + o.report.decode.entropy_to_cpu);
        CHECK(o.report.decode.gpu >= 4);
      }
    }
  }
  // decode.verify markers (the default): the engines take the damaged files;
  // the report says how many JPEGs they decoded unchecked.
  const Outcome unchecked = run(dir.path(), "0", Where::gpu);
  CHECK(unchecked.report.decode.verify == "markers");
  CHECK(unchecked.report.decode.entropy_checked == 0);
  CHECK(unchecked.report.decode.unchecked_on_engines == unchecked.report.decode.gpu);
  CHECK(unchecked.report.decode.gpu > 4);
}

// Issue 28, point 4: every valid JPEG the engines decode comes out within
// ±1 level of the CPU route (levels: |diff| x std x 255 of the normalised
// output), on encoder variants and real photographs; what the engines
// decode otherwise must stay on the CPU route.
TEST_CASE("gpu decode: every JPEG the engines decode is within 1 level of the CPU route") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_engines(&why), "GPU decode not exercised here: " + why);
  test::TempDir dir;
  auto put = [&](const std::string& name, const cv::Mat& bgr, test::JpegWriteOptions o) {
    cv::Mat src;
    cv::cvtColor(bgr, src, o.components == 1 ? cv::COLOR_BGR2GRAY : cv::COLOR_BGR2RGB);
    test::write_bytes(dir.path() / name, test::write_jpeg(src.ptr(), src.cols, src.rows, src.step, o));
  };
  put("v420_q90.jpg", photo(640, 480, 0), {3, {}, 90, 2, 2});
  put("v422_q90.jpg", photo(641, 479, 1), {3, {}, 90, 2, 1});
  put("v440_q90.jpg", photo(333, 211, 2), {3, {}, 90, 1, 2});
  put("v444_q100.jpg", photo(320, 240, 3), {3, {}, 100, 1, 1});
  put("v444_q50.jpg", photo(320, 240, 4), {3, {}, 50, 1, 1});
  put("vgrey.jpg", photo(300, 200, 5), {1, {}, 90});
  put("v420_q1.jpg", photo(320, 240, 6), {3, {}, 1, 2, 2});
  put("v420_q100.jpg", photo(320, 240, 7), {3, {}, 100, 2, 2});
  put("v420_restart1.jpg", photo(320, 240, 8), {3, {}, 90, 2, 2, false, false, 1});
  put("v420_restart5.jpg", photo(257, 199, 9), {3, {}, 90, 2, 2, false, false, 5});
  put("v420_1x300.jpg", photo(1, 300, 10), {3, {}, 90, 2, 2});
  put("v420_300x1.jpg", photo(300, 1, 11), {3, {}, 90, 2, 2});
  put("v420_17x9.jpg", photo(17, 9, 12), {3, {}, 90, 2, 2});
  put("v420_exif1.jpg", photo(160, 120, 13), {3, {}, 90, 2, 2, false, false, 0, 1});
  put("v420_2000x1500.jpg", photo(2000, 1500, 14), {3, {}, 92, 2, 2});
  put("v420_5000x3000.jpg", photo(5000, 3000, 15), {3, {}, 85, 2, 2});
  {  // an ICC profile in APP2 (its bytes are not read by either route)
    cv::Mat src;
    cv::cvtColor(photo(200, 150, 16), src, cv::COLOR_BGR2RGB);
    Bytes b = test::write_jpeg(src.ptr(), src.cols, src.rows, src.step, {3, {}, 90, 2, 2});
    Bytes app2 = {0xFF, 0xE2, 0x00, 0x00};
    const char tag[] = "ICC_PROFILE";
    app2.insert(app2.end(), tag, tag + sizeof tag);  // with its NUL
    app2.insert(app2.end(), {1, 1});
    for (int i = 0; i < 128; ++i) app2.push_back(static_cast<unsigned char>(i * 7));
    app2[2] = static_cast<unsigned char>((app2.size() - 2) >> 8);
    app2[3] = static_cast<unsigned char>((app2.size() - 2) & 0xFF);
    b.insert(b.begin() + 2, app2.begin(), app2.end());
    test::write_bytes(dir.path() / "v420_icc.jpg", b);
  }
  // Real photographs as their cameras and editors wrote them.
  int real = 0;
  for (const auto& p : fs::directory_iterator(test::opencv_data_dir()))
    if (p.path().extension() == ".jpg" && real < 24) {
      fs::copy_file(p.path(), dir.path() / ("r_" + p.path().filename().string()));
      ++real;
    }
  Config c = config_for(dir.path(), "0", Where::gpu);
  c.transform.resize.width = 256;
  c.transform.resize.height = 256;
  c.decode.exif_orientation = false;
  Pipeline pg(c);
  const Outcome gpu = run_once(pg);
  c.decode.where = Where::cpu;
  Pipeline pc(c);
  const Outcome cpu = run_once(pc);
  int on_engines = 0;
  for (const auto& [name, route] : gpu.route) {
    CAPTURE(name);
    REQUIRE(cpu.tensor.count(name) == 1);
    const auto& a = gpu.tensor.at(name);
    const auto& b = cpu.tensor.at(name);
    REQUIRE(a.size() == b.size());
    const double most = test::max_level_diff(a, b);
    MESSAGE(name << " (" << route << "): max |diff| " << most << " levels");
    if (route == "gpu") {
      ++on_engines;
      CHECK(most <= 1.001);
    } else {
      CHECK(most == 0.0);
    }
  }
  CHECK(gpu.failure == cpu.failure);
  CHECK(on_engines >= 10);
  // Thinner than 16 pixels: the engines' chroma upsampling at the edges
  // differs (a 1x300 4:2:0 JPEG by 2 levels on the H200): the CPU route.
  CHECK(gpu.route.at("v420_1x300.jpg") == "cpu");
  CHECK(gpu.route.at("v420_300x1.jpg") == "cpu");
  CHECK(gpu.route.at("v420_2000x1500.jpg") == "gpu");
}

TEST_CASE("gpu decode: a kept Pipeline's pull API goes on epoch after epoch while the caller holds the last epoch's last batch") {
  // A training loop's `for x, y in loader` keeps the last batch of an epoch
  // in its variables when the next epoch starts, and one batch while it
  // waits for the next. With each batch a call of its own (a batch as large
  // as decode.gpu_batch: W3's 256), the GPU ops stage keeps two waiting for
  // their calls, which need slots of their own beside the caller's.
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_engines(&why), "GPU decode not exercised here: " + why);
  test::TempDir dir;
  for (int i = 0; i < 24; ++i) test::write_bytes(dir / ("p" + std::to_string(i) + ".jpg"), [&] {
    std::vector<unsigned char> b;
    REQUIRE(cv::imencode(".jpg", photo(320, 240, i), b, {cv::IMWRITE_JPEG_QUALITY, 90}));
    return b;
  }());
  for (const Where where : {Where::gpu, Where::automatic}) {
    for (const int gpu_batch : {0, 4}) {
      CAPTURE(static_cast<int>(where));
      CAPTURE(gpu_batch);
      Config c;
      c.input.paths = {dir.path().string()};
      c.devices = DeviceSelection::parse("0");
      c.decode.where = where;
      c.decode.gpu_batch = gpu_batch;
      c.batch.size = 4;
      c.staging.slots = 2;
      c.transform.resize.width = 48;
      c.transform.resize.height = 40;
      Pipeline p(c);
      Batch held;  // the previous batch, as the loop variable keeps it
      for (int epoch = 0; epoch < 3; ++epoch) {
        CAPTURE(epoch);
        BatchStream s = p.start();
        int n = 0, on_gpu = 0;
        for (;;) {
          std::optional<Batch> b = s.next_for(std::chrono::seconds(30));
          REQUIRE_MESSAGE(b.has_value(), "no batch within 30 s: the run is stuck");
          if (!*b) break;
          for (const auto& sample : (*b)->samples) on_gpu += sample.decoded_on_gpu ? 1 : 0;
          ++n;
          held = std::move(*b);
        }
        CHECK(n == 6);
        if (where == Where::gpu) CHECK(on_gpu == 24);
        CHECK(s.report().inputs.delivered == 24);
        CHECK(static_cast<bool>(held));
      }
    }
  }
}
