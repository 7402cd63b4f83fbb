#include "imgpipe/pipeline.hpp"

#include <future>

#include <spdlog/spdlog.h>

#include "memory/gpu.hpp"
#include "monitor.hpp"
#include "report.hpp"
#include "run_plan.hpp"
#include "stage_set.hpp"

#ifndef IMGPIPE_VERSION
#define IMGPIPE_VERSION "0.0.0"
#endif

namespace imgpipe {

const char* version() noexcept { return IMGPIPE_VERSION; }

struct Pipeline::Impl {
  Config config;
  std::atomic<bool> stop{false};
};

Pipeline::Pipeline(Config config) : impl_(std::make_unique<Impl>()) {
  config.validate();
  impl_->config = std::move(config);
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

Error no_inputs(const InputConfig& in) {
  std::string paths;
  for (const auto& p : in.paths) paths += (paths.empty() ? "'" : ", '") + p + "'";
  return Error("no inputs found in input.paths (" + (paths.empty() ? std::string("empty") : paths) + ")");
}

}  // namespace

// plan -> inputs -> resources -> filter chain -> report.
Report Pipeline::run(const BatchCallback& callback, const RunOptions& options) {
  const Config& cfg = impl_->config;
  const ClearStopOnExit clear_stop{impl_->stop};
  detail::RunTimes times;
  const std::vector<int> devices = detail::select_devices(options.device.value_or(cfg.devices));
  const detail::RunPlan plan = detail::RunPlan::make(
      cfg, devices, detail::HostFacts::of_this_machine(devices.front(), cfg.decode.where != Where::cpu));
  if (plan.tokens < plan.wanted_tokens)
    spdlog::info("frames in flight limited to {} (staging.slots {} x batch.size {}); raise staging.slots for more",
                 plan.tokens, cfg.staging.slots, cfg.batch.size);
  gpu::set_device(plan.devices.front());
  // Discovery on its own thread while the CUDA context, the staging ring and
  // the device buffers are made here (and the JPEG decoders on theirs).
  auto discovery = std::async(std::launch::async, [&cfg] { return stages::build_input_list(cfg.input); });
  stages::BatchResources resources(plan.layout);
  const stages::InputList inputs = discovery.get();
  if (inputs.items.empty()) throw no_inputs(cfg.input);

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
  return report;
}

}  // namespace imgpipe
