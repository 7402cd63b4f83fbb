#include "cuda_calls.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>

#include <spdlog/logger.h>

#include "core/cuda_check.hpp"
#include "imgpipe/log.hpp"
#endif

namespace imgpipe::capi {

#if IMGPIPE_HAS_CUDA

bool built_with_cuda() noexcept { return true; }

DeviceGuard::DeviceGuard(int device) {
  if (device < 0) return;
  IMGPIPE_CUDA_TRY(cudaGetDevice(&previous_));
  if (previous_ != device) {
    IMGPIPE_CUDA_TRY(cudaSetDevice(device));
  } else {
    previous_ = -1;  // nothing to restore
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) IMGPIPE_CUDA_TRY_NOTHROW(cudaSetDevice(previous_));
}

void stream_wait_event(void* stream, CUevent_st* event) {
  if (event == nullptr) return;
  IMGPIPE_CUDA_TRY(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), event, 0));
}

void join_streams(void* into, void* from) {
  if (into == from) return;
  cudaEvent_t e = nullptr;
  IMGPIPE_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  // Destroying an event whose record is pending is allowed: its resources go
  // once the work completes.
  const cudaError_t rec = cudaEventRecord(e, static_cast<cudaStream_t>(from));
  const cudaError_t wait = rec == cudaSuccess ? cudaStreamWaitEvent(static_cast<cudaStream_t>(into), e, 0) : rec;
  IMGPIPE_CUDA_TRY_NOTHROW(cudaEventDestroy(e));
  IMGPIPE_CUDA_TRY(wait);
}

void event_synchronize(CUevent_st* event) {
  if (event != nullptr) IMGPIPE_CUDA_TRY(cudaEventSynchronize(event));
}

void wait_for_streams(const std::vector<void*>& streams, int device) noexcept {
  try {
    DeviceGuard guard(device);
    bool all = true;
    for (void* s : streams) {
      const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(s));
      if (e != cudaSuccess) {
        detail::clear_last_error();
        all = false;
      }
    }
    if (!all) IMGPIPE_CUDA_TRY(cudaDeviceSynchronize());
  } catch (const std::exception& e) {
    // A sticky error: the device runs nothing more, nothing reads the batch.
    try {
      imgpipe::logger()->error("waiting for a batch's consumer streams: {}", e.what());
    } catch (...) {
    }
  }
}

#else

bool built_with_cuda() noexcept { return false; }
DeviceGuard::DeviceGuard(int) {}
DeviceGuard::~DeviceGuard() = default;
void stream_wait_event(void*, CUevent_st*) {}
void join_streams(void*, void*) {}
void event_synchronize(CUevent_st*) {}
void wait_for_streams(const std::vector<void*>&, int) noexcept {}

#endif

}  // namespace imgpipe::capi
