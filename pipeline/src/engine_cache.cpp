#include "engine_cache.hpp"

#include "memory/gpu.hpp"
#include "run_plan.hpp"

namespace imgpipe::detail {

namespace {

bool shareable(const kernels::GpuJpegOptions& o) { return o.device_allocator.empty() && o.pinned_allocator.empty(); }

}  // namespace

EngineCache::~EngineCache() { wait_warm_up(); }

void EngineCache::warm_up(const Config& cfg) {
  if (cfg.decode.where == Where::cpu || cfg.devices.kind == DeviceSelection::Kind::cpu) return;
  warm_ = std::async(std::launch::async, [this, cfg] {
    try {
      // Quietly: with no GPU, run() says so (once) after it checked the inputs.
      if (gpu::device_count() == 0) return;
      const std::vector<int> devices = select_devices(cfg.devices);
      if (devices.front() < 0) return;
      const RunPlan plan = RunPlan::make(cfg, devices, HostFacts::of_this_machine(devices.front(), true));
      if (plan.layout.decode_bytes == 0) return;
      for (int d : plan.devices) (void)get(d, plan.layout.jpeg);
    } catch (const std::exception&) {
      // run() makes the same plan and reports what went wrong.
    }
  });
}

void EngineCache::wait_warm_up() {
  if (warm_.valid()) warm_.get();
}

stages::EngineSource EngineCache::source() {
  wait_warm_up();
  return [this](int device, const kernels::GpuJpegOptions& options) { return get(device, options); };
}

std::size_t EngineCache::size() const {
  std::lock_guard lock(m_);
  return kept_.size();
}

std::shared_ptr<stages::JpegEngines> EngineCache::get(int device, const kernels::GpuJpegOptions& options) {
  std::lock_guard lock(m_);
  auto it = kept_.find(device);
  // A decoder that failed to start is not kept: the next run tries again
  // (and reports again), as a run without a cache would.
  if (it != kept_.end() && stages::same_decoder(it->second.options, options) && !it->second.engines->failed())
    return it->second.engines;
  auto e = std::make_shared<stages::JpegEngines>(device, options);
  if (shareable(options)) kept_[device] = Entry{options, e};
  return e;
}

}  // namespace imgpipe::detail
