// The few CUDA runtime calls the C API makes for a consumer (a stream that
// waits for a batch, release ordering across consumer streams). Compiled
// against the runtime only in a CUDA build; without one every call is a no-op
// (the host backend's batches have no streams or events).
#pragma once

#include <vector>

#include "imgpipe/types.hpp"

namespace imgpipe::capi {

// cudaStreamLegacy: the legacy default stream of the current device.
inline void* const kLegacyStream = reinterpret_cast<void*>(1);

bool built_with_cuda() noexcept;

// Makes `device` current for the guard's life (cudaSetDevice), then restores
// the caller's; the legacy and per-thread default streams name the current
// device's. No-op for -1. Throws CudaError.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// cudaStreamWaitEvent(stream, event): `stream` waits for `event` (recorded
// work). Throws CudaError.
void stream_wait_event(void* stream, CUevent_st* event);
// `into` waits for the work enqueued on `from` so far (through a fresh event).
void join_streams(void* into, void* from);
// cudaEventSynchronize. Throws CudaError.
void event_synchronize(CUevent_st* event);
// Waits on the host until the work enqueued on each of `streams` so far is
// done (cudaStreamSynchronize; a stream of `device`'s when it names a default
// stream). Where one cannot be waited for, waits for all of `device`'s work
// (cudaDeviceSynchronize). Never throws; a failure is logged.
void wait_for_streams(const std::vector<void*>& streams, int device) noexcept;

}  // namespace imgpipe::capi
