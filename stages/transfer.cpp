#include "transfer.hpp"

#include "core/fault.hpp"

namespace imgpipe::stages {

Work* Transfer::operator()(Work* w) const {
  if (!w->batch) return w;
  BusyTimer t(stats_);
  BatchSlot& b = *w->batch;
  fault::check("transfer", b.index);
  DeviceBuffers& buf = b.buffers();
  const gpu::Stream& stream = b.dev->stream;
  if (ring_.zero_copy()) {
    b.staged = ring_.device_pointer(b.slot);
  } else {
    buf.copy_start.record(stream);
    ring_.copy_to_device(b.slot, buf.d_input.get(), b.staged_bytes, stream);
    buf.copy_end.record(stream);
    b.staged = buf.d_input.get();
    stats_.bytes += b.staged_bytes;
  }
  ++stats_.items;
  return w;
}

}  // namespace imgpipe::stages
