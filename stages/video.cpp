#include "video.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>

namespace imgpipe::stages {

bool is_video_path(const std::string& path) {
  static constexpr std::array<const char*, 13> exts = {".avi", ".mp4", ".mkv", ".mov", ".webm", ".m4v", ".mpg",
                                                       ".mpeg", ".wmv", ".flv", ".ts", ".3gp", ".ogv"};
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::find(exts.begin(), exts.end(), e) != exts.end();
}

VideoReader::VideoReader(std::string path, VideoOptions opts, std::size_t depth)
    : path_(std::move(path)), opts_(opts), depth_(std::max<std::size_t>(depth, 1)) {
  thread_ = std::thread([this] { run(); });
}

VideoReader::~VideoReader() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void VideoReader::stop() noexcept {
  {
    std::lock_guard lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
}

void VideoReader::finish(std::string error, std::int64_t at) {
  std::lock_guard lk(m_);
  error_ = std::move(error);
  stopped_at_ = at;
  finished_ = true;
  cv_.notify_all();
}

// The latest wanted frame waits in `pending` until the next read succeeds:
// when a stream breaks, the frame decoded just before the break holds the
// damaged data (FFmpeg conceals the errors and returns it as a frame), so it
// is reported with the break instead of being delivered.
void VideoReader::publish(Pending& p) {
  if (p.index < 0) return;
  std::lock_guard lk(m_);
  ready_.emplace_back(std::move(p.frame), p.index);
  p.frame = cv::Mat();
  p.index = -1;
  cv_.notify_all();
}

// Waits for room in the queue; false when asked to stop. Takes a spare
// buffer for the next wanted frame.
bool VideoReader::wait_for_room(bool wanted, cv::Mat& frame) {
  std::unique_lock lk(m_);
  cv_.wait(lk, [&] { return stop_ || ready_.size() < depth_; });
  if (stop_) return false;
  if (wanted && frame.empty() && !spare_.empty()) {
    frame = std::move(spare_.back());
    spare_.pop_back();
  }
  return true;
}

// The end of the stream at `index`: complete, or broken when the declared
// frame count says more should have come.
void VideoReader::end_of_stream(std::int64_t index, std::int64_t expected, std::int64_t covered, Pending& pending) {
  const std::int64_t tolerance = std::max<std::int64_t>(2, expected / 100);
  if (index == 0) {
    finish("opened but yielded no frames", 0);
  } else if (expected > 0 && covered < expected - tolerance) {
    // pending.index is -1 or index - 1: any older frame was published by the
    // successful read after it.
    const std::int64_t at = pending.index >= 0 ? pending.index : index;
    finish(fmt::format("stream broke at frame {} of {} declared (corrupt or truncated file)", at, expected), at);
  } else {
    publish(pending);
    finish({}, index);
  }
}

void VideoReader::read_frames(cv::VideoCapture& cap, std::int64_t& index) {
  const double count_prop = cap.get(cv::CAP_PROP_FRAME_COUNT);
  const double fps = cap.get(cv::CAP_PROP_FPS);
  const std::int64_t expected = count_prop > 0 && count_prop < 1e12 ? static_cast<std::int64_t>(count_prop) : -1;
  // How far into the declared frames the stream got: frames read, or the
  // presentation time of the latest one, whichever says more.
  std::int64_t covered = 0;
  std::int64_t delivered = 0;
  cv::Mat frame;
  Pending pending;
  for (;; ++index) {
    if (opts_.max_frames > 0 && delivered >= opts_.max_frames) break;
    const bool wanted = index >= opts_.start && (index - opts_.start) % opts_.stride == 0;
    if (!wait_for_room(wanted, frame)) break;
    const bool ok = wanted ? cap.read(frame) : cap.grab();  // grab() skips without converting the frame
    if (!ok) return end_of_stream(index, expected, covered, pending);
    publish(pending);
    covered = std::max(covered, index + 1);
    if (fps > 0) {
      const double ms = cap.get(cv::CAP_PROP_POS_MSEC);
      if (ms > 0) covered = std::max(covered, static_cast<std::int64_t>(std::llround(ms * fps / 1000.0)) + 1);
    }
    if (!wanted) continue;
    if (frame.type() != CV_8UC3)
      return finish(fmt::format("unsupported frame format at frame {} ({} channels, depth {})", index,
                                frame.channels(), frame.depth()),
                    index);
    pending = {std::move(frame), index};
    frame = cv::Mat();
    ++delivered;
  }
  publish(pending);  // max_frames reached, or stopping (then nobody takes it)
  finish({}, index);
}

void VideoReader::run() {
  std::int64_t index = 0;  // the next frame's index in the file
  try {
    cv::VideoCapture cap;
    // FFmpeg alone: the other backends (GStreamer, images) either cannot read
    // what FFmpeg cannot or print errors for every file they reject.
    const int api = cv::videoio_registry::hasBackend(cv::CAP_FFMPEG) ? cv::CAP_FFMPEG : cv::CAP_ANY;
    if (!cap.open(path_, api))
      return finish("cannot open video (not a video file, or a container or codec FFmpeg cannot read)", 0);
    read_frames(cap, index);
  } catch (const std::exception& e) {
    finish(fmt::format("video decode error at frame {}: {}", index, e.what()), index);
  } catch (...) {
    finish(fmt::format("video decode error at frame {}", index), index);
  }
}

bool VideoReader::next(cv::Mat& out, std::int64_t& index) {
  std::unique_lock lk(m_);
  cv_.wait(lk, [&] { return !ready_.empty() || finished_ || stop_; });
  if (ready_.empty()) return false;
  if (!out.empty() && out.u && out.u->refcount == 1) spare_.push_back(std::move(out));
  out = std::move(ready_.front().first);
  index = ready_.front().second;
  ready_.pop_front();
  cv_.notify_all();
  return true;
}

VideoPrefetcher::VideoPrefetcher(const std::vector<InputItem>& items, VideoOptions opts, int ahead, std::size_t depth)
    : items_(items), opts_(opts), ahead_(static_cast<std::size_t>(std::max(1, ahead))), depth_(depth) {}

VideoPrefetcher::~VideoPrefetcher() { stop_all(); }

void VideoPrefetcher::prefetch(std::size_t from) {
  next_to_open_ = std::max(next_to_open_, from);
  while (next_to_open_ < items_.size() && open_.size() < ahead_) {
    if (items_[next_to_open_].video && !open_.count(next_to_open_))
      open_.emplace(next_to_open_, std::make_unique<VideoReader>(items_[next_to_open_].path, opts_, depth_));
    ++next_to_open_;
  }
}

VideoReader& VideoPrefetcher::reader(std::size_t i) {
  auto it = open_.find(i);
  if (it == open_.end()) it = open_.emplace(i, std::make_unique<VideoReader>(items_[i].path, opts_, depth_)).first;
  prefetch(i + 1);
  return *it->second;
}

void VideoPrefetcher::release(std::size_t i) { open_.erase(i); }

void VideoPrefetcher::stop_all() noexcept {
  // Ask every reader to stop first, then join them (the map's destructors).
  for (auto& [i, r] : open_) r->stop();
  open_.clear();
}

}  // namespace imgpipe::stages
