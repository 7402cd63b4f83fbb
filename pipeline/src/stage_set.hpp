// The stages of one run and the oneTBB filter chain that connects them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "imgpipe/batch.hpp"
#include "imgpipe/config.hpp"
#include "memory/frame_pool.hpp"
#include "run_plan.hpp"
#include "stages/decode.hpp"
#include "stages/gpu_ops.hpp"
#include "stages/pack.hpp"
#include "stages/probe.hpp"
#include "stages/read.hpp"
#include "stages/sink.hpp"
#include "stages/source.hpp"
#include "stages/transfer.hpp"
#include "stages/transform.hpp"

namespace imgpipe::detail {

// What a run adds to the configured stages: a push source with the batch
// timeout (stages::LiveOptions), and the pull API's hand-off at the sink.
struct RunHooks {
  stages::LiveOptions live;
  stages::BatchHandoff handoff;
  bool checked = false;  // the inputs and the dump folder were checked already (start())
  // The pool the CPU route decodes video frames into (video_frame_options;
  // null without video files): the Pipeline keeps it from run to run.
  std::shared_ptr<memory::FramePool> video_frames;
};

// The options of the run's video frame pool; none without video files.
std::optional<memory::FramePoolOptions> video_frame_options(const RunPlan& plan,
                                                            const stages::BatchResources& resources);

struct StageSet {
  StageSet(const Config& cfg, const RunPlan& plan, const stages::InputList& inputs,
           stages::BatchResources& resources, const BatchCallback& callback, const std::atomic<bool>& stop,
           const RunHooks& hooks = {});

  codecs::RouteSteering steering;
  codecs::GpuDecodeMeter gpu_decode;
  std::unique_ptr<codecs::VideoRouter> video_router;  // null without video files
  // The blocks the CPU route decodes video frames into (RunHooks::video_frames;
  // page-locked per RunPlan::video_frames_bytes). Frames keep it alive past
  // the run.
  std::shared_ptr<memory::FramePool> video_frames;
  // Each failed input said as it happens (the report lists them all).
  stages::FailureLog failure_log;
  stages::Source source;
  stages::Read read;
  std::unique_ptr<stages::Probe> probe;  // null without GPU decode (JPEGs stay on the CPU)
  stages::Decode decode;
  stages::Transform transform;
  stages::Pack pack;
  stages::PackCopy pack_copy;
  stages::Transfer transfer;
  stages::GpuOps gpu_ops;
  stages::Sink sink;
  std::atomic<std::uint64_t> finished{0};  // inputs through the sink (delivered or failed)
  std::atomic<std::uint64_t> failed{0};    // of those, failed before the GPU ops stage
  // What the per-sample stages count on this run: "images", "frames" (every
  // input a video) or "samples" (both).
  std::string sample_unit = "images";
  bool clip_run = false;  // input.video.clips: the samples are clips
  bool has_videos = false;
  bool live = false;  // inputs pushed (RunHooks::live) or batches cut by batch.timeout_ms

  // Every stage's statistics, in pipeline order: the video decoders' rows
  // first with video inputs (stages::VideoDecodeStats), the probe only with
  // GPU decode.
  std::vector<const stages::StageStats*> stats() const;
  // The rows the report shows, once the run is over: stats() less the NVDEC
  // decoder's row when it decoded nothing.
  std::vector<const stages::StageStats*> reported_stats() const;
  // The threads that could run the stage: a video decoder's row, the videos
  // that decoded at once on its route (input.video.interleave, at most the
  // videos it decoded); any other, `threads`.
  int concurrency(const stages::StageStats& st, int threads) const;
  // Inputs failed so far: at the sink, plus those the GPU ops stage dropped. Any thread.
  std::uint64_t failed_so_far() const noexcept { return failed.load() + gpu_ops.failed_count(); }
};

// Runs the stages as a oneTBB parallel_pipeline with plan.tokens tokens in
// flight on plan.threads threads, until the source is exhausted or stopped.
// An exception in any stage drains the pipeline and propagates.
void run_filter_chain(const RunPlan& plan, StageSet& s);

}  // namespace imgpipe::detail
