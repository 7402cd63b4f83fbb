#include "batch_slot.hpp"

#include <algorithm>

namespace imgpipe::stages {

namespace {

// A device's streams and, per staging slot, its events and checksum; the
// slot's d_input and d_output come from BatchResources::fit_buffers.
std::unique_ptr<DeviceContext> make_device(int d, int slots) {
  auto ctx = std::make_unique<DeviceContext>();
  ctx->device = d;
  ctx->stream = gpu::Stream(d);
  ctx->upload = gpu::Stream(d);
  for (int i = 0; i < slots; ++i) {
    DeviceBuffers b;
    b.d_checksum = gpu::DeviceBuffer(d, sizeof(std::uint64_t));
    b.copy_start = gpu::Event(d, true);
    b.copy_end = gpu::Event(d, true);
    b.ready = gpu::Event(d, false);
    b.frames_copied = gpu::Event(d, false);
    ctx->buffers.push_back(std::move(b));
  }
  return ctx;
}

std::size_t staged_sample_bytes(const BatchLayout& l) {
  if (l.staged_sample_bytes > 0) return l.staged_sample_bytes;
  return std::max<std::size_t>(1, l.staging.slot_bytes / static_cast<std::size_t>(std::max(1, l.batch_size)));
}

double lap(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
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
  b.clip_length = l.clip_length;
  b.clip_layout = l.clip_layout;
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
  if (!sums.empty()) {  // the later samples' places no longer match theirs: the sink sums the batch itself
    sums.erase(sums.begin() + i);
    sums.emplace_back();
  }
  std::erase_if(jpegs, [i](const GpuJpegSample& j) { return j.index == i; });
  for (GpuJpegSample& j : jpegs)
    if (j.index > i) --j.index;
  --count;
}

BatchResources::BatchResources(const BatchLayout& layout, const codecs::EngineSource& source) : layout_(layout) {
  auto t = std::chrono::steady_clock::now();
  // The JPEG decoders first: they are made on their own threads meanwhile.
  std::vector<std::shared_ptr<codecs::JpegEngines>> engines;
  for (int d : layout.devices) {
    if (layout.decode_bytes == 0 || d < 0)
      engines.push_back(nullptr);
    else
      engines.push_back(source ? source(d, layout.jpeg) : std::make_shared<codecs::JpegEngines>(d, layout.jpeg));
  }
  made_in_.decoders_s = lap(t);
  gpu::set_device(layout.staging.device);
  ring_ = std::make_unique<memory::StagingRing>(layout.staging);
  made_in_.staging_s = lap(t);
  for (std::size_t i = 0; i < layout.devices.size(); ++i) {
    const int d = layout.devices[i];
    devices_.push_back(make_device(d, ring_->slots()));
    DeviceContext& ctx = *devices_.back();
    if (d >= 0) device_bytes_ += sizeof(std::uint64_t) * static_cast<std::size_t>(ring_->slots());  // checksums
    for (int k = 0; k < ring_->slots(); ++k) fit_buffers(ctx, k);
    if (layout.decode_bytes > 0 && d >= 0) {
      ctx.frames = gpu::DeviceBuffer(d, layout.decode_bytes);
      device_bytes_ += ctx.frames.size();
    }
    ctx.jpeg = std::move(engines[i]);
  }
  gpu::set_device(layout.staging.device);
  for (int i = 0; i < ring_->slots(); ++i) {
    slots_.push_back(make_slot(i, layout));
    slots_.back()->room = room_of(ring_->capacity(i));
  }
  made_in_.buffers_s = lap(t);
}

int BatchResources::room_of(std::size_t capacity) const noexcept {
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(layout_.batch_size),
                                                capacity / staged_sample_bytes(layout_)));
}

void BatchResources::replace(gpu::DeviceBuffer& buffer, int device, std::size_t bytes) {
  // The thread keeps its device (the packer's may be the caller's thread);
  // no CUDA call at all on the host backend.
  std::optional<gpu::CurrentDeviceGuard> keep;
  if (device >= 0) keep.emplace();
  std::atomic<std::size_t>& count = device >= 0 ? device_bytes_ : host_buffer_bytes_;
  // The old one goes first: nothing in it is wanted (make_room), and a
  // growing slot then never holds both. A throw leaves the buffer empty
  // and fails the run, whose resources are then not kept.
  count -= buffer.size();
  buffer = gpu::DeviceBuffer();
  buffer = gpu::DeviceBuffer(device, bytes);
  count += buffer.size();
}

void BatchResources::fit_buffers(DeviceContext& dev, int slot) {
  DeviceBuffers& b = dev.buffers[static_cast<std::size_t>(slot)];
  const std::size_t capacity = ring_->capacity(slot);
  if (!ring_->zero_copy() && b.d_input.size() < capacity && !(layout_.batch_in_slot && ring_->host_block(slot)))
    replace(b.d_input, dev.device, capacity);
  // A tensor the CPU made in a mapped slot is copied here on the GPU: a
  // consumer's tensor is never write-combined host memory.
  if (layout_.device_output || (ring_->zero_copy() && dev.device >= 0)) {
    const std::size_t out = layout_.out_sample_bytes * static_cast<std::size_t>(room_of(capacity));
    if (b.d_output.size() < out) replace(b.d_output, dev.device, out);
  }
}

std::optional<memory::SlotWriter> BatchResources::make_room(BatchSlot& b, int samples, std::size_t bytes) {
  std::optional<memory::SlotWriter> grown;
  const std::size_t want = std::max(bytes, static_cast<std::size_t>(samples) * staged_sample_bytes(layout_));
  if (want > ring_->capacity(b.slot)) grown = ring_->grow(b.slot, want);
  fit_buffers(*b.dev, b.slot);
  b.room = room_of(ring_->capacity(b.slot));
  return grown;
}

namespace {

bool same_staging(const memory::StagingOptions& a, const memory::StagingOptions& b) {
  return a.device == b.device && a.slots == b.slots && a.slot_bytes == b.slot_bytes && a.memory == b.memory &&
         a.transfer == b.transfer && a.portable == b.portable && a.budget_bytes == b.budget_bytes &&
         a.fallback == b.fallback && a.track == b.track && a.initial_bytes == b.initial_bytes &&
         a.initial_slots == b.initial_slots && a.prefer_written == b.prefer_written;
}

}  // namespace

bool BatchResources::fits(const BatchLayout& l) const {
  const BatchLayout& m = layout_;
  return l.devices == m.devices && same_staging(l.staging, m.staging) && l.batch_size == m.batch_size &&
         l.out_sample_bytes == m.out_sample_bytes && staged_sample_bytes(l) == staged_sample_bytes(m) &&
         l.device_output == m.device_output && l.batch_in_slot == m.batch_in_slot &&
         l.per_image_geometry == m.per_image_geometry && l.decode_bytes == m.decode_bytes &&
         (l.decode_bytes == 0 || codecs::same_decoder(l.jpeg, m.jpeg)) && l.shape == m.shape && l.dtype == m.dtype &&
         l.layout == m.layout;
}

void BatchResources::begin_run(const codecs::EngineSource& source) {
  ring_->rewind();  // the slots made first (a run that carries less leaves the others empty)
  ring_base_ = ring_->stats();
  ring_wait_base_ = ring_->wait_seconds();
  for (const auto& b : slots_) {
    b->holds.clear();
    b->direct.clear();
  }
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
  s.grown -= ring_base_.grown;
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
