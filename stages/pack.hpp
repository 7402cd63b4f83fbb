// Pack (serial, in input order): decides where each finished frame goes —
// which batch, which staging slot and offset, and for a new batch which device
// it is dispatched to (round robin or least loaded) — records failed inputs in
// order, and hands a full slot, or the last partial one at the flush token, to
// the transfer stage. Under on_error: fail the first bad input (in input
// order) throws InputError.
//
// PackCopy (parallel) then copies the frames into their slots: several
// threads stream into write-combined memory at once, at disjoint offsets.
// The transfer stage is serial and in order, so when it sees the token that
// completed a batch, every frame of that batch has been copied.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "imgpipe/config.hpp"
#include "failure_log.hpp"
#include "imgpipe/report.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class Pack : public Stage<Pack, Takes::every_token> {
 public:
  // Uses `resources` (ring, slots, devices) for the whole run. GPU-route
  // JPEGs (Route::gpu_jpeg) get a place in the device frame area of
  // `decode_bytes` per slot (BatchLayout::decode_bytes). `checksummed`:
  // the sink checksums every batch; on the host backend, where the CPU
  // makes the tensor, PackCopy then sums each sample's checksum parts as
  // it writes them (BatchSlot::sums), and the sink adds them up.
  Pack(BatchResources& resources, Dispatch dispatch, const BatchConfig& batch, OnError on_error,
       std::size_t decode_bytes = 0, bool checksummed = false);
  Tally run(Work& w);

  // Failed inputs in input order (path, frame, reason).
  const std::vector<InputFailure>& failures() const noexcept { return failures_; }
  // Where each failure is also said as it happens (none: only recorded).
  void set_failure_log(FailureLog* log) noexcept { log_ = log; }
  std::uint64_t dropped() const noexcept { return dropped_; }  // batch.drop_last
  std::uint64_t packed() const noexcept { return packed_; }
  // Video frames the transfer copied out of the decoder's page-locked buffer (no staging copy).
  std::uint64_t direct_frames() const noexcept { return direct_frames_; }

 private:
  Tally flush(Work& w);
  void start_batch();
  void place_gpu_jpeg(const FrameView& f);
  void place_gpu_video(Work& w);
  // The frame is copied into the slot at the batch's end (w.dest); its bytes join the slot's written runs.
  void stage_at(Work& w, std::size_t bytes);
  // A CPU-decoded video frame in page-locked memory: the transfer copies it (BatchSlot::direct).
  void place_direct(Work& w);
  DeviceContext* choose_device();
  BatchResources& res_;
  Dispatch dispatch_;
  BatchConfig cfg_;
  OnError on_error_;
  std::size_t decode_bytes_;
  bool sum_samples_;  // BatchSlot::sums for every batch
  std::vector<InputFailure> failures_;
  FailureLog* log_ = nullptr;
  std::uint64_t dropped_ = 0, packed_ = 0, batches_ = 0, direct_frames_ = 0;
  BatchSlot* current_ = nullptr;
  std::optional<memory::SlotWriter> writer_;
};

class PackCopy : public Stage<PackCopy, Takes::staged_frames> {
 public:
  PackCopy() : Stage("pack_copy", true) {}
  // Writes the token's frame at its slot position, and sums its checksum
  // parts where pack asked for them (SlotPosition::sum).
  Tally run(Work& w) const;
};

}  // namespace imgpipe::stages
