// Pack stage (serial, in input order): copies each finished frame into the
// current staging slot (write-only, sequential), records failed inputs in
// order, and hands a full slot — or the last, partial one at the flush item —
// to the transfer stage. Under on_error: fail the first bad input (in input
// order) throws InputError.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "batch_slot.hpp"
#include "imgpipe/config.hpp"
#include "imgpipe/memory/staging_ring.hpp"
#include "imgpipe/report.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class Pack {
 public:
  Pack(memory::StagingRing& ring, std::vector<std::unique_ptr<BatchSlot>>& slots, const BatchConfig& batch,
       OnError on_error, const gpu::Stream& stream, StageStats& stats);
  Work* operator()(Work* w);

  const std::vector<InputFailure>& failures() const noexcept { return failures_; }
  std::uint64_t dropped() const noexcept { return dropped_; }
  std::uint64_t packed() const noexcept { return packed_; }

 private:
  memory::StagingRing& ring_;
  std::vector<std::unique_ptr<BatchSlot>>& slots_;
  BatchConfig cfg_;
  OnError on_error_;
  const gpu::Stream& stream_;
  StageStats& stats_;
  std::vector<InputFailure> failures_;
  std::uint64_t dropped_ = 0, packed_ = 0, batches_ = 0;
  BatchSlot* current_ = nullptr;
  std::optional<memory::SlotWriter> writer_;
};

}  // namespace imgpipe::stages
