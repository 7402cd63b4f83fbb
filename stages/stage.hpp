// What every stage shares: the work item that flows through the oneTBB
// pipeline and the per-stage statistics the report is built from.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "imgpipe/batch.hpp"
#include "memory/staging_ring.hpp"

namespace imgpipe::stages {

// One input as discovered by the source stage.
struct InputItem {
  std::string path;
  std::int64_t frame = -1;
  std::string error;  // non-empty: discovery already failed (missing path, unreadable directory)
  bool video = false;  // a video file (is_video_path): the source stage decodes its frames
};

// Statistics of one stage, updated concurrently by its filter.
struct StageStats {
  explicit StageStats(std::string n, bool par = false) : name(std::move(n)), parallel(par) {}
  std::string name;
  bool parallel;
  std::atomic<std::uint64_t> items{0};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::int64_t> busy_ns{0};
  std::atomic<std::int64_t> wait_ns{0};
  std::atomic<std::int64_t> device_ns{0};  // GPU time of the stage's device work (CUDA events)

  void add_wait(std::chrono::steady_clock::duration d) {
    wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
};

// Adds the scope's duration to a stage's busy time.
class BusyTimer {
 public:
  explicit BusyTimer(StageStats& s) : s_(s), t0_(std::chrono::steady_clock::now()) {}
  ~BusyTimer() {
    s_.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
  }
  BusyTimer(const BusyTimer&) = delete;
  BusyTimer& operator=(const BusyTimer&) = delete;

 private:
  StageStats& s_;
  std::chrono::steady_clock::time_point t0_;
};

struct BatchSlot;  // pipeline-owned resources of one staging slot (pipeline/src)

// The token that travels through the pipeline. Work objects are pooled: one
// per token in flight, recycled by the sink, their buffers kept, so the hot
// path does not allocate once buffers have grown to the inputs' size.
struct Work {
  std::uint64_t seq = 0;            // position in the input list
  const InputItem* input = nullptr;
  bool flush = false;               // end of input: pack emits the partial batch
  std::vector<unsigned char> bytes;  // read: the file
  cv::Mat decoded;                  // decode: BGR u8
  cv::Mat resized;                  // transform: u8 HWC at the target size (continuous)
  cv::Mat scratch;                  // transform: intermediate (center_crop)
  std::vector<unsigned char> tensor;  // transform: normalised image (normalize.where: cpu)
  const void* frame_data = nullptr;   // what pack copies: resized, tensor or (GPU resize) decoded
  std::size_t frame_bytes = 0;
  int frame_width = 0, frame_height = 0;  // of frame_data (u8 HWC) when the GPU resizes
  std::int64_t frame = -1;          // frame index within a video; -1 for still images
  bool predecoded = false;          // source: a video frame, `decoded` already filled; read and decode pass it on
  std::optional<memory::SlotWriter> dest;  // pack: where PackCopy writes the frame
  std::size_t dest_offset = 0;
  std::string error;                // non-empty: this input failed, with the reason
  BatchSlot* batch = nullptr;       // set by pack when this item completes a batch

  void reset_for(std::uint64_t s, const InputItem* in) {
    seq = s;
    input = in;
    flush = false;
    bytes.clear();
    frame_data = nullptr;
    frame_bytes = 0;
    frame_width = frame_height = 0;
    frame = in ? in->frame : -1;
    predecoded = false;
    dest.reset();
    dest_offset = 0;
    error.clear();
    batch = nullptr;
  }
};

}  // namespace imgpipe::stages
