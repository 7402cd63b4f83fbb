// GPU ops stage (serial, in order): when normalisation runs on the GPU,
// enqueues the normalise kernel (u8 HWC batch -> configured layout/dtype)
// on the stream after the copy; on the host backend runs its CPU twin over
// the batch in parallel. Records the batch's ready event either way.
#pragma once

#include "batch_slot.hpp"
#include "kernels/normalize.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class GpuOps {
 public:
  // `params` describes one image (src/dst/batch filled per batch).
  GpuOps(const kernels::NormalizeParams& params, bool normalize_here, const gpu::Stream& stream, StageStats& stats)
      : params_(params), normalize_(normalize_here), stream_(stream), stats_(stats) {}
  Work* operator()(Work* w) const;

 private:
  kernels::NormalizeParams params_;
  bool normalize_;
  const gpu::Stream& stream_;
  StageStats& stats_;
};

}  // namespace imgpipe::stages
