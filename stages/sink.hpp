// Sink stage (serial, in order): the end of a batch's life.
//  - discard: checksum of the batch tensor on the device (kernels::checksum),
//    kept per batch in the report; on the host backend added up from the
//    parts PackCopy summed as it wrote the samples (BatchSlot::sums) where
//    it did, so that the batch is not read again;
//  - dump: the batch as FOLDER/batch_NNNNNN.npy (float32 '<f4', float16 '<f2' or
//    uint8 '|u1', in the configured layout) plus one line per sample in
//    FOLDER/manifest.jsonl: {"batch", "index", "input_index", "path", "frame", "route",
//    "label", "geometry"} (route: "gpu" for a JPEG the GPU decoded, else "cpu";
//    label: SampleId::label; geometry: SampleGeometry's fields by their
//    names, resize as its config name); FOLDER is sink.dir,
//    or sink.dir/rank_R_of_W for one of several ranks (dump_folder.hpp, whose
//    prepare_dump_folder() the pipeline calls before the run);
//  - then the library callback, if any;
//  - then the slot's release event, after whatever the callback enqueued on
//    the batch's stream; or, with a hand-off (the pull API), the batch goes
//    to the hand-off, which releases the slot later (the sink releases it
//    only when something before the hand-off threw).
// Each delivered sample's latency (from Sample::t0 to the batch being ready:
// the checksum or the dump has waited for the batch's GPU work) goes into
// latency().
#pragma once

#include <fstream>
#include <vector>

#include "imgpipe/config.hpp"
#include "imgpipe/report.hpp"
#include "input_order.hpp"
#include "latency.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

// Takes a delivered batch's slot over (the pull API): from then on the slot
// is the hand-off's to release (BatchSlot::dev->in_flight included).
using BatchHandoff = std::function<void(BatchSlot&)>;

class Sink : public Stage<Sink, Takes::batches> {
 public:
  // `shard`: this process's rank, which names its dump folder. Throws Error
  // when the dump folder or its manifest cannot be created.
  Sink(const SinkConfig& cfg, const ShardSpec& shard, memory::StagingRing& ring, const BatchCallback& callback,
       BatchHandoff handoff = {});
  // Delivers each batch the token carries (w.batch, then BatchSlot::then),
  // releasing its slot after it (also when the callback throws).
  Tally run(Work& w);

  // Samples delivered: images and frames, or clips (DeviceBatch::size()).
  std::uint64_t delivered() const noexcept { return delivered_; }
  // Of those, the video frames (SampleKind::frame); the others are images.
  std::uint64_t delivered_frames() const noexcept { return delivered_frames_; }
  const std::vector<BatchRecord>& records() const noexcept { return records_; }
  const LatencyHistogram& latency() const noexcept { return latency_; }

  // Writes a .npy file (version 1.0) of `bytes` at `data`.
  static void write_npy(const std::string& path, const void* data, std::size_t bytes, DType dtype,
                        const std::vector<std::int64_t>& shape);

 private:
  Tally deliver(BatchSlot& b);
  SinkConfig cfg_;
  std::string folder_;  // dump: where the batches and the manifest go
  memory::StagingRing& ring_;
  void fill(BatchSlot& b) const;
  std::uint64_t checksum_on_device(BatchSlot& b);
  std::uint64_t dump(BatchSlot& b);
  BatchCallback callback_;  // a copy: the caller's may be a temporary
  BatchHandoff handoff_;
  LatencyHistogram latency_;
  std::uint64_t delivered_ = 0;
  std::uint64_t delivered_frames_ = 0;
  std::vector<BatchRecord> records_;
  std::vector<unsigned char> host_copy_;  // dump: the batch copied back
  std::ofstream manifest_;
};

}  // namespace imgpipe::stages
