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
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "imgpipe/batch.hpp"
#include "imgpipe/config.hpp"
#include "imgpipe/push_source.hpp"
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
  // Inputs pushed by the application instead of input.paths and input.list
  // (which are then not read, nor checked). The run ends when the source is
  // closed and drained, or when it is stopped.
  std::shared_ptr<PushSource> source;
  // The epoch of this run (input.shuffle's order is drawn from the seed and
  // the epoch); unset: the Pipeline's next one (Pipeline::epoch()).
  std::optional<std::uint64_t> epoch;
};

namespace detail {
struct PullRun;
struct HeldBatch;
}

// A batch the caller holds (the pull API: BatchStream::next()), a value to
// its holder: any number may be held. While the handle lives, the batch's
// values stay valid and unchanged. At first they are in its staging slot's
// buffers (zero copy). When the run needs that slot (the caller holds so
// many batches that no other could come), next() moves the oldest held
// batch out of the ring (Report::memory.held_batch_copies counts these;
// docs/architecture.md, "Holding batches"): the batch keeps the slot's
// buffer that holds its data (in every transfer mode: `data` is never the
// host staging slot itself), so `data` stays where it was, nothing is
// copied, and the slot gets a new buffer. `ready` then names an event of
// the batch's own. Work the caller enqueues on `stream` is ordered before
// the slot's reuse (and before a move); work on other streams must wait on
// `ready` first, and finish before release() (or be named to it). A handle
// may outlive its BatchStream and its Pipeline: the memory is freed when the
// last handle is gone. Move-only; any thread.
class Batch {
 public:
  Batch() noexcept;
  ~Batch();  // release()
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  explicit operator bool() const noexcept { return batch_ != nullptr; }
  // The batch (device pointer, shape, stream, ready event, samples). Throws
  // std::logic_error on an empty or released handle.
  const DeviceBatch& get() const;
  const DeviceBatch& operator*() const { return get(); }
  const DeviceBatch* operator->() const { return &get(); }

  // Gives the slot back now (the destructor does it otherwise). `after`: a
  // cudaStream_t of the caller's; the slot is reused only once the work
  // enqueued on it so far is done. Idempotent. Throws CudaError on a sticky
  // CUDA error.
  void release(CUstream_st* after = nullptr);

  // Does nothing: kept for callers that pin a batch whose address something
  // outside keeps (a DLPack tensor). No batch's `data` changes address.
  void pin();
  // Whether next() moved this batch out of the staging ring (its memory is
  // its own now).
  bool moved_out() const noexcept;

 private:
  friend struct detail::PullRun;
  std::shared_ptr<detail::PullRun> run_;
  std::shared_ptr<detail::HeldBatch> held_;
  const DeviceBatch* batch_ = nullptr;
};

// A run whose batches the caller pulls (Pipeline::start()). The stages run
// on their own threads while the caller consumes; at most staging.slots
// batches are in the ring at once (held by the caller or waiting in next()),
// so a slow consumer slows the pipeline down instead of making it buffer;
// held batches beyond that move out of the ring (see Batch).
//
//   auto stream = pipeline.start();
//   while (imgpipe::Batch b = stream.next()) { use(b->data, b->shape, b->stream); }
//   imgpipe::Report r = stream.report();
class BatchStream {
 public:
  BatchStream() noexcept;
  // stop(): the in-flight frames finish, batches not taken are released, and
  // the run's threads are joined; a run error not seen by next() is dropped.
  ~BatchStream();
  BatchStream(BatchStream&&) noexcept;
  BatchStream& operator=(BatchStream&&) noexcept;

  // The next batch in input order, blocking until it is ready; an empty
  // handle at the end of the run (or after stop()). Rethrows, once the
  // batches before it were taken, what ended the run (InputError under
  // on_error: fail, CudaError, ...). When the batches the caller holds keep
  // every staging slot, the oldest moves out of the ring (see Batch). The
  // GIL-free wait of a binding: any thread, one caller at a time.
  Batch next();
  // The same, waiting at most `timeout`: std::nullopt when no batch came in
  // that time (the run goes on), else what next() returns. For callers that
  // must stay responsive while they wait (a binding that checks for Ctrl-C).
  std::optional<Batch> next_for(std::chrono::milliseconds timeout);

  // Asks the run to end soon (as Pipeline::request_stop()): the frames in
  // flight finish, next() returns them, then an empty handle. Any thread.
  void stop() noexcept;
  // Whether the run has ended (next() has nothing more, or will rethrow).
  bool done() const noexcept;

  // The run's report. Only at the end: after next() returned an empty handle
  // or threw, or after stop() (then it waits for the run's end, releasing
  // the batches not taken). Throws std::logic_error before that.
  const Report& report();

  // Iteration: for (imgpipe::Batch& b : stream) {...}
  class iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(BatchStream* s) : s_(s) { ++*this; }
    Batch& operator*() noexcept { return current_; }
    iterator& operator++() {
      current_ = s_->next();
      if (!current_) s_ = nullptr;
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(const iterator& o) const noexcept { return s_ == o.s_; }

   private:
    BatchStream* s_ = nullptr;
    Batch current_;
  };
  iterator begin() { return iterator(this); }
  iterator end() noexcept { return iterator(); }

 private:
  friend class Pipeline;
  std::shared_ptr<detail::PullRun> run_;
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

  // The same run, with the batches pulled by the caller instead of pushed
  // to a callback (see BatchStream). The checks run() starts with throw
  // here, before any thread starts; everything later reaches next(). One
  // run at a time per Pipeline: throws std::logic_error while an earlier
  // stream of this Pipeline is still running.
  BatchStream start(const RunOptions& options = {});

  // The checks a run (run() and start()) begins with, without running: the
  // inputs named exist (unless options.source pushes them; ConfigError with
  // key "input.paths" or "input.list", as run() says) and the devices asked
  // for (options.device, else config.devices) exist (ConfigError, key
  // "devices"). Python's Pipeline calls it at construction, as the CLI
  // checks before a run. The devices' check asks CUDA for the GPUs' count.
  void check(const RunOptions& options = {}) const;

  // The number of batches the next run (epoch()) delivers when every input
  // decodes: this process's share of the discovered images (after
  // input.loop and the shard's remainder rule), batch.size at a time, the
  // last one short unless batch.drop_last. Inputs already known to fail
  // (an input.list entry that does not exist) are left out; files found
  // damaged while decoding make a run deliver fewer. With input.video.clips
  // placed random or uniform, the samples are per_video clips of each video
  // file (a video shorter than a clip, with short: skip, gives none). nullopt
  // when it cannot be known before decoding (videos' frames, clips placed
  // every, streams, cameras), with the
  // reason in *why_unknown. Runs the whole discovery (slow on a very large
  // tree) and the inputs' check (ConfigError as run()).
  std::optional<std::uint64_t> planned_batches(std::string* why_unknown = nullptr) const;

  // Thread- and async-signal-safe: asks the current (or the next) run() to
  // stop soon; the request is spent when that run returns.
  void request_stop() noexcept;

  // Epochs: a kept Pipeline's runs (run() and start()) are epochs 0, 1, 2,
  // ...; each run takes epoch() (or RunOptions::epoch) and the next one
  // follows it. set_epoch(e) makes the next run epoch e, as a
  // DistributedSampler's set_epoch does: every rank that sets the same epoch
  // gets its shard of the same permutation (input.shuffle), and a new epoch
  // draws a new one. Not while a run is being started.
  void set_epoch(std::uint64_t epoch) noexcept;
  std::uint64_t epoch() const noexcept;

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
  std::size_t streams = 0;  // stream URLs and cameras (camera:N): not opened here, their frame counts unknown
  // Named but already known to fail (an input.list entry that does not exist,
  // a folder that cannot be listed, a dangling symlink); a run reports each.
  std::vector<InputFailure> failures;
  // input.labels: folders: the class names a run gives (Report::classes),
  // known before running (e.g. to size a classifier's output).
  std::vector<std::string> classes;
  std::size_t total() const noexcept { return images + videos + streams + failures.size(); }
};

// The checks Pipeline::run() starts with (same ConfigError), then the whole
// discovery, which lists every folder named: slow on very large trees.
InputCounts count_inputs(const InputConfig& input);

// Library version, "0.1.0".
const char* version() noexcept;

}  // namespace imgpipe
