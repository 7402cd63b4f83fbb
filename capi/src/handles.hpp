// The C API's handles and its error plumbing, shared by the files of
// capi/src: every entry point runs its body through guarded(), which keeps
// the caller's CUDA device and turns what the C++ side throws into a status
// plus the calling thread's last error (imgpipe_last_error*).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "imgpipe_c.h"
#include "imgpipe/pipeline.hpp"
#include "memory/gpu.hpp"

// Held by the caller and by each of its streams: freed when the last is gone.
struct imgpipe_pipeline {
  explicit imgpipe_pipeline(imgpipe::Pipeline p) : pipeline(std::move(p)) {}
  imgpipe::Pipeline pipeline;
  std::string config_yaml;
  std::string why_unknown;  // imgpipe_pipeline_planned_batches' reason
  std::atomic<int> refs{1};
  std::mutex m;
  imgpipe_stream* running = nullptr;  // the stream started last, until destroyed
};

struct imgpipe_stream {
  imgpipe::BatchStream stream;
  imgpipe_pipeline* owner = nullptr;
  std::string report_json;
};

struct imgpipe_batch {
  std::atomic<int> refs{1};
  imgpipe::Batch batch;
  std::mutex m;
  std::vector<void*> after;  // consumers' streams the release waits for
  std::optional<std::string> samples_json;
};

namespace imgpipe::capi {

// The calling thread's last error (imgpipe_last_error and friends).
struct LastError {
  std::string message, cls;
  std::map<std::string, std::string> fields;
};
LastError& last_error() noexcept;

// Sets the calling thread's last error; returns `status`.
imgpipe_status fail(imgpipe_status status, const char* cls, std::string message,
                    std::map<std::string, std::string> fields = {}) noexcept;
// The status and last error for the exception being handled.
imgpipe_status from_exception() noexcept;
// IMGPIPE_E_USAGE: "<what> is NULL".
imgpipe_status null_handle(const char* what) noexcept;

// Every entry point leaves the caller's CUDA device and context as it found
// them (a PyTorch consumer's current device included): the library
// switches devices freely inside.
using KeepDevice = imgpipe::gpu::CurrentDeviceGuard;

template <typename F>
imgpipe_status guarded(F&& f) noexcept {
  const KeepDevice keep;
  try {
    return f();
  } catch (...) {
    return from_exception();
  }
}

}  // namespace imgpipe::capi
