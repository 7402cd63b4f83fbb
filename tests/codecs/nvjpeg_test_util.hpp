// Helpers of the nvJPEG tests (test_nvjpeg_*.cpp): why GPU decode cannot be
// tested here, the test JPEGs (photo-like content at chosen sizes and chroma
// subsamplings, written with tests/jpeg_writer.hpp: this OpenCV, 4.6, cannot
// choose the subsampling) with OpenCV's decode as the reference, and, in
// CUDA builds, device buffers, the backends to run and the comparison of a
// decoded frame with OpenCV's.
#pragma once

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
#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "codecs/image/nvjpeg/nvjpeg_loader.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace nvjpeg_test {

namespace nvj = imgpipe::codecs::nvj;
namespace kn = imgpipe::codecs;

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Why GPU decode cannot be tested here, or "" when it can.
inline std::string no_gpu_reason() {
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

// ------------------------------------------------------------ test JPEGs

struct JpegReadError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};

// Encodes `img` (CV_8UC3 RGB or CV_8UC1) at quality 90, luma sampling
// hs x vs (chroma 1x1): 2x2 = 4:2:0, 2x1 = 4:2:2, 1x2 = 4:4:0, 1x1 = 4:4:4,
// 4x1 = 4:1:1.
inline std::vector<std::uint8_t> encode_jpeg(const cv::Mat& img, int hs, int vs, bool progressive) {
  imgpipe::test::JpegWriteOptions o;
  o.components = img.channels();
  o.quality = 90;
  o.h_samp = hs;
  o.v_samp = vs;
  o.progressive = progressive;
  return imgpipe::test::write_jpeg(img.ptr<std::uint8_t>(), img.cols, img.rows, img.step, o);
}

// Photo-like content: a smooth random field, blurred shapes, mild noise.
inline cv::Mat test_content(int w, int h, std::uint64_t seed) {
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

inline Sample make_sample(const std::string& name, int w, int h, int hs, int vs, kn::ChromaSubsampling css, bool grey,
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
inline std::vector<Sample> baseline_samples() {
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

inline Sample progressive_sample() {
  return make_sample("progressive 4:2:0 640x480", 640, 480, 2, 2, kn::ChromaSubsampling::css420, false, true, 9);
}
inline Sample css411_sample() {
  return make_sample("4:1:1 320x240", 320, 240, 4, 1, kn::ChromaSubsampling::css411, false, false, 10);
}

// What libjpeg reads back from a test JPEG's header.
struct HeaderFacts {
  int components = 0;
  int h0 = 0, v0 = 0, h1 = 0, v1 = 0;
  bool progressive = false;
};
inline HeaderFacts read_header(const std::vector<std::uint8_t>& b) {
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

#if IMGPIPE_HAS_CUDA

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
inline std::vector<DeviceMem> alloc_outputs(const std::vector<const Sample*>& samples,
                                             std::vector<kn::DecodedFrame>* frames) {
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

inline cv::Mat download(const kn::DecodedFrame& f, cudaStream_t stream) {
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
inline Diff compare(const cv::Mat& a, const cv::Mat& b) {
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
inline void check_against_opencv(const Sample& s, const kn::DecodedFrame& f, cudaStream_t stream,
                                 const std::string& backend) {
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
inline Inputs inputs_for(const kn::GpuJpegDecoder& dec,
                         const std::vector<const std::vector<std::uint8_t>*>& streams) {
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
inline std::vector<kn::JpegBackend> test_backends() {
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

inline std::string label(const kn::GpuJpegDecoder& d, const kn::GpuJpegOptions& o) {
  std::string s(kn::to_string(d.backend()));
  if (d.backend() != kn::JpegBackend::gpu_hybrid) s += o.hw_no_pipeline ? " (no pipeline)" : " (pipelined)";
  return s;
}

inline void CUDART_CB sleep_host(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<std::intptr_t>(ms)));
}

#endif  // IMGPIPE_HAS_CUDA

}  // namespace nvjpeg_test
