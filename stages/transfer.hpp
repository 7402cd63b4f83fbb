// Transfer stage (serial, in order): for a packed slot, enqueues the
// host->device copy on its device's non-blocking stream, bracketed by timing
// events (the report's transfer GB/s). In zero-copy mode there is no copy: the
// kernels read the mapped slot in place; where the CPU made the tensor (no
// kernels), the GPU copies the slot into the batch's d_output on the batch's
// stream, so the tensor handed out is device memory. On the host backend it
// is a memcpy.
//
// A copy's duration is read from its events when its slot comes round again
// (by then the pack stage has waited for the slot's release, which follows
// the copy on the same stream) or at the end of the run (finish()), so the
// stage never waits on the GPU to time itself.
#pragma once

#include "stage.hpp"

namespace imgpipe::stages {

class Transfer : public Stage<Transfer, Takes::batches> {
 public:
  explicit Transfer(BatchResources& resources) : Stage("transfer", false), res_(resources) {}
  Tally run(Work& w);
  // After the devices have finished (BatchResources::finish): times the copies
  // not timed yet. Throws a sticky CUDA error.
  void finish();

 private:
  void time_copy(DeviceContext& dev, DeviceBuffers& buf);
  BatchResources& res_;
};

}  // namespace imgpipe::stages
