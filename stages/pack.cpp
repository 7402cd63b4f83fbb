#include "pack.hpp"

#include <chrono>

namespace imgpipe::stages {

Pack::Pack(memory::StagingRing& ring, std::vector<std::unique_ptr<BatchSlot>>& slots, const BatchConfig& batch,
           OnError on_error, const gpu::Stream& stream, StageStats& stats)
    : ring_(ring), slots_(slots), cfg_(batch), on_error_(on_error), stream_(stream), stats_(stats) {}

Work* Pack::operator()(Work* w) {
  BusyTimer t(stats_);
  if (w->flush) {
    if (current_ && current_->count > 0) {
      if (cfg_.drop_last && current_->count < cfg_.size) {
        dropped_ += current_->count;
        ring_.release(current_->slot, stream_);  // nothing was enqueued: free at once
      } else {
        w->batch = current_;
      }
    }
    current_ = nullptr;
    writer_.reset();
    return w;
  }
  if (!w->error.empty()) {
    failures_.push_back({w->input->path, w->input->frame, w->error});
    if (on_error_ == OnError::fail) throw InputError(w->input->path, w->input->frame, w->error);
    return w;
  }
  if (!current_) {
    const auto t0 = std::chrono::steady_clock::now();
    writer_.emplace(ring_.acquire());  // waits for the slot's previous batch
    stats_.add_wait(std::chrono::steady_clock::now() - t0);
    current_ = slots_[writer_->slot()].get();
    current_->index = batches_++;
    current_->count = 0;
    current_->frame_bytes = w->frame_bytes;
  }
  writer_->write(static_cast<std::size_t>(current_->count) * w->frame_bytes, w->frame_data, w->frame_bytes);
  SampleId& id = current_->samples[current_->count];
  id.input_index = w->seq;
  id.path = w->input->path;  // reuses the string's capacity
  id.frame = w->input->frame;
  ++current_->count;
  ++packed_;
  ++stats_.items;
  stats_.bytes += w->frame_bytes;
  if (current_->count == cfg_.size) {
    w->batch = current_;
    current_ = nullptr;
    writer_.reset();
  }
  return w;
}

}  // namespace imgpipe::stages
