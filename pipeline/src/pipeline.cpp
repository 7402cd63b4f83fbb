#include "imgpipe/pipeline.hpp"

#include <future>

#include <fmt/format.h>

#include <spdlog/logger.h>

#include "core/diagnostics.hpp"
#include "codecs/image/nvjpeg/engine_cache.hpp"
#include "codecs/video/video_devices.hpp"
#include "pull_run.hpp"
#include "imgpipe/log.hpp"
#include "memory/gpu.hpp"
#include "memory/heap_policy.hpp"
#include "monitor.hpp"
#include "report.hpp"
#include "run_plan.hpp"
#include "setup_log.hpp"
#include "stage_set.hpp"
#include "stages/discovery.hpp"
#include "stages/dump_folder.hpp"
#include "stages/live_input.hpp"
#include "stages/source.hpp"

#ifndef IMGPIPE_VERSION
#define IMGPIPE_VERSION "0.0.0"
#endif

namespace imgpipe {

const char* version() noexcept { return IMGPIPE_VERSION; }

struct Pipeline::Impl {
  Config config;
  std::atomic<bool> stop{false};
  codecs::EngineCache engines;  // GPU JPEG decoders, kept from run to run
  // NVDEC's idle video decoders, kept from run to run while this Pipeline
  // lives (destroyed with the last Pipeline that holds them).
  std::shared_ptr<void> nvdec_decoders = codecs::hold_nvdec_decoders();
  // The last run's staging ring, device buffers and streams, when it ended
  // normally: the next run with the same layout takes them, unless batches
  // of the pull API still hold some of it.
  std::shared_ptr<stages::BatchResources> kept;
  // The last run's video frame pool (the CPU route's decoded frames, pinned
  // once): the next run with the same options takes it and its blocks.
  std::shared_ptr<memory::FramePool> kept_frames;
  std::weak_ptr<detail::PullRun> pulling;  // the stream of start() while it runs
  std::atomic<std::uint64_t> next_epoch{0};  // the epoch the next run gets

  // `reused`: whether the kept ones serve (for the set-up log).
  std::shared_ptr<stages::BatchResources> resources_for(const stages::BatchLayout& layout, bool& reused) {
    std::shared_ptr<stages::BatchResources> r = std::move(kept);
    reused = r && r.use_count() == 1 && r->ring().held() == 0 && r->fits(layout);
    if (reused) {
      r->ring().abandon(false);
      r->begin_run(engines.source());
      return r;
    }
    r.reset();  // frees the old ones first (unless batches still hold them)
    return std::make_shared<stages::BatchResources>(layout, engines.source());
  }

  // After resources_for (a reused ring lets go of the last run's frames):
  // the kept pool when nothing else holds it and its options are the run's.
  std::shared_ptr<memory::FramePool> frames_for(const std::optional<memory::FramePoolOptions>& options,
                                                bool& reused) {
    std::shared_ptr<memory::FramePool> p = std::move(kept_frames);
    reused = options && p && p.use_count() == 1 && p->options() == *options;
    if (reused) {
      p->begin_run();
      return p;
    }
    p.reset();
    return options ? std::make_shared<memory::FramePool>(*options) : nullptr;
  }

  // Before a run: the last pull run's batches that the caller keeps move out
  // of its staging, which this run then reuses (PullRun::hand_back_resources).
  // A move that fails (no memory for the slot's new buffer) leaves this run
  // to make staging of its own, as it would have.
  static void hand_back(detail::PullRun& last) noexcept {
    try {
      last.hand_back_resources();
    } catch (const std::exception&) {
    }
  }

  // run() and start(): `hooks.handoff` set for the pull API; `on_resources`
  // sees the resources before the first input.
  Report run(const BatchCallback& callback, const RunOptions& options, detail::RunHooks hooks,
             const std::function<void(const std::shared_ptr<stages::BatchResources>&)>& on_resources);
};

Pipeline::Pipeline(Config config) : impl_(std::make_unique<Impl>()) {
  config.validate();
  impl_->config = std::move(config);
  impl_->engines.warm_up(detail::wanted_decoders(impl_->config));
}
Pipeline::~Pipeline() {
  // The caller's thread keeps its CUDA device and context: the kept
  // resources and decoders are freed inside the guard's scope.
  const gpu::CurrentDeviceGuard keep;
  // A stream still running uses this Pipeline's settings and stop flag: it
  // ends first (the batches its caller holds stay valid).
  if (impl_)
    if (auto p = impl_->pulling.lock()) p->shut_down();
  impl_.reset();
}
Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;

void Pipeline::request_stop() noexcept { impl_->stop.store(true, std::memory_order_relaxed); }
void Pipeline::set_epoch(std::uint64_t epoch) noexcept { impl_->next_epoch.store(epoch); }
std::uint64_t Pipeline::epoch() const noexcept { return impl_->next_epoch.load(); }
const Config& Pipeline::config() const noexcept { return impl_->config; }

namespace {

// A stop requested before or during a run applies to it (a signal can arrive
// while inputs are being discovered); the request is spent when the run
// ends, however it ends, so the next run starts afresh.
struct ClearStopOnExit {
  std::atomic<bool>& stop;
  ~ClearStopOnExit() { stop.store(false); }
};

// After check_inputs() passed: this process's shard is empty (fewer inputs
// than processes), or the inputs went away since the check.
Error no_inputs(const InputConfig& in, const stages::ShardSpec& shard) {
  std::string paths;
  for (const auto& p : in.paths) paths += (paths.empty() ? "'" : ", '") + p + "'";
  if (shard.world_size > 1)
    return Error("no inputs for shard rank " + std::to_string(shard.rank) + " of " +
                 std::to_string(shard.world_size) + " (" + shard.origin + "): fewer inputs than processes");
  return Error("no inputs found in input.paths (" + (paths.empty() ? std::string("empty") : paths) + ")");
}

}  // namespace

InputCounts count_inputs(const InputConfig& input) {
  stages::check_inputs(input);
  InputCounts c;
  for (const auto& item : stages::discover_all_inputs(input, &c.classes)) {
    if (!item.error.empty()) c.failures.push_back({item.path, item.frame, item.error});
    else if (item.video && stages::is_live_input(item.path)) ++c.streams;
    else if (item.video) ++c.videos;
    else ++c.images;
  }
  return c;
}

// checked inputs -> plan -> inputs -> resources -> filter chain -> report.
Report Pipeline::Impl::run(const BatchCallback& callback, const RunOptions& options, detail::RunHooks hooks,
                           const std::function<void(const std::shared_ptr<stages::BatchResources>&)>& on_resources) {
  // The stages count frames: with clips, a batch's frames (frames_config).
  const Config frames_cfg = detail::frames_config(config);
  const Config& cfg = frames_cfg;
  const ClearStopOnExit clear_stop{stop};
  const bool pushed = options.source != nullptr;
  // A missing path is a config error, found before any work (start() checked already).
  if (!pushed && !hooks.checked) stages::check_inputs(cfg.input);
  detail::RunTimes times;
  detail::SetupLog setup(times.start);  // --log-level debug: each set-up step as it ends
  std::string host_why;  // warned once the plan has passed its checks
  const std::vector<int> devices = detail::select_devices(options.device.value_or(cfg.devices), &host_why);
  // The diagnostics, read once for the run (a malformed one fails it here).
  Diagnostics diagnostics = Diagnostics::from_environment();
  setup.step("devices", detail::describe_devices(devices, host_why));
  for (const int d : devices)
    if (d >= 0) setup.step("waits", fmt::format("device {}: {}", d, gpu::set_wait_policy(d, diagnostics.cuda_wait)));
  // Discovery first: the plan depends on what the inputs are (a run of
  // videos alone makes no JPEG engines and converts its frames on the GPU).
  const std::uint64_t epoch = options.epoch.value_or(next_epoch.load());
  next_epoch.store(epoch + 1);
  const stages::InputList inputs = pushed ? stages::InputList{} : stages::build_input_list(cfg.input, epoch);
  if (inputs.items.empty() && !pushed) throw no_inputs(cfg.input, inputs.shard);
  detail::check_clip_inputs(cfg, inputs.items);
  const detail::InputMix mix = detail::input_mix(inputs.items, pushed);
  setup.step("discovery", pushed ? "pushed inputs, counted as they come" : std::to_string(inputs.items.size()) + " inputs");
  const detail::RunPlan plan = [&] {
    const bool jpeg = cfg.decode.where != Where::cpu && mix.images;
    detail::RunPlan p = detail::RunPlan::make(cfg, devices, detail::HostFacts::of_this_machine(devices.front(), jpeg),
                                              pushed, mix);
    p.diagnostics = std::move(diagnostics);
    // A pulled batch the caller holds keeps its slot's buffer when the run
    // needs the slot (PullRun::move_out_one): not the staging slot itself.
    if (hooks.handoff) p.layout.batch_in_slot = false;
    return p;
  }();
  setup.step("plan", detail::describe_plan(plan));
  // libavcodec's tables, made afresh for every file, reuse freed heap pages.
  if (mix.videos) setup.step("heap", memory::keep_freed_heap(plan.diagnostics.heap));
  setup.step("pages", memory::huge_pages_policy(plan.diagnostics.huge_pages));
  if (plan.tokens < plan.wanted_tokens)
    imgpipe::logger()->info(
        "frames in flight limited to {} (staging.slots {} x batch.size {}); raise staging.slots for more", plan.tokens,
        cfg.staging.slots, cfg.batch.size);
  // The dump folder is checked (and, with sink.overwrite, cleared) before any work starts.
  if (cfg.sink.type == SinkType::dump && !hooks.checked)
    stages::prepare_dump_folder(cfg.sink, stages::shard_of(cfg.input));
  if (!host_why.empty()) detail::warn_host_backend(host_why);  // the config has passed its checks
  gpu::set_device(plan.devices.front());
  setup.step("checks", "the dump folder and the backend's warning");
  bool reused = false;
  std::shared_ptr<stages::BatchResources> kept_or_new = resources_for(plan.layout, reused);
  stages::BatchResources& resources = *kept_or_new;
  setup.resources(plan, resources, reused);
  if (on_resources) on_resources(kept_or_new);
  bool frames_reused = false;
  hooks.video_frames = frames_for(detail::video_frame_options(plan, resources), frames_reused);
  if (hooks.video_frames) {
    const memory::FramePool::Figures f = hooks.video_frames->figures();
    setup.step("video frames", frames_reused ? fmt::format("the pool kept from the last run ({:.0f} MiB page-locked)",
                                                           static_cast<double>(f.page_locked_bytes) / (1 << 20))
                                             : std::string("a new pool (its blocks are made as the first frames decode)"));
  }

  hooks.live = {options.source, std::chrono::milliseconds(cfg.batch.timeout_ms), cfg.batch.size};
  detail::StageSet stages(cfg, plan, inputs, resources, callback, stop, hooks);
  setup.step("stages", std::to_string(plan.threads) + " worker threads to start with the first inputs (oneTBB)");
  times.pipeline = detail::RunTimes::clock::now();
  setup.total(times.pipeline);
  Timeline timeline;
  {
    detail::RunMonitor monitor(stages, resources.ring(), inputs.items.size(), options, times.pipeline);
    detail::run_filter_chain(plan, stages);
    resources.finish();
    stages.transfer.finish();
    timeline = monitor.finish();
  }
  times.end = detail::RunTimes::clock::now();
  Report report = detail::assemble_report(cfg, plan, stages, resources, times, stop.load());
  report.shard = {inputs.shard.rank,
                  inputs.shard.world_size,
                  inputs.shard.origin,
                  std::string(enum_name(shard_remainder_names, cfg.input.shard_remainder)),
                  inputs.remainder.padded,
                  inputs.remainder.dropped};
  report.epoch = epoch;
  report.classes = inputs.classes;
  report.timeline = std::move(timeline);
  report.latency = stages.sink.latency().summary();
  kept = std::move(kept_or_new);  // a run that threw leaves nothing to keep
  kept_frames = std::move(hooks.video_frames);
  return report;
}

Report Pipeline::run(const BatchCallback& callback, const RunOptions& options) {
  // The run makes its devices current on this thread (its stages may run
  // here too): the caller's device and context come back, "none" included.
  const gpu::CurrentDeviceGuard keep;
  if (auto p = impl_->pulling.lock()) {
    if (!p->done()) throw std::logic_error("Pipeline::run: a stream of this Pipeline (start()) is still running");
    impl_->hand_back(*p);
  }
  return impl_->run(callback, options, {}, {});
}

void Pipeline::check(const RunOptions& options) const {
  if (!options.source) stages::check_inputs(impl_->config.input);
  std::string host_why;  // the host backend chosen for want of a GPU: the run warns
  (void)detail::select_devices(options.device.value_or(impl_->config.devices), &host_why);
}

std::optional<std::uint64_t> Pipeline::planned_batches(std::string* why_unknown) const {
  const Config& cfg = impl_->config;
  stages::check_inputs(cfg.input);
  const stages::InputList list = stages::build_input_list(cfg.input, epoch());
  std::uint64_t images = 0, videos = 0, live = 0;
  for (const stages::InputItem& item : list.items) {
    if (!item.error.empty()) continue;  // reported, never delivered
    if (item.video && stages::is_live_input(item.path)) ++live;
    else if (item.video) ++videos;
    else ++images;
  }
  if (const ClipConfig& c = cfg.input.video.clips; c.on() && live == 0 && images == 0 && c.place != ClipPlace::every) {
    const std::uint64_t clips = videos * static_cast<std::uint64_t>(c.per_video);  // every video gives per_video
    const auto size = static_cast<std::uint64_t>(cfg.batch.size);
    return cfg.batch.drop_last ? clips / size : (clips + size - 1) / size;
  }
  if (videos + live > 0) {
    if (why_unknown != nullptr)
      *why_unknown = fmt::format("the inputs hold {} video file(s) and {} stream(s) or camera(s): their frames "
                                 "are counted only by decoding them", videos, live);
    return std::nullopt;
  }
  const auto size = static_cast<std::uint64_t>(cfg.batch.size);
  return cfg.batch.drop_last ? images / size : (images + size - 1) / size;
}

BatchStream Pipeline::start(const RunOptions& options) {
  if (auto p = impl_->pulling.lock()) {
    if (!p->done()) throw std::logic_error("Pipeline::start: a stream of this Pipeline is still running");
    impl_->hand_back(*p);
  }
  // What run() checks before any work, here, so that it throws from start().
  check(options);
  if (impl_->config.sink.type == SinkType::dump)
    stages::prepare_dump_folder(impl_->config.sink, stages::shard_of(impl_->config.input));
  auto run = std::make_shared<detail::PullRun>(impl_->stop);
  Impl* impl = impl_.get();
  run->launch([impl, options](detail::PullRun& r) {
    detail::RunHooks hooks;
    hooks.checked = true;
    hooks.handoff = [&r](stages::BatchSlot& b) { r.hand_over(b); };
    return impl->run({}, options, std::move(hooks),
                     [&r](const std::shared_ptr<stages::BatchResources>& res) { r.set_resources(res); });
  });
  impl_->pulling = run;
  BatchStream stream;
  stream.run_ = std::move(run);
  return stream;
}

}  // namespace imgpipe
