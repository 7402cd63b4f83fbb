// The GPU JPEG decoder of one device, made on a thread of its own: loading
// nvJPEG, probing the engines and setting up the decoder take a moment (about
// a second on the H200 machine), and the pipeline need not wait for them:
// until the decoder is ready the probe stage keeps every JPEG on the CPU
// route. A decoder that cannot be made is reported once (the reason in the
// run's report) and the run goes on with the CPUs.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kernels/jpeg_gpu.hpp"

namespace imgpipe::stages {

// Whether decoders made with `a` and `b` decode alike and may stand for each
// other. Custom allocators never compare equal (their contexts cannot be
// compared).
bool same_decoder(const kernels::GpuJpegOptions& a, const kernels::GpuJpegOptions& b) noexcept;

class JpegEngines {
 public:
  // Starts making the decoder for `device` now.
  JpegEngines(int device, const kernels::GpuJpegOptions& options);
  ~JpegEngines();  // waits for the making thread
  JpegEngines(const JpegEngines&) = delete;
  JpegEngines& operator=(const JpegEngines&) = delete;

  // The decoder once made; null before that and when it failed. Never blocks.
  kernels::GpuJpegDecoder* ready() const noexcept { return ready_.load(std::memory_order_acquire); }
  // True once the making has failed (then wait() returns null). Never blocks.
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  // Blocks until the making is over; the decoder, or null when it failed.
  kernels::GpuJpegDecoder* wait() const;
  // After wait(): what the probe found (engines, library) and why it failed.
  const kernels::JpegHardwareInfo& info() const noexcept { return info_; }
  const std::string& error() const noexcept { return error_; }
  // After wait() returned a decoder: when it became ready.
  std::chrono::steady_clock::time_point ready_at() const noexcept { return ready_at_; }

 private:
  void make(int device, kernels::GpuJpegOptions options);
  std::unique_ptr<kernels::GpuJpegDecoder> decoder_;
  std::atomic<kernels::GpuJpegDecoder*> ready_{nullptr};
  std::atomic<bool> failed_{false};
  kernels::JpegHardwareInfo info_;
  std::string error_;
  std::chrono::steady_clock::time_point ready_at_;
  mutable std::once_flag joined_;
  mutable std::thread thread_;  // last: started once the members above exist
};

}  // namespace imgpipe::stages
