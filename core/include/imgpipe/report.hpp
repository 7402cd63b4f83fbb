// The run report: per-stage throughput, input accounting, memory and transfer.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace imgpipe {

// A rate measured over less than this much work, or fewer items, says more
// about the timer and the call overhead than about the stage: the report
// shows no rate for it ("–" in the table, null in JSON).
inline constexpr double kMinRatedWorkSeconds = 1e-3;
inline constexpr std::uint64_t kMinRatedItems = 2;
inline bool rateable(std::uint64_t items, double work_s) noexcept {
  return items >= kMinRatedItems && work_s >= kMinRatedWorkSeconds;
}

// One stage's figures over the run. Times are summed over the stage's
// threads; the rates say what the stage sustains on its own, with all its
// threads, while it works (blocking waits excluded), so the highest
// utilization names the stage that bounds the pipeline. The same names and
// meanings in to_json().
struct StageReport {
  std::string name;
  bool parallel = false;  // parallel filter (times summed over threads)
  int concurrency = 1;    // threads that could run it (1 for serial stages)
  std::uint64_t items = 0;
  // What `items` counts: "images", "frames" (video frames), "samples" (images
  // and video frames) or "batches".
  std::string unit = "images";
  double busy_s = 0;      // time inside the stage's calls, waits included
  double wait_s = 0;      // part of busy_s blocked inside the stage (free staging slot, GPU)
  double work_s = 0;      // busy_s - wait_s: the stage's own work
  double bytes = 0;       // bytes produced (or moved)
  // Rates: empty when the stage did too little work to rate (rateable()).
  std::optional<double> items_per_s;             // items / work_s x concurrency
  std::optional<double> items_per_s_per_thread;  // items / work_s
  std::optional<double> mb_per_s;  // bytes / work_s / 1e6 x concurrency
  double utilization = 0;  // work_s / (pipeline_s x concurrency)
  double idle_s = 0;       // pipeline_s x concurrency - busy_s: starved by upstream or held by the token limit
};

// The video decoders' rows, first in a run with video inputs
// (docs/report.md): the reader threads' time inside libavcodec (and
// OpenCV's capture for streams and cameras), and inside NVDEC, shown only
// when it decoded a frame. The source's row leaves out its waits for their
// frames.
inline constexpr std::string_view kVideoCpuRow = "video cpu";
inline constexpr std::string_view kVideoNvdecRow = "video nvdec";
inline bool is_video_decoder_row(std::string_view name) noexcept {
  return name == kVideoCpuRow || name == kVideoNvdecRow;
}

struct InputFailure {
  std::string path;
  std::int64_t frame = -1;
  std::string reason;
};

struct BatchRecord {
  std::uint64_t index = 0;
  std::uint64_t samples = 0;
  std::uint64_t checksum = 0;  // kernels::checksum of the batch tensor (discard sink)
};

// The run over time, for the HTML report's charts: the counters sampled
// every interval_s from the first input (RunOptions::timeline_interval_s).
// A long run keeps at most kMaxTicks ticks: past that, every other tick is
// dropped and the interval doubles.
struct Timeline {
  static constexpr std::size_t kMaxTicks = 1200;
  double interval_s = 0;            // between ticks; 0: not sampled
  std::vector<std::string> stages;  // the lanes: the names of Report::stages, in order
  struct Tick {
    double t_s = 0;                    // since the first input
    std::vector<std::uint64_t> items;  // per lane: items so far
    std::vector<double> busy_s;        // per lane: time inside the stage so far (all threads)
    std::vector<double> wait_s;        // per lane: the part of busy_s blocked so far
    std::uint64_t done = 0;            // inputs through the sink so far (delivered or failed)
    std::uint64_t failed = 0;          // failed inputs so far
    // Staging slots handed to pack and not yet released by the sink, at the
    // tick (the larger of two ticks merged by thinning).
    int ring_in_use = 0;
    std::uint64_t rss_bytes = 0;  // the process's resident memory (Linux; 0 elsewhere)
  };
  std::vector<Tick> ticks;
};

// Where and how the run ran, so that a report read later says what it
// measured. Filled by the Pipeline, but command_line: the CLI sets it (empty
// for a library run). The same names in to_json()'s "context".
struct RunContext {
  std::string command_line;  // the CLI's arguments, shell-quoted
  std::string hostname;
  std::string os;            // "Linux 6.1.0-18-amd64 x86_64" (uname)
  std::string cpu_model;     // /proc/cpuinfo's model name; empty when unknown
  unsigned cpu_count = 0;    // hardware threads
  std::vector<std::string> gpus;      // the run's GPUs, "cuda:0 NVIDIA H200 (sm_90, 139 GiB)"; empty on the host backend
  std::string cuda_driver = "none";   // the newest CUDA the driver supports, "12.4" (gpu::cuda_versions)
  std::string cuda_runtime = "none";  // the CUDA runtime of this build
  std::string opencv;                 // OpenCV's version, as linked
  std::string onetbb;                 // oneTBB's version, as linked
  std::string config;                 // the effective config (Config::to_yaml)
};

struct Report {
  std::string backend;  // "cuda:0 NVIDIA H200 (...)" or "host"
  std::string version;
  bool interrupted = false;
  double wall_s = 0;
  double setup_s = 0;     // device initialisation, discovery and allocation before the first input
  double pipeline_s = 0;  // from the first input to the final synchronise
  double samples_per_s = 0;         // delivered / wall_s, including set-up and the final synchronise
  double steady_samples_per_s = 0;  // delivered / pipeline_s
  // Deprecated: the same as samples_per_s and steady_samples_per_s (which
  // count video frames too), kept for one release, as the JSON report's
  // keys of these names are.
  double images_per_s = 0;
  double steady_images_per_s = 0;
  // The delivered samples by kind (their sum is inputs.delivered): the
  // pictures of image files and the video frames (SampleKind). `unit` is
  // what the run's samples are called: "images" or "frames" when every one
  // delivered is of that kind, "samples" for a mix; with none delivered,
  // what the inputs were. A later kind gets a count of its own.
  // With input.video.clips the samples are clips ("clips"): inputs.delivered
  // counts them, `frames` the frames they hold.
  struct Samples {
    std::uint64_t images = 0;
    std::uint64_t frames = 0;
    std::string unit = "images";
    std::uint64_t clips = 0;
  } samples;
  // The process's CPU time (user + system, every thread, FFmpeg's and the
  // drivers' included) up to the report: cpu_s / delivered is the CPU cost
  // of a frame, to set beside a peer's.
  double cpu_s = 0;
  std::vector<StageReport> stages;
  // The stage with the highest utilization among those with a rate; empty
  // when nothing was delivered or no stage did enough work to rate.
  std::string bottleneck;
  std::string normalize_where;  // "cpu" or "gpu", as resolved
  std::string resize_where;     // "cpu" or "gpu", as resolved
  // The diagnostics set for this run, (environment variable, value), e.g.
  // IMGPIPE_GPU_SHARE: measurement knobs, not configuration; empty in a
  // normal run. The text report says so on a line of its own.
  std::vector<std::pair<std::string, std::string>> diagnostics;

  // This process's part of the input list: items i with i % world_size == rank.
  struct Shard {
    int rank = 0;
    int world_size = 1;
    std::string origin = "default";  // "config", "RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*", "SLURM_*", "PMI_*" or "default"
    // input.shard_remainder, and the items it repeated (pad) or left out
    // (drop) over every rank this epoch.
    std::string remainder = "uneven";
    std::uint64_t padded = 0, dropped = 0;
  } shard;
  // The epoch this run was (a kept Pipeline's runs are epochs 0, 1, 2, ...;
  // Pipeline::set_epoch and RunOptions::epoch choose): input.shuffle's order
  // is drawn from (seed, epoch).
  std::uint64_t epoch = 0;

  // input.labels: folders: the class names, sorted; SampleId::label indexes
  // them (the same list on every rank: it comes from the whole input). Empty
  // with input.labels: none.
  std::vector<std::string> classes;

  struct Inputs {
    // Samples and failures handed out (one per image, video frame and failed
    // video) plus the input items never reached: delivered + failed + dropped
    // + not_processed.
    std::uint64_t discovered = 0;
    std::uint64_t delivered = 0;
    std::uint64_t failed = 0;
    std::uint64_t dropped = 0;      // batch.drop_last
    std::uint64_t not_processed = 0;  // input items never reached when interrupted (a video counts once)
    std::uint64_t cpu_resized = 0;    // GPU resize: frames over the staging frame budget, resized on the CPU
    std::vector<InputFailure> failures;
  } inputs;

  struct Memory {
    std::string staging_kind;  // effective kind after any fallback
    std::uint64_t staging_bytes = 0;
    std::uint64_t pinned_bytes = 0;
    std::uint64_t pinned_peak = 0;
    std::uint64_t slot_reuses = 0;       // slots handed out again without allocating
    std::uint64_t slot_allocations = 0;  // slots allocated (at start-up)
    std::uint64_t device_bytes = 0;
    int slots = 0;
    double slot_wait_s = 0;
    int fallbacks = 0;
    std::string fallback_reason;
    // Pull API: batches the caller held that moved out of the staging ring
    // to memory of their own because the run needed their slot (the slot got
    // a new buffer, or, zero-copy, the batch a copy; docs/architecture.md,
    // "Holding batches"), and their bytes; 0 for a caller that lets go of
    // each batch in time.
    std::uint64_t held_batch_copies = 0;
    std::uint64_t held_batch_copy_bytes = 0;
  } memory;

  struct Transfer {
    std::string mode = "copy";  // copy, zero_copy, pageable; host backend: host memcpy, or in place (no copy)
    std::uint64_t bytes = 0;
    double seconds = 0;  // sum of the copies' own durations (CUDA events)
    double gb_per_s = 0;
  } transfer;

  struct Device {
    int device = -1;
    std::uint64_t batches = 0;
    std::uint64_t bytes = 0;
    double copy_s = 0;
    double gb_per_s = 0;
  };
  std::vector<Device> devices;  // per device: batches dispatched and transfer figures
  // Where images were decoded (decode.where).
  // Video files by decoder (input.video.where); files = 0 on both without video files.
  struct Video {
    std::uint64_t nvdec_files = 0, nvdec_frames = 0;  // decoded by the GPU's NVDEC engines
    std::uint64_t cpu_files = 0, cpu_frames = 0;      // by libavcodec
    // Why files went to the CPU other than by the balance (the engines
    // cannot take the stream, NVDEC is off, ...), with how many.
    std::vector<std::pair<std::string, std::uint64_t>> cpu_reasons;
    std::uint64_t decoders_made = 0, decoders_reused = 0;  // NVDEC decoders (the process's so far)
    // CPU-decoded frames the transfer copied straight out of the decoders'
    // page-locked buffers (memory.video_frames_mb; the others were copied
    // into the staging by the CPU), the most page-locked MiB those buffers
    // held, the buffers made of ordinary memory past the budget, and the
    // buffers made this run (a Pipeline's later runs reuse the last run's).
    std::uint64_t direct_frames = 0;
    double frame_memory_peak_mib = 0;
    std::uint64_t frame_blocks_pageable = 0;
    std::uint64_t frame_blocks_made = 0;
    // Frames each route's decoders produced, delivered or not (a clip's
    // frames from its keyframe on, the frames a stride passes over, frames
    // decoded again after damage), and those the readers delivered on it:
    // decoded / delivered is the route's decode amplification.
    std::uint64_t cpu_decoded = 0, nvdec_decoded = 0;
    std::uint64_t cpu_delivered = 0, nvdec_delivered = 0;
    // input.video.clips: clips delivered by the readers, and the videos
    // shorter than a clip, by input.video.clips.short.
    std::uint64_t clips = 0, short_skipped = 0, short_padded = 0, short_looped = 0;
    static double amplification(std::uint64_t decoded, std::uint64_t delivered) noexcept {
      return delivered > 0 ? static_cast<double>(decoded) / static_cast<double>(delivered) : 0;
    }
  } video;

  struct Decode {
    std::string where = "cpu";      // "cpu", "gpu" (every JPEG the engines take) or "cpu+gpu" (steered split)
    std::string note;               // why the GPU route is off, when it is
    unsigned jpeg_engines = 0;      // JPEG engines x cores of the first GPU
    // Seconds into the run when the first GPU's decoder was ready: 0 when
    // kept from an earlier run of the Pipeline (or made before this one
    // began), negative when it never was.
    double engines_ready_s = -1;
    std::uint64_t gpu_able = 0;     // JPEGs the engines could take
    // JPEGs the probe's structural checks kept on the CPU route, by reason
    // name (docs/gpu-decode.md, "What the probe checks"); only reasons seen.
    std::vector<std::pair<std::string, std::uint64_t>> cpu_route_reasons;
    std::uint64_t gpu = 0;          // decoded by the engines
    std::uint64_t cpu = 0;          // decoded on the CPU (every format, GPU fallbacks included)
    std::uint64_t gpu_fallbacks = 0;  // rejected by the engines, then decoded on the CPU
    // decode.verify ("markers" or "full"); with full, the JPEGs the entropy
    // check walked and those it kept on the CPU route; with markers, the
    // JPEGs the engines decoded without it (damaged entropy-coded data among
    // them would be delivered).
    std::string verify = "markers";
    std::uint64_t entropy_checked = 0, entropy_to_cpu = 0, unchecked_on_engines = 0;
    std::uint64_t gpu_calls = 0;    // engine calls (decode.gpu_batch: several batches' JPEGs a call)
    double gpu_images_per_s = 0;    // the engines' rate while decoding
    // The engine threads' time (every device's together): in engine calls,
    // of which inside nvJPEG's submission and waiting for the previous call
    // to finish on the GPU, and beside them waiting for the bitstreams' copies.
    double gpu_call_s = 0, gpu_submit_s = 0, gpu_previous_wait_s = 0, gpu_input_wait_s = 0;
    // Of gpu_call_s: re-initialising nvJPEG for a call of another size.
    std::uint64_t gpu_initializations = 0;
    double gpu_initialize_s = 0;
    double cpu_images_per_s = 0;    // the CPU route's rate with all its threads (decode + transform)
    // The steered share of GPU-able JPEGs sent to the engines: the run's
    // first (1, or where the Pipeline's last run ended), then after each
    // steering update. Empty without GPU decode.
    std::vector<double> gpu_share;
  } decode;

  // Per-sample latency: from the moment the source handed the sample out (a
  // pushed item: from push()) until its batch was ready on the GPU (its
  // last kernel done; the host backend: the batch complete). Percentiles
  // over every delivered sample of the run; samples == 0 when none.
  struct Latency {
    std::uint64_t samples = 0;
    double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  } latency;

  std::uint64_t batches = 0;
  std::vector<BatchRecord> batch_records;
  Timeline timeline;
  RunContext context;

  // Inputs were given and not one sample was delivered (every input failed,
  // or batch.drop_last dropped them all): a failed run, though nothing threw
  // (the CLI exits 1, Python raises NothingDelivered; docs/cli.md, "Exit codes").
  // An interrupted run is not one.
  bool nothing_delivered() const noexcept { return !interrupted && inputs.discovered > 0 && inputs.delivered == 0; }

  // Human-readable table (stage rows, inputs, memory, transfer). Past 20
  // failed inputs it says where the rest are: in `json_path` when a JSON
  // report is written there, else how to get one.
  void print_table(std::ostream& os, const std::string& json_path = {}) const;
  // The same as JSON text (rates that could not be measured are null).
  std::string to_json(int indent = 2) const;
  // One self-contained HTML page (inline CSS, SVG and script; nothing
  // fetched): the table's figures and latency percentiles, per-stage
  // utilisation, throughput over time with the stages as lanes on one
  // scale, the staging ring's occupancy, memory, inputs, the failed inputs
  // grouped by path with their reasons, and the run's context.
  std::string to_html() const;
};

}  // namespace imgpipe
