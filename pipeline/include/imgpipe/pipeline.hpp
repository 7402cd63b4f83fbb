// The pipeline: discover inputs, decode and transform them in parallel (JPEGs
// also on the GPU's JPEG engines: Config::decode.where), stage batches through
// write-combined pinned memory and deliver them on the GPU.
//
// The public API is this header and the value types it includes (config.hpp,
// batch.hpp, report.hpp, types.hpp, error.hpp: the core layer), plus the
// host memory resources (imgpipe/memory/resources.hpp). Link imgpipe::imgpipe.
// Inside, run() is plan (where each step runs, every size) -> resources
// (ring, slots, device buffers) -> oneTBB filter chain of stages -> report.
//
//   imgpipe::Pipeline p(imgpipe::Config::from_yaml_file("pipeline.yaml"));
//   imgpipe::Report r = p.run([](const imgpipe::DeviceBatch& b) { ... });
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "imgpipe/batch.hpp"
#include "imgpipe/config.hpp"
#include "imgpipe/report.hpp"

namespace imgpipe {

struct RunOptions {
  // Overrides config.devices (e.g. from --device).
  std::optional<DeviceSelection> device;
  // Progress on stderr while the run lasts: done/total, share, rate, ETA and
  // failures. redraw: one line redrawn in place (for a terminal); lines: a
  // plain line every progress_interval_s and one at the end (for logs: srun,
  // nohup, CI). The CLI picks redraw on a terminal, lines otherwise.
  enum class Progress { off, redraw, lines };
  Progress progress = Progress::off;
  double progress_interval_s = 5;
  // The stages' counters, the staging ring's occupancy and the process's
  // memory are sampled every timeline_interval_s into Report::timeline, on
  // one thread reading atomics (0: not sampled).
  double timeline_interval_s = 0.1;
};

class Pipeline {
 public:
  // Validates the config (throws ConfigError).
  explicit Pipeline(Config config);
  static Pipeline from_yaml_file(const std::string& path) { return Pipeline(Config::from_yaml_file(path)); }
  static Pipeline from_yaml_string(const std::string& yaml) { return Pipeline(Config::from_yaml_string(yaml)); }
  ~Pipeline();
  Pipeline(Pipeline&&) noexcept;
  Pipeline& operator=(Pipeline&&) noexcept;

  // Runs over every input once and returns the report. Blocks. First, before
  // any work (before a GPU is touched), it checks what the config names as
  // inputs and throws ConfigError when an entry of input.paths does not exist
  // or a pattern matches nothing (key "input.paths", naming each such path;
  // relative paths resolve against the current directory), when input.list
  // cannot be read (key "input.list"), or when no input would be found at all
  // (key "input.paths"). The callback (optional) sees every batch after the
  // configured sink has. Bad inputs are
  // reported (on_error: skip) or end the run with InputError (fail). Other
  // failures (CUDA, I/O of the sink, an exception from the callback) drain
  // the pipeline, free every buffer and propagate. After request_stop() the
  // in-flight frames finish, and the report says interrupted. A dump sink's
  // folder that holds anything (sink.overwrite false) is a ConfigError
  // before any work; with sink.overwrite the earlier run's batch files and
  // manifests there are removed first.
  Report run(const BatchCallback& callback = {}, const RunOptions& options = {});

  // Thread- and async-signal-safe: asks the current (or the next) run() to
  // stop soon; the request is spent when that run returns.
  void request_stop() noexcept;

  const Config& config() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a run of a config would take as inputs: input.paths and input.list as
// discovered, before input.loop, input.shuffle and the shard apply.
struct InputCounts {
  std::size_t images = 0;
  std::size_t videos = 0;  // files whose frames a run delivers (a video extension)
  // Named but already known to fail (an input.list entry that does not exist,
  // a folder that cannot be listed, a dangling symlink); a run reports each.
  std::vector<InputFailure> failures;
  std::size_t total() const noexcept { return images + videos + failures.size(); }
};

// The checks Pipeline::run() starts with (same ConfigError), then the whole
// discovery, which lists every folder named: slow on very large trees.
InputCounts count_inputs(const InputConfig& input);

// Library version, "0.1.0".
const char* version() noexcept;

}  // namespace imgpipe
