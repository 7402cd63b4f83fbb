// The GPU decode's figures: what the engine threads did, read by the route
// steering (through the probe stage) and by the report.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace imgpipe::codecs {

// Cumulative GPU decode figures, written by the engine threads
// (EngineScheduler) and the GPU ops stage.
struct GpuDecodeMeter {
  std::atomic<std::uint64_t> images{0};  // decoded on the GPU
  std::atomic<std::int64_t> ns{0};       // host time inside the decode calls
  std::atomic<std::uint64_t> fallbacks{0};  // failed on the GPU, decoded on the CPU instead
  // A call begins and ends (steady_clock nanoseconds): busy_s() counts the
  // calls in progress too (an engine call may last as long as a steering
  // window).
  void call_begins(std::int64_t t0_ns);
  void call_ends(std::int64_t t0_ns, std::int64_t t1_ns);
  double busy_s(std::int64_t now_ns) const;
  std::int64_t first_begin_ns() const;  // the first call's start; -1 before it
  // Of `ns`: inside nvjpegDecodeBatched, and waiting for the device's
  // previous call to finish on the GPU. Beside it: the engine threads'
  // waits for their bitstreams' copies.
  std::atomic<std::int64_t> submit_ns{0};
  std::atomic<std::int64_t> previous_wait_ns{0};
  std::atomic<std::int64_t> input_wait_ns{0};
  // Of `ns`: nvjpegDecodeBatchedInitialize, needed by each call whose size
  // differs from the device's last one.
  std::atomic<std::uint64_t> initializations{0};
  std::atomic<std::int64_t> initialize_ns{0};

 private:
  mutable std::mutex calls_m_;    // call_begins/call_ends/busy_s (ns is written only by call_ends)
  int in_call_ = 0;               // calls in progress
  std::int64_t started_sum_ = 0;  // their start times, summed
  std::int64_t first_begin_ = -1;
};

}  // namespace imgpipe::codecs
