// GPU twin of fused_ref.cpp: the resize kernel (resize.cu) writing normalised
// float32/float16 (or u8) in NCHW/NHWC directly, without the u8 canvas.
#include "fused.hpp"
#include "resize_plan.hpp"

namespace imgpipe::kernels {

void fused_gpu(const FusedParams& p, CUstream_st* stream) {
  validate(p);
  detail::OutputSpec out;
  out.dst = p.dst;
  out.layout = p.layout;
  out.dtype = p.dtype;
  out.swap_rb = p.swap_rb;
  out.scale = p.scale;
  out.mean = p.mean;
  out.std = p.std;
  detail::resample_gpu(p.in, out, stream);
}

}  // namespace imgpipe::kernels
