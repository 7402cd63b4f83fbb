#include "memory/gpu.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>
#include <utility>

#include <fmt/format.h>

#include "imgpipe/error.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda.h>  // CUresult and CUcontext only: the functions come through the runtime's entry points
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#endif

namespace imgpipe::gpu {

bool built_with_cuda() noexcept { return IMGPIPE_HAS_CUDA != 0; }

#if IMGPIPE_HAS_CUDA
namespace {

std::string cuda_version_text(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

// Why cudaGetDeviceCount failed, in words a user can act on. The runtime
// answers cudaErrorInsufficientDriver both when no driver is installed (any
// machine without an NVIDIA GPU) and when the driver is older than the
// runtime; cudaDriverGetVersion tells them apart (0: no driver).
std::string no_device_reason(cudaError_t e) {
  if (e == cudaErrorNoDevice) return "no CUDA-capable GPU found (cudaErrorNoDevice)";
  if (e == cudaErrorInsufficientDriver) {
    int driver = 0;
    (void)cudaDriverGetVersion(&driver);
    if (driver == 0) return "no CUDA-capable GPU or driver found (no NVIDIA driver is installed)";
    return fmt::format(
        "the NVIDIA driver supports CUDA up to {} but imgpipe was built with CUDA {}: update the driver to use the "
        "GPU (cudaErrorInsufficientDriver)",
        cuda_version_text(driver), cuda_version_text(CUDART_VERSION));
  }
  return fmt::format("no usable CUDA device ({}: {})", cudaGetErrorName(e), cudaGetErrorString(e));
}

}  // namespace
#endif

CudaVersions cuda_versions() {
  CudaVersions v;
#if IMGPIPE_HAS_CUDA
  int n = 0;
  if (cudaDriverGetVersion(&n) == cudaSuccess && n > 0) v.driver = cuda_version_text(n);
  if (cudaRuntimeGetVersion(&n) == cudaSuccess && n > 0) v.runtime = cuda_version_text(n);
  cudaGetLastError();
#endif
  return v;
}

int device_count(std::string* why) noexcept {
#if IMGPIPE_HAS_CUDA
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = no_device_reason(e);
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA-capable GPU found (the CUDA runtime reports no devices)";
  return n;
#else
  if (why) *why = "imgpipe was built without CUDA";
  return 0;
#endif
}

// ---------------------------------------------------------------- current device
#if IMGPIPE_HAS_CUDA
namespace {

// The driver's cuCtxGetCurrent and cuCtxSetCurrent, found through the
// runtime (no link against libcuda); null without a device or driver.
struct ContextCalls {
  CUresult (*get)(CUcontext*) = nullptr;
  CUresult (*set)(CUcontext) = nullptr;
};

void* driver_entry(const char* name) noexcept {
  void* fn = nullptr;
#if CUDART_VERSION >= 12000
  cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
  const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &found);
#endif
  const bool ok = e == cudaSuccess && found == cudaDriverEntryPointSuccess;
#else
  const cudaError_t e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault);
  const bool ok = e == cudaSuccess;
#endif
  if (!ok || fn == nullptr) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return fn;
}

const ContextCalls& context_calls() noexcept {
  static const ContextCalls calls = [] {
    ContextCalls c;
    if (device_count() == 0) return c;
    c.get = reinterpret_cast<CUresult (*)(CUcontext*)>(driver_entry("cuCtxGetCurrent"));
    c.set = reinterpret_cast<CUresult (*)(CUcontext)>(driver_entry("cuCtxSetCurrent"));
    if (!c.get || !c.set) c = {};
    return c;
  }();
  return calls;
}

}  // namespace
#endif

CUctx_st* current_context() noexcept {
#if IMGPIPE_HAS_CUDA
  const ContextCalls& c = context_calls();
  CUcontext ctx = nullptr;
  if (c.get && c.get(&ctx) == CUDA_SUCCESS) return ctx;
#endif
  return nullptr;
}

CurrentDeviceGuard::CurrentDeviceGuard() noexcept {
#if IMGPIPE_HAS_CUDA
  const ContextCalls& c = context_calls();
  if (!c.get) return;  // no device: nothing can change
  CUcontext ctx = nullptr;
  int dev = 0;
  if (c.get(&ctx) != CUDA_SUCCESS || cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  context_ = ctx;
  device_ = dev;
#endif
}

CurrentDeviceGuard::CurrentDeviceGuard(int device) : CurrentDeviceGuard() {
  // The delegating constructor has finished: a throw here runs the destructor.
  set_device(device);
}

CurrentDeviceGuard::~CurrentDeviceGuard() {
#if IMGPIPE_HAS_CUDA
  if (device_ < 0) return;
  // The runtime's device first (cudaSetDevice makes that device's primary
  // context current), then the context itself: none, or one the caller made.
  int now = -1;
  if (cudaGetDevice(&now) != cudaSuccess) (void)cudaGetLastError();
  if (now != device_) IMGPIPE_CUDA_TRY_NOTHROW(cudaSetDevice(device_));
  const ContextCalls& c = context_calls();
  CUcontext ctx = nullptr;
  if (c.get(&ctx) == CUDA_SUCCESS && ctx == context_) return;
  const CUresult r = c.set(context_);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) {
    static bool once = false;
    if (!once) {
      once = true;
      try {
        const std::string name = fmt::format("CUresult {}", static_cast<int>(r));
        detail::report_cuda_nothrow("cuCtxSetCurrent(saved context)", __FILE__, __LINE__, name.c_str());
      } catch (...) {
      }
    }
  }
#endif
}

void set_device(int device) {
#if IMGPIPE_HAS_CUDA
  if (device >= 0) IMGPIPE_CUDA_TRY(cudaSetDevice(device));
#else
  (void)device;
#endif
}

std::string set_wait_policy(int device, const std::string& asked) {
  // The name is checked with or without CUDA: a wrong one is an error everywhere.
  static constexpr const char* kNames[] = {"auto", "spin", "yield", "block"};  // cudaDeviceSchedule* order
  const bool named = !asked.empty();
  std::size_t want = 3;  // block
  if (named) {
    const auto* it = std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return asked == n; });
    if (it == std::end(kNames)) throw Error(fmt::format("wait policy '{}': one of block, yield, spin, auto", asked));
    want = static_cast<std::size_t>(it - std::begin(kNames));
  }
#if IMGPIPE_HAS_CUDA
  static constexpr unsigned kFlags[] = {cudaDeviceScheduleAuto, cudaDeviceScheduleSpin, cudaDeviceScheduleYield,
                                        cudaDeviceScheduleBlockingSync};
  const CurrentDeviceGuard on(device);
  unsigned flags = 0;
  IMGPIPE_CUDA_TRY(cudaGetDeviceFlags(&flags));
  const unsigned now = flags & cudaDeviceScheduleMask;
  if (!named && now != cudaDeviceScheduleAuto) {
    const auto* it = std::find(std::begin(kFlags), std::end(kFlags), now);
    return fmt::format("{} (the process's choice)", it == std::end(kFlags) ? "auto" : kNames[it - std::begin(kFlags)]);
  }
  // cudaDeviceMapHost is implied and refused here; the rest is kept.
  if (now != kFlags[want])
    IMGPIPE_CUDA_TRY(cudaSetDeviceFlags((flags & ~(cudaDeviceScheduleMask | cudaDeviceMapHost)) | kFlags[want]));
  return fmt::format("{} ({})", kNames[want], named ? "asked" : "imgpipe's default");
#else
  (void)device;
  (void)want;
  return "none (no CUDA)";
#endif
}

std::string device_description(int device) {
#if IMGPIPE_HAS_CUDA
  cudaDeviceProp p{};
  IMGPIPE_CUDA_TRY(cudaGetDeviceProperties(&p, device));
  return fmt::format("{} (sm_{}{}, {} GiB)", p.name, p.major, p.minor, p.totalGlobalMem >> 30);
#else
  (void)device;
  return "host";
#endif
}

std::uint64_t device_memory(int device) {
#if IMGPIPE_HAS_CUDA
  if (device < 0) return 0;
  cudaDeviceProp p{};
  IMGPIPE_CUDA_TRY(cudaGetDeviceProperties(&p, device));
  return p.totalGlobalMem;
#else
  (void)device;
  return 0;
#endif
}

// ---------------------------------------------------------------- Stream
Stream::Stream(int device) : device_(device) {
#if IMGPIPE_HAS_CUDA
  if (device >= 0) {
    set_device(device);
    cudaStream_t s;
    IMGPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    s_ = s;
  }
#endif
}
Stream::~Stream() {
#if IMGPIPE_HAS_CUDA
  if (s_) IMGPIPE_CUDA_TRY_NOTHROW(cudaStreamDestroy(s_));
#endif
}
Stream::Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)), device_(o.device_) {}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    Stream tmp(std::move(*this));
    s_ = std::exchange(o.s_, nullptr);
    device_ = o.device_;
  }
  return *this;
}
void Stream::synchronize() const {
#if IMGPIPE_HAS_CUDA
  if (s_) IMGPIPE_CUDA_TRY(cudaStreamSynchronize(s_));
#endif
}

// ---------------------------------------------------------------- Event
Event::Event(int device, bool timing) : device_(device) {
#if IMGPIPE_HAS_CUDA
  if (device >= 0) {
    set_device(device);
    cudaEvent_t e;
    IMGPIPE_CUDA_TRY(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
    e_ = e;
  }
#else
  (void)timing;
#endif
}
Event::~Event() {
#if IMGPIPE_HAS_CUDA
  if (e_) IMGPIPE_CUDA_TRY_NOTHROW(cudaEventDestroy(e_));
#endif
}
Event::Event(Event&& o) noexcept
    : e_(std::exchange(o.e_, nullptr)), device_(o.device_), recorded_(std::exchange(o.recorded_, false)) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    Event tmp(std::move(*this));
    e_ = std::exchange(o.e_, nullptr);
    device_ = o.device_;
    recorded_ = std::exchange(o.recorded_, false);
  }
  return *this;
}
void Event::record(const Stream& s) {
#if IMGPIPE_HAS_CUDA
  if (e_) IMGPIPE_CUDA_TRY(cudaEventRecord(e_, s.get()));
#else
  (void)s;
#endif
  recorded_ = true;
}
void Event::record_on(CUstream_st* raw) {
#if IMGPIPE_HAS_CUDA
  if (e_) IMGPIPE_CUDA_TRY(cudaEventRecord(e_, raw));
#else
  (void)raw;
#endif
  recorded_ = true;
}
void stream_wait_event(CUstream_st* s, const Event& e) {
#if IMGPIPE_HAS_CUDA
  if (s && e.get() && e.recorded()) IMGPIPE_CUDA_TRY(cudaStreamWaitEvent(s, e.get(), 0));
#else
  (void)s;
  (void)e;
#endif
}
void Event::synchronize() const {
#if IMGPIPE_HAS_CUDA
  if (e_ && recorded_) IMGPIPE_CUDA_TRY(cudaEventSynchronize(e_));
#endif
}
bool Event::ready() const {
#if IMGPIPE_HAS_CUDA
  if (!e_ || !recorded_) return true;
  const cudaError_t r = cudaEventQuery(e_);
  if (r == cudaErrorNotReady) return false;
  IMGPIPE_CUDA_TRY(r);
#endif
  return true;
}
float Event::elapsed_ms(const Event& start, const Event& end) {
#if IMGPIPE_HAS_CUDA
  if (!start.e_ || !end.e_) return 0.0f;
  float ms = 0;
  IMGPIPE_CUDA_TRY(cudaEventElapsedTime(&ms, start.e_, end.e_));
  return ms;
#else
  (void)start;
  (void)end;
  return 0.0f;
#endif
}

// ---------------------------------------------------------------- copies
void copy_h2d_async(void* dst, const void* src, std::size_t bytes, const Stream& s) {
#if IMGPIPE_HAS_CUDA
  if (s.device() >= 0) {
    IMGPIPE_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.get()));
    return;
  }
#endif
  (void)s;
  std::memcpy(dst, src, bytes);
}
void copy_d2h_async(void* dst, const void* src, std::size_t bytes, const Stream& s) {
#if IMGPIPE_HAS_CUDA
  if (s.device() >= 0) {
    IMGPIPE_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s.get()));
    return;
  }
#endif
  (void)s;
  std::memcpy(dst, src, bytes);
}

void copy_d2d_async(void* dst, const void* src, std::size_t bytes, const Stream& s) {
#if IMGPIPE_HAS_CUDA
  if (s.device() >= 0) {
    IMGPIPE_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.get()));
    return;
  }
#endif
  (void)s;
  std::memcpy(dst, src, bytes);
}

void copy_2d_async(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
                   std::size_t rows, const Stream& s) {
#if IMGPIPE_HAS_CUDA
  if (s.device() >= 0) {
    IMGPIPE_CUDA_TRY(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDefault, s.get()));
    return;
  }
#endif
  (void)s;
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, row_bytes);
}

// ---------------------------------------------------------------- DeviceBuffer
namespace {
constexpr std::size_t kMappedHostBytes = std::size_t{2} << 20;  // host backend buffers this large: mmap
std::atomic<bool> g_huge_pages{false};                             // set_huge_pages
}  // namespace

void set_huge_pages(bool on) noexcept { g_huge_pages.store(on, std::memory_order_relaxed); }

void advise_huge_pages(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  if (p == nullptr || bytes < kHuge || !g_huge_pages.load(std::memory_order_relaxed)) return;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return;
  const auto page = static_cast<std::uintptr_t>(page_size);
  const auto first = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
  if (end > first) (void)::madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : bytes_(bytes), device_(device) {
  if (bytes == 0) return;
#if IMGPIPE_HAS_CUDA
  if (device >= 0) {
    set_device(device);
    IMGPIPE_CUDA_TRY(cudaMalloc(&p_, bytes));
    return;
  }
#endif
  if (bytes >= kMappedHostBytes) {
    // Straight from the kernel, and back to it when freed: a staging slot's
    // buffers are replaced as it grows, and blocks that malloc mapped would
    // raise its threshold and leave the next ones in its heap.
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    p_ = m;
  } else {
    p_ = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p_) throw std::bad_alloc();
  }
  advise_huge_pages(p_, bytes);
  std::memset(p_, 0, bytes);  // fault the pages in now, not on the hot path
}
DeviceBuffer::~DeviceBuffer() { reset(); }
void DeviceBuffer::reset() noexcept {
  if (!p_) return;
#if IMGPIPE_HAS_CUDA
  if (device_ >= 0) {
    IMGPIPE_CUDA_TRY_NOTHROW(cudaFree(p_));
    p_ = nullptr;
    return;
  }
#endif
  if (bytes_ >= kMappedHostBytes)
    (void)::munmap(p_, bytes_);
  else
    std::free(p_);
  p_ = nullptr;
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), device_(o.device_) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    device_ = o.device_;
  }
  return *this;
}

}  // namespace imgpipe::gpu
