// The run report: per-stage throughput, input accounting, memory and transfer.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace imgpipe {

struct StageReport {
  std::string name;
  bool parallel = false;  // parallel filter (busy time summed over threads)
  int concurrency = 1;    // threads that could run it
  std::uint64_t items = 0;
  double busy_s = 0;      // time inside the stage's work
  double wait_s = 0;      // part of busy_s spent blocked inside the stage (slot event, GPU)
  double bytes = 0;       // bytes produced
  double items_per_s = 0;  // items / busy_s (per-thread rate for parallel stages: see capacity_items_per_s)
  double capacity_items_per_s = 0;  // items_per_s x concurrency: what the stage could sustain alone
  double mb_per_s = 0;     // bytes / busy_s / 1e6 (x concurrency for parallel stages)
  double utilization = 0;  // busy_s / (wall_s x concurrency)
  double idle_s = 0;       // wall_s x concurrency - busy_s: starved by upstream or blocked by the token limit
};

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

struct Report {
  std::string backend;  // "cuda:0 NVIDIA H200 (...)" or "host"
  std::string version;
  bool interrupted = false;
  double wall_s = 0;
  double setup_s = 0;     // device initialisation, discovery and allocation before the first input
  double pipeline_s = 0;  // from the first input to the final synchronise
  double images_per_s = 0;  // delivered / wall_s, including set-up and the final synchronise
  double steady_images_per_s = 0;  // delivered / pipeline_s
  std::vector<StageReport> stages;
  std::string bottleneck;  // name of the stage with the highest utilization
  std::string normalize_where;  // "cpu" or "gpu", as resolved
  std::string resize_where;     // "cpu" or "gpu", as resolved

  // This process's part of the input list: items i with i % world_size == rank.
  struct Shard {
    int rank = 0;
    int world_size = 1;
    std::string origin = "default";  // "config", "RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*", "SLURM_*", "PMI_*" or "default"
  } shard;

  struct Inputs {
    // Samples and failures handed out (one per image, video frame and failed
    // video) plus the input items never reached: delivered + failed + dropped
    // + not_processed.
    std::uint64_t discovered = 0;
    std::uint64_t delivered = 0;
    std::uint64_t failed = 0;
    std::uint64_t dropped = 0;      // batch.drop_last
    std::uint64_t not_processed = 0;  // input items never reached when interrupted (a video counts once)
    std::uint64_t cpu_resized = 0;    // GPU resize: frames too large for the slot, resized on the CPU
    std::vector<InputFailure> failures;
  } inputs;

  struct Memory {
    std::string staging_kind;  // effective kind after any fallback
    std::uint64_t staging_bytes = 0;
    std::uint64_t pinned_bytes = 0;
    std::uint64_t pinned_peak = 0;
    std::uint64_t pool_hits = 0;
    std::uint64_t pool_misses = 0;
    std::uint64_t device_bytes = 0;
    int slots = 0;
    double slot_wait_s = 0;
    int fallbacks = 0;
    std::string fallback_reason;
  } memory;

  struct Transfer {
    std::string mode = "copy";
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

  std::uint64_t batches = 0;
  std::vector<BatchRecord> batch_records;

  // Human-readable table (stage rows, inputs, memory, transfer).
  void print_table(std::ostream& os) const;
  // The same as JSON text.
  std::string to_json(int indent = 2) const;
};

}  // namespace imgpipe
