// GPU ops stage (serial, in order): enqueues the batch's kernels on its
// device's stream after the copy — the fused resize + normalise kernel when
// the GPU resizes, the normalise kernel when only normalisation runs there —
// or on the host backend runs their CPU twins over the batch in parallel.
// Records the batch's ready event either way.
//
// With GPU decode, the batches' JPEGs (BatchSlot::jpegs) are first decoded by
// the device's JPEG engines from the copied slots into the device frame area;
// the fused kernel then resizes and normalises every sample, GPU-decoded or
// staged by the CPU, in batch order. The engines decode larger calls faster
// (docs/benchmarks.md#engine-call-size), so batches are gathered
// until they carry decode.gpu_batch JPEGs between them; the group's engine
// calls go to the engine scheduler (codecs/image/nvjpeg/engine_scheduler.hpp), which
// makes them on a thread per device, and the stage passes the tokens on
// meanwhile. Once a group's calls are done its batches get their kernels
// and are passed on together, in order (chained by BatchSlot::then), on a
// later token; the end of the input and batch.timeout_ms cuts wait for
// every call and pass everything on. A JPEG the engines reject is read again
// and decoded on the CPU (its frame uploaded in its place); one the CPU
// rejects too is reported (path and reason) and leaves its batch.
#pragma once

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "codecs/route/decode_meter.hpp"
#include "codecs/image/nvjpeg/engine_scheduler.hpp"
#include "imgpipe/config.hpp"
#include "imgpipe/report.hpp"
#include "kernels/fused.hpp"
#include "kernels/normalize.hpp"
#include "batch_slot.hpp"
#include "failure_log.hpp"
#include "frame_ring.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class GpuOps : public Stage<GpuOps, Takes::batches_and_ends> {
 public:
  enum class Op { none, normalize, resize_normalize };
  // `params` describes one image at the target size (src/dst/batch are set
  // per batch); `resize` the fit, interpolation and padding for resize_normalize.
  GpuOps(const kernels::NormalizeParams& params, const kernels::ResizeBatch& resize, Op work);
  ~GpuOps();
  // GPU decode: counts into `meter`; `cpu_decode` decodes the JPEGs the
  // engines reject; `on_error` as input.on_error for those the CPU rejects
  // too. `group` as decode.gpu_batch: batches are gathered until they carry
  // at least that many JPEGs, or `max_held` batches are gathered, or the
  // next one's frames would not fit the frame area with theirs; 0: each
  // batch alone. At most kCallsAhead groups wait for their engine call
  // besides the one being gathered: the stage holds fewer than
  // (kCallsAhead + 1) x max_held batches (RunPlan gives the ring that many
  // more slots, or the packer would wait for a held one). `trace_calls`:
  // the IMGPIPE_TRACE_CALLS diagnostic's file (empty: no trace), where the
  // stage appends its engine calls' timeline (codecs::CallTrace) when it goes.
  static constexpr int kCallsAhead = 2;
  void enable_gpu_decode(codecs::GpuDecodeMeter& meter, const DecodeConfig& cpu_decode, OnError on_error,
                         int group = 0, int max_held = 1, int cycle_batches = 0, const std::string& trace_calls = {});
  // Takes the token's batch (if any); passes on, chained from w.batch, the
  // batches whose kernels it enqueued.
  Tally run(Work& w);

  // Inputs that failed here (GPU and CPU decode both refused them), in order.
  const std::vector<InputFailure>& failures() const noexcept { return failures_; }
  // Where each failure is also said as it happens (none: only recorded).
  void set_failure_log(FailureLog* log) noexcept { log_ = log; }
  // Their number so far; any thread (the progress line).
  std::uint64_t failed_count() const noexcept { return failed_count_.load(std::memory_order_relaxed); }
  // Engine calls made (the report's figure).
  std::uint64_t engine_calls() const noexcept { return engines_ ? engines_->calls() : 0; }

 private:
  struct Use;     // a range of a frame area, free once the kernels that read it are done
  struct Area;    // a device's frame ring
  struct Call;    // one engine call and the batches its images belong to
  struct Job;     // a group of batches and its calls
  Area& area_of(DeviceContext& dev);
  bool fits_gathering(const BatchSlot& b) const;
  void submit();
  std::unique_ptr<Call> make_call(DeviceContext& dev, const std::vector<BatchSlot*>& batches);
  void finish_front();
  bool front_done();
  std::string decode_on_cpu(const DeviceContext& dev, BatchSlot& b, const GpuJpegSample& j, std::uint8_t* d_frame);
  std::size_t launch(BatchSlot& b, const Call* call);
  kernels::NormalizeParams params_;
  kernels::ResizeBatch resize_;
  Op work_;
  codecs::GpuDecodeMeter* meter_ = nullptr;
  DecodeConfig cpu_decode_;
  OnError on_error_ = OnError::skip;
  int group_ = 0;
  std::size_t max_held_ = 1;
  int cycle_batches_ = 0;  // > 0: groups end at batch numbers cycle_batches_ - 1 modulo it
  std::vector<BatchSlot*> gathering_;  // in batch order
  std::size_t gathering_jpegs_ = 0;
  std::vector<BatchSlot*> out_;  // what run() passes on, reused
  std::size_t out_bytes_ = 0;
  std::vector<std::unique_ptr<Area>> areas_;
  std::deque<std::unique_ptr<Job>> jobs_;  // submitted, in order
  std::vector<InputFailure> failures_;
  FailureLog* log_ = nullptr;
  std::atomic<std::uint64_t> failed_count_{0};
  std::vector<unsigned char> bytes_;  // CPU fallback
  cv::Mat frame_;
  std::unique_ptr<codecs::CallTrace> trace_;  // IMGPIPE_TRACE_CALLS
  std::string trace_path_;
  std::unique_ptr<codecs::EngineScheduler> engines_;  // last: joined before the jobs they work on go
};

}  // namespace imgpipe::stages
