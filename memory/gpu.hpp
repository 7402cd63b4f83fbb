// A thin RAII layer over the CUDA runtime that also runs without one: with
// device == -1 (the host backend) streams and events are empty, copies are
// plain memcpy and every wait returns at once, because host work is done
// synchronously when it is enqueued.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "imgpipe/types.hpp"
#include "memory/device_address.hpp"

struct CUctx_st;  // CUcontext, declared without the driver's header

namespace imgpipe::gpu {

// Number of usable CUDA devices; 0 without a CUDA build, a driver or a GPU.
// `why` (optional) receives the reason when it returns 0, as a phrase that
// stands alone ("no CUDA-capable GPU or driver found (...)", "imgpipe was
// built without CUDA").
int device_count(std::string* why = nullptr) noexcept;
// "NVIDIA H200 (sm_90, 139 GiB)". Throws CudaError.
std::string device_description(int device);
// Total memory of `device` in bytes; 0 for -1 or without CUDA. Throws CudaError.
std::uint64_t device_memory(int device);
// cudaSetDevice for the calling thread; no-op for device -1.
void set_device(int device);
// True when this build has the CUDA backend.
bool built_with_cuda() noexcept;
// How threads wait for `device` (its primary context's scheduling flag).
// CUDA's default (auto) spins a core for each waiting thread while the
// process has fewer contexts than cores, and imgpipe waits on many threads
// at once (each NVDEC reader for its frames, the transfer, the sink),
// whose spinning takes the cores the CPU decoders need. Unless the process
// chose a policy already (a scheduling flag other than auto), or `asked`
// names one (block, yield, spin, or auto to leave CUDA's default: the
// IMGPIPE_CUDA_WAIT diagnostic, core/diagnostics.hpp), the context is set
// to block its waiting threads (cudaDeviceScheduleBlockingSync). Returns
// the policy in effect, in words for the set-up log ("block (imgpipe's
// default)"). Throws CudaError, and Error for a policy it does not know.
std::string set_wait_policy(int device, const std::string& asked = {});

// The CUDA context current on the calling thread (the driver's
// cuCtxGetCurrent): nullptr when none is, and without a CUDA device or build.
CUctx_st* current_context() noexcept;

// Leaves the calling thread's CUDA state as it found it: saves the current
// device (cudaGetDevice) and context (current_context()) at construction and
// makes them current again at destruction, "no context" included, so that a
// call does not leave a primary context current on a thread that had none.
// With `device` >= 0 it also makes that device current for its scope.
// Every entry point a user's thread calls (Pipeline::run and ~Pipeline, the
// pull API, the C API) holds one: the library switches devices freely
// inside. Restoring never throws
// (a failure is reported on stderr, as IMGPIPE_CUDA_TRY_NOTHROW does).
// Without a CUDA device or build it does nothing.
class CurrentDeviceGuard {
 public:
  CurrentDeviceGuard() noexcept;
  explicit CurrentDeviceGuard(int device);  // throws CudaError when `device` cannot be made current
  ~CurrentDeviceGuard();
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  CUctx_st* context_ = nullptr;
  int device_ = -1;  // -1: nothing saved, nothing to restore
};

// The CUDA versions as "major.minor": `driver` is the newest CUDA the
// installed driver supports (cudaDriverGetVersion), `runtime` the runtime
// this build uses. "none" for what is absent: both without a CUDA build,
// the driver on a machine without an NVIDIA driver.
struct CudaVersions {
  std::string driver = "none";
  std::string runtime = "none";
};
CudaVersions cuda_versions();

class Stream {
 public:
  Stream() = default;
  explicit Stream(int device);  // non-blocking stream on `device`; empty for -1
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream_st* get() const noexcept { return s_; }
  int device() const noexcept { return device_; }
  void synchronize() const;  // throws CudaError

 private:
  CUstream_st* s_ = nullptr;
  int device_ = -1;
};

class Event {
 public:
  Event() = default;
  Event(int device, bool timing);  // empty for device -1
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& s);
  // Records on a stream this layer did not make (a cudaStream_t of the
  // application's, on this event's device; null: the legacy default stream).
  void record_on(CUstream_st* raw);
  void synchronize() const;  // throws CudaError (a sticky error from earlier work surfaces here)
  bool ready() const;        // cudaEventQuery; true when empty
  // Milliseconds between two recorded timing events (0 when empty).
  static float elapsed_ms(const Event& start, const Event& end);
  CUevent_st* get() const noexcept { return e_; }
  bool recorded() const noexcept { return recorded_; }

 private:
  CUevent_st* e_ = nullptr;
  int device_ = -1;
  bool recorded_ = false;
};

// Work enqueued on `s` (a cudaStream_t, any origin) after this call waits for
// `e` (cudaStreamWaitEvent); nothing for an empty or unrecorded event.
void stream_wait_event(CUstream_st* s, const Event& e);

// Host -> device copy enqueued on `s` (memcpy when s has device -1).
void copy_h2d_async(void* dst, const void* src, std::size_t bytes, const Stream& s);
// Device -> host copy enqueued on `s` (memcpy when s has device -1).
void copy_d2h_async(void* dst, const void* src, std::size_t bytes, const Stream& s);
// Copy between two device-visible buffers (device or mapped memory: the
// direction comes from the addresses) enqueued on `s` (memcpy when s has
// device -1).
void copy_d2d_async(void* dst, const void* src, std::size_t bytes, const Stream& s);
// The same two copies out of an address the host must not read (a staging
// slot's, memory/device_address.hpp): the GPU's copy engine reads it. The
// direction comes from the addresses in both (the source may be mapped host
// memory, which a cudaMemcpyDeviceToHost does not promise to take).
inline void copy_d2h_async(void* dst, DeviceAddress src, std::size_t bytes, const Stream& s) {
  copy_d2d_async(dst, src.for_device(), bytes, s);
}
inline void copy_d2d_async(void* dst, DeviceAddress src, std::size_t bytes, const Stream& s) {
  copy_d2d_async(dst, src.for_device(), bytes, s);
}

// A copy of `rows` rows of `row_bytes` bytes, each side with its own pitch,
// between any device-visible or host buffers (cudaMemcpy2DAsync, the
// direction from the addresses) enqueued on `s` (memcpy when s has device -1).
void copy_2d_async(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
                   std::size_t rows, const Stream& s);

// Where set_huge_pages(true) asked for it (the IMGPIPE_HUGE_PAGES=on
// diagnostic; memory::huge_pages_policy), asks the kernel to back the whole
// pages of [p, p + bytes), ordinary host memory not touched yet, with
// transparent huge pages where it offers them (Linux, madvise mode): the
// first touch of a large block then faults it in 2 MiB at a time instead of
// 4 KiB. Off by default: a huge page is always a whole free 2 MiB block,
// which a VM that reports free memory to its host has handed back, and
// faulting such blocks in again costs several times what 4 KiB pages cost,
// which come from smaller free blocks that are never reported
// (docs/benchmarks.md, "Huge pages for the host's slots"). Blocks under
// 2 MiB, and page-locked memory, are left alone. Never fails: the advice is
// optional.
void advise_huge_pages(void* p, std::size_t bytes) noexcept;
// Process-wide: whether advise_huge_pages advises (false until set).
void set_huge_pages(bool on) noexcept;

// Device memory (host memory for device -1: a large block mapped from the
// kernel and unmapped when freed; advise_huge_pages), RAII.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes);  // throws CudaError / std::bad_alloc
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const noexcept { return p_; }
  // get() as an address that kernels and copies read (the staged data).
  DeviceAddress address() const noexcept { return DeviceAddress(p_); }
  std::size_t size() const noexcept { return bytes_; }
  int device() const noexcept { return device_; }

 private:
  void reset() noexcept;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = -1;
};

}  // namespace imgpipe::gpu
