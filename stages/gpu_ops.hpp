// GPU ops stage (serial, in order): enqueues the batch's kernels on its
// device's stream after the copy — the fused resize + normalise kernel when
// the GPU resizes, the normalise kernel when only normalisation runs there —
// or on the host backend runs their CPU twins over the batch in parallel.
// Records the batch's ready event either way.
#pragma once

#include "batch_slot.hpp"
#include "kernels/fused.hpp"
#include "kernels/normalize.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class GpuOps {
 public:
  enum class Op { none, normalize, resize_normalize };
  // `params` describes one image at the target size (src/dst/batch filled per
  // batch); `fused` the resize (fit, interpolation, pad) for resize_normalize.
  GpuOps(const kernels::NormalizeParams& params, const kernels::ResizeBatch& resize, Op work, StageStats& stats)
      : params_(params), resize_(resize), work_(work), stats_(stats) {}
  Work* operator()(Work* w) const;

 private:
  kernels::NormalizeParams params_;
  kernels::ResizeBatch resize_;
  Op work_;
  StageStats& stats_;
};

}  // namespace imgpipe::stages
