#include "codecs/image/nvjpeg/jpeg_engines.hpp"

#include <spdlog/logger.h>

#include "imgpipe/log.hpp"

namespace imgpipe::codecs {

bool same_decoder(const GpuJpegOptions& a, const GpuJpegOptions& b) noexcept {
  const bool plain = a.device_allocator.empty() && a.pinned_allocator.empty() && b.device_allocator.empty() &&
                     b.pinned_allocator.empty();
  return plain && a.backend == b.backend && a.allow_host_input_fallback == b.allow_host_input_fallback &&
         a.fancy_upsampling == b.fancy_upsampling && a.hw_no_pipeline == b.hw_no_pipeline && a.bgr == b.bgr &&
         a.host_barrier == b.host_barrier;
}

JpegEngines::JpegEngines(int device, const GpuJpegOptions& options) {
  // Started here, not in the member initialisers: every member the thread
  // writes must exist first (ThreadSanitizer caught the other order).
  thread_ = std::thread([this, device, options] { make(device, options); });
}

JpegEngines::~JpegEngines() { (void)wait(); }

void JpegEngines::make(int device, GpuJpegOptions options) {
  try {
    // One handle: the decoder's own (a separate probe() would make and
    // destroy another, which costs as much as the decoder itself).
    decoder_ = std::make_unique<GpuJpegDecoder>(device, options);
    info_ = decoder_->hardware_info();
    ready_at_ = std::chrono::steady_clock::now();
    ready_.store(decoder_.get(), std::memory_order_release);
  } catch (const std::exception& e) {
    error_ = e.what();
    failed_.store(true, std::memory_order_release);
    imgpipe::logger()->warn("GPU JPEG decode off on device {}: {}; JPEGs decode on the CPU", device, error_);
  }
}

GpuJpegDecoder* JpegEngines::wait() const {
  std::call_once(joined_, [this] {
    if (thread_.joinable()) thread_.join();
  });
  return ready();
}

}  // namespace imgpipe::codecs
