#include "batch_slot.hpp"

namespace imgpipe::stages {

namespace {

std::unique_ptr<DeviceContext> make_device(int d, const BatchLayout& l, const memory::StagingRing& ring,
                                           std::size_t& device_bytes) {
  auto ctx = std::make_unique<DeviceContext>();
  ctx->device = d;
  ctx->stream = gpu::Stream(d);
  ctx->upload = gpu::Stream(d);
  for (int i = 0; i < ring.slots(); ++i) {
    DeviceBuffers b;
    if (!ring.zero_copy()) b.d_input = gpu::DeviceBuffer(d, l.staging.slot_bytes);
    // A tensor the CPU made in a mapped slot is copied here on the GPU: a
    // consumer's tensor is never write-combined host memory.
    if (l.device_output || (ring.zero_copy() && d >= 0))
      b.d_output = gpu::DeviceBuffer(d, l.out_sample_bytes * l.batch_size);
    b.d_checksum = gpu::DeviceBuffer(d, sizeof(std::uint64_t));
    b.copy_start = gpu::Event(d, true);
    b.copy_end = gpu::Event(d, true);
    b.ready = gpu::Event(d, false);
    b.frames_copied = gpu::Event(d, false);
    if (d >= 0) device_bytes += b.d_input.size() + b.d_output.size() + b.d_checksum.size();
    ctx->buffers.push_back(std::move(b));
  }
  if (l.decode_bytes > 0 && d >= 0) {
    ctx->frames = gpu::DeviceBuffer(d, l.decode_bytes);
    device_bytes += ctx->frames.size();
  }
  return ctx;
}

std::unique_ptr<BatchSlot> make_slot(int i, const BatchLayout& l) {
  auto s = std::make_unique<BatchSlot>();
  s->slot = i;
  s->samples.resize(l.batch_size);
  s->t0.resize(l.batch_size);
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
  t0.erase(t0.begin() + i);
  t0.emplace_back();
  if (!images.empty()) {
    images.erase(images.begin() + i);
    images.emplace_back();
  }
  std::erase_if(jpegs, [i](const GpuJpegSample& j) { return j.index == i; });
  for (GpuJpegSample& j : jpegs)
    if (j.index > i) --j.index;
  --count;
}

BatchResources::BatchResources(const BatchLayout& layout, const codecs::EngineSource& source) : layout_(layout) {
  // The JPEG decoders first: they are made on their own threads meanwhile.
  std::vector<std::shared_ptr<codecs::JpegEngines>> engines;
  for (int d : layout.devices) {
    if (layout.decode_bytes == 0 || d < 0)
      engines.push_back(nullptr);
    else
      engines.push_back(source ? source(d, layout.jpeg) : std::make_shared<codecs::JpegEngines>(d, layout.jpeg));
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

namespace {

bool same_staging(const memory::StagingOptions& a, const memory::StagingOptions& b) {
  return a.device == b.device && a.slots == b.slots && a.slot_bytes == b.slot_bytes && a.memory == b.memory &&
         a.transfer == b.transfer && a.portable == b.portable && a.budget_bytes == b.budget_bytes &&
         a.fallback == b.fallback && a.track == b.track;
}

}  // namespace

bool BatchResources::fits(const BatchLayout& l) const {
  const BatchLayout& m = layout_;
  return l.devices == m.devices && same_staging(l.staging, m.staging) && l.batch_size == m.batch_size &&
         l.out_sample_bytes == m.out_sample_bytes && l.device_output == m.device_output &&
         l.per_image_geometry == m.per_image_geometry && l.decode_bytes == m.decode_bytes &&
         (l.decode_bytes == 0 || codecs::same_decoder(l.jpeg, m.jpeg)) && l.shape == m.shape && l.dtype == m.dtype &&
         l.layout == m.layout;
}

void BatchResources::begin_run(const codecs::EngineSource& source) {
  ring_base_ = ring_->stats();
  ring_wait_base_ = ring_->wait_seconds();
  for (const auto& d : devices_) {
    d->in_flight.store(0);
    d->transfer = {};
    for (DeviceBuffers& b : d->buffers) b.copy_timed = false;
    if (d->jpeg && source) {
      std::shared_ptr<codecs::JpegEngines> now = source(d->device, layout_.jpeg);
      if (now != d->jpeg)
        if (codecs::GpuJpegDecoder* old = d->jpeg->ready()) old->release_stream();
      d->jpeg = std::move(now);
    }
  }
}

memory::StagingStats BatchResources::ring_stats() const {
  memory::StagingStats s = ring_->stats();
  s.hits -= ring_base_.hits;
  s.misses -= ring_base_.misses;
  return s;
}

double BatchResources::ring_wait_seconds() const { return ring_->wait_seconds() - ring_wait_base_; }

BatchResources::~BatchResources() {
  for (const auto& d : devices_) {
    try {
      d->upload.synchronize();
      d->stream.synchronize();
    } catch (...) {
      // A sticky error was already reported by the call that hit it.
    }
    // A decoder that outlives this run must not wait on its streams later;
    // one that a later run already uses keeps that run's stream.
    if (d->jpeg)
      if (codecs::GpuJpegDecoder* dec = d->jpeg->ready()) dec->release_stream(d->stream.get());
  }
}

void BatchResources::finish() {
  ring_->drain();
  for (const auto& d : devices_) {
    d->upload.synchronize();
    d->stream.synchronize();
  }
}

}  // namespace imgpipe::stages
