// The GPU JPEG decoder of one device, made on a thread of its own: loading
// nvJPEG, probing the engines and setting up the decoder take a moment, and
// the pipeline need not wait for them:
// until the decoder is ready the probe stage keeps every JPEG on the CPU
// route. A decoder that cannot be made is reported once (the reason in the
// run's report) and the run goes on with the CPUs.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "codecs/image/nvjpeg/jpeg_gpu.hpp"

namespace imgpipe::codecs {

// Whether decoders made with `a` and `b` decode alike and may stand for each
// other. Custom allocators never compare equal (their contexts cannot be
// compared).
bool same_decoder(const GpuJpegOptions& a, const GpuJpegOptions& b) noexcept;

class JpegEngines {
 public:
  // Starts making the decoder for `device` now.
  JpegEngines(int device, const GpuJpegOptions& options);
  ~JpegEngines();  // waits for the making thread
  JpegEngines(const JpegEngines&) = delete;
  JpegEngines& operator=(const JpegEngines&) = delete;

  // The decoder once made; null before that and when it failed. Never blocks.
  GpuJpegDecoder* ready() const noexcept { return ready_.load(std::memory_order_acquire); }
  // True once the making has failed (then wait() returns null). Never blocks.
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  // Blocks until the making is over; the decoder, or null when it failed.
  GpuJpegDecoder* wait() const;
  // After wait(): what the probe found (engines, library) and why it failed.
  const JpegHardwareInfo& info() const noexcept { return info_; }
  const std::string& error() const noexcept { return error_; }
  // After wait() returned a decoder: when it became ready.
  std::chrono::steady_clock::time_point ready_at() const noexcept { return ready_at_; }

 private:
  void make(int device, GpuJpegOptions options);
  std::unique_ptr<GpuJpegDecoder> decoder_;
  std::atomic<GpuJpegDecoder*> ready_{nullptr};
  std::atomic<bool> failed_{false};
  JpegHardwareInfo info_;
  std::string error_;
  std::chrono::steady_clock::time_point ready_at_;
  mutable std::once_flag joined_;
  mutable std::thread thread_;  // last: started once the members above exist
};

// Where a device's GPU JPEG decoder comes from: a decoder may outlive the
// run (making one is slow; a Pipeline keeps its own across runs,
// EngineCache; docs/benchmarks.md#decoder-creation). Empty: each run makes its own.
using EngineSource = std::function<std::shared_ptr<JpegEngines>(int device, const GpuJpegOptions&)>;

}  // namespace imgpipe::codecs
