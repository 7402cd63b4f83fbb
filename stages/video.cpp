#include "video.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>
#include <opencv2/videoio.hpp>

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

void VideoReader::run() {
  auto finish = [&](std::string error, std::int64_t at) {
    std::lock_guard lk(m_);
    error_ = std::move(error);
    stopped_at_ = at;
    finished_ = true;
    cv_.notify_all();
  };
  cv::VideoCapture cap;
  try {
    if (!cap.open(path_, cv::CAP_FFMPEG) && !cap.open(path_, cv::CAP_ANY)) {
      finish("cannot open video (no backend could read it)", -1);
      return;
    }
  } catch (const cv::Exception& e) {
    finish(std::string("cannot open video: ") + e.what(), -1);
    return;
  }
  const double count_prop = cap.get(cv::CAP_PROP_FRAME_COUNT);
  const std::int64_t expected = count_prop > 0 && count_prop < 1e12 ? static_cast<std::int64_t>(count_prop) : -1;
  std::int64_t index = 0, delivered = 0;
  cv::Mat frame;
  for (;;) {
    if (opts_.max_frames > 0 && delivered >= opts_.max_frames) break;
    const bool wanted = index >= opts_.start && (index - opts_.start) % opts_.stride == 0;
    {
      std::unique_lock lk(m_);
      cv_.wait(lk, [&] { return stop_ || ready_.size() < depth_; });
      if (stop_) break;
      if (wanted && !spare_.empty()) {
        frame = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    bool ok;
    try {
      ok = wanted ? cap.read(frame) : cap.grab();  // grab() skips without converting the frame
    } catch (const cv::Exception& e) {
      finish(fmt::format("decode error at frame {}: {}", index, e.what()), index);
      return;
    }
    if (!ok) {
      if (index == 0) {
        finish("opened but yielded no frames", 0);
      } else if (expected > 0 && index < expected) {
        finish(fmt::format("stream broke at frame {} of {} expected (corrupt or truncated)", index, expected), index);
      } else {
        finish({}, index);
      }
      return;
    }
    if (wanted) {
      if (frame.channels() != 3 || frame.depth() != CV_8U) {
        finish(fmt::format("unsupported frame format at frame {} ({} channels, depth {})", index, frame.channels(),
                           frame.depth()),
               index);
        return;
      }
      std::lock_guard lk(m_);
      ready_.emplace_back(std::move(frame), index);
      frame = cv::Mat();
      ++delivered;
      cv_.notify_all();
    }
    ++index;
  }
  finish({}, index);
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

VideoPrefetcher::VideoPrefetcher(std::vector<std::string> paths, std::vector<bool> is_video, VideoOptions opts,
                                 int ahead)
    : paths_(std::move(paths)), is_video_(std::move(is_video)), opts_(opts), ahead_(std::max(1, ahead)) {}

VideoPrefetcher::~VideoPrefetcher() { stop_all(); }

VideoReader& VideoPrefetcher::reader(std::size_t i) {
  if (next_to_open_ < i) next_to_open_ = i;
  while (next_to_open_ < paths_.size() && static_cast<int>(open_.size()) < ahead_) {
    if (is_video_[next_to_open_] && !open_.count(next_to_open_))
      open_.emplace(next_to_open_, std::make_unique<VideoReader>(paths_[next_to_open_], opts_));
    ++next_to_open_;
  }
  auto it = open_.find(i);
  if (it == open_.end()) it = open_.emplace(i, std::make_unique<VideoReader>(paths_[i], opts_)).first;
  return *it->second;
}

void VideoPrefetcher::release(std::size_t i) { open_.erase(i); }

void VideoPrefetcher::stop_all() noexcept {
  for (auto& [i, r] : open_) r->stop();
  open_.clear();
}

}  // namespace imgpipe::stages
