// Route steering: the share of GPU-able JPEGs the probe stage sends to the
// GPU's JPEG engines, the rest going to the CPU route.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace imgpipe::codecs {

// The measurements RouteSteering::update() judges a window by: cumulative
// figures since the run began, taken by the probe stage.
struct SteeringSample {
  std::uint64_t cpu_images = 0;  // decoded by the CPU route
  double cpu_s = 0;              // thread-seconds in its decode + transform
  std::uint64_t gpu_images = 0;  // decoded by the engines
  double gpu_s = 0;              // seconds in the engine calls
  std::uint64_t samples = 0;     // every sample probed
  double other_s = 0;            // thread-seconds of the other stages' own work (waits left out)
  double wall_s = 0;             // when (any origin)
  // The engine threads' time in calls, the calls in progress included (< 0:
  // gpu_s): against the window's wall time, how busy the engines were.
  double busy_s = -1;
  // When the engines' first call began (wall_s's clock; < 0: not yet, or not
  // known): a window's busy share counts from then (before it, the engines
  // wait for their first group, which is no starving).
  double engines_from_s = -1;
};

// The share of GPU-able JPEGs sent to the GPU: fixed (decode.where: gpu -> 1)
// or steered to where both routes run out together. The CPU threads do more
// than the CPU route's decoding: they read, probe and pack every sample,
// the GPU route's too, so the balance counts that work (measured, o
// thread-seconds a sample) beside the CPU route's decode + transform (d a
// CPU-decoded image) and the engines' rate while decoding (G images/s): at
// throughput T, the engines take T s = G and the threads T (o + (1 - s) d)
// = N (the engine calls run on threads of their own), so
//   s = G (o + d) / (N + G d).
// Without o (o = 0) this is G / (G + N / d), the two decode rates' balance;
// the threads' other work moves it up, to where a few percent less starves
// the engines. The model does not see the engines starve: a CPU-route image
// holds its batch, in order, for a CPU decode's time, and the engines' next
// call waits for that batch. So when the engine threads were in calls less
// than kEnginesBusy of a window, every GPU-able JPEG goes to the engines
// for kHoldS; then the CPU route is tried again (kProbeStep below 1 until
// its cost is measured, then the model).
// The model aims the threads at a load u below 1 (kCpuUtil):
//   s = G (o + d) / (u N + G d).
// d is the last window's when it decoded 16 CPU-route images, else the
// run's so far: near the top a window holds only a few, and the share would
// otherwise stay at the first try all run.
// Why these choices: docs/benchmarks.md#cpu-route-jpegs-early-in-each-engine-call
// and #route-steering; the design: docs/gpu-decode.md.
// Thread-safe.
class RouteSteering {
 public:
  // `adaptive` false: every GPU-able JPEG goes to the GPU. `engine_devices`:
  // the GPUs decoding, an engine thread each.
  RouteSteering(bool adaptive, double initial_share, int cpu_threads, int engine_devices = 1);
  static constexpr double kEnginesBusy = 0.9;
  static constexpr double kHoldS = 1.0;       // every JPEG to the engines this long, once they limit
  static constexpr double kProbeStep = 0.05;  // the first try of the CPU route, from 1
  // With a cycle (set_cycle) the CPU route's JPEGs delay no engine call, and
  // the engines' calls get shorter as they wait less for the previous one:
  // only a clear starving holds, and for less.
  static constexpr double kCycleEnginesBusy = 0.8;
  static constexpr double kCycleHoldS = 0.25;
  static constexpr double kMostShare = 0.98, kLeastShare = 0.02;
  // The CPU threads' load the balance aims at (1: both routes run out
  // together). Below 1 the CPU route keeps slack for the engines' next call:
  // a CPU-route image late by a few ms holds its batch and the call.
  static constexpr double kCpuUtil = 0.85;
  // Whether the next GPU-able JPEG goes to the GPU (a deterministic
  // error-diffusion sequence at the current share).
  bool take_gpu();
  // The same for sample `seq` (its number in the run) when set_cycle() was
  // called: the CPU route's JPEGs go to the first cycle_batches - free_batches batches
  // of each cycle of cycle_batches batches (one engine call's), where
  // decoding them delays no call: the call waits for its last batches.
  bool take_gpu(std::uint64_t seq);
  void set_cycle(int cycle_batches, int batch_size, int free_batches = 2);
  // The CPU threads' load to aim at (0 < u <= 1; default kCpuUtil).
  void set_cpu_util(double u);
  // Cumulative measurements of the window since the last update that judged
  // one (it needs 16 engine-decoded images and 20 ms): the share goes to 1
  // (held) or half-way to the model's balance, as above.
  void update(const SteeringSample& now);
  double share() const;
  // Holds the share at `share` from now on (measurements of a fixed split).
  void fix(double share);
  // The share after each update, in order (the report's split over time).
  std::vector<double> history() const;
  // The share the run began with: the constructor's, or fix()'s.
  double started_at() const;

 private:
  bool adaptive_;
  int cpu_threads_;
  int engine_devices_;
  mutable std::mutex m_;
  double share_;
  double start_share_;
  double d_ = 0;            // the CPU route's thread-seconds an image, last measured (0: not yet)
  double cpu_util_ = kCpuUtil;
  double hold_until_ = -1;  // wall_s until which every GPU-able JPEG goes to the engines
  double acc_ = 0;
  int cycle_batches_ = 0, batch_size_ = 0, free_batches_ = 2;
  std::vector<double> history_;
  SteeringSample last_;
};

}  // namespace imgpipe::codecs
