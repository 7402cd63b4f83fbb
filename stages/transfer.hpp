// Transfer stage (serial, in order): for a packed slot, enqueues the
// host->device copy on its device's non-blocking stream, bracketed by timing
// events (the report's transfer GB/s). In zero-copy mode there is no copy: the
// kernels read the mapped slot in place. On the host backend it is a memcpy.
#pragma once

#include "batch_slot.hpp"
#include "memory/staging_ring.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class Transfer {
 public:
  Transfer(const memory::StagingRing& ring, StageStats& stats) : ring_(ring), stats_(stats) {}
  Work* operator()(Work* w) const;

 private:
  const memory::StagingRing& ring_;
  StageStats& stats_;
};

}  // namespace imgpipe::stages
