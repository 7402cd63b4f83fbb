#include "transfer.hpp"

#include <stdexcept>

namespace imgpipe::stages {

void Transfer::time_copy(DeviceContext& dev, DeviceBuffers& buf) {
  if (!buf.copy_timed) return;
  buf.copy_end.synchronize();  // already complete: only makes elapsed_ms valid
  const double ms = gpu::Event::elapsed_ms(buf.copy_start, buf.copy_end);
  dev.transfer.copy_s += ms * 1e-3;
  dev.transfer.bytes += buf.copy_bytes;
  ++dev.transfer.batches;
  own_stats().device_ns += static_cast<std::int64_t>(ms * 1e6);
  buf.copy_timed = false;
}

Tally Transfer::run(Work& w) {
  BatchSlot& b = *w.batch;
  DeviceContext& dev = *b.dev;
  const memory::StagingRing& ring = res_.ring();
  DeviceBuffers& buf = b.buffers();
  if (ring.zero_copy()) {
    b.staged = ring.device_pointer(b.slot);
    if (res_.layout().device_output) {  // the kernels read the mapped slot in place
      ++dev.transfer.batches;
      return {1, 0};
    }
    // The CPU made the tensor in the mapped (write-combined) slot: the
    // GPU's copy engine copies it into device memory on the batch's stream,
    // ahead of the batch's `ready` event, so no consumer reads the slot.
    if (b.staged_bytes > buf.d_output.size())
      throw std::logic_error("transfer: the staged tensor is larger than the batch's output buffer");
    time_copy(dev, buf);
    const nvtx::Range range("copy", b.index);
    buf.copy_start.record(dev.stream);
    gpu::copy_d2d_async(buf.d_output.get(), b.staged, b.staged_bytes, dev.stream);
    buf.copy_end.record(dev.stream);
    buf.copy_bytes = b.staged_bytes;
    buf.copy_timed = true;
    return {1, b.staged_bytes};
  }
  if (res_.layout().batch_in_slot && b.direct.empty()) {
    if (const unsigned char* block = ring.host_block(b.slot)) {  // the batch is the slot: nothing to copy
      b.staged = gpu::DeviceAddress(block);
      ++dev.transfer.batches;
      return {1, 0};
    }
  }
  time_copy(dev, buf);  // the previous copy out of this slot
  const nvtx::Range range("copy", b.index);  // the enqueue (a memcpy on the host backend)
  buf.copy_start.record(dev.upload);  // the GPU ops stage makes the batch's stream wait for copy_end
  auto* d = static_cast<std::uint8_t*>(buf.d_input.get());
  std::size_t bytes = 0;
  if (b.direct.empty()) {  // the slot as written, in one copy
    ring.copy_to_device(b.slot, d, b.staged_bytes, dev.upload);
    bytes = b.staged_bytes;
  } else {
    for (const auto& [offset, n] : b.written) {  // what the CPU wrote into the slot, around the direct frames
      ring.copy_to_device(b.slot, offset, d + offset, n, dev.upload);
      bytes += n;
    }
  }
  for (const DirectFrame& f : b.direct) {  // video frames out of the decoders' page-locked buffers
    const YuvPlanes& p = f.planes;
    std::size_t at = f.offset;
    for (int k = 0; k < 3; ++k) {
      if (p.rows[k] == 0) continue;
      gpu::copy_2d_async(d + at, p.row_bytes[k], p.src[k], p.src_pitch[k], p.row_bytes[k],
                         static_cast<std::size_t>(p.rows[k]), dev.upload);
      at += p.row_bytes[k] * static_cast<std::size_t>(p.rows[k]);
    }
    bytes += at - f.offset;
  }
  buf.copy_end.record(dev.upload);
  buf.copy_bytes = bytes;
  buf.copy_timed = true;
  b.staged = buf.d_input.address();
  return {1, bytes};
}

void Transfer::finish() {
  for (auto& dev : res_.devices())
    for (DeviceBuffers& buf : dev->buffers) time_copy(*dev, buf);
}

}  // namespace imgpipe::stages
