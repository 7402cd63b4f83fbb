// GPU ops stage (serial, in order): enqueues the batch's kernels on its
// device's stream after the copy — the fused resize + normalise kernel when
// the GPU resizes, the normalise kernel when only normalisation runs there —
// or on the host backend runs their CPU twins over the batch in parallel.
// Records the batch's ready event either way.
#pragma once

#include "kernels/fused.hpp"
#include "kernels/normalize.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class GpuOps : public Stage<GpuOps, Takes::batches> {
 public:
  enum class Op { none, normalize, resize_normalize };
  // `params` describes one image at the target size (src/dst/batch are set
  // per batch); `resize` the fit, interpolation and padding for resize_normalize.
  GpuOps(const kernels::NormalizeParams& params, const kernels::ResizeBatch& resize, Op work)
      : Stage("gpu_ops", false), params_(params), resize_(resize), work_(work) {}
  Tally run(Work& w) const;

 private:
  kernels::NormalizeParams params_;
  kernels::ResizeBatch resize_;
  Op work_;
};

}  // namespace imgpipe::stages
