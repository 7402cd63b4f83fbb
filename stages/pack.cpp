#include "pack.hpp"

#include <chrono>

#include "core/fault.hpp"

namespace imgpipe::stages {

Pack::Pack(memory::StagingRing& ring, std::vector<std::unique_ptr<BatchSlot>>& slots,
           std::vector<std::unique_ptr<DeviceContext>>& devices, Dispatch dispatch, const BatchConfig& batch,
           OnError on_error, StageStats& stats)
    : ring_(ring), slots_(slots), devices_(devices), dispatch_(dispatch), cfg_(batch), on_error_(on_error),
      stats_(stats) {}

DeviceContext* Pack::choose_device() {
  const std::size_t n = devices_.size();
  if (n == 1) return devices_[0].get();
  const std::size_t rr = batches_ % n;
  if (dispatch_ == Dispatch::round_robin) return devices_[rr].get();
  // least loaded: fewest batches in flight; ties go round robin.
  DeviceContext* best = devices_[rr].get();
  for (std::size_t k = 1; k < n; ++k) {
    DeviceContext* d = devices_[(rr + k) % n].get();
    if (d->in_flight.load() < best->in_flight.load()) best = d;
  }
  return best;
}

Work* Pack::operator()(Work* w) {
  BusyTimer t(stats_);
  if (w->flush) {
    if (current_ && current_->count > 0) {
      if (cfg_.drop_last && current_->count < cfg_.size) {
        dropped_ += current_->count;
        --current_->dev->in_flight;
        ring_.release(current_->slot, current_->dev->stream);
      } else {
        w->batch = current_;
      }
    }
    current_ = nullptr;
    writer_.reset();
    return w;
  }
  fault::check("pack", w->seq);
  if (!w->error.empty()) {
    failures_.push_back({w->input->path, w->frame, w->error});
    if (on_error_ == OnError::fail) throw InputError(w->input->path, w->frame, w->error);
    return w;
  }
  if (!current_) {
    const auto t0 = std::chrono::steady_clock::now();
    writer_.emplace(ring_.acquire());  // waits for the slot's previous batch
    stats_.add_wait(std::chrono::steady_clock::now() - t0);
    current_ = slots_[writer_->slot()].get();
    current_->index = batches_;
    current_->dev = choose_device();
    ++current_->dev->in_flight;
    ++batches_;
    current_->count = 0;
    current_->staged_bytes = 0;
  }
  // Where the frame goes; PackCopy writes it.
  w->dest = *writer_;
  w->dest_offset = current_->staged_bytes;
  if (w->frame_bytes > writer_->capacity() - current_->staged_bytes)
    throw std::logic_error("pack: a frame does not fit its staging slot (frame budget violated)");
  if (!current_->images.empty())
    current_->images[current_->count] = {current_->staged_bytes, w->frame_width, w->frame_height, 0};
  current_->staged_bytes += w->frame_bytes;
  SampleId& id = current_->samples[current_->count];
  id.input_index = w->seq;
  id.path = w->input->path;  // reuses the string's capacity
  id.frame = w->frame;
  ++current_->count;
  ++packed_;
  ++stats_.items;
  if (current_->count == cfg_.size) {
    w->batch = current_;
    current_ = nullptr;
    writer_.reset();
  }
  return w;
}

Work* PackCopy::operator()(Work* w) const {
  if (!w->dest) return w;
  BusyTimer t(stats_);
  fault::check("pack_copy", w->seq);
  w->dest->write(w->dest_offset, w->frame_data, w->frame_bytes);
  w->dest.reset();
  ++stats_.items;
  stats_.bytes += w->frame_bytes;
  return w;
}

}  // namespace imgpipe::stages
