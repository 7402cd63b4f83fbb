#include "codecs/image/nvjpeg/engine_cache.hpp"

namespace imgpipe::codecs {

namespace {

bool shareable(const GpuJpegOptions& o) { return o.device_allocator.empty() && o.pinned_allocator.empty(); }

}  // namespace

EngineCache::~EngineCache() { wait_warm_up(); }

void EngineCache::warm_up(Wanted wanted) {
  if (!wanted) return;
  warm_ = std::async(std::launch::async, [this, wanted = std::move(wanted)] {
    try {
      for (const auto& [device, options] : wanted()) (void)get(device, options);
    } catch (const std::exception&) {
      // The run makes the same plan and reports what went wrong.
    }
  });
}

void EngineCache::wait_warm_up() {
  if (warm_.valid()) warm_.get();
}

EngineSource EngineCache::source() {
  wait_warm_up();
  return [this](int device, const GpuJpegOptions& options) { return get(device, options); };
}

std::size_t EngineCache::size() const {
  std::lock_guard lock(m_);
  return kept_.size();
}

std::shared_ptr<JpegEngines> EngineCache::get(int device, const GpuJpegOptions& options) {
  std::lock_guard lock(m_);
  auto it = kept_.find(device);
  // A decoder that failed to start is not kept: the next run tries again
  // (and reports again), as a run without a cache would.
  if (it != kept_.end() && same_decoder(it->second.options, options) && !it->second.engines->failed())
    return it->second.engines;
  auto e = std::make_shared<JpegEngines>(device, options);
  if (shareable(options)) kept_[device] = Entry{options, e};
  return e;
}

}  // namespace imgpipe::codecs
