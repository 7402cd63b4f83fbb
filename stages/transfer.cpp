#include "transfer.hpp"

namespace imgpipe::stages {

Work* Transfer::operator()(Work* w) const {
  if (!w->batch) return w;
  BusyTimer t(stats_);
  BatchSlot& b = *w->batch;
  const std::size_t bytes = static_cast<std::size_t>(b.count) * b.frame_bytes;
  b.copy_start.record(stream_);
  ring_.copy_to_device(b.slot, b.d_input.get(), bytes, stream_);
  b.copy_end.record(stream_);
  ++stats_.items;
  stats_.bytes += bytes;
  return w;
}

}  // namespace imgpipe::stages
