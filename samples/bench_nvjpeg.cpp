// Raw batched nvJPEG decode throughput: the reference the pipeline's GPU
// decode is compared with. JPEGs from a folder are loaded into memory once
// (device memory for the hardware_device backend, pinned host memory for the
// others), then decoded again and again into device RGB buffers:
//   - codecs::GpuJpegDecoder::decode_batch for each backend and batch size;
//   - for comparison, the plain loop: nvjpegDecode image by image (the
//     library's single-image API, DEFAULT backend) on one stream.
// A pass decodes every file the backend's parse() accepts once and ends with
// a stream synchronise; each figure is the median of --passes timed passes
// after --warmup untimed ones. img/s = files per pass / median pass time.
//
// Usage: imgpipe_bench_nvjpeg --dir FOLDER [--device 0]
//        [--backends hardware_device,hardware,gpu_hybrid] [--batches 32,128,256]
//        [--passes 7] [--warmup 2] [--no-pipeline on|off|both] [--plain on|off]
//        [--limit N] [--repeat K] [--decoders 1,2] [--json FILE]
// (--decoders K: K decoders, each with its own nvJPEG state, stream and
// outputs, on a thread each; a pass's batches go to them in turn, so that one
// decoder's host-side work overlaps another's engine time. Each K is a row.)
// (--repeat K: each file K times per pass, for folders smaller than the
// largest batch.)
// (--no-pipeline: NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE on the hardware backends.)
// (--mix BACKEND:BATCH,BACKEND:BATCH,...: one row of decoders of different
// backends running at once, each on a thread, stream and copy of the
// bitstreams of its own, each cycling over every accepted file for
// --settle + --seconds seconds; an image counts when the GPU finished its
// call inside the last --seconds (events on each call). A row gives each
// decoder's img/s and its thread's CPU time per image, the sum, and the CPU
// cores the process used (nvJPEG's own threads included). Repeatable; the
// hardware decoders are pipelined, as in the pipeline. With --mix only the
// mixes run. --mix-priority: the first decoder of each mix on a stream of the
// device's greatest priority, the others on the lowest.)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "codecs/image/nvjpeg/nvjpeg_loader.hpp"

namespace fs = std::filesystem;
namespace kn = imgpipe::codecs;
namespace nvj = imgpipe::codecs::nvj;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string dir;
  int device = 0;
  std::vector<kn::JpegBackend> backends{kn::JpegBackend::hardware_device, kn::JpegBackend::hardware,
                                        kn::JpegBackend::gpu_hybrid};
  std::vector<int> batches{32, 128, 256};
  std::vector<int> decoders{1};
  int passes = 7;
  int warmup = 2;
  std::vector<bool> no_pipeline{true};
  bool plain = true;
  std::size_t limit = 0;
  int repeat = 1;
  std::string json;
  std::vector<std::string> mixes;  // --mix specs, as given
  double settle_s = 1.0;
  double seconds = 3.0;
  bool mix_priority = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "imgpipe_bench_nvjpeg: %s\nusage: imgpipe_bench_nvjpeg --dir FOLDER [--device N] "
               "[--backends hardware_device,hardware,gpu_hybrid] [--batches 32,128,256] [--passes 7] "
               "[--warmup 2] [--no-pipeline on|off|both] [--plain on|off] [--limit N] [--repeat K] [--decoders 1,2] "
               "[--mix BACKEND:BATCH,...]... [--mix-priority] [--settle 1] [--seconds 3] [--json FILE]\n",
               why.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) v.push_back(item);
  return v;
}

int to_int(const std::string& s, const char* what) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  usage(std::string("bad ") + what + ": " + s);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(k + " needs a value");
      return argv[++i];
    };
    if (k == "--dir") {
      a.dir = value();
    } else if (k == "--device") {
      a.device = to_int(value(), "device");
    } else if (k == "--backends") {
      a.backends.clear();
      for (const std::string& b : split(value())) {
        const auto p = kn::parse_jpeg_backend(b);
        if (!p) usage("unknown backend " + b);
        a.backends.push_back(*p);
      }
    } else if (k == "--batches") {
      a.batches.clear();
      for (const std::string& b : split(value())) a.batches.push_back(to_int(b, "batch"));
    } else if (k == "--decoders") {
      a.decoders.clear();
      for (const std::string& d : split(value())) a.decoders.push_back(to_int(d, "decoders"));
    } else if (k == "--passes") {
      a.passes = to_int(value(), "passes");
    } else if (k == "--warmup") {
      a.warmup = to_int(value(), "warmup");
    } else if (k == "--no-pipeline") {
      const std::string v = value();
      if (v == "on")
        a.no_pipeline = {true};
      else if (v == "off")
        a.no_pipeline = {false};
      else if (v == "both")
        a.no_pipeline = {true, false};
      else
        usage("--no-pipeline takes on, off or both");
    } else if (k == "--plain") {
      const std::string v = value();
      if (v != "on" && v != "off") usage("--plain takes on or off");
      a.plain = v == "on";
    } else if (k == "--repeat") {
      a.repeat = to_int(value(), "repeat");
    } else if (k == "--limit") {
      a.limit = static_cast<std::size_t>(to_int(value(), "limit"));
    } else if (k == "--json") {
      a.json = value();
    } else if (k == "--mix") {
      a.mixes.push_back(value());
    } else if (k == "--mix-priority") {
      a.mix_priority = true;
    } else if (k == "--settle") {
      a.settle_s = std::stod(value());
    } else if (k == "--seconds") {
      a.seconds = std::stod(value());
    } else {
      usage("unknown argument " + k);
    }
  }
  if (a.dir.empty()) usage("--dir is required");
  if (a.passes < 1 || a.warmup < 0 || a.repeat < 1) usage("--passes and --repeat must be >= 1, --warmup >= 0");
  for (int b : a.batches)
    if (b < 1) usage("batch sizes must be >= 1");
  for (int d : a.decoders)
    if (d < 1 || d > 8) usage("--decoders takes 1 to 8");
  return a;
}

std::vector<std::vector<std::uint8_t>> load_jpegs(const fs::path& dir, std::size_t limit) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (limit > 0 && files.size() > limit) files.resize(limit);
  std::vector<std::vector<std::uint8_t>> out;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "imgpipe_bench_nvjpeg: %s failed: %s\n", what, cudaGetErrorName(e));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Result {
  std::string label;    // backend as asked
  std::string backend;  // backend in use ("" when unavailable)
  bool no_pipeline = true;
  int decoders = 1;             // decoders at once, a thread each
  int batch = 0;                // 1 for the plain loop
  int images = 0;               // images per pass
  std::vector<double> pass_ms;  // timed passes
  int failed = 0;               // images reported failed over all passes
  std::string error;            // why it did not run
  double median_ms() const { return pass_ms.empty() ? 0 : median(pass_ms); }
  double img_per_s() const { return pass_ms.empty() ? 0 : images / (median_ms() / 1000.0); }
};

// Device or pinned copies of the bitstreams, one arena.
struct Bitstreams {
  std::uint8_t* base = nullptr;
  bool on_device = false;
  std::vector<const std::uint8_t*> ptrs;
  std::vector<std::size_t> sizes;
  Bitstreams(const std::vector<const std::vector<std::uint8_t>*>& files, bool device) : on_device(device) {
    std::size_t total = 0;
    for (const auto* f : files) total += (f->size() + 255) / 256 * 256;
    cuda_check(device ? cudaMalloc(reinterpret_cast<void**>(&base), total)
                      : cudaHostAlloc(reinterpret_cast<void**>(&base), total, cudaHostAllocDefault),
               "bitstream allocation");
    std::size_t off = 0;
    for (const auto* f : files) {
      cuda_check(cudaMemcpy(base + off, f->data(), f->size(), cudaMemcpyDefault), "bitstream copy");
      ptrs.push_back(base + off);
      sizes.push_back(f->size());
      off += (f->size() + 255) / 256 * 256;
    }
  }
  ~Bitstreams() {
    if (on_device)
      (void)cudaFree(base);
    else
      (void)cudaFreeHost(base);
  }
  Bitstreams(const Bitstreams&) = delete;
  Bitstreams& operator=(const Bitstreams&) = delete;
};

// `slots` output buffers of max_w x max_h RGB, one pitch.
struct Outputs {
  std::uint8_t* base = nullptr;
  std::size_t pitch = 0;
  std::size_t slot_bytes = 0;
  Outputs(int slots, int max_w, int max_h) {
    pitch = (static_cast<std::size_t>(max_w) * 3 + 255) / 256 * 256;
    slot_bytes = pitch * static_cast<std::size_t>(max_h);
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&base), slot_bytes * static_cast<std::size_t>(slots)),
               "output allocation");
  }
  ~Outputs() { (void)cudaFree(base); }
  Outputs(const Outputs&) = delete;
  Outputs& operator=(const Outputs&) = delete;
  std::uint8_t* slot(int i) const { return base + slot_bytes * static_cast<std::size_t>(i); }
};

// One decoder of a row: its nvJPEG state, stream and outputs.
struct Lane {
  std::unique_ptr<kn::GpuJpegDecoder> dec;
  cudaStream_t stream = nullptr;
  std::unique_ptr<Outputs> out;
  std::vector<kn::DecodedFrame> frames;
  std::vector<int> status;
  Lane() = default;
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  ~Lane() {
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

// The files `dec` parses (and takes in a batched call, when batched), their
// headers and the largest frame among them.
struct Accepted {
  std::vector<const std::vector<std::uint8_t>*> files;
  std::vector<kn::JpegInfo> infos;
  int max_w = 1, max_h = 1;
};
Accepted accepted_files(const kn::GpuJpegDecoder& dec, const std::vector<std::vector<std::uint8_t>>& files,
                        bool batched) {
  Accepted acc;
  for (const auto& f : files) {
    const kn::JpegInfo info = dec.parse(f.data(), f.size());
    if (!info.valid || (batched && !info.batch_supported)) continue;
    acc.files.push_back(&f);
    acc.infos.push_back(info);
    acc.max_w = std::max(acc.max_w, info.width);
    acc.max_h = std::max(acc.max_h, info.height);
  }
  return acc;
}

std::vector<Result> bench_backend(const Args& a, kn::JpegBackend backend, bool no_pipeline,
                                  const std::vector<std::vector<std::uint8_t>>& files) {
  std::vector<Result> results;
  const std::string label = std::string(kn::to_string(backend));
  kn::GpuJpegOptions o;
  o.backend = backend;
  o.allow_host_input_fallback = false;  // measure what was asked for
  o.hw_no_pipeline = no_pipeline;
  const int most = *std::max_element(a.decoders.begin(), a.decoders.end());
  std::vector<std::unique_ptr<Lane>> lanes;
  try {
    for (int k = 0; k < most; ++k) {
      lanes.push_back(std::make_unique<Lane>());
      lanes.back()->dec = std::make_unique<kn::GpuJpegDecoder>(a.device, o);
      cuda_check(cudaStreamCreateWithFlags(&lanes.back()->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
  } catch (const std::exception& e) {
    Result r;
    r.label = label;
    r.no_pipeline = no_pipeline;
    r.error = e.what();
    results.push_back(r);
    return results;
  }
  kn::GpuJpegDecoder& first_dec = *lanes.front()->dec;
  const auto [used, infos, max_w, max_h] = accepted_files(first_dec, files, true);
  if (used.empty()) {
    Result r;
    r.label = label;
    r.error = "no file is batch-supported by this backend";
    results.push_back(r);
    return results;
  }
  const int n = static_cast<int>(used.size());
  const int max_batch = std::min(n, *std::max_element(a.batches.begin(), a.batches.end()));
  const Bitstreams in(used, first_dec.input_on_device());
  for (auto& l : lanes) {
    l->out = std::make_unique<Outputs>(max_batch, max_w, max_h);
    l->frames.resize(static_cast<std::size_t>(max_batch));
    l->status.resize(static_cast<std::size_t>(max_batch));
    try {
      if (!l->dec->preallocate(max_batch, max_w, max_h))
        std::printf("%s: no pre-allocation on this backend\n", label.c_str());
    } catch (const std::exception& e) {
      std::printf("%s: preallocate failed: %s\n", label.c_str(), e.what());
    }
  }

  for (int k : a.decoders) {
    for (int batch : a.batches) {
      const int b = std::min(batch, n);
      Result r;
      r.label = k == 1 ? label : label + " x" + std::to_string(k);
      r.backend = std::string(kn::to_string(first_dec.backend()));
      r.no_pipeline = no_pipeline;
      r.decoders = k;
      r.batch = batch;
      r.images = n;
      std::atomic<int> failed{0};
      // Decoder t takes the pass's batches t, t + k, t + 2k, ... on a thread of its own.
      auto lane_pass = [&](int t) {
        Lane& l = *lanes[static_cast<std::size_t>(t)];
        for (int first = t * b; first < n; first += k * b) {
          const int count = std::min(b, n - first);
          for (int i = 0; i < count; ++i)
            l.frames[i] = {l.out->slot(i), l.out->pitch, infos[first + i].width, infos[first + i].height};
          const int ok = l.dec->decode_batch(in.ptrs.data() + first, in.sizes.data() + first, count, l.frames.data(),
                                             l.status.data(), l.stream);
          failed += count - ok;
        }
        cuda_check(cudaStreamSynchronize(l.stream), "stream synchronise");
      };
      auto pass = [&]() {
        if (k == 1) return lane_pass(0);
        std::vector<std::exception_ptr> errors(static_cast<std::size_t>(k));
        std::vector<std::thread> threads;
        for (int t = 0; t < k; ++t)
          threads.emplace_back([&, t] {
            try {
              lane_pass(t);
            } catch (...) {
              errors[static_cast<std::size_t>(t)] = std::current_exception();
            }
          });
        for (auto& th : threads) th.join();
        for (auto& e : errors)
          if (e) std::rethrow_exception(e);
      };
      try {
        for (int w = 0; w < a.warmup; ++w) pass();
        failed = 0;
        for (int p = 0; p < a.passes; ++p) {
          const auto t0 = Clock::now();
          pass();
          r.pass_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
      } catch (const std::exception& e) {
        r.error = e.what();
        r.pass_ms.clear();
      }
      r.failed = failed;
      results.push_back(r);
    }
  }
  return results;
}

// The plain loop: nvjpegDecode, one image at a time, DEFAULT backend.
Result bench_plain(const Args& a, const std::vector<std::vector<std::uint8_t>>& files, cudaStream_t stream) {
  Result r;
  r.label = "plain nvjpegDecode loop";
  r.backend = "default";
  r.batch = 1;
  std::string why;
  const nvj::Api* api = nvj::api(&why);
  if (api == nullptr) {
    r.error = why;
    return r;
  }
  nvj::nvjpegHandle_t h = nullptr;
  nvj::nvjpegJpegState_t st = nullptr;
  // cudaMalloc/cudaHostAlloc, as nvJPEG's own defaults.
  nvj::nvjpegDevAllocatorV2_t dev{
      [](void*, void** p, std::size_t n, CUstream_st*) { return cudaMalloc(p, n) == cudaSuccess ? 0 : 1; },
      [](void*, void* p, std::size_t, CUstream_st*) { return cudaFree(p) == cudaSuccess ? 0 : 1; }, nullptr};
  nvj::nvjpegPinnedAllocatorV2_t pinned{
      [](void*, void** p, std::size_t n, CUstream_st*) {
        return cudaHostAlloc(p, n, cudaHostAllocDefault) == cudaSuccess ? 0 : 1;
      },
      [](void*, void* p, std::size_t, CUstream_st*) { return cudaFreeHost(p) == cudaSuccess ? 0 : 1; }, nullptr};
  nvj::nvjpegStatus_t s = api->nvjpegCreateExV2(nvj::NVJPEG_BACKEND_DEFAULT, &dev, &pinned, 0, &h);
  if (s != nvj::NVJPEG_STATUS_SUCCESS) {
    r.error = std::string("nvjpegCreateExV2(DEFAULT): ") + nvj::status_name(s);
    return r;
  }
  s = api->nvjpegJpegStateCreate(h, &st);
  if (s != nvj::NVJPEG_STATUS_SUCCESS) {
    (void)api->nvjpegDestroy(h);
    r.error = std::string("nvjpegJpegStateCreate: ") + nvj::status_name(s);
    return r;
  }
  // Dimensions from the batched decoder's parser (any backend).
  kn::GpuJpegOptions parser_options;
  parser_options.backend = kn::JpegBackend::gpu_hybrid;
  const auto [used, infos, max_w, max_h] =
      accepted_files(kn::GpuJpegDecoder(a.device, parser_options), files, false);
  const int n = static_cast<int>(used.size());
  r.images = n;
  const Bitstreams in(used, false);
  const Outputs out(1, max_w, max_h);
  auto pass = [&]() {
    for (int i = 0; i < n; ++i) {
      nvj::nvjpegImage_t img{};
      img.channel[0] = out.slot(0);
      img.pitch[0] = out.pitch;
      if (api->nvjpegDecode(h, st, in.ptrs[i], in.sizes[i], nvj::NVJPEG_OUTPUT_RGBI, &img, stream) !=
          nvj::NVJPEG_STATUS_SUCCESS)
        ++r.failed;
    }
    cuda_check(cudaStreamSynchronize(stream), "stream synchronise");
  };
  for (int w = 0; w < a.warmup; ++w) pass();
  r.failed = 0;
  for (int p = 0; p < a.passes; ++p) {
    const auto t0 = Clock::now();
    pass();
    r.pass_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  (void)api->nvjpegJpegStateDestroy(st);
  (void)api->nvjpegDestroy(h);
  return r;
}

// --mix: decoders of different backends at once (see the header comment).
struct MixLane {
  kn::JpegBackend backend{};
  int batch = 0;
  double img_per_s = 0;    // images whose call finished inside the window / window
  double cpu_ms_per_img = 0;  // the lane's thread CPU time inside the window per image
  int failed = 0;
};
struct MixResult {
  std::string spec;
  std::vector<MixLane> lanes;
  double total_img_per_s = 0;
  double process_cores = 0;  // process CPU seconds per second over the window
  std::string error;
};

std::vector<MixLane> parse_mix(const std::string& spec) {
  std::vector<MixLane> v;
  for (const std::string& item : split(spec)) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) usage("--mix takes BACKEND:BATCH items, not " + item);
    MixLane l;
    const auto b = kn::parse_jpeg_backend(item.substr(0, colon));
    if (!b) usage("unknown backend in --mix: " + item);
    l.backend = *b;
    l.batch = to_int(item.substr(colon + 1), "mix batch");
    if (l.batch < 1) usage("--mix batch sizes must be >= 1");
    v.push_back(l);
  }
  if (v.empty()) usage("--mix needs at least one BACKEND:BATCH");
  return v;
}

double cpu_seconds(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

MixResult bench_mix(const Args& a, const std::string& spec, const std::vector<std::vector<std::uint8_t>>& files) {
  MixResult res;
  res.spec = spec;
  res.lanes = parse_mix(spec);
  const std::size_t k = res.lanes.size();
  struct State {
    std::unique_ptr<kn::GpuJpegDecoder> dec;
    cudaStream_t stream = nullptr;
    std::unique_ptr<Bitstreams> in;
    std::unique_ptr<Outputs> out;
    std::vector<const std::uint8_t*> ptrs;  // the accepted files, then the first `batch` again (wrap)
    std::vector<std::size_t> sizes;
    std::vector<kn::JpegInfo> infos;
    std::vector<kn::DecodedFrame> frames;
    std::vector<int> status;
    std::vector<cudaEvent_t> events;  // one per call, recorded after it
    std::vector<int> call_images;
    double cpu0 = 0, cpu1 = 0;       // thread CPU time at the window's start and end
    bool cpu0_set = false;
    std::exception_ptr error;
    ~State() {
      for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
      if (stream != nullptr) (void)cudaStreamDestroy(stream);
    }
  };
  std::vector<std::unique_ptr<State>> st;
  for (std::size_t i = 0; i < k; ++i) {
    MixLane& l = res.lanes[i];
    auto s = std::make_unique<State>();
    try {
      kn::GpuJpegOptions o;
      o.backend = l.backend;
      o.allow_host_input_fallback = false;
      o.hw_no_pipeline = false;
      s->dec = std::make_unique<kn::GpuJpegDecoder>(a.device, o);
    } catch (const std::exception& e) {
      res.error = std::string(kn::to_string(l.backend)) + ": " + e.what();
      return res;
    }
    int least = 0, greatest = 0;
    cuda_check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    const int priority = !a.mix_priority ? 0 : (i == 0 ? greatest : least);
    cuda_check(cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, priority), "cudaStreamCreate");
    const Accepted acc = accepted_files(*s->dec, files, true);
    const auto& used = acc.files;
    const int max_w = acc.max_w, max_h = acc.max_h;
    s->infos = acc.infos;
    if (used.empty()) {
      res.error = std::string(kn::to_string(l.backend)) + ": no file is batch-supported";
      return res;
    }
    s->in = std::make_unique<Bitstreams>(used, s->dec->input_on_device());
    const std::size_t n = used.size();
    const auto b = static_cast<std::size_t>(l.batch);
    for (std::size_t j = 0; j < n + b; ++j) {
      s->ptrs.push_back(s->in->ptrs[j % n]);
      s->sizes.push_back(s->in->sizes[j % n]);
    }
    for (std::size_t j = 0; j < b; ++j) s->infos.push_back(s->infos[j % n]);
    s->out = std::make_unique<Outputs>(l.batch, max_w, max_h);
    s->frames.resize(b);
    s->status.resize(b);
    try {
      (void)s->dec->preallocate(l.batch, max_w, max_h);
    } catch (const std::exception& e) {
      std::printf("%s: preallocate failed: %s\n", spec.c_str(), e.what());
    }
    st.push_back(std::move(s));
  }
  // Each lane starts at another place in the file list.
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> ready{0};
  std::atomic<bool> go{false};
  cudaEvent_t origin = nullptr;
  cuda_check(cudaEventCreate(&origin), "cudaEventCreate");
  const double window_begin = a.settle_s, window_end = a.settle_s + a.seconds;
  Clock::time_point t0{};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < k; ++i)
    threads.emplace_back([&, i] {
      State& s = *st[i];
      const int b = res.lanes[i].batch;
      const std::size_t n = s.ptrs.size() - static_cast<std::size_t>(b);
      std::size_t first = i * n / k;
      try {
        ++ready;
        while (!go.load()) std::this_thread::yield();
        for (;;) {
          const double now = std::chrono::duration<double>(Clock::now() - t0).count();
          if (!s.cpu0_set && now >= window_begin) {
            s.cpu0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
            s.cpu0_set = true;
          }
          if (now >= window_end || stop.load()) break;
          for (int j = 0; j < b; ++j)
            s.frames[static_cast<std::size_t>(j)] = {s.out->slot(j), s.out->pitch, s.infos[first + j].width,
                                                     s.infos[first + j].height};
          const int ok = s.dec->decode_batch(s.ptrs.data() + first, s.sizes.data() + first, b, s.frames.data(),
                                             s.status.data(), s.stream);
          res.lanes[i].failed += b - ok;
          cudaEvent_t e = nullptr;
          cuda_check(cudaEventCreate(&e), "cudaEventCreate");
          cuda_check(cudaEventRecord(e, s.stream), "cudaEventRecord");
          s.events.push_back(e);
          s.call_images.push_back(b);
          first = (first + static_cast<std::size_t>(b)) % n;
        }
        s.cpu1 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
        cuda_check(cudaStreamSynchronize(s.stream), "stream synchronise");
      } catch (...) {
        s.error = std::current_exception();
        stop = true;
      }
    });
  while (ready.load() < k) std::this_thread::yield();
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cuda_check(cudaEventRecord(origin, nullptr), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(origin), "cudaEventSynchronize");
  t0 = Clock::now();
  go = true;
  // The process's CPU time over the window (the main thread only sleeps).
  std::this_thread::sleep_for(std::chrono::duration<double>(window_begin));
  const double proc0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  const auto w0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds));
  const double proc1 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  const double wall = std::chrono::duration<double>(Clock::now() - w0).count();
  for (auto& t : threads) t.join();
  res.process_cores = (proc1 - proc0) / wall;
  for (std::size_t i = 0; i < k; ++i) {
    State& s = *st[i];
    if (s.error) {
      try {
        std::rethrow_exception(s.error);
      } catch (const std::exception& e) {
        res.error = e.what();
      }
      break;
    }
    // GPU completion time of each call, in seconds from `origin` (the GPU
    // time line starts with the host's t0 up to the launch latency).
    long images = 0;
    for (std::size_t c = 0; c < s.events.size(); ++c) {
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, origin, s.events[c]), "cudaEventElapsedTime");
      const double done = ms / 1000.0;
      if (done >= window_begin && done < window_end) images += s.call_images[c];
    }
    res.lanes[i].img_per_s = static_cast<double>(images) / a.seconds;
    res.lanes[i].cpu_ms_per_img = images > 0 ? (s.cpu1 - s.cpu0) * 1000.0 / static_cast<double>(images) : 0;
    res.total_img_per_s += res.lanes[i].img_per_s;
  }
  (void)cudaEventDestroy(origin);
  return res;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  const auto distinct = load_jpegs(a.dir, a.limit);
  if (distinct.empty()) usage("no .jpg/.jpeg file in " + a.dir);
  std::size_t bytes = 0;
  for (const auto& f : distinct) bytes += f.size();
  // --repeat K: every file K times per pass (more images than files, so
  // that the largest batches fill up).
  std::vector<std::vector<std::uint8_t>> files;
  for (int k = 0; k < a.repeat; ++k) files.insert(files.end(), distinct.begin(), distinct.end());

  cuda_check(cudaSetDevice(a.device), "cudaSetDevice");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, a.device), "cudaGetDeviceProperties");
  std::string why;
  const auto hw = kn::GpuJpegDecoder::probe(a.device, &why);
  std::printf("device %d: %s; %zu JPEGs (%zu distinct x %d), %.0f kB average\n", a.device, prop.name, files.size(),
              distinct.size(), a.repeat, static_cast<double>(bytes) / static_cast<double>(distinct.size()) / 1000.0);
  if (hw)
    std::printf("nvJPEG %d.%d.%d (%s): %u engines x %u cores; HARDWARE_DEVICE backend %s\n", hw->version[0],
                hw->version[1], hw->version[2], hw->library.c_str(), hw->engines, hw->cores_per_engine,
                hw->device_input ? "yes" : "no");
  else
    std::printf("no JPEG engine: %s\n", why.c_str());

  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  if (!a.mixes.empty()) {
    std::printf("\nmixes: each decoder on a thread of its own, %.1f s settle, %.1f s measured%s\n", a.settle_s,
                a.seconds, a.mix_priority ? "; the first on the greatest stream priority" : "");
    std::printf("%-48s %-16s %6s %9s %12s %7s\n", "mix", "decoder", "batch", "img/s", "cpu ms/img", "failed");
    for (const std::string& spec : a.mixes) {
      const MixResult m = bench_mix(a, spec, files);
      if (!m.error.empty()) {
        std::printf("%-48s unavailable: %s\n", spec.c_str(), m.error.c_str());
        continue;
      }
      for (const MixLane& l : m.lanes)
        std::printf("%-48s %-16s %6d %9.0f %12.3f %7d\n", spec.c_str(), std::string(kn::to_string(l.backend)).c_str(),
                    l.batch, l.img_per_s, l.cpu_ms_per_img, l.failed);
      std::printf("%-48s %-16s %6s %9.0f   process %.2f cores\n", spec.c_str(), "total", "", m.total_img_per_s,
                  m.process_cores);
    }
    cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    return 0;
  }
  std::vector<Result> results;
  for (kn::JpegBackend b : a.backends)
    for (bool np : a.no_pipeline) {
      if (b == kn::JpegBackend::gpu_hybrid && np != a.no_pipeline.front()) continue;  // the flag is HW-only
      for (Result& r : bench_backend(a, b, np, files)) results.push_back(std::move(r));
    }
  if (a.plain) results.push_back(bench_plain(a, files, stream));
  cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");

  std::printf("\n%-24s %-11s %6s %7s %12s %10s %19s %6s\n", "decoder", "no_pipeline", "batch", "images", "median ms",
              "img/s", "min..max ms", "failed");
  for (const Result& r : results) {
    if (!r.error.empty()) {
      std::printf("%-24s %-11s %6d  unavailable: %s\n", r.label.c_str(), r.no_pipeline ? "on" : "off", r.batch,
                  r.error.c_str());
      continue;
    }
    const auto [mn, mx] = std::minmax_element(r.pass_ms.begin(), r.pass_ms.end());
    std::printf("%-24s %-11s %6d %7d %12.2f %10.0f %9.2f..%-9.2f %6d\n", r.label.c_str(),
                r.batch == 1 && r.backend == "default" ? "-" : (r.no_pipeline ? "on" : "off"), r.batch, r.images,
                r.median_ms(), r.img_per_s(), *mn, *mx, r.failed);
  }
  std::printf("(median of %d passes after %d warm-up passes; a pass decodes every accepted file once)\n", a.passes,
              a.warmup);

  if (!a.json.empty()) {
    std::ofstream js(a.json);
    js << "{\n  \"device\": \"" << json_escape(prop.name) << "\",\n  \"files\": " << distinct.size()
       << ",\n  \"repeat\": " << a.repeat << ",\n  \"mean_bytes\": " << bytes / distinct.size()
       << ",\n  \"passes\": " << a.passes << ",\n  \"warmup\": " << a.warmup << ",\n";
    if (hw)
      js << "  \"nvjpeg\": \"" << hw->version[0] << "." << hw->version[1] << "." << hw->version[2]
         << "\",\n  \"engines\": " << hw->engines << ",\n  \"cores_per_engine\": " << hw->cores_per_engine
         << ",\n  \"hardware_device_backend\": " << (hw->device_input ? "true" : "false") << ",\n";
    js << "  \"results\": [\n";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      js << "    {\"decoder\": \"" << json_escape(r.label) << "\", \"backend\": \"" << r.backend
         << "\", \"no_pipeline\": " << (r.no_pipeline ? "true" : "false") << ", \"decoders\": " << r.decoders
         << ", \"batch\": " << r.batch
         << ", \"images\": " << r.images << ", \"failed\": " << r.failed;
      if (!r.error.empty()) {
        js << ", \"error\": \"" << json_escape(r.error) << "\"}";
      } else {
        js << ", \"median_ms\": " << r.median_ms() << ", \"img_per_s\": " << r.img_per_s() << ", \"pass_ms\": [";
        for (std::size_t k = 0; k < r.pass_ms.size(); ++k) js << (k ? ", " : "") << r.pass_ms[k];
        js << "]}";
      }
      js << (i + 1 < results.size() ? ",\n" : "\n");
    }
    js << "  ]\n}\n";
    std::printf("wrote %s\n", a.json.c_str());
  }
  return 0;
}
