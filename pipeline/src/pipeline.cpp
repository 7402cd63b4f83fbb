#include "imgpipe/pipeline.hpp"

#include <future>

#include <spdlog/logger.h>

#include "engine_cache.hpp"
#include "imgpipe/log.hpp"
#include "memory/gpu.hpp"
#include "monitor.hpp"
#include "report.hpp"
#include "run_plan.hpp"
#include "stage_set.hpp"
#include "stages/dump_folder.hpp"
#include "stages/source.hpp"

#ifndef IMGPIPE_VERSION
#define IMGPIPE_VERSION "0.0.0"
#endif

namespace imgpipe {

const char* version() noexcept { return IMGPIPE_VERSION; }

struct Pipeline::Impl {
  Config config;
  std::atomic<bool> stop{false};
  detail::EngineCache engines;  // GPU JPEG decoders, kept from run to run
  // The last run's staging ring, device buffers and streams, when it ended
  // normally: the next run with the same layout takes them.
  std::unique_ptr<stages::BatchResources> kept;

  std::unique_ptr<stages::BatchResources> resources_for(const stages::BatchLayout& layout) {
    std::unique_ptr<stages::BatchResources> r = std::move(kept);
    if (r && r->fits(layout)) {
      r->begin_run(engines.source());
      return r;
    }
    r.reset();  // frees the old ones first
    return std::make_unique<stages::BatchResources>(layout, engines.source());
  }
};

Pipeline::Pipeline(Config config) : impl_(std::make_unique<Impl>()) {
  config.validate();
  impl_->config = std::move(config);
  impl_->engines.warm_up(impl_->config);
}
Pipeline::~Pipeline() = default;
Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;

void Pipeline::request_stop() noexcept { impl_->stop.store(true, std::memory_order_relaxed); }
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
  for (const auto& item : stages::discover_all_inputs(input)) {
    if (!item.error.empty()) c.failures.push_back({item.path, item.frame, item.error});
    else if (item.video && stages::is_live_input(item.path)) ++c.streams;
    else if (item.video) ++c.videos;
    else ++c.images;
  }
  return c;
}

// checked inputs -> plan -> inputs -> resources -> filter chain -> report.
Report Pipeline::run(const BatchCallback& callback, const RunOptions& options) {
  const Config& cfg = impl_->config;
  const ClearStopOnExit clear_stop{impl_->stop};
  stages::check_inputs(cfg.input);  // a missing path is a config error, found before any work
  detail::RunTimes times;
  const std::vector<int> devices = detail::select_devices(options.device.value_or(cfg.devices));
  const detail::RunPlan plan = detail::RunPlan::make(
      cfg, devices, detail::HostFacts::of_this_machine(devices.front(), cfg.decode.where != Where::cpu));
  if (plan.tokens < plan.wanted_tokens)
    imgpipe::logger()->info(
        "frames in flight limited to {} (staging.slots {} x batch.size {}); raise staging.slots for more", plan.tokens,
        cfg.staging.slots, cfg.batch.size);
  // The dump folder is checked (and, with sink.overwrite, cleared) before any work starts.
  if (cfg.sink.type == SinkType::dump) stages::prepare_dump_folder(cfg.sink, stages::shard_of(cfg.input));
  gpu::set_device(plan.devices.front());
  // Discovery on its own thread while the CUDA context, the staging ring and
  // the device buffers are made here (and the JPEG decoders on theirs).
  auto discovery = std::async(std::launch::async, [&cfg] { return stages::build_input_list(cfg.input); });
  std::unique_ptr<stages::BatchResources> kept_or_new = impl_->resources_for(plan.layout);
  stages::BatchResources& resources = *kept_or_new;
  const stages::InputList inputs = discovery.get();
  if (inputs.items.empty()) {
    impl_->kept = std::move(kept_or_new);  // untouched: still good
    throw no_inputs(cfg.input, inputs.shard);
  }

  detail::StageSet stages(cfg, plan, inputs, resources, callback, impl_->stop);
  times.pipeline = detail::RunTimes::clock::now();
  Timeline timeline;
  {
    detail::RunMonitor monitor(stages, resources.ring(), inputs.items.size(), options, times.pipeline);
    detail::run_filter_chain(plan, stages);
    resources.finish();
    stages.transfer.finish();
    timeline = monitor.finish();
  }
  times.end = detail::RunTimes::clock::now();
  Report report = detail::assemble_report(cfg, plan, stages, resources, times, impl_->stop.load());
  report.shard = {inputs.shard.rank, inputs.shard.world_size, inputs.shard.origin};
  report.timeline = std::move(timeline);
  impl_->kept = std::move(kept_or_new);  // a run that threw leaves nothing to keep
  return report;
}

}  // namespace imgpipe
