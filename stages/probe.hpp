// Probe stage (parallel, after read): decides where each JPEG is decoded.
//
// The header is parsed on the cached bytes the read stage made. A JPEG whose
// layout the GPU's JPEG engines take (baseline Huffman, 8-bit, 1 or 3
// components, 4:4:4 / 4:2:2 / 4:2:0 / 4:4:0 / grey; confirmed by
// nvjpegDecodeBatchedSupported) and that the CPU route would not treat
// differently (an end-of-image marker present, no EXIF rotation to apply, a
// bitstream and a decoded frame that fit their shares of the slot and of the
// device's frame buffer) may take the GPU route: its bitstream is staged as
// it is and decoded on the GPU. The share of such JPEGs sent to the GPU is
// steered by the rates both routes achieve during the run
// (RouteSteering), so that the CPUs and the JPEG engines are all busy.
// Everything else (other formats, progressive, CMYK, 12-bit, arithmetic
// coding, video frames) takes the CPU route.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "imgpipe/config.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class JpegEngines;

// What a JPEG's markers say, read without decoding. Never throws.
struct JpegLayout {
  bool valid = false;        // SOI, a frame header and a scan header were found, in bounds
  int sof = -1;              // the frame marker's number: 0 baseline, 1 extended, 2 progressive, 3 lossless, 9.. arithmetic
  int precision = 0;         // bits per sample
  int width = 0, height = 0;
  int components = 0;
  int h_max = 0, v_max = 0;  // largest sampling factors
  int restart_interval = 0;  // DRI, in MCUs; 0 = none
  std::string subsampling;   // "444", "422", "420", "440", "411", "410", "gray" or "other"
};
JpegLayout parse_jpeg_layout(std::span<const unsigned char> bytes) noexcept;

// Why a JPEG cannot take the GPU route, or empty when its layout can. The
// hardware's own rules (GPU-DECODE.md); nvJPEG has the last word.
std::string gpu_route_refusal(const JpegLayout& j);

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
// on the H200 the threads' other work moves it from ~0.82 to ~0.88, where a
// few percent less starves the engines (W1: 4552 img/s at 0.83 against 5320
// with every JPEG on the engines). The model does not see the engines
// starve: a CPU-route image holds its batch, in order, for a CPU decode's
// time, and the engines' next call waits for that batch (H200, W1, kept
// Pipeline: at 0.84 the engines were in calls 84% of the run, against 97%
// with every JPEG on them, for the same throughput), nor the CPU route's
// decoding slow the engine threads' own host work (H200, W1: engine calls
// at 5240-5410 img/s with 6-8% of the JPEGs on the CPU, 5750 with none; the
// run 4874 against 5452 img/s). So when the engine threads were in calls
// less than kEnginesBusy of a window, or (set_hold_when_slowed) the engines
// ran below kEnginesSlowed of the best window's rate while the CPU route
// decoded, every GPU-able JPEG goes to the engines for kHoldS; then the CPU
// route is tried again (kProbeStep below 1 until its cost is measured, then
// the model).
// The model aims the threads at a load u below 1 (kCpuUtil):
//   s = G (o + d) / (u N + G d).
// d is the last window's when it decoded 16 CPU-route images, else the
// run's so far: near the top a window holds only a few (at 0.95, ~6), and
// the share then stayed at the first try all run (H200, W1).
// Thread-safe.
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

// What a run's steering learned, for the next run of the same Pipeline to
// start from (IMGPIPE_STEER=memory; off by default). A kept Pipeline's runs
// are short (W1's 4096 images take 0.7 s on the H200) and each begins at
// share 1, so this was to spare them finding the balance again; but started
// near 0.9 the engines ran slower from the first call (5580-5740 img/s in
// calls against 5820-5930) and the runs too (H200, W1, one call: 5349 and
// 5406 img/s against 5882 and 5842 from share 1).
struct SteeringMemory {
  double share = -1;  // the last share the balance gave (not a hold's 1); < 0: none
  double d = 0;       // the CPU route's thread-seconds an image (0: not measured)
  double best_g = 0;  // the engines' fastest window
};

class RouteSteering {
 public:
  // `adaptive` false: every GPU-able JPEG goes to the GPU. `engine_devices`:
  // the GPUs decoding, an engine thread each.
  RouteSteering(bool adaptive, double initial_share, int cpu_threads, int engine_devices = 1);
  static constexpr double kEnginesBusy = 0.9;
  static constexpr double kEnginesSlowed = 0.95;  // of the fastest window's engine rate
  static constexpr double kHoldS = 1.0;           // every JPEG to the engines this long, once they limit
  static constexpr double kProbeStep = 0.05;      // the first try of the CPU route, from 1
  // With a cycle (set_cycle) the CPU route's JPEGs delay no engine call, and
  // the engines' calls get shorter as they wait less for the previous one
  // (H200, W1, share 0.84: in calls 90% of the run, never waiting for a
  // call, 6133 img/s against 5600 at share 1): only a clear starving or
  // slowing holds, and for less.
  static constexpr double kCycleEnginesBusy = 0.8;
  static constexpr double kCycleEnginesSlowed = 0.9;
  static constexpr double kCycleHoldS = 0.25;
  static constexpr double kMostShare = 0.98, kLeastShare = 0.02;
  // The CPU threads' load the balance aims at (1: both routes run out
  // together). Below 1 the CPU route keeps slack for the engines' next call:
  // a CPU-route image late by a few ms holds its batch and the call. (H200,
  // W1, one call: 0.85 / 1 / 0.7 ran at 5762-5909 / 5754-5974 / 5788-5934
  // img/s, fixed 0.95 at 5590-5750: no load stood out; 0.85 is between.)
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
  // What this run learned (SteeringMemory), and a new run's start from it:
  // the share, the CPU route's cost and the engines' best rate (no hold is
  // carried over). recall() does nothing when not adaptive, or when `m`
  // holds no share.
  SteeringMemory memory() const;
  void recall(const SteeringMemory& m);
  // Whether engines that slowed while the CPU route decoded get every JPEG
  // for a while (default true; starving engines always do). The pipeline
  // turns it off unless IMGPIPE_STEER asks for it (core/tuning.hpp): on the
  // H200 the hold kept the CPUs ~80% idle while the engines bounded the run.
  void set_hold_when_slowed(bool on);
  // The share after each update, in order (the report's split over time).
  std::vector<double> history() const;
  // The share the run began with: the constructor's, or recall()'s.
  double started_at() const;

 private:
  bool adaptive_;
  int cpu_threads_;
  int engine_devices_;
  mutable std::mutex m_;
  double share_;
  double start_share_;
  double balance_share_ = -1;  // the last share the balance (or the first try) gave
  bool hold_when_slowed_ = true;
  double best_g_ = 0;       // the engines' fastest rate in a window so far
  double d_ = 0;            // the CPU route's thread-seconds an image, last measured (0: not yet)
  double cpu_util_ = kCpuUtil;
  double hold_until_ = -1;  // wall_s until which every GPU-able JPEG goes to the engines
  double acc_ = 0;
  int cycle_batches_ = 0, batch_size_ = 0, free_batches_ = 2;
  std::vector<double> history_;
  SteeringSample last_;
};

// Cumulative GPU decode figures, written by the GPU ops stage.
struct GpuDecodeMeter {
  std::atomic<std::uint64_t> images{0};  // decoded on the GPU
  std::atomic<std::int64_t> ns{0};       // host time inside the decode calls
  std::atomic<std::uint64_t> fallbacks{0};  // failed on the GPU, decoded on the CPU instead
  // A call begins and ends (steady_clock nanoseconds): busy_s() counts the
  // calls in progress too (an engine call lasts ~20 ms, a steering window
  // may be as short).
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

struct ProbeLimits {
  bool wait_for_engines = false;      // decode.where gpu: wait for the decoder instead of using the CPU meanwhile
  bool accept_truncated = false;      // decode.accept_truncated: damaged JPEGs stay on the CPU route
  bool exif_orientation = true;       // rotated JPEGs stay on the CPU route (nvJPEG does not rotate)
  std::int64_t max_pixels = 0;        // decode.max_pixels: larger ones stay on the CPU route (reported there)
  std::size_t max_bitstream = 0;      // a sample's share of the staging slot
  std::size_t max_frame_bytes = 0;    // a sample's share of the device frame buffer (w * h * 3)
  ResizeConfig resize;                // what the GPU does to a frame it decodes (the sample's geometry)
};

class Probe : public Stage<Probe, Takes::encoded_samples> {
 public:
  // `engines`' decoder confirms each candidate (nvjpegDecodeBatchedSupported);
  // until it is ready every JPEG stays on the CPU route. The CPU route's
  // figures come from `decode` and `transform`'s statistics, the threads'
  // other work from `others` (every stage that runs on them but those two,
  // this one, which counts its own, and the GPU ops stage, whose engine
  // calls the steering counts apart).
  Probe(const ProbeLimits& limits, const JpegEngines& engines, RouteSteering& steering,
        const StageStats& decode, const StageStats& transform, const GpuDecodeMeter& gpu,
        std::vector<const StageStats*> others = {});
  Tally run(Work& w);

  std::uint64_t gpu_able() const noexcept { return gpu_able_.load(); }
  std::uint64_t routed_to_gpu() const noexcept { return to_gpu_.load(); }

 private:
  bool gpu_able(const Work& w, int& width, int& height) const;
  void steer();
  ProbeLimits limits_;
  const JpegEngines& engines_;
  RouteSteering& steering_;
  const StageStats& decode_;
  const StageStats& transform_;
  const GpuDecodeMeter& gpu_;
  std::vector<const StageStats*> others_;
  std::atomic<std::uint64_t> gpu_able_{0}, to_gpu_{0}, seen_{0};
};

}  // namespace imgpipe::stages
