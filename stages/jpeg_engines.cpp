#include "jpeg_engines.hpp"

#include <spdlog/spdlog.h>

namespace imgpipe::stages {

JpegEngines::JpegEngines(int device, const kernels::GpuJpegOptions& options)
    : thread_([this, device, options] { make(device, options); }) {}

JpegEngines::~JpegEngines() { (void)wait(); }

void JpegEngines::make(int device, kernels::GpuJpegOptions options) {
  try {
    std::string why;
    const auto hw = kernels::GpuJpegDecoder::probe(device, &why);
    if (!hw) throw Error(why);
    info_ = *hw;
    if (!hw->device_input)
      throw Error("nvJPEG has no HARDWARE_DEVICE backend here (bitstreams in device memory)");
    decoder_ = std::make_unique<kernels::GpuJpegDecoder>(device, options);
    ready_.store(decoder_.get(), std::memory_order_release);
  } catch (const std::exception& e) {
    error_ = e.what();
    spdlog::warn("GPU JPEG decode off on device {}: {}; JPEGs decode on the CPU", device, error_);
  }
}

kernels::GpuJpegDecoder* JpegEngines::wait() {
  std::call_once(joined_, [this] {
    if (thread_.joinable()) thread_.join();
  });
  return ready();
}

}  // namespace imgpipe::stages
