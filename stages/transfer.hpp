// Transfer stage (serial, in order): enqueues the host->device copy of a
// packed slot on the pipeline's non-blocking stream, bracketed by timing
// events (the report's transfer GB/s). On the host backend it is a memcpy.
#pragma once

#include "batch_slot.hpp"
#include "imgpipe/memory/staging_ring.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class Transfer {
 public:
  Transfer(const memory::StagingRing& ring, const gpu::Stream& stream, StageStats& stats)
      : ring_(ring), stream_(stream), stats_(stats) {}
  Work* operator()(Work* w) const;

 private:
  const memory::StagingRing& ring_;
  const gpu::Stream& stream_;
  StageStats& stats_;
};

}  // namespace imgpipe::stages
