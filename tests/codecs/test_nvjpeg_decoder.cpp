// nvJPEG: the run-time loader (everywhere) and the batched GPU decoder (where
// a CUDA device and libnvjpeg exist: the GPU machine).
//
// Loader: IMGPIPE_NVJPEG=off, a bogus IMGPIPE_NVJPEG_LIB, a library without
// the symbols, and the default search all fail with a reason that says why.
// Decoder, on each backend the device offers: headers parsed from many
// threads; baseline JPEGs of several sizes (odd ones too) and subsamplings
// (4:2:0, 4:2:2, 4:4:0, 4:4:4, grey) decoded in one batch and compared with
// OpenCV's decode (cv::imdecode, BGR->RGB): mean |diff| < 1.5 and max |diff|
// <= 32 per image (the measured figures are printed); progressive and 4:1:1
// are reported unsupported by the hardware check; damaged images inside a
// batch are reported failed alone and the next batch decodes.
// The GPU cases skip only when there is no CUDA device or no libnvjpeg, and
// say why (test::skip_unless: CTest reports them skipped). IMGPIPE_TEST_REQUIRE_NVJPEG_HW=1 (set on the GPU machine) turns a
// missing JPEG engine from a skip into a failure.
//
// Test JPEGs are written with libjpeg (tests/jpeg_writer.hpp: this OpenCV,
// 4.6, cannot choose the chroma subsampling).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <jpeglib.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "jpeg_writer.hpp"
#include "kernels/jpeg_gpu.hpp"
#include "kernels/nvjpeg_loader.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace nvj = imgpipe::nvj;
namespace kn = imgpipe::kernels;

namespace {

using imgpipe::test::ScopedEnv;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// ============================================================ loader

TEST_CASE("nvjpeg loader: IMGPIPE_NVJPEG=off pretends the library is absent") {
  for (const char* off : {"off", "OFF", "0", "false", "no"}) {
    ScopedEnv sw("IMGPIPE_NVJPEG", off);
    const nvj::LoadOptions o = nvj::load_options_from_env();
    CHECK(o.disabled);
    std::string why;
    CHECK(nvj::load_api(o, &why) == nullptr);
    CHECK(contains(why, "disabled"));
    CHECK(contains(why, std::string("IMGPIPE_NVJPEG=") + off));
  }
  for (const char* on : {"on", "auto", "1", ""}) {
    ScopedEnv sw("IMGPIPE_NVJPEG", on);
    CHECK_FALSE(nvj::load_options_from_env().disabled);
  }
  // Disabled wins over a library path.
  ScopedEnv sw("IMGPIPE_NVJPEG", "off");
  ScopedEnv lib("IMGPIPE_NVJPEG_LIB", "/usr/local/cuda/lib64/libnvjpeg.so.13");
  std::string why;
  CHECK(nvj::load_api(nvj::load_options_from_env(), &why) == nullptr);
  CHECK(contains(why, "disabled"));
}

TEST_CASE("nvjpeg loader: a bogus IMGPIPE_NVJPEG_LIB is named in the reason") {
  ScopedEnv sw("IMGPIPE_NVJPEG", nullptr);
  const std::string bogus = "/nonexistent/imgpipe-test/libnvjpeg-bogus.so.13";
  ScopedEnv lib("IMGPIPE_NVJPEG_LIB", bogus.c_str());
  const nvj::LoadOptions o = nvj::load_options_from_env();
  CHECK(o.library == bogus);
  std::string why;
  CHECK(nvj::load_api(o, &why) == nullptr);
  CHECK(contains(why, bogus));
  CHECK(contains(why, "IMGPIPE_NVJPEG_LIB"));
  CHECK(contains(why, "No such file"));  // dlerror()'s text is passed on
}

TEST_CASE("nvjpeg loader: a library without the nvJPEG symbols names the missing one") {
  // libm exists everywhere and exports no nvjpeg* symbol.
  std::string why;
  nvj::LoadOptions o;
  o.library = "libm.so.6";
  CHECK(nvj::load_api(o, &why) == nullptr);
  CHECK(contains(why, "libm.so.6"));
  CHECK(contains(why, "lacks nvjpegGetProperty"));
}

TEST_CASE("nvjpeg loader: the default search reports every name tried, or a complete table") {
  std::string why;
  auto api = nvj::load_api(nvj::LoadOptions{}, &why);
  if (api == nullptr) {
    MESSAGE("libnvjpeg absent here: " << why);
    for (const char* name : nvj::default_library_names) CHECK(contains(why, name));
  } else {
    MESSAGE("libnvjpeg " << api->version[0] << "." << api->version[1] << "." << api->version[2] << " loaded as "
                         << api->library);
    CHECK(api->version[0] >= 11);
    CHECK(static_cast<bool>(api->nvjpegCreateExV2));
    CHECK(static_cast<bool>(api->nvjpegDecodeBatched));
    CHECK(static_cast<bool>(api->nvjpegDecodeBatchedPreAllocate));
    CHECK(static_cast<bool>(api->nvjpegGetHardwareDecoderInfo));
  }
  // The process-wide table agrees with a fresh load under this process's
  // environment (IMGPIPE_NVJPEG, IMGPIPE_NVJPEG_LIB as the run was started).
  std::string why_env, why_shared;
  const auto fresh = nvj::load_api(nvj::load_options_from_env(), &why_env);
  const nvj::Api* shared = nvj::api(&why_shared);
  CHECK((shared == nullptr) == (fresh == nullptr));
  if (shared == nullptr) {
    MESSAGE("process-wide table: none: " << why_shared);
    CHECK(why_shared == why_env);
  }
  CHECK(nvj::api() == shared);  // loaded once
}

TEST_CASE("nvjpeg: status names") {
  CHECK(std::string(nvj::status_name(nvj::NVJPEG_STATUS_BAD_JPEG)) == "NVJPEG_STATUS_BAD_JPEG");
  CHECK(std::string(nvj::status_name(10)) == "NVJPEG_STATUS_INCOMPLETE_BITSTREAM");
  CHECK(std::string(nvj::status_name(1234)) == "NVJPEG_STATUS_<unknown>");
  CHECK(kn::parse_jpeg_backend("hardware_device") == kn::JpegBackend::hardware_device);
  CHECK(kn::parse_jpeg_backend("gpu_hybrid") == kn::JpegBackend::gpu_hybrid);
  CHECK_FALSE(kn::parse_jpeg_backend("hybrid").has_value());
}

// ============================================================ decoder

namespace {

// Why GPU decode cannot be tested here, or "" when it can.
std::string no_gpu_reason() {
#if IMGPIPE_HAS_CUDA
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device (") + cudaGetErrorName(e) + ")";
  }
  if (count == 0) return "no CUDA device";
  std::string why;
  if (nvj::api(&why) == nullptr) return why;
  return "";
#else
  return "built without CUDA";
#endif
}

}  // namespace

TEST_CASE("nvjpeg decoder: without a GPU or libnvjpeg it reports why and does not crash") {
  const std::string reason = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(!reason.empty(), "a CUDA device and libnvjpeg exist: this case checks their absence");
  MESSAGE("GPU decode unavailable: " << reason);
  std::string why;
  CHECK_FALSE(kn::GpuJpegDecoder::probe(0, &why).has_value());
  CHECK_FALSE(why.empty());
  for (kn::JpegBackend b : {kn::JpegBackend::hardware_device, kn::JpegBackend::hardware, kn::JpegBackend::gpu_hybrid}) {
    kn::GpuJpegOptions o;
    o.backend = b;
    try {
      kn::GpuJpegDecoder d(0, o);
      FAIL("a decoder was created without a GPU or libnvjpeg");
    } catch (const imgpipe::Error& e) {
      CHECK(contains(e.what(), "unavailable"));
    }
  }
}

namespace {

// ------------------------------------------------------------ test JPEGs

struct JpegReadError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};

// Encodes `img` (CV_8UC3 RGB or CV_8UC1) at quality 90, luma sampling
// hs x vs (chroma 1x1): 2x2 = 4:2:0, 2x1 = 4:2:2, 1x2 = 4:4:0, 1x1 = 4:4:4,
// 4x1 = 4:1:1.
std::vector<std::uint8_t> encode_jpeg(const cv::Mat& img, int hs, int vs, bool progressive) {
  imgpipe::test::JpegWriteOptions o;
  o.components = img.channels();
  o.quality = 90;
  o.h_samp = hs;
  o.v_samp = vs;
  o.progressive = progressive;
  return imgpipe::test::write_jpeg(img.ptr<std::uint8_t>(), img.cols, img.rows, img.step, o);
}

// Photo-like content: a smooth random field, blurred shapes, mild noise.
cv::Mat test_content(int w, int h, std::uint64_t seed) {
  cv::RNG rng(seed);
  cv::Mat small(std::max(2, h / 24), std::max(2, w / 24), CV_8UC3);
  rng.fill(small, cv::RNG::UNIFORM, 30, 226);
  cv::Mat m;
  cv::resize(small, m, cv::Size(w, h), 0, 0, cv::INTER_CUBIC);
  for (int i = 0; i < 12; ++i) {
    const cv::Point c(rng.uniform(0, w), rng.uniform(0, h));
    const int r = rng.uniform(1, std::max(2, std::min(w, h) / 4));
    cv::circle(m, c, r, cv::Scalar(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256)), cv::FILLED,
               cv::LINE_AA);
  }
  cv::GaussianBlur(m, m, cv::Size(0, 0), 1.2);
  cv::Mat noise(m.size(), CV_8UC3);
  rng.fill(noise, cv::RNG::NORMAL, 0, 4);
  cv::add(m, noise, m, cv::noArray(), CV_8UC3);
  return m;  // treated as RGB
}

struct Sample {
  std::string name;
  int width = 0, height = 0;
  int components = 3;
  kn::ChromaSubsampling css = kn::ChromaSubsampling::css420;
  bool progressive = false;
  std::vector<std::uint8_t> jpeg;
  cv::Mat reference;  // OpenCV's decode, RGB
};

Sample make_sample(const std::string& name, int w, int h, int hs, int vs, kn::ChromaSubsampling css, bool grey,
                   bool progressive, std::uint64_t seed) {
  Sample s;
  s.name = name;
  s.width = w;
  s.height = h;
  s.components = grey ? 1 : 3;
  s.css = css;
  s.progressive = progressive;
  cv::Mat rgb = test_content(w, h, seed);
  if (grey) cv::cvtColor(rgb, rgb, cv::COLOR_RGB2GRAY);
  s.jpeg = encode_jpeg(rgb, hs, vs, progressive);
  cv::Mat bgr = cv::imdecode(s.jpeg, cv::IMREAD_COLOR);
  REQUIRE(bgr.cols == w);
  REQUIRE(bgr.rows == h);
  cv::cvtColor(bgr, s.reference, cv::COLOR_BGR2RGB);
  return s;
}

// Baseline images the hardware takes (see GPU-DECODE.md), odd sizes included.
std::vector<Sample> baseline_samples() {
  using C = kn::ChromaSubsampling;
  std::vector<Sample> v;
  v.push_back(make_sample("4:2:0 640x480", 640, 480, 2, 2, C::css420, false, false, 1));
  v.push_back(make_sample("4:2:0 333x217", 333, 217, 2, 2, C::css420, false, false, 2));
  v.push_back(make_sample("4:4:4 1023x767", 1023, 767, 1, 1, C::css444, false, false, 3));
  v.push_back(make_sample("4:2:2 501x375", 501, 375, 2, 1, C::css422, false, false, 4));
  v.push_back(make_sample("4:4:0 257x129", 257, 129, 1, 2, C::css440, false, false, 5));
  v.push_back(make_sample("grey 401x299", 401, 299, 1, 1, C::gray, true, false, 6));
  v.push_back(make_sample("4:2:0 1921x1081", 1921, 1081, 2, 2, C::css420, false, false, 7));
  v.push_back(make_sample("4:4:4 97x65", 97, 65, 1, 1, C::css444, false, false, 8));
  return v;
}

Sample progressive_sample() {
  return make_sample("progressive 4:2:0 640x480", 640, 480, 2, 2, kn::ChromaSubsampling::css420, false, true, 9);
}
Sample css411_sample() {
  return make_sample("4:1:1 320x240", 320, 240, 4, 1, kn::ChromaSubsampling::css411, false, false, 10);
}

// What libjpeg reads back from a test JPEG's header.
struct HeaderFacts {
  int components = 0;
  int h0 = 0, v0 = 0, h1 = 0, v1 = 0;
  bool progressive = false;
};
HeaderFacts read_header(const std::vector<std::uint8_t>& b) {
  jpeg_decompress_struct d{};
  JpegReadError err{};
  d.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = [](j_common_ptr p) { std::longjmp(reinterpret_cast<JpegReadError*>(p->err)->jump, 1); };
  HeaderFacts f;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&d);
    FAIL("libjpeg cannot read a test JPEG's header");
    return f;
  }
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, b.data(), static_cast<unsigned long>(b.size()));
  jpeg_read_header(&d, TRUE);
  f.components = d.num_components;
  f.h0 = d.comp_info[0].h_samp_factor;
  f.v0 = d.comp_info[0].v_samp_factor;
  if (d.num_components > 1) {
    f.h1 = d.comp_info[1].h_samp_factor;
    f.v1 = d.comp_info[1].v_samp_factor;
  }
  f.progressive = d.progressive_mode != 0;
  jpeg_destroy_decompress(&d);
  return f;
}

}  // namespace

TEST_CASE("nvjpeg test data: the JPEGs have the subsampling and encoding asked for") {
  using C = kn::ChromaSubsampling;
  std::vector<Sample> all = baseline_samples();
  all.push_back(progressive_sample());
  all.push_back(css411_sample());
  for (const Sample& s : all) {
    CAPTURE(s.name);
    const HeaderFacts f = read_header(s.jpeg);
    CHECK(f.components == s.components);
    CHECK(f.progressive == s.progressive);
    if (s.components == 3) {
      CHECK(f.h1 == 1);
      CHECK(f.v1 == 1);
    }
    const int h = s.css == C::css420 || s.css == C::css422 ? 2 : s.css == C::css411 ? 4 : 1;
    const int v = s.css == C::css420 || s.css == C::css440 ? 2 : 1;
    if (s.components == 3) {
      CHECK(f.h0 == h);
      CHECK(f.v0 == v);
    }
    // The OpenCV reference is the picture, not noise: libjpeg at q90.
    CHECK(s.reference.cols == s.width);
    CHECK(s.reference.rows == s.height);
  }
}

#if IMGPIPE_HAS_CUDA

namespace {

// ------------------------------------------------------------ CUDA helpers

#define TEST_CUDA(expr) \
  REQUIRE_MESSAGE((expr) == cudaSuccess, #expr " failed: " << cudaGetErrorName(cudaGetLastError()))

struct DeviceMem {
  void* p = nullptr;
  std::size_t pitch = 0;
  DeviceMem() = default;
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  DeviceMem(DeviceMem&& o) noexcept : p(o.p), pitch(o.pitch) { o.p = nullptr; }
  ~DeviceMem() {
    if (p != nullptr) (void)cudaFree(p);
  }
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { TEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// Output frames for `samples` (pitch from cudaMallocPitch), poisoned.
std::vector<DeviceMem> alloc_outputs(const std::vector<const Sample*>& samples, std::vector<kn::DecodedFrame>* frames) {
  std::vector<DeviceMem> mem;
  frames->clear();
  for (const Sample* s : samples) {
    DeviceMem m;
    TEST_CUDA(cudaMallocPitch(&m.p, &m.pitch, static_cast<std::size_t>(s->width) * 3, s->height));
    TEST_CUDA(cudaMemset2D(m.p, m.pitch, 0x5A, static_cast<std::size_t>(s->width) * 3, s->height));
    frames->push_back({static_cast<std::uint8_t*>(m.p), m.pitch, s->width, s->height});
    mem.push_back(std::move(m));
  }
  return mem;
}

cv::Mat download(const kn::DecodedFrame& f, cudaStream_t stream) {
  cv::Mat m(f.height, f.width, CV_8UC3);
  TEST_CUDA(cudaMemcpy2DAsync(m.data, m.step, f.d_rgb, f.pitch, static_cast<std::size_t>(f.width) * 3, f.height,
                              cudaMemcpyDeviceToHost, stream));
  TEST_CUDA(cudaStreamSynchronize(stream));
  return m;
}

struct Diff {
  double mean = 0;
  int max = 0;
};
Diff compare(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat d;
  cv::absdiff(a, b, d);
  double mx = 0;
  cv::minMaxLoc(d.reshape(1), nullptr, &mx);
  const cv::Scalar s = cv::mean(d);
  return {(s[0] + s[1] + s[2]) / 3.0, static_cast<int>(mx)};
}

constexpr double max_mean_diff = 1.5;
// Measured on the H200 (nvJPEG 13.0.1, libjpeg-turbo reference): max 1 on
// the engines, 3 on gpu_hybrid; mean below 0.03.
constexpr int max_abs_diff = 8;

// Checks a decoded frame against OpenCV's decode; prints the figures.
void check_against_opencv(const Sample& s, const kn::DecodedFrame& f, cudaStream_t stream, const std::string& backend) {
  const Diff d = compare(download(f, stream), s.reference);
  MESSAGE(backend << " " << s.name << ": mean |diff| " << d.mean << ", max |diff| " << d.max << " vs OpenCV");
  CHECK_MESSAGE(d.mean < max_mean_diff, backend << " " << s.name << " mean |diff| " << d.mean);
  CHECK_MESSAGE(d.max <= max_abs_diff, backend << " " << s.name << " max |diff| " << d.max);
}

// Bitstreams where the decoder wants them: device copies for
// hardware_device, else the host bytes.
struct Inputs {
  std::vector<DeviceMem> device;
  std::vector<const std::uint8_t*> ptrs;
  std::vector<std::size_t> sizes;
};
Inputs inputs_for(const kn::GpuJpegDecoder& dec, const std::vector<const std::vector<std::uint8_t>*>& streams) {
  Inputs in;
  for (const auto* b : streams) {
    in.sizes.push_back(b->size());
    if (dec.input_on_device()) {
      DeviceMem m;
      TEST_CUDA(cudaMalloc(&m.p, b->size()));
      TEST_CUDA(cudaMemcpy(m.p, b->data(), b->size(), cudaMemcpyHostToDevice));
      in.ptrs.push_back(static_cast<const std::uint8_t*>(m.p));
      in.device.push_back(std::move(m));
    } else {
      in.ptrs.push_back(b->data());
    }
  }
  return in;
}

// The backends to run: gpu_hybrid always; the hardware ones where probe()
// finds engines (or fail, under IMGPIPE_TEST_REQUIRE_NVJPEG_HW=1).
std::vector<kn::JpegBackend> test_backends() {
  std::vector<kn::JpegBackend> v;
  std::string why;
  const auto hw = kn::GpuJpegDecoder::probe(0, &why);
  const char* require = std::getenv("IMGPIPE_TEST_REQUIRE_NVJPEG_HW");
  if (hw) {
    v.push_back(kn::JpegBackend::hardware_device);
    v.push_back(kn::JpegBackend::hardware);
  } else if (require != nullptr && std::string(require) == "1") {
    FAIL("IMGPIPE_TEST_REQUIRE_NVJPEG_HW=1 but no JPEG engine: " << why);
  } else {
    MESSAGE("hardware backends not tested: " << why);
  }
  v.push_back(kn::JpegBackend::gpu_hybrid);
  return v;
}

// Counts what nvJPEG allocates through a JpegAllocator.
struct CountingAllocator {
  std::atomic<long> allocations{0}, frees{0}, live{0};
  bool pinned = false;
  static int alloc(void* ctx, void** p, std::size_t n, CUstream_st*) {
    auto* c = static_cast<CountingAllocator*>(ctx);
    const cudaError_t e = c->pinned ? cudaHostAlloc(p, n, cudaHostAllocDefault) : cudaMalloc(p, n);
    if (e != cudaSuccess) return 1;
    ++c->allocations;
    ++c->live;
    return 0;
  }
  static int release(void* ctx, void* p, std::size_t, CUstream_st*) {
    auto* c = static_cast<CountingAllocator*>(ctx);
    if (p == nullptr) return 0;
    const cudaError_t e = c->pinned ? cudaFreeHost(p) : cudaFree(p);
    ++c->frees;
    --c->live;
    return e == cudaSuccess ? 0 : 1;
  }
  kn::JpegAllocator get() { return {&alloc, &release, this}; }
};

std::string label(const kn::GpuJpegDecoder& d, const kn::GpuJpegOptions& o) {
  std::string s(kn::to_string(d.backend()));
  if (d.backend() != kn::JpegBackend::gpu_hybrid) s += o.hw_no_pipeline ? " (no pipeline)" : " (pipelined)";
  return s;
}

void CUDART_CB sleep_host(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<std::intptr_t>(ms)));
}

}  // namespace

TEST_CASE("nvjpeg decoder: probe reports the JPEG engines") {
  const std::string no_gpu = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  std::string why;
  const auto info = kn::GpuJpegDecoder::probe(0, &why);
  if (!info) {
    const char* require = std::getenv("IMGPIPE_TEST_REQUIRE_NVJPEG_HW");
    if (require != nullptr && std::string(require) == "1") FAIL("no JPEG engine: " << why);
    CHECK_FALSE(why.empty());
    IMGPIPE_SKIP_UNLESS(false, "no JPEG engine on device 0: " + why);
  }
  MESSAGE("nvJPEG " << info->version[0] << "." << info->version[1] << "." << info->version[2] << " (" << info->library
                    << "): " << info->engines << " engines x " << info->cores_per_engine
                    << " cores, HARDWARE_DEVICE backend " << std::string(info->device_input ? "yes" : "no"));
  CHECK(info->engines > 0);
  CHECK(info->cores_per_engine > 0);
  CHECK(info->version[0] >= 11);
  CHECK_FALSE(kn::GpuJpegDecoder::probe(9999, &why).has_value());
  CHECK(contains(why, "does not exist"));
}

TEST_CASE("nvjpeg decoder: parse reads headers, from many threads at once") {
  const std::string no_gpu = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  std::vector<Sample> samples = baseline_samples();
  samples.push_back(progressive_sample());
  samples.push_back(css411_sample());
  for (kn::JpegBackend b : test_backends()) {
    const std::string asked(kn::to_string(b));
    CAPTURE(asked);
    kn::GpuJpegOptions o;
    o.backend = b;
    kn::GpuJpegDecoder dec(0, o);
    for (const Sample& s : samples) {
      CAPTURE(s.name);
      const kn::JpegInfo info = dec.parse(s.jpeg.data(), s.jpeg.size());
      REQUIRE(info.valid);
      CHECK(info.status == 0);
      CHECK(info.width == s.width);
      CHECK(info.height == s.height);
      CHECK(info.components == s.components);
      CHECK(info.subsampling == s.css);
      CHECK(info.progressive == s.progressive);
      if (dec.backend() != kn::JpegBackend::gpu_hybrid) {
        const bool hw_takes = !s.progressive && s.css != kn::ChromaSubsampling::css411;
        CHECK_MESSAGE(info.batch_supported == hw_takes,
                      s.name << ": nvjpegDecodeBatchedSupported says " << info.batch_supported);
      } else {
        MESSAGE("gpu_hybrid batch_supported for " << s.name << ": " << info.batch_supported);
      }
    }
    // Damaged headers are reported, not thrown.
    const std::vector<std::uint8_t>& good = samples[0].jpeg;
    std::vector<std::uint8_t> garbage(4096);
    cv::RNG rng(77);
    rng.fill(garbage, cv::RNG::UNIFORM, 0, 256);
    for (const auto& bad : {std::vector<std::uint8_t>(good.begin(), good.begin() + 20), garbage}) {
      const kn::JpegInfo info = dec.parse(bad.data(), bad.size());
      CHECK_FALSE(info.valid);
      CHECK(info.status != 0);
    }
    CHECK_FALSE(dec.parse(nullptr, 0).valid);

    // Many threads: the same answers.
    std::vector<kn::JpegInfo> expected;
    for (const Sample& s : samples) expected.push_back(dec.parse(s.jpeg.data(), s.jpeg.size()));
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int round = 0; round < 40; ++round)
          for (std::size_t i = 0; i < samples.size(); ++i) {
            const std::size_t k = (i + static_cast<std::size_t>(t)) % samples.size();
            const kn::JpegInfo info = dec.parse(samples[k].jpeg.data(), samples[k].jpeg.size());
            if (info.width != expected[k].width || info.height != expected[k].height ||
                info.subsampling != expected[k].subsampling || info.batch_supported != expected[k].batch_supported)
              ++mismatches;
          }
      });
    for (auto& th : threads) th.join();
    CHECK(mismatches.load() == 0);
  }
}

TEST_CASE("nvjpeg decoder: a batch of baseline JPEGs matches OpenCV's decode") {
  const std::string no_gpu = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  const std::vector<Sample> samples = baseline_samples();
  Stream stream;
  for (kn::JpegBackend b : test_backends()) {
    for (bool no_pipeline : {true, false}) {
      if (b == kn::JpegBackend::gpu_hybrid && !no_pipeline) continue;  // a flag of the engines only
      const std::string asked(kn::to_string(b));
      CAPTURE(asked);
      CAPTURE(no_pipeline);
      CountingAllocator dev_alloc, pinned_alloc;
      pinned_alloc.pinned = true;
      {
        kn::GpuJpegOptions o;
        o.backend = b;
        o.hw_no_pipeline = no_pipeline;
        o.device_allocator = dev_alloc.get();
        o.pinned_allocator = pinned_alloc.get();
        kn::GpuJpegDecoder dec(0, o);
        const std::string name = label(dec, o);
        if (b == kn::JpegBackend::hardware_device && dec.backend() != b)
          MESSAGE("HARDWARE_DEVICE unavailable: fell back to " << name);
        std::vector<const Sample*> batch;
        std::vector<const std::vector<std::uint8_t>*> streams;
        int max_w = 0, max_h = 0;
        for (const Sample& s : samples) {
          const kn::JpegInfo info = dec.parse(s.jpeg.data(), s.jpeg.size());
          REQUIRE(info.valid);
          if (!info.batch_supported) {
            MESSAGE(name << ": " << s.name << " not batch-supported, left out");
            continue;
          }
          batch.push_back(&s);
          streams.push_back(&s.jpeg);
          max_w = std::max(max_w, s.width);
          max_h = std::max(max_h, s.height);
        }
        if (dec.backend() != kn::JpegBackend::gpu_hybrid) CHECK(batch.size() == samples.size());
        REQUIRE(batch.size() >= 2);
        try {
          const bool pre = dec.preallocate(static_cast<int>(batch.size()), max_w, max_h);
          MESSAGE(name << ": preallocate " << std::string(pre ? "done" : "not offered by this backend"));
          if (dec.backend() == kn::JpegBackend::hardware) CHECK(pre);
        } catch (const std::exception& e) {
          FAIL_CHECK(name << ": preallocate threw " << e.what());
        }

        std::vector<kn::DecodedFrame> frames;
        const std::vector<DeviceMem> outputs = alloc_outputs(batch, &frames);
        Inputs in = inputs_for(dec, streams);
        const int n = static_cast<int>(batch.size());
        std::vector<int> status(batch.size(), -1);

        // Work queued before the decode (a 150 ms host callback, then a
        // memset of every output) must land before the decode's writes.
        TEST_CUDA(cudaLaunchHostFunc(stream.s, sleep_host, reinterpret_cast<void*>(std::intptr_t{150})));
        for (const auto& f : frames)
          TEST_CUDA(
              cudaMemset2DAsync(f.d_rgb, f.pitch, 0x33, static_cast<std::size_t>(f.width) * 3, f.height, stream.s));
        CHECK(dec.decode_batch(in.ptrs.data(), in.sizes.data(), n, frames.data(), status.data(), stream.s) == n);
        for (int i = 0; i < n; ++i) CHECK(status[i] == 0);
        for (int i = 0; i < n; ++i) check_against_opencv(*batch[i], frames[i], stream.s, name);

        // Same n again: no new initialisation; another n: one more.
        const auto before = dec.stats();
        std::fill(status.begin(), status.end(), -1);
        CHECK(dec.decode_batch(in.ptrs.data(), in.sizes.data(), n, frames.data(), status.data(), stream.s) == n);
        CHECK(dec.stats().initializations == before.initializations);
        CHECK(dec.decode_batch(in.ptrs.data(), in.sizes.data(), n - 1, frames.data(), status.data(), stream.s) ==
              n - 1);
        CHECK(dec.stats().initializations == before.initializations + 1);
        for (int i = 0; i < n - 1; ++i) check_against_opencv(*batch[i], frames[i], stream.s, name);
        const kn::GpuJpegStats st = dec.stats();
        CHECK(st.batches == 3);
        CHECK(st.images == static_cast<std::uint64_t>(3 * n - 1));
        CHECK(st.failed == 0);
        CHECK(st.batch_failures == 0);

        // Pre-allocation asked again for no more does nothing (a kept
        // Pipeline asks each run); for more, the buffers grow once, and the
        // batches still decode.
        if (st.preallocations > 0) {
          CHECK(dec.preallocate(n, max_w, max_h));
          CHECK(dec.preallocate(n - 1, std::max(1, max_w / 2), max_h));
          CHECK(dec.stats().preallocations == st.preallocations);
          CHECK(dec.preallocate(n + 1, max_w, max_h + 16));
          CHECK(dec.stats().preallocations == st.preallocations + 1);
          std::fill(status.begin(), status.end(), -1);
          CHECK(dec.decode_batch(in.ptrs.data(), in.sizes.data(), n, frames.data(), status.data(), stream.s) == n);
          for (int i = 0; i < n; ++i) check_against_opencv(*batch[i], frames[i], stream.s, name);
        } else {
          MESSAGE(name << ": no pre-allocation on this backend");
        }

        CHECK_THROWS_AS(dec.decode_batch(in.ptrs.data(), in.sizes.data(), -1, frames.data(), status.data(), stream.s),
                        std::invalid_argument);
        kn::DecodedFrame narrow = frames[0];
        narrow.pitch = static_cast<std::size_t>(narrow.width) * 3 - 1;
        CHECK_THROWS_AS(dec.decode_batch(in.ptrs.data(), in.sizes.data(), 1, &narrow, status.data(), stream.s),
                        std::invalid_argument);
        TEST_CUDA(cudaStreamSynchronize(stream.s));
        MESSAGE(name << ": nvJPEG allocated " << dev_alloc.allocations.load() << " device and "
                     << pinned_alloc.allocations.load() << " pinned buffers through the given allocators");
        // GPU_HYBRID's buffers are device memory; the engines' may not pass
        // through the allocators at all (printed above).
        if (dec.backend() == kn::JpegBackend::gpu_hybrid) CHECK(dev_alloc.allocations.load() > 0);
      }
      // The decoder gave back everything it took.
      CHECK(dev_alloc.live.load() == 0);
      CHECK(pinned_alloc.live.load() == 0);
      CHECK(cudaGetLastError() == cudaSuccess);
    }
  }
}

TEST_CASE("nvjpeg decoder: a damaged JPEG inside a batch fails alone, the next batch decodes") {
  const std::string no_gpu = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  const std::vector<Sample> good = baseline_samples();
  const Sample progressive = progressive_sample();
  // Damage that survives no parser: random bytes after an SOI marker.
  std::vector<std::uint8_t> garbage(20000);
  cv::RNG rng(5);
  rng.fill(garbage, cv::RNG::UNIFORM, 0, 256);
  garbage[0] = 0xFF;
  garbage[1] = 0xD8;
  // A valid header whose entropy-coded data stops after 30%.
  std::vector<std::uint8_t> truncated(good[0].jpeg.begin(),
                                      good[0].jpeg.begin() + static_cast<std::ptrdiff_t>(good[0].jpeg.size() * 3 / 10));
  Stream stream;

  // Each backend; the engines also pipelined (no_pipeline off), as the pipeline runs them.
  std::vector<std::pair<kn::JpegBackend, bool>> decoders;
  for (kn::JpegBackend b : test_backends()) {
    decoders.emplace_back(b, true);
    if (b != kn::JpegBackend::gpu_hybrid) decoders.emplace_back(b, false);
  }
  for (const auto& [b, no_pipeline] : decoders) {
    const std::string asked(kn::to_string(b));
    CAPTURE(asked);
    CAPTURE(no_pipeline);
    kn::GpuJpegOptions o;
    o.backend = b;
    o.hw_no_pipeline = no_pipeline;
    kn::GpuJpegDecoder dec(0, o);
    const std::string name = label(dec, o);
    const bool hw = dec.backend() != kn::JpegBackend::gpu_hybrid;

    struct Bad {
      const char* what;
      const std::vector<std::uint8_t>* bytes;
      bool must_fail;
    };
    // The progressive image is a caller's mistake on the hardware (parse()
    // says it is unsupported); GPU_HYBRID may decode it.
    const Bad bads[] = {{"random bytes", &garbage, true},
                        {"progressive", &progressive.jpeg, hw},
                        {"truncated to 30%", &truncated, false}};
    for (const Bad& bad : bads) {
      const std::string what(bad.what);
      CAPTURE(what);
      // good[0..3], bad, good[4..]
      std::vector<const Sample*> batch;
      std::vector<const std::vector<std::uint8_t>*> streams;
      for (std::size_t i = 0; i < good.size(); ++i) {
        if (i == 4) {
          batch.push_back(nullptr);
          streams.push_back(bad.bytes);
        }
        batch.push_back(&good[i]);
        streams.push_back(&good[i].jpeg);
      }
      const int bad_index = 4;
      std::vector<const Sample*> out_shape = batch;
      out_shape[bad_index] = bad.bytes == &progressive.jpeg ? &progressive : &good[0];
      std::vector<kn::DecodedFrame> frames;
      const std::vector<DeviceMem> outputs = alloc_outputs(out_shape, &frames);
      Inputs in = inputs_for(dec, streams);
      const int n = static_cast<int>(batch.size());
      std::vector<int> status(batch.size(), -1);
      const auto before = dec.stats();
      const int decoded = dec.decode_batch(in.ptrs.data(), in.sizes.data(), n, frames.data(), status.data(), stream.s);
      TEST_CUDA(cudaStreamSynchronize(stream.s));
      CHECK(cudaGetLastError() == cudaSuccess);
      MESSAGE(name << ": " << std::string(bad.what) << " in the middle: status "
                   << std::string(nvj::status_name(status[bad_index])) << ", " << decoded << "/" << n << " decoded, "
                   << dec.stats().batch_failures - before.batch_failures << " failed nvjpegDecodeBatched calls");
      if (bad.must_fail) CHECK(status[bad_index] != 0);
      CHECK(decoded == n - (status[bad_index] != 0 ? 1 : 0));
      for (int i = 0; i < n; ++i) {
        if (i == bad_index) continue;
        CHECK(status[i] == 0);
        check_against_opencv(*batch[i], frames[i], stream.s, name);
      }
      if (bad.bytes == &progressive.jpeg && status[bad_index] == 0)
        check_against_opencv(progressive, frames[bad_index], stream.s, name);

      // The next batch, all good, decodes in full.
      std::vector<const Sample*> next;
      std::vector<const std::vector<std::uint8_t>*> next_streams;
      for (const Sample& s : good) {
        next.push_back(&s);
        next_streams.push_back(&s.jpeg);
      }
      std::vector<kn::DecodedFrame> next_frames;
      const std::vector<DeviceMem> next_outputs = alloc_outputs(next, &next_frames);
      Inputs next_in = inputs_for(dec, next_streams);
      std::vector<int> next_status(next.size(), -1);
      const int m = static_cast<int>(next.size());
      CHECK(dec.decode_batch(next_in.ptrs.data(), next_in.sizes.data(), m, next_frames.data(), next_status.data(),
                             stream.s) == m);
      for (int i = 0; i < m; ++i) {
        CHECK(next_status[i] == 0);
        check_against_opencv(*next[i], next_frames[i], stream.s, name);
      }
      CHECK(cudaGetLastError() == cudaSuccess);
    }
  }
}

TEST_CASE("nvjpeg decoder: the host barrier keeps the engines' writes after work queued before them") {
  const std::string no_gpu = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  std::string why;
  IMGPIPE_SKIP_UNLESS(kn::GpuJpegDecoder::probe(0, &why).has_value(), "no JPEG engine: " + why);
  const std::vector<Sample> samples = baseline_samples();
  std::vector<const Sample*> batch;
  std::vector<const std::vector<std::uint8_t>*> streams;
  for (const Sample& s : samples) {
    batch.push_back(&s);
    streams.push_back(&s.jpeg);
  }
  Stream stream;
  for (bool barrier : {true, false}) {
    CAPTURE(barrier);
    kn::GpuJpegOptions o;
    o.backend = kn::JpegBackend::hardware;
    o.host_barrier = barrier;
    kn::GpuJpegDecoder dec(0, o);
    std::vector<kn::DecodedFrame> frames;
    const std::vector<DeviceMem> outputs = alloc_outputs(batch, &frames);
    Inputs in = inputs_for(dec, streams);
    const int n = static_cast<int>(batch.size());
    std::vector<int> status(batch.size(), -1);
    // 200 ms of queued work, then a memset of every output, then the decode.
    TEST_CUDA(cudaLaunchHostFunc(stream.s, sleep_host, reinterpret_cast<void*>(std::intptr_t{200})));
    for (const auto& f : frames)
      TEST_CUDA(cudaMemset2DAsync(f.d_rgb, f.pitch, 0x33, static_cast<std::size_t>(f.width) * 3, f.height, stream.s));
    CHECK(dec.decode_batch(in.ptrs.data(), in.sizes.data(), n, frames.data(), status.data(), stream.s) == n);
    int intact = 0;
    for (int i = 0; i < n; ++i) {
      const Diff d = compare(download(frames[i], stream.s), batch[i]->reference);
      intact += d.mean < max_mean_diff && d.max <= max_abs_diff ? 1 : 0;
    }
    MESSAGE("hardware, host barrier " << std::string(barrier ? "on" : "off") << ": " << intact << "/" << n
                                      << " decoded images survive the memset queued before the decode");
    if (barrier) CHECK(intact == n);  // off: nvJPEG's behaviour, reported only
  }
}

#endif  // IMGPIPE_HAS_CUDA
