// The state a video reader's thread shares with its VideoReader (video.cpp;
// clips: video_clips.cpp). Private to the stages.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "imgpipe/clips.hpp"
#include "video.hpp"

namespace imgpipe::stages {

// Everything the reader thread touches. Shared with the thread, so that a
// live input's thread stuck in a read can be detached and finish on its own.
struct VideoReader::State {
  State(std::string p, VideoOptions o, std::size_t d, std::shared_ptr<VideoNotifier> n)
      : path(std::move(p)), opts(o), depth(std::max<std::size_t>(d, 1)), live(is_live_input(path)),
        camera(is_camera(path)), notify(std::move(n)) {}

  struct Pending {
    cv::Mat frame;
    std::int64_t index = -1;  // -1: none
  };
  using clock = std::chrono::steady_clock;

  void run();
  void read_file(std::int64_t& index);
  // input.video.clips: the file's clips (clip_plan.hpp draws them), each
  // decoded whole before its frames are queued (video_clips.cpp).
  void read_clips(codecs::VideoFile& file, std::int64_t& index);
  // Decodes frame `index` of `file` into `out`, seeking when that is
  // nearer than decoding on; false at a break or the end (file.error()).
  bool decode_frame(codecs::VideoFile& file, std::int64_t index, std::shared_ptr<codecs::VideoFrame>& out);
  // Queues a finished clip's frames, waiting for room for each; false when stopped.
  bool queue_clip(std::vector<VideoPayload>& frames, const std::vector<std::int64_t>& indices);
  // input.video.clips: the frames start, stride and max_frames select of
  // `all`; the plan (frame indices of the file); what decoding it costs,
  // frames from each clip's keyframe (VideoFileOptions::planned_work).
  std::int64_t selected_frames(std::int64_t all) const noexcept;
  ClipPlan clip_plan(std::int64_t all) const;
  std::int64_t clip_work(const codecs::FrameIndex& fi) const;
  // Frames `file` decoded since the last call, on its route (the decode amplification).
  void count_decoded(const codecs::VideoFile& file);
  void read_frames(codecs::opencv_io::Capture& cap, std::int64_t& index);
  bool wait_for_room(bool wanted, cv::Mat& frame);
  void end_of_stream(std::int64_t index, std::int64_t expected, std::int64_t covered, bool stalled, Pending& pending);
  void publish(Pending& p);
  bool take(VideoPayload& out, std::int64_t& index);  // the queue's first frame, with m held
  void finish(std::string error, std::int64_t at);
  void exited();
  // The reader's time in the decoder since `since`, on the route of `device`
  // (-1: the CPU), and the frame it delivered, if any (VideoOptions::decode_stats).
  void count_decode(int device, clock::time_point since, std::size_t frame_bytes, bool delivered);
  // Wakes the source waiting on any reader (input.video.order: ready).
  void signal_waiter() {
    if (notify) notify->signal();
  }

  const std::string path;
  const VideoOptions opts;
  const std::size_t depth;
  const bool live;    // a stream URL or a camera
  const bool camera;
  const std::shared_ptr<VideoNotifier> notify;  // may be null
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::pair<VideoPayload, std::int64_t>> ready;
  std::vector<cv::Mat> spare;
  bool finished = false;
  bool stop = false;
  bool thread_exited = false;
  bool detached = false;
  std::string error;
  std::int64_t stopped_at = -1;
  bool delivered_on[2] = {false, false};
  std::int64_t decoded_seen = 0;  // the file's decoded() when count_decoded() last looked  // a frame delivered on the CPU route, on NVDEC (count_decode)
};


}  // namespace imgpipe::stages
