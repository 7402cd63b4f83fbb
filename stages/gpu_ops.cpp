#include "gpu_ops.hpp"

namespace imgpipe::stages {

Work* GpuOps::operator()(Work* w) const {
  if (!w->batch) return w;
  BusyTimer t(stats_);
  BatchSlot& b = *w->batch;
  if (normalize_) {
    kernels::NormalizeParams p = params_;
    p.batch = b.count;
    p.src = static_cast<const std::uint8_t*>(b.d_input.get());
    p.src_pitch = 0;
    p.dst = b.d_output.get();
    if (stream_.device() >= 0) kernels::normalize_gpu(p, stream_.get());
    else kernels::normalize_ref(p, /*parallel=*/true);
    stats_.bytes += kernels::output_bytes(p);
  }
  b.ready.record(stream_);
  ++stats_.items;
  return w;
}

}  // namespace imgpipe::stages
