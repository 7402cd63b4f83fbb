#include "gpu_ops.hpp"

#include "kernels/trap.hpp"

namespace imgpipe::stages {

Tally GpuOps::run(Work& w) const {
  BatchSlot& b = *w.batch;
  DeviceBuffers& buf = b.buffers();
  const gpu::Stream& stream = b.dev->stream;
  const bool on_gpu = stream.device() >= 0;
  if (on_gpu && fault::trap(b.index)) kernels::trap_gpu(stream.get());
  std::size_t bytes = 0;
  if (work_ == Op::normalize) {
    kernels::NormalizeParams p = params_;
    p.batch = b.count;
    p.src = static_cast<const std::uint8_t*>(b.staged);
    p.src_pitch = 0;
    p.dst = buf.d_output.get();
    if (on_gpu) kernels::normalize_gpu(p, stream.get());
    else kernels::normalize_ref(p, /*parallel=*/true);
    bytes = kernels::output_bytes(p);
  } else if (work_ == Op::resize_normalize) {
    kernels::FusedParams f;
    f.in = resize_;
    f.in.src = static_cast<const std::uint8_t*>(b.staged);
    f.in.images = b.images.data();
    f.in.batch = b.count;
    f.dst = buf.d_output.get();
    f.layout = params_.layout;
    f.dtype = params_.dtype;
    f.swap_rb = params_.swap_rb;
    f.scale = params_.scale;
    f.mean = params_.mean;
    f.std = params_.std;
    if (on_gpu) kernels::fused_gpu(f, stream.get());
    else kernels::fused_ref(f, /*parallel=*/true);
    bytes = kernels::output_bytes(f);
  }
  buf.ready.record(stream);
  return {1, bytes};
}

}  // namespace imgpipe::stages
