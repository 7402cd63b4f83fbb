// Video inputs: each video file is decoded in order by its own reader thread
// (OpenCV VideoCapture, FFmpeg backend) into a small bounded queue; up to
// `ahead` files decode at once, so several videos decode in parallel while
// the pipeline's source stage takes their frames in input order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>

#include "stage.hpp"

namespace cv {
class VideoCapture;
}

namespace imgpipe::stages {

struct VideoOptions {
  std::int64_t start = 0;       // first frame index delivered
  std::int64_t stride = 1;      // deliver every stride-th frame from start
  std::int64_t max_frames = 0;  // per file; 0 = all
};

// True when the file name has one of the video extensions OpenCV's FFmpeg
// backend reads (.avi .mp4 .mkv .mov .webm .m4v .mpg .mpeg .wmv .flv .ts .3gp .ogv), case-insensitive.
bool is_video_path(const std::string& path);

// Decodes one file on a background thread into a queue of at most `depth`
// frames (BGR u8). Frames keep their buffers: the caller swaps its spent Mat
// in, so steady state allocates nothing. Never throws from the thread: OpenCV
// errors end the file with error() set.
class VideoReader {
 public:
  VideoReader(std::string path, VideoOptions opts, std::size_t depth = 4);
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  // Blocks for the next frame: swaps it into `frame` (the caller's previous
  // buffer is recycled) and sets its index. Returns false at the end of the
  // file or stream; then error() says whether it ended early.
  bool next(cv::Mat& frame, std::int64_t& index);

  // Empty when the file ended normally. Otherwise the reason ("cannot open
  // video ...", "opened but yielded no frames", "stream broke at frame k ..."),
  // with the frame index where decoding stopped in stopped_at() (0 when the
  // file could not be opened). Valid once next() has returned false.
  //
  // A stream "broke" when it ended before the frame count its container
  // declares: the frames read, or the presentation time of the last one (AVI
  // files may hold empty "repeat the last frame" chunks that count without
  // being decoded), fall short of that count by more than max(2, 1%). The
  // frame decoded last before a break is not delivered (it holds the data cut
  // or damaged at the break, which FFmpeg conceals without an error): the
  // break is reported at that frame.
  const std::string& error() const noexcept { return error_; }
  std::int64_t stopped_at() const noexcept { return stopped_at_; }
  const std::string& path() const noexcept { return path_; }
  void stop() noexcept;

 private:
  struct Pending {
    cv::Mat frame;
    std::int64_t index = -1;  // -1: none
  };
  void run();
  void read_frames(cv::VideoCapture& cap, std::int64_t& index);
  bool wait_for_room(bool wanted, cv::Mat& frame);
  void end_of_stream(std::int64_t index, std::int64_t expected, std::int64_t covered, Pending& pending);
  void publish(Pending& p);
  void finish(std::string error, std::int64_t at);
  std::string path_;
  VideoOptions opts_;
  std::size_t depth_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::pair<cv::Mat, std::int64_t>> ready_;
  std::vector<cv::Mat> spare_;
  bool finished_ = false;
  bool stop_ = false;
  std::string error_;
  std::int64_t stopped_at_ = -1;
  std::thread thread_;
};

// Starts the readers of the video items of an input list ahead of their
// turn, so that up to `ahead` files decode at once (in input order), while the
// source stage takes the frames of one file at a time. Not thread-safe: the
// serial source stage owns it.
class VideoPrefetcher {
 public:
  // `items` must outlive the prefetcher; items with `video` set are videos.
  VideoPrefetcher(const std::vector<InputItem>& items, VideoOptions opts, int ahead, std::size_t depth = 4);
  ~VideoPrefetcher();
  VideoPrefetcher(const VideoPrefetcher&) = delete;
  VideoPrefetcher& operator=(const VideoPrefetcher&) = delete;

  // Starts readers for the next videos at or after item `from` while fewer
  // than `ahead` are open.
  void prefetch(std::size_t from);
  // The reader of item i (a video), started now if it is not open yet; then
  // prefetches from i.
  VideoReader& reader(std::size_t i);
  // Item i is finished: its reader is stopped and closed.
  void release(std::size_t i);
  void stop_all() noexcept;
  std::size_t open_readers() const noexcept { return open_.size(); }

 private:
  const std::vector<InputItem>& items_;
  VideoOptions opts_;
  std::size_t ahead_;
  std::size_t depth_;
  std::size_t next_to_open_ = 0;
  std::map<std::size_t, std::unique_ptr<VideoReader>> open_;
};

}  // namespace imgpipe::stages
