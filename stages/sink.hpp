// Sink stage (serial, in order): the end of a batch's life.
//  - discard: checksum of the batch tensor on the device (kernels::checksum),
//    kept per batch in the report;
//  - dump: the batch as dir/batch_NNNNNN.npy (float32 '<f4', float16 '<f2' or
//    uint8 '|u1', in the configured layout) plus one line per sample in
//    dir/manifest.jsonl: {"batch", "index", "input_index", "path", "frame"};
//  - then the library callback, if any;
//  - then the slot's release event, after whatever the callback enqueued on
//    the batch's stream.
#pragma once

#include <fstream>
#include <vector>

#include "batch_slot.hpp"
#include "imgpipe/config.hpp"
#include "imgpipe/report.hpp"
#include "memory/staging_ring.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class Sink {
 public:
  Sink(const SinkConfig& cfg, memory::StagingRing& ring, const BatchCallback& callback, StageStats& stats,
       StageStats& transfer_stats);
  void operator()(Work* w);

  std::uint64_t delivered() const noexcept { return delivered_; }
  const std::vector<BatchRecord>& records() const noexcept { return records_; }
  double transfer_seconds() const noexcept { return transfer_s_; }

  // Writes a .npy file (version 1.0) of `bytes` at `data`.
  static void write_npy(const std::string& path, const void* data, std::size_t bytes, DType dtype,
                        const std::vector<std::int64_t>& shape);

 private:
  SinkConfig cfg_;
  memory::StagingRing& ring_;
  const BatchCallback& callback_;
  StageStats& stats_;
  StageStats& transfer_stats_;
  std::uint64_t delivered_ = 0;
  double transfer_s_ = 0;
  std::vector<BatchRecord> records_;
  std::vector<unsigned char> host_copy_;  // dump: the batch copied back
  std::ofstream manifest_;
};

}  // namespace imgpipe::stages
