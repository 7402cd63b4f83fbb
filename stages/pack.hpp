// Pack (serial, in input order): decides where each finished frame goes —
// which batch, which staging slot and offset, and for a new batch which device
// it is dispatched to (round robin or least loaded) — records failed inputs in
// order, and hands a full slot, or the last partial one at the flush item, to
// the transfer stage. Under on_error: fail the first bad input (in input
// order) throws InputError.
//
// PackCopy (parallel) then copies the frames into their slots: several
// threads stream into write-combined memory at once, at disjoint offsets.
// The transfer stage is serial and in order, so when it sees the item that
// completed a batch, every frame of that batch has been copied.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "batch_slot.hpp"
#include "imgpipe/config.hpp"
#include "memory/staging_ring.hpp"
#include "imgpipe/report.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class Pack {
 public:
  Pack(memory::StagingRing& ring, std::vector<std::unique_ptr<BatchSlot>>& slots,
       std::vector<std::unique_ptr<DeviceContext>>& devices, Dispatch dispatch, const BatchConfig& batch,
       OnError on_error, StageStats& stats);
  Work* operator()(Work* w);

  const std::vector<InputFailure>& failures() const noexcept { return failures_; }
  std::uint64_t dropped() const noexcept { return dropped_; }
  std::uint64_t packed() const noexcept { return packed_; }

 private:
  DeviceContext* choose_device();
  memory::StagingRing& ring_;
  std::vector<std::unique_ptr<BatchSlot>>& slots_;
  std::vector<std::unique_ptr<DeviceContext>>& devices_;
  Dispatch dispatch_;
  BatchConfig cfg_;
  OnError on_error_;
  StageStats& stats_;
  std::vector<InputFailure> failures_;
  std::uint64_t dropped_ = 0, packed_ = 0, batches_ = 0;
  BatchSlot* current_ = nullptr;
  std::optional<memory::SlotWriter> writer_;
};

class PackCopy {
 public:
  explicit PackCopy(StageStats& stats) : stats_(stats) {}
  Work* operator()(Work* w) const;

 private:
  StageStats& stats_;
};

}  // namespace imgpipe::stages
