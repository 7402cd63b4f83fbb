// The GPU JPEG decoders of one Pipeline, kept from run to run. Making
// nvJPEG's hardware decoder (a handle and its state) costs more than a short
// run spends decoding (samples/nvjpeg_startup.cpp measures it;
// docs/benchmarks.md#decoder-creation has the figures); a training loop that runs a
// Pipeline once per epoch pays it once. warm_up() starts making them when
// the Pipeline is constructed, beside whatever the application does before
// run() (the CLI: the CUDA context, the staging buffers).
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "codecs/image/nvjpeg/jpeg_engines.hpp"

namespace imgpipe::codecs {

class EngineCache {
 public:
  // The decoders a run would make: (device, options) for each device that
  // decodes JPEGs. May throw: a failure is left for the run
  // to meet and report.
  using Wanted = std::function<std::vector<std::pair<int, GpuJpegOptions>>()>;

  EngineCache() = default;
  ~EngineCache();  // waits for the warm-up; the decoders go with the cache
  EngineCache(const EngineCache&) = delete;
  EngineCache& operator=(const EngineCache&) = delete;

  // Starts making, in the background, the decoders `wanted` names (called
  // on the background thread); an empty `wanted` starts nothing.
  void warm_up(Wanted wanted);

  // For BatchResources: the device's decoder, made now (in the background)
  // if none with the same options is kept. Waits for the warm-up first, so
  // that a decoder is never made twice.
  EngineSource source();

  // Decoders kept (made by warm-up or a run), for tests.
  std::size_t size() const;

 private:
  std::shared_ptr<JpegEngines> get(int device, const GpuJpegOptions& options);
  void wait_warm_up();
  struct Entry {
    GpuJpegOptions options;
    std::shared_ptr<JpegEngines> engines;
  };
  mutable std::mutex m_;
  std::map<int, Entry> kept_;
  std::future<void> warm_;
};

}  // namespace imgpipe::codecs
