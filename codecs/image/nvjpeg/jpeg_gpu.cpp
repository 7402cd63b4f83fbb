#include "codecs/image/nvjpeg/jpeg_gpu.hpp"

#include <chrono>
#include <stdexcept>

namespace imgpipe::codecs {

std::string_view to_string(JpegBackend b) noexcept {
  switch (b) {
    case JpegBackend::hardware_device: return "hardware_device";
    case JpegBackend::hardware: return "hardware";
    case JpegBackend::gpu_hybrid: return "gpu_hybrid";
  }
  return "?";
}

std::optional<JpegBackend> parse_jpeg_backend(std::string_view s) noexcept {
  for (JpegBackend b : {JpegBackend::hardware_device, JpegBackend::hardware, JpegBackend::gpu_hybrid})
    if (s == to_string(b)) return b;
  return std::nullopt;
}

std::string_view to_string(ChromaSubsampling c) noexcept {
  switch (c) {
    case ChromaSubsampling::css444: return "4:4:4";
    case ChromaSubsampling::css422: return "4:2:2";
    case ChromaSubsampling::css420: return "4:2:0";
    case ChromaSubsampling::css440: return "4:4:0";
    case ChromaSubsampling::css411: return "4:1:1";
    case ChromaSubsampling::css410: return "4:1:0";
    case ChromaSubsampling::gray: return "grey";
    case ChromaSubsampling::css410v: return "4:1:0v";
    case ChromaSubsampling::unknown: return "unknown";
  }
  return "?";
}

}  // namespace imgpipe::codecs

#if IMGPIPE_HAS_CUDA

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

#include "codecs/image/nvjpeg/nvjpeg_loader.hpp"

namespace imgpipe::codecs {
namespace {

// imgpipe::Error, not CudaError: CudaError's constructor lives in
// imgpipe_core, above this target, and a static link of kernels alone (the
// benchmark) would not find it.
[[noreturn]] void throw_cuda(cudaError_t e, const char* call, int line) {
  throw Error(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " + call +
              " at " + __FILE__ + ":" + std::to_string(line));
}
#define JPEG_CUDA_TRY(expr)                                               \
  do {                                                                    \
    const cudaError_t jpeg_err_ = (expr);                                 \
    if (jpeg_err_ != cudaSuccess) throw_cuda(jpeg_err_, #expr, __LINE__); \
  } while (0)

// Makes `device` current for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    JPEG_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device) JPEG_CUDA_TRY(cudaSetDevice(device));
    device_ = device;
  }
  ~DeviceGuard() {
    if (previous_ != device_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  int device_ = 0;
};

// The default allocators; ctx points at the decoder's device ordinal (nvJPEG
// may allocate from a thread where another device is current). A failed
// allocation's error is not left behind as the thread's last CUDA error:
// nvJPEG reports it as ALLOCATOR_FAILURE.
template <class Fn>
int on_device(void* ctx, Fn&& fn) {
  const int device = *static_cast<const int*>(ctx);
  int previous = device;
  if (cudaGetDevice(&previous) != cudaSuccess || (previous != device && cudaSetDevice(device) != cudaSuccess)) {
    (void)cudaGetLastError();
    return 1;
  }
  const cudaError_t e = fn();
  if (previous != device) (void)cudaSetDevice(previous);
  if (e == cudaSuccess) return 0;
  (void)cudaGetLastError();
  return 1;
}
int default_device_malloc(void* ctx, void** ptr, std::size_t bytes, CUstream_st*) {
  return on_device(ctx, [&] { return cudaMalloc(ptr, bytes); });
}
int default_device_free(void* ctx, void* ptr, std::size_t, CUstream_st*) {
  return on_device(ctx, [&] { return cudaFree(ptr); });
}
int default_pinned_malloc(void* ctx, void** ptr, std::size_t bytes, CUstream_st*) {
  return on_device(ctx, [&] { return cudaHostAlloc(ptr, bytes, cudaHostAllocDefault); });
}
int default_pinned_free(void* ctx, void* ptr, std::size_t, CUstream_st*) {
  return on_device(ctx, [&] { return cudaFreeHost(ptr); });
}

// `device` must outlive the nvJPEG handle the allocators are given to.
nvj::nvjpegDevAllocatorV2_t device_allocator_for(const JpegAllocator& a, int* device) {
  if (a.empty()) return {default_device_malloc, default_device_free, device};
  return {a.allocate, a.deallocate, a.ctx};
}
nvj::nvjpegPinnedAllocatorV2_t pinned_allocator_for(const JpegAllocator& a, int* device) {
  if (a.empty()) return {default_pinned_malloc, default_pinned_free, device};
  return {a.allocate, a.deallocate, a.ctx};
}

ChromaSubsampling from_nvjpeg(nvj::nvjpegChromaSubsampling_t c) {
  switch (c) {
    case nvj::NVJPEG_CSS_444: return ChromaSubsampling::css444;
    case nvj::NVJPEG_CSS_422: return ChromaSubsampling::css422;
    case nvj::NVJPEG_CSS_420: return ChromaSubsampling::css420;
    case nvj::NVJPEG_CSS_440: return ChromaSubsampling::css440;
    case nvj::NVJPEG_CSS_411: return ChromaSubsampling::css411;
    case nvj::NVJPEG_CSS_410: return ChromaSubsampling::css410;
    case nvj::NVJPEG_CSS_GRAY: return ChromaSubsampling::gray;
    case nvj::NVJPEG_CSS_410V: return ChromaSubsampling::css410v;
    default: return ChromaSubsampling::unknown;
  }
}

// The library, and a valid device ordinal; throws imgpipe::Error with the
// reason otherwise.
const nvj::Api& require_api_and_device(int device) {
  std::string why;
  const nvj::Api* api = nvj::api(&why);
  if (api == nullptr) throw Error("GPU JPEG decode unavailable: " + why);
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(std::string("GPU JPEG decode unavailable: no CUDA device (") + cudaGetErrorName(e) + ")");
  }
  if (device < 0 || device >= count)
    throw Error("GPU JPEG decode unavailable: device " + std::to_string(device) + " does not exist (" +
                std::to_string(count) + " CUDA devices)");
  return *api;
}

}  // namespace

struct GpuJpegDecoder::Impl {
  nvj::nvjpegOutputFormat_t output = nvj::NVJPEG_OUTPUT_RGBI;  // interleaved, in the order GpuJpegOptions::bgr asks
  JpegHardwareInfo info;  // hardware_info()
  const nvj::Api* api = nullptr;
  int device = 0;
  JpegBackend backend = JpegBackend::hardware;
  bool host_barrier = true;
  // nvJPEG may keep pointers to the allocator structs: they live here.
  nvj::nvjpegDevAllocatorV2_t device_allocator{};
  nvj::nvjpegPinnedAllocatorV2_t pinned_allocator{};
  nvj::nvjpegHandle_t handle = nullptr;
  nvj::nvjpegJpegState_t state = nullptr;

  // decode_batch and preallocate, one at a time.
  std::mutex decode_mutex;
  int initialized_n = 0;  // the batch size nvJPEG was initialised for; 0: must initialise
  // What the buffers were pre-allocated for (they only grow): asking again
  // for no more costs nothing (asking nvJPEG again is not free, and a kept
  // Pipeline asks before each run's first engine call).
  int prealloc_n = 0, prealloc_w = 0, prealloc_h = 0;
  CUstream_st* last_stream = nullptr;
  bool last_stream_used = false;
  // Recorded on the stream after each nvjpegDecodeBatched: the previous
  // batch is finished when it is, whatever else the stream holds since.
  cudaEvent_t decoded = nullptr;
  std::vector<nvj::nvjpegImage_t> images;

  // Header parsing: a pool of nvJPEG streams, one borrowed per parse().
  mutable std::mutex streams_mutex;
  mutable std::vector<nvj::nvjpegJpegStream_t> idle_streams;

  std::atomic<std::uint64_t> batches{0}, image_count{0}, failed{0}, batch_failures{0}, initializations{0}, preallocations{0};
  std::atomic<std::uint64_t> submit_ns{0}, previous_wait_ns{0}, initialize_ns{0};
  static std::uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  }

  bool hardware() const { return backend != JpegBackend::gpu_hybrid; }

  ~Impl() {
    // Never throws: a destructor. The device must be current for nvJPEG to
    // free what it allocated there.
    int previous = -1;
    const bool switched =
        cudaGetDevice(&previous) == cudaSuccess && previous != device && cudaSetDevice(device) == cudaSuccess;
    if (api != nullptr) {
      for (nvj::nvjpegJpegStream_t s : idle_streams) (void)api->nvjpegJpegStreamDestroy(s);
      if (state != nullptr) (void)api->nvjpegJpegStateDestroy(state);
      if (handle != nullptr) (void)api->nvjpegDestroy(handle);
    }
    if (decoded != nullptr) (void)cudaEventDestroy(decoded);
    if (switched) (void)cudaSetDevice(previous);
  }

  // Waits for the previous batch's decode (nvJPEG must not re-initialise,
  // resize or refill its buffers while that batch runs): its event, not its
  // whole stream, on which the caller may have queued more since (uploads
  // of later batches).
  void finish_previous_batch() {
    if (last_stream_used) {
      const auto t0 = std::chrono::steady_clock::now();
      JPEG_CUDA_TRY(cudaEventSynchronize(decoded));
      previous_wait_ns += ns_since(t0);
      last_stream_used = false;
    }
  }

  void ensure_initialized(int n) {
    if (initialized_n == n) return;
    finish_previous_batch();
    ++initializations;
    const auto t0 = std::chrono::steady_clock::now();
    const nvj::nvjpegStatus_t s = api->nvjpegDecodeBatchedInitialize(handle, state, n, 1, output);
    initialize_ns += ns_since(t0);
    if (s != nvj::NVJPEG_STATUS_SUCCESS) {
      initialized_n = 0;
      throw NvjpegError("nvjpegDecodeBatchedInitialize(batch " + std::to_string(n) + ") failed: " + nvj::status_name(s),
                        s);
    }
    initialized_n = n;
  }

  // After a failed nvjpegDecodeBatched: let whatever the library enqueued
  // finish, and clear a non-sticky error it may have left. A stream that
  // fails to synchronise carries an error that is not the images' fault.
  void settle(CUstream_st* stream) {
    const cudaError_t e = cudaStreamSynchronize(stream);
    (void)cudaGetLastError();
    last_stream_used = false;
    if (e != cudaSuccess) throw_cuda(e, "cudaStreamSynchronize(stream) after a failed nvjpegDecodeBatched", __LINE__);
  }

  // Decodes images [first, first + count); on failure, each half again.
  void run(const std::uint8_t* const* data, const std::size_t* sizes, int* status, int first, int count,
           CUstream_st* stream) {
    ensure_initialized(count);
    const auto t0 = std::chrono::steady_clock::now();
    const nvj::nvjpegStatus_t s =
        api->nvjpegDecodeBatched(handle, state, data + first, sizes + first, images.data() + first, stream);
    submit_ns += ns_since(t0);
    last_stream = stream;
    last_stream_used = true;
    JPEG_CUDA_TRY(cudaEventRecord(decoded, stream));
    if (s == nvj::NVJPEG_STATUS_SUCCESS) {
      for (int i = first; i < first + count; ++i) status[i] = 0;
      return;
    }
    ++batch_failures;
    initialized_n = 0;  // nvJPEG wants a new initialisation after a failed batch
    settle(stream);
    if (count == 1) {
      status[first] = s;
      return;
    }
    const int half = count / 2;
    run(data, sizes, status, first, half, stream);
    run(data, sizes, status, first + half, count - half, stream);
  }

  nvj::nvjpegJpegStream_t borrow_stream() const {
    {
      std::lock_guard<std::mutex> lock(streams_mutex);
      if (!idle_streams.empty()) {
        nvj::nvjpegJpegStream_t s = idle_streams.back();
        idle_streams.pop_back();
        return s;
      }
    }
    nvj::nvjpegJpegStream_t s = nullptr;
    const nvj::nvjpegStatus_t st = api->nvjpegJpegStreamCreate(handle, &s);
    if (st != nvj::NVJPEG_STATUS_SUCCESS)
      throw NvjpegError(std::string("nvjpegJpegStreamCreate failed: ") + nvj::status_name(st), st);
    return s;
  }
  void return_stream(nvj::nvjpegJpegStream_t s) const {
    std::lock_guard<std::mutex> lock(streams_mutex);
    idle_streams.push_back(s);
  }
};

std::optional<JpegHardwareInfo> GpuJpegDecoder::probe(int device, std::string* why) noexcept {
  auto fail = [&](const std::string& reason) -> std::optional<JpegHardwareInfo> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  try {
    const nvj::Api& api = require_api_and_device(device);
    DeviceGuard guard(device);
    JpegHardwareInfo info;
    info.library = api.library;
    for (int i = 0; i < 3; ++i) info.version[i] = api.version[i];
    int dev_ordinal = device;
    nvj::nvjpegDevAllocatorV2_t dev = device_allocator_for({}, &dev_ordinal);
    nvj::nvjpegPinnedAllocatorV2_t pinned = pinned_allocator_for({}, &dev_ordinal);
    nvj::nvjpegHandle_t h = nullptr;
    nvj::nvjpegStatus_t s = api.nvjpegCreateExV2(nvj::NVJPEG_BACKEND_HARDWARE, &dev, &pinned, 0, &h);
    if (s == nvj::NVJPEG_STATUS_ARCH_MISMATCH)
      return fail("device " + std::to_string(device) +
                  " has no JPEG engine nvJPEG can use (NVJPEG_STATUS_ARCH_MISMATCH)");
    if (s != nvj::NVJPEG_STATUS_SUCCESS)
      return fail(std::string("nvjpegCreateExV2(HARDWARE) failed: ") + nvj::status_name(s));
    s = api.nvjpegGetHardwareDecoderInfo(h, &info.engines, &info.cores_per_engine);
    (void)api.nvjpegDestroy(h);
    if (s != nvj::NVJPEG_STATUS_SUCCESS)
      return fail(std::string("nvjpegGetHardwareDecoderInfo failed: ") + nvj::status_name(s));
    if (info.engines == 0 || info.cores_per_engine == 0)
      return fail("device " + std::to_string(device) + " reports no JPEG engine (0 engines or cores)");
    h = nullptr;
    if (api.nvjpegCreateExV2(nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, &dev, &pinned, 0, &h) == nvj::NVJPEG_STATUS_SUCCESS) {
      info.device_input = true;
      (void)api.nvjpegDestroy(h);
    }
    return info;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

GpuJpegDecoder::GpuJpegDecoder(int device, const GpuJpegOptions& options) : impl_(std::make_unique<Impl>()) {
  const nvj::Api& api = require_api_and_device(device);
  DeviceGuard guard(device);
  Impl& m = *impl_;
  m.api = &api;
  m.device = device;
  m.host_barrier = options.host_barrier;
  m.output = options.bgr ? nvj::NVJPEG_OUTPUT_BGRI : nvj::NVJPEG_OUTPUT_RGBI;
  m.device_allocator = device_allocator_for(options.device_allocator, &m.device);
  m.pinned_allocator = pinned_allocator_for(options.pinned_allocator, &m.device);
  unsigned int flags = nvj::flags_default;
  if (options.hw_no_pipeline) flags |= nvj::flag_hw_decode_no_pipeline;
  if (options.fancy_upsampling && api.at_least(12, 1)) flags |= nvj::flag_upsampling_with_interpolation;

  auto create = [&](nvj::nvjpegBackend_t b) {
    return api.nvjpegCreateExV2(b, &m.device_allocator, &m.pinned_allocator, flags, &m.handle);
  };
  nvj::nvjpegStatus_t s = nvj::NVJPEG_STATUS_SUCCESS;
  m.backend = options.backend;
  switch (options.backend) {
    case JpegBackend::hardware_device:
      s = create(nvj::NVJPEG_BACKEND_HARDWARE_DEVICE);
      if (s != nvj::NVJPEG_STATUS_SUCCESS && options.allow_host_input_fallback) {
        m.handle = nullptr;
        m.backend = JpegBackend::hardware;
        s = create(nvj::NVJPEG_BACKEND_HARDWARE);
      }
      break;
    case JpegBackend::hardware: s = create(nvj::NVJPEG_BACKEND_HARDWARE); break;
    case JpegBackend::gpu_hybrid: s = create(nvj::NVJPEG_BACKEND_GPU_HYBRID); break;
  }
  if (s != nvj::NVJPEG_STATUS_SUCCESS) {
    m.handle = nullptr;
    const std::string what = "GPU JPEG decode unavailable: nvjpegCreateExV2(" + std::string(to_string(m.backend)) +
                             ") on device " + std::to_string(device) + " failed: " + nvj::status_name(s) +
                             (s == nvj::NVJPEG_STATUS_ARCH_MISMATCH ? " (no JPEG engine)" : "");
    throw Error(what);
  }
  JPEG_CUDA_TRY(cudaEventCreateWithFlags(&m.decoded, cudaEventDisableTiming));
  s = api.nvjpegJpegStateCreate(m.handle, &m.state);
  if (s != nvj::NVJPEG_STATUS_SUCCESS) {
    m.state = nullptr;
    throw NvjpegError(std::string("nvjpegJpegStateCreate failed: ") + nvj::status_name(s), s);
  }
  // What probe() reports, from this decoder's own handle (no second handle).
  m.info.library = api.library;
  for (int i = 0; i < 3; ++i) m.info.version[i] = api.version[i];
  m.info.device_input = m.backend == JpegBackend::hardware_device;
  if (m.backend != JpegBackend::gpu_hybrid &&
      api.nvjpegGetHardwareDecoderInfo(m.handle, &m.info.engines, &m.info.cores_per_engine) != nvj::NVJPEG_STATUS_SUCCESS)
    m.info.engines = m.info.cores_per_engine = 0;
}

GpuJpegDecoder::~GpuJpegDecoder() = default;

const JpegHardwareInfo& GpuJpegDecoder::hardware_info() const noexcept { return impl_->info; }

int GpuJpegDecoder::device() const noexcept { return impl_->device; }
JpegBackend GpuJpegDecoder::backend() const noexcept { return impl_->backend; }
bool GpuJpegDecoder::input_on_device() const noexcept { return impl_->backend == JpegBackend::hardware_device; }

void GpuJpegDecoder::release_stream(CUstream_st* stream) noexcept {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.decode_mutex);
  if (stream != nullptr && m.last_stream != stream) return;  // another run's: left bound
  if (m.last_stream_used) {
    try {
      DeviceGuard guard(m.device);
      (void)cudaStreamSynchronize(m.last_stream);
    } catch (const std::exception&) {
      // The device cannot be made current: nothing of ours can run there.
    }
  }
  m.last_stream_used = false;
  m.last_stream = nullptr;
}

GpuJpegStats GpuJpegDecoder::stats() const noexcept {
  GpuJpegStats s;
  s.batches = impl_->batches.load();
  s.images = impl_->image_count.load();
  s.failed = impl_->failed.load();
  s.batch_failures = impl_->batch_failures.load();
  s.initializations = impl_->initializations.load();
  s.submit_ns = impl_->submit_ns.load();
  s.previous_wait_ns = impl_->previous_wait_ns.load();
  s.initialize_ns = impl_->initialize_ns.load();
  s.preallocations = impl_->preallocations.load();
  return s;
}

JpegInfo GpuJpegDecoder::parse(const std::uint8_t* h_data, std::size_t size) const {
  const Impl& m = *impl_;
  const nvj::Api& api = *m.api;
  JpegInfo info;
  if (h_data == nullptr || size == 0) {
    info.status = nvj::NVJPEG_STATUS_BAD_JPEG;
    return info;
  }
  nvj::nvjpegJpegStream_t js = m.borrow_stream();
  struct Return {
    const Impl& m;
    nvj::nvjpegJpegStream_t s;
    ~Return() { m.return_stream(s); }
  } give_back{m, js};

  nvj::nvjpegStatus_t s = api.nvjpegJpegStreamParseHeader(m.handle, h_data, size, js);
  unsigned int w = 0, h = 0, comps = 0;
  nvj::nvjpegChromaSubsampling_t css = nvj::NVJPEG_CSS_UNKNOWN;
  nvj::nvjpegJpegEncoding_t enc = nvj::NVJPEG_ENCODING_UNKNOWN;
  if (s == nvj::NVJPEG_STATUS_SUCCESS) s = api.nvjpegJpegStreamGetFrameDimensions(js, &w, &h);
  if (s == nvj::NVJPEG_STATUS_SUCCESS) s = api.nvjpegJpegStreamGetComponentsNum(js, &comps);
  if (s == nvj::NVJPEG_STATUS_SUCCESS) s = api.nvjpegJpegStreamGetChromaSubsampling(js, &css);
  if (s == nvj::NVJPEG_STATUS_SUCCESS) s = api.nvjpegJpegStreamGetJpegEncoding(js, &enc);
  if (s != nvj::NVJPEG_STATUS_SUCCESS) {
    info.status = s;
    return info;
  }
  info.valid = true;
  info.width = static_cast<int>(w);
  info.height = static_cast<int>(h);
  info.components = static_cast<int>(comps);
  info.subsampling = from_nvjpeg(css);
  info.progressive = enc == nvj::NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN;
  int unsupported = -1;
  s = api.nvjpegDecodeBatchedSupported(m.handle, js, &unsupported);
  if (s == nvj::NVJPEG_STATUS_SUCCESS) {
    info.batch_supported = unsupported == 0;
  } else if (!m.hardware()) {
    // The check is the hardware's: GPU_HYBRID's batched decode takes what
    // nvJPEG decodes at all (its failures come back per image).
    info.batch_supported = comps == 1 || comps == 3;
  }
  return info;
}

bool GpuJpegDecoder::preallocate(int max_batch, int max_width, int max_height) {
  if (max_batch <= 0 || max_width <= 0 || max_height <= 0)
    throw std::invalid_argument("GpuJpegDecoder::preallocate: batch, width and height must be positive");
  Impl& m = *impl_;
  if (!m.hardware()) return false;
  std::lock_guard<std::mutex> lock(m.decode_mutex);
  if (max_batch <= m.prealloc_n && max_width <= m.prealloc_w && max_height <= m.prealloc_h) return true;
  DeviceGuard guard(m.device);
  m.finish_previous_batch();
  // For this and everything asked before: the buffers never shrink.
  const int n = std::max(max_batch, m.prealloc_n), w = std::max(max_width, m.prealloc_w),
            h = std::max(max_height, m.prealloc_h);
  // Mixed subsamplings: 4:4:4 sizes the buffers for all of them.
  const nvj::nvjpegStatus_t s =
      m.api->nvjpegDecodeBatchedPreAllocate(m.handle, m.state, n, w, h, nvj::NVJPEG_CSS_444, m.output);
  if (s == nvj::NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED) return false;
  if (s != nvj::NVJPEG_STATUS_SUCCESS)
    throw NvjpegError(std::string("nvjpegDecodeBatchedPreAllocate failed: ") + nvj::status_name(s), s);
  m.prealloc_n = n;
  m.prealloc_w = w;
  m.prealloc_h = h;
  ++m.preallocations;
  return true;
}

int GpuJpegDecoder::decode_batch(const std::uint8_t* const* data, const std::size_t* sizes, int n,
                                 const DecodedFrame* out, int* status, CUstream_st* stream, bool inputs_ready) {
  if (n < 0) throw std::invalid_argument("GpuJpegDecoder::decode_batch: negative batch size");
  if (n == 0) return 0;
  if (data == nullptr || sizes == nullptr || out == nullptr || status == nullptr)
    throw std::invalid_argument("GpuJpegDecoder::decode_batch: null array");
  for (int i = 0; i < n; ++i) {
    const DecodedFrame& f = out[i];
    if (data[i] == nullptr || sizes[i] == 0)
      throw std::invalid_argument("GpuJpegDecoder::decode_batch: image " + std::to_string(i) + " has no data");
    if (f.d_rgb == nullptr || f.width <= 0 || f.height <= 0 || f.pitch < static_cast<std::size_t>(f.width) * 3)
      throw std::invalid_argument("GpuJpegDecoder::decode_batch: output " + std::to_string(i) +
                                  " needs a buffer, a positive size and pitch >= 3 * width");
  }
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.decode_mutex);
  DeviceGuard guard(m.device);
  // The state's buffers (pinned staging included) serve every batch: the
  // previous batch must be finished before the host refills them.
  m.finish_previous_batch();
  if (m.hardware() && m.host_barrier && !inputs_ready) {
    // The engines write when nvjpegDecodeBatched is called, not when the
    // stream gets there (seen on H100 with nvJPEG 12.3-13.2): whatever is
    // queued on `stream` before the decode (uploading the bitstreams, last
    // use of the output buffers) must be finished first. A device-side wait
    // does not help; only a host wait does.
    JPEG_CUDA_TRY(cudaStreamSynchronize(stream));
  }
  m.images.assign(static_cast<std::size_t>(n), nvj::nvjpegImage_t{});
  for (int i = 0; i < n; ++i) {
    m.images[i].channel[0] = out[i].d_rgb;
    m.images[i].pitch[0] = out[i].pitch;
  }
  ++m.batches;
  m.image_count += static_cast<std::uint64_t>(n);
  m.run(data, sizes, status, 0, n, stream);
  int decoded = 0;
  for (int i = 0; i < n; ++i) decoded += status[i] == 0 ? 1 : 0;
  m.failed += static_cast<std::uint64_t>(n - decoded);
  return decoded;
}

}  // namespace imgpipe::codecs

#else  // !IMGPIPE_HAS_CUDA

// Builds without CUDA: the decoder exists so that callers compile and link,
// reports itself unavailable, and cannot be constructed.
namespace imgpipe::codecs {

namespace {
constexpr const char* no_cuda =
    "GPU JPEG decode unavailable: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)";
}

struct GpuJpegDecoder::Impl {};

std::optional<JpegHardwareInfo> GpuJpegDecoder::probe(int, std::string* why) noexcept {
  if (why != nullptr) *why = no_cuda;
  return std::nullopt;
}
GpuJpegDecoder::GpuJpegDecoder(int, const GpuJpegOptions&) { throw Error(no_cuda); }
GpuJpegDecoder::~GpuJpegDecoder() = default;
int GpuJpegDecoder::device() const noexcept { return -1; }
const JpegHardwareInfo& GpuJpegDecoder::hardware_info() const noexcept {
  static const JpegHardwareInfo none;
  return none;
}
JpegBackend GpuJpegDecoder::backend() const noexcept { return JpegBackend::hardware; }
bool GpuJpegDecoder::input_on_device() const noexcept { return false; }
GpuJpegStats GpuJpegDecoder::stats() const noexcept { return {}; }
void GpuJpegDecoder::release_stream(CUstream_st*) noexcept {}
JpegInfo GpuJpegDecoder::parse(const std::uint8_t*, std::size_t) const { throw std::logic_error(no_cuda); }
bool GpuJpegDecoder::preallocate(int, int, int) { throw std::logic_error(no_cuda); }
int GpuJpegDecoder::decode_batch(const std::uint8_t* const*, const std::size_t*, int, const DecodedFrame*, int*,
                                 CUstream_st*, bool) {
  throw std::logic_error(no_cuda);
}

}  // namespace imgpipe::codecs

#endif  // IMGPIPE_HAS_CUDA
