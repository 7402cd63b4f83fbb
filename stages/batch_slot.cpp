#include "batch_slot.hpp"

namespace imgpipe::stages {

namespace {

std::unique_ptr<DeviceContext> make_device(int d, const BatchLayout& l, const memory::StagingRing& ring,
                                           std::size_t& device_bytes) {
  auto ctx = std::make_unique<DeviceContext>();
  ctx->device = d;
  ctx->stream = gpu::Stream(d);
  for (int i = 0; i < ring.slots(); ++i) {
    DeviceBuffers b;
    if (!ring.zero_copy()) b.d_input = gpu::DeviceBuffer(d, l.staging.slot_bytes + l.decode_bytes);
    if (l.device_output) b.d_output = gpu::DeviceBuffer(d, l.out_sample_bytes * l.batch_size);
    b.d_checksum = gpu::DeviceBuffer(d, sizeof(std::uint64_t));
    b.copy_start = gpu::Event(d, true);
    b.copy_end = gpu::Event(d, true);
    b.ready = gpu::Event(d, false);
    if (d >= 0) device_bytes += b.d_input.size() + b.d_output.size() + b.d_checksum.size();
    ctx->buffers.push_back(std::move(b));
  }
  return ctx;
}

std::unique_ptr<BatchSlot> make_slot(int i, const BatchLayout& l) {
  auto s = std::make_unique<BatchSlot>();
  s->slot = i;
  s->samples.resize(l.batch_size);
  if (l.per_image_geometry) s->images.resize(l.batch_size);
  s->out_sample_bytes = l.out_sample_bytes;
  DeviceBatch& b = s->batch;
  b.shape = l.shape;
  b.dtype = l.dtype;
  b.layout = l.layout;
  b.samples.reserve(l.batch_size);
  return s;
}

}  // namespace

void BatchSlot::remove(int i) {
  samples.erase(samples.begin() + i);
  samples.emplace_back();  // keeps batch.size entries
  if (!images.empty()) {
    images.erase(images.begin() + i);
    images.emplace_back();
  }
  std::erase_if(jpegs, [i](const GpuJpegSample& j) { return j.index == i; });
  for (GpuJpegSample& j : jpegs)
    if (j.index > i) --j.index;
  --count;
}

BatchResources::BatchResources(const BatchLayout& layout, const EngineSource& source) {
  // The JPEG decoders first: they are made on their own threads meanwhile.
  std::vector<std::shared_ptr<JpegEngines>> engines;
  for (int d : layout.devices) {
    if (layout.decode_bytes == 0 || d < 0)
      engines.push_back(nullptr);
    else
      engines.push_back(source ? source(d, layout.jpeg) : std::make_shared<JpegEngines>(d, layout.jpeg));
  }
  gpu::set_device(layout.staging.device);
  ring_ = std::make_unique<memory::StagingRing>(layout.staging);
  for (std::size_t i = 0; i < layout.devices.size(); ++i) {
    devices_.push_back(make_device(layout.devices[i], layout, *ring_, device_bytes_));
    devices_.back()->jpeg = std::move(engines[i]);
  }
  gpu::set_device(layout.staging.device);
  for (int i = 0; i < ring_->slots(); ++i) slots_.push_back(make_slot(i, layout));
}

BatchResources::~BatchResources() {
  for (const auto& d : devices_) {
    try {
      d->stream.synchronize();
    } catch (...) {
      // A sticky error was already reported by the call that hit it.
    }
    // A decoder that outlives this run must not wait on its streams later.
    if (d->jpeg)
      if (kernels::GpuJpegDecoder* dec = d->jpeg->ready()) dec->release_stream();
  }
}

void BatchResources::finish() {
  ring_->drain();
  for (const auto& d : devices_) d->stream.synchronize();
}

}  // namespace imgpipe::stages
