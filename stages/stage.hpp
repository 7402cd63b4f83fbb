// What every stage shares: the token that flows through the oneTBB pipeline,
// the per-stage statistics the report is built from, and the stage base that
// times each call, runs the fault hook, counts items and skips the tokens a
// stage does not work on (DALI's Operator::Run -> RunImpl).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "batch_slot.hpp"
#include "codecs/video/frame.hpp"
#include "core/fault.hpp"
#include "core/nvtx.hpp"
#include "imgpipe/batch.hpp"
#include "kernels/resize.hpp"
#include "kernels/yuv_fused.hpp"
#include "memory/staging_ring.hpp"

namespace imgpipe::stages {

// One input as discovered by the source stage.
struct InputItem {
  std::string path;
  std::int64_t frame = -1;
  std::string error;  // non-empty: discovery already failed (missing path, unreadable directory)
  bool video = false;  // a video file (is_video_path): the source stage decodes its frames
  std::int64_t label = -1;  // input.labels: folders: the class index (SampleId::label); -1: none
  // Its place in the looped input list before the shuffle and the shard (the
  // same on every rank): the random augmentations' key (imgpipe/augment.hpp).
  std::uint64_t id = 0;
};

// What a stage's items are.
enum class Counts : std::uint8_t {
  samples,  // images and video frames
  images,   // image files (video frames are decoded by the video readers)
  frames,   // video frames (the video decoders' rows, VideoDecodeStats)
  batches,
};

// Statistics of one stage, written only by that stage (concurrently for a
// parallel one). Time is wall time on the stage's threads.
struct StageStats {
  explicit StageStats(std::string n, bool par = false, Counts c = Counts::samples)
      : name(std::move(n)), parallel(par), counts(c) {}
  std::string name;
  bool parallel;
  Counts counts;
  std::atomic<std::uint64_t> items{0};
  std::atomic<std::uint64_t> bytes{0};     // bytes the stage produced (or moved)
  std::atomic<std::int64_t> busy_ns{0};    // inside the stage's calls, waits included
  std::atomic<std::int64_t> wait_ns{0};    // the part of busy_ns blocked on a slot event or the GPU
  std::atomic<std::int64_t> device_ns{0};  // GPU time of the stage's device work (CUDA events)

  void add_wait(std::chrono::steady_clock::duration d) {
    wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
};

// Adds the scope's duration to a stage's busy time, less `*excluded` (when
// given, read at the end of the scope): time inside the call that is not the
// stage's work but upstream's (the source waiting for a video's next frame).
class BusyTimer {
 public:
  explicit BusyTimer(StageStats& s, const std::chrono::steady_clock::duration* excluded = nullptr)
      : s_(s), excluded_(excluded), t0_(std::chrono::steady_clock::now()) {}
  ~BusyTimer() {
    auto d = std::chrono::steady_clock::now() - t0_;
    if (excluded_) d -= std::min(*excluded_, d);
    s_.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
  BusyTimer(const BusyTimer&) = delete;
  BusyTimer& operator=(const BusyTimer&) = delete;

 private:
  StageStats& s_;
  const std::chrono::steady_clock::duration* excluded_;
  std::chrono::steady_clock::time_point t0_;
};

// Where a sample came from and how it fared.
struct Sample {
  std::uint64_t seq = 0;             // position in the input list
  const InputItem* input = nullptr;  // null on the flush token
  std::int64_t frame = -1;           // frame index within a video; -1 for still images
  // input.video.clips: the clip (its number in the video's plan), the
  // frame's place in it; the frame's presentation time in seconds (NaN: unknown).
  std::int64_t clip = -1;
  int clip_frame = 0;
  double pts = std::numeric_limits<double>::quiet_NaN();
  std::string error;
  // The frame key of the sample's random augmentations (imgpipe/augment.hpp):
  // its frame, or, for a clip's frame, the clip's own (-3 - clip), so that a
  // clip's frames share one crop and flip.
  std::int64_t draw_key() const noexcept { return clip >= 0 ? -3 - clip : frame; }                 // non-empty: this input failed, with the reason
  // When the source handed it out (a pushed item: when push() took it): the
  // start of the sample's latency (Report::latency).
  std::chrono::steady_clock::time_point t0;
  // Decode (or probe): the original's size, orientation and reduction;
  // transform (or probe): the resize (stages/geometry.hpp).
  SampleGeometry geometry;
};

// The frame the pack stage copies into the slot (u8 HWC, or the normalised
// tensor when the CPU normalises), pointing into the token's own buffers.
struct FrameView {
  const void* data = nullptr;
  std::size_t bytes = 0;
  int width = 0, height = 0;
  // A video frame staged as decoded, YUV (the GPU converts it: kernels/yuv.hpp):
  // `bytes` dense bytes gathered from these planes (plane k: rows[k] rows of
  // row_bytes[k] bytes, src_pitch[k] apart), laid out in the slot as `staged`
  // says (`data` unused).
  struct Yuv : YuvPlanes {
    std::size_t bytes = 0;  // all planes, dense
    kernels::SrcYuv staged;
  };
  std::optional<Yuv> yuv;
  // A video frame (Pixels::video) the CPU takes from YUV to the frame pack
  // copies in one pass (kernels/yuv_fused.hpp), done by the pack-copy stage
  // straight into the slot where the slot is plain memory (the host
  // backend), else into a buffer it then copies (`bytes` of output; dst
  // set there).
  std::optional<kernels::YuvFusedParams> one_pass;
  // A frame the GPU resizes: the box of it the resize starts from (width 0:
  // all of it) and the mirroring after it (random_crop, transform.flip: the
  // sample's geometry).
  struct Window {
    int x = 0, y = 0, width = 0, height = 0;
    bool flip_x = false, flip_y = false;
  } gpu;
};

// The sample's data from bytes to pixels. Pooled with the token and kept
// between inputs, so the hot path does not allocate once the buffers have
// grown to the inputs' size.
struct Pixels {
  std::vector<unsigned char> bytes;   // read: the file
  cv::Mat decoded;                    // decode (or the source, for a live video frame): BGR u8
  // The displayed original's coordinates of decoded's first pixel: the box's
  // corner when the decode stage decoded only random_crop's box (decode.region), else 0.
  int origin_x = 0, origin_y = 0;
  // A video file's frame as decoded (YUV), which the decode stage converts
  // into `decoded` with the container's display rotation.
  std::shared_ptr<codecs::VideoFrame> video;
  int video_rotation = 0;
  bool video_flip = false;
  cv::Mat resized;                    // transform: u8 HWC at the target size (continuous)
  cv::Mat scratch;                    // transform: intermediate (center_crop)
  std::vector<unsigned char> tensor;  // transform: the normalised image (normalize.where: cpu)
  FrameView out;                      // transform: what pack copies
};

// Where in which slot the frame goes (set by pack, used by pack_copy).
struct SlotPosition {
  std::optional<memory::SlotWriter> writer;
  std::size_t offset = 0;
  SampleChecksum* sum = nullptr;  // where PackCopy puts the frame's checksum parts (BatchSlot::sums); null: none
};

// Where a sample is decoded (stages/probe.hpp decides).
enum class Route : std::uint8_t {
  cpu,       // decode and transform on the CPU; the slot gets the frame
  gpu_jpeg,  // the slot gets the JPEG bitstream as read; the GPU decodes it
  gpu_video, // a video frame NVDEC decoded (pixels.video, in device memory): the batch reads it there
};

// The token that travels through the pipeline: one per token in flight,
// recycled by the sink.
struct Work {
  enum class Kind : std::uint8_t {
    image,        // an image file: read and decode fill `pixels`
    video_frame,  // a video frame the source decoded (`pixels.decoded`)
    flush,        // end of input: pack emits the partial batch
    cut,          // batch.timeout_ms passed with a partial batch pending: pack emits it; the run goes on
  };
  Kind kind = Kind::image;
  Route route = Route::cpu;
  Sample sample;
  Pixels pixels;
  SlotPosition dest;
  BatchSlot* batch = nullptr;  // set by pack on the token that completes a batch
  // An item the application pushed (PushSource): `sample.input` points
  // here, and an encoded one arrives with its bytes (`preloaded`: the read
  // stage has nothing to read).
  InputItem own_input;
  bool preloaded = false;

  bool failed() const noexcept { return !sample.error.empty(); }
  bool is_sample() const noexcept { return kind == Kind::image || kind == Kind::video_frame; }
  void reset_for(Kind k, std::uint64_t seq, const InputItem* in) {
    kind = k;
    route = Route::cpu;
    sample.seq = seq;
    sample.input = in;
    sample.frame = in ? in->frame : -1;
    sample.clip = -1;
    sample.clip_frame = 0;
    sample.pts = std::numeric_limits<double>::quiet_NaN();
    sample.error.clear();
    sample.t0 = std::chrono::steady_clock::now();
    preloaded = false;
    sample.geometry = {};
    pixels.bytes.clear();
    pixels.origin_x = pixels.origin_y = 0;
    pixels.out = {};
    dest = {};
    batch = nullptr;
  }
};

// Which tokens a stage works on; the base passes the others through untouched.
enum class Takes : std::uint8_t {
  samples,          // image and video-frame tokens that have not failed, but those of GPU-decoded JPEGs
  encoded_samples,  // the same, without video frames
  to_decode,        // encoded_samples and the video files' frames (pixels.video: YUV to convert)
  every_token,      // all, flush and failed tokens included
  staged_frames,    // tokens whose frame pack placed in a slot
  batches,          // tokens that carry batches (BatchSlot::then links the rest)
  batches_and_ends, // the same, and the end-of-input and batch.timeout_ms tokens
};

// What one call produced, added to the stage's statistics by the base.
struct Tally {
  std::uint64_t items = 1;
  std::uint64_t bytes = 0;
};

// The stage base: a stage derives as `class Read : public Stage<Read,
// Takes::encoded_samples>` and implements `Tally run(Work&)`. operator()
// skips the tokens the stage does not take, times the call, runs the fault
// hook (`IMGPIPE_FAULT=<stage>:<item>`, keyed by the input's sequence number,
// or the batch index for batch stages) and adds the tally to the stage's own
// statistics. A stage writes no other stage's statistics.
template <class Derived, Takes T>
class Stage {
 public:
  Stage(const char* name, bool parallel) : stats_(name, parallel, counts()) {}
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

  Work* operator()(Work* w) {
    if (!takes(*w)) return w;
    const nvtx::Range range(stats_.name.c_str(), fault_key(*w));
    BusyTimer t(stats_);
    // Batch stages: keyed by each batch the token carries, whatever the
    // token (the end-of-input token carries the last batch; the GPU ops
    // stage passes a group of batches on the token it happens to hold when
    // their engine call is done).
    if constexpr (T == Takes::batches) {
      for (const BatchSlot* b = w->batch; b != nullptr; b = b->then) fault::check(stats_.name, b->index);
    } else if constexpr (T == Takes::batches_and_ends) {
      if (w->batch != nullptr) fault::check(stats_.name, w->batch->index);
    } else if (w->is_sample()) {
      fault::check(stats_.name, fault_key(*w));
    }
    const Tally n = static_cast<Derived&>(*this).run(*w);
    stats_.items += n.items;
    stats_.bytes += n.bytes;
    return w;
  }

  static bool takes(const Work& w) noexcept {
    switch (T) {
      case Takes::samples: return w.is_sample() && !w.failed() && w.route != Route::gpu_jpeg;
      case Takes::encoded_samples: return w.kind == Work::Kind::image && !w.failed() && w.route == Route::cpu;
      case Takes::to_decode:
        return (w.kind == Work::Kind::image || w.pixels.video != nullptr) && !w.failed() && w.route == Route::cpu;
      case Takes::every_token: return true;
      case Takes::staged_frames: return w.dest.writer.has_value();
      case Takes::batches: return w.batch != nullptr;
      case Takes::batches_and_ends:
        return w.batch != nullptr || w.kind == Work::Kind::flush || w.kind == Work::Kind::cut;
    }
    return false;
  }

  const StageStats& stats() const noexcept { return stats_; }

 protected:
  StageStats& own_stats() noexcept { return stats_; }  // for waits and device time

 private:
  static constexpr Counts counts() noexcept {
    if (T == Takes::batches || T == Takes::batches_and_ends) return Counts::batches;
    return T == Takes::encoded_samples ? Counts::images : Counts::samples;
  }
  static std::uint64_t fault_key(const Work& w) noexcept {
    if constexpr (T == Takes::batches) return w.batch->index;
    if constexpr (T == Takes::batches_and_ends) return w.batch != nullptr ? w.batch->index : w.sample.seq;
    return w.sample.seq;
  }
  StageStats stats_;
};

}  // namespace imgpipe::stages
