// The GPU JPEG decoders of one Pipeline, kept from run to run. Making
// nvJPEG's hardware decoder costs about 0.6 s on the H200 (a handle 0.27 s,
// its state 0.35 s, whatever the backend: samples/nvjpeg_startup.cpp), more
// than a 4096-image run spends decoding; a training loop that runs a
// Pipeline once per epoch pays it once. warm_up() starts making them when
// the Pipeline is constructed, beside whatever the application does before
// run() (the CLI: the CUDA context, the staging buffers).
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>

#include "imgpipe/config.hpp"
#include "stages/batch_slot.hpp"

namespace imgpipe::detail {

class EngineCache {
 public:
  EngineCache() = default;
  ~EngineCache();  // waits for the warm-up; the decoders go with the cache
  EngineCache(const EngineCache&) = delete;
  EngineCache& operator=(const EngineCache&) = delete;

  // Starts making, in the background, the decoder of each device that
  // `cfg`'s run plan would decode JPEGs on (none for decode.where cpu, the
  // host backend, or without nvJPEG). Failures are left for run() to meet
  // and report.
  void warm_up(const Config& cfg);

  // For BatchResources: the device's decoder, made now (in the background)
  // if none with the same options is kept. Waits for the warm-up first, so
  // that a decoder is never made twice.
  stages::EngineSource source();

  // Decoders kept (made by warm-up or a run), for tests.
  std::size_t size() const;

 private:
  std::shared_ptr<stages::JpegEngines> get(int device, const kernels::GpuJpegOptions& options);
  void wait_warm_up();
  struct Entry {
    kernels::GpuJpegOptions options;
    std::shared_ptr<stages::JpegEngines> engines;
  };
  mutable std::mutex m_;
  std::map<int, Entry> kept_;
  std::future<void> warm_;
};

}  // namespace imgpipe::detail
