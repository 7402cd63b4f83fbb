#include "video.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string_view>

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <opencv2/videoio.hpp>  // the property names alone: the capture is codecs/opencv_io's

#include "codecs/opencv_io/opencv_io.hpp"
#include "imgpipe/log.hpp"
#include "native_logs.hpp"
#include "video_state.hpp"

namespace imgpipe::stages {

std::string_view file_extension(std::string_view path) noexcept {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || name == "..") return {};
  return name.substr(dot);
}

bool is_video_path(const std::string& path) {
  static constexpr std::array<const char*, 15> exts = {".avi", ".mp4", ".mkv",  ".mov", ".webm",
                                                       ".m4v", ".mpg", ".mpeg", ".wmv", ".flv",
                                                       ".ts",  ".m2ts", ".mts", ".3gp", ".ogv"};
  std::string e(file_extension(path));
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::find(exts.begin(), exts.end(), e) != exts.end();
}

namespace {
std::atomic<int> detached_readers{0};
// How long a destroyed live input's reader may take to notice the stop
// before its thread is left to finish alone.
constexpr auto live_stop_grace = std::chrono::milliseconds(500);
}  // namespace

std::uint64_t VideoNotifier::count() const {
  std::lock_guard lk(m_);
  return count_;
}

void VideoNotifier::signal() {
  {
    std::lock_guard lk(m_);
    ++count_;
  }
  cv_.notify_all();
}

bool VideoNotifier::wait_until(std::uint64_t seen, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lk(m_);
  return cv_.wait_until(lk, deadline, [&] { return count_ != seen; });
}

VideoReader::VideoReader(std::string path, VideoOptions opts, std::size_t depth, const std::atomic<bool>* cancel,
                         std::shared_ptr<VideoNotifier> notify)
    : s_(std::make_shared<State>(std::move(path), opts, depth, std::move(notify))), cancel_(cancel) {
  thread_ = std::thread([s = s_] {
    s->run();
    s->exited();
  });
}

VideoReader::~VideoReader() {
  stop();
  if (!thread_.joinable()) return;
  if (s_->live) {
    std::unique_lock lk(s_->m);
    if (!s_->cv.wait_for(lk, live_stop_grace, [&] { return s_->thread_exited; })) {
      s_->detached = true;
      ++detached_readers;
      lk.unlock();
      imgpipe::logger()->debug("'{}': its reader is still waiting for data; it ends by itself when the read times out",
                               s_->path);
      thread_.detach();
      return;
    }
  }
  thread_.join();
}

int VideoReader::detached_running() noexcept { return detached_readers.load(); }

const std::string& VideoReader::error() const noexcept { return s_->error; }
std::int64_t VideoReader::stopped_at() const noexcept { return s_->stopped_at; }
const std::string& VideoReader::path() const noexcept { return s_->path; }

bool VideoReader::finished() const {
  std::lock_guard lk(s_->m);
  return s_->finished;
}

void VideoReader::stop() noexcept {
  {
    std::lock_guard lk(s_->m);
    s_->stop = true;
  }
  s_->cv.notify_all();
}

void VideoReader::State::exited() {
  std::lock_guard lk(m);
  thread_exited = true;
  if (detached) --detached_readers;
  cv.notify_all();
}

void VideoReader::State::count_decode(int device, clock::time_point since, std::size_t frame_bytes, bool delivered) {
  if (!opts.decode_stats) return;
  VideoDecodeStats& v = *opts.decode_stats;
  StageStats& s = v.route(device);
  s.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - since).count();
  if (!delivered) return;
  ++s.items;
  s.bytes += frame_bytes;
  if (bool& seen = delivered_on[device >= 0 ? 1 : 0]; !seen) {
    seen = true;
    ++(device >= 0 ? v.nvdec_videos : v.cpu_videos);
  }
}

void VideoReader::State::finish(std::string why, std::int64_t at) {
  {
    std::lock_guard lk(m);
    error = std::move(why);
    stopped_at = at;
    finished = true;
    cv.notify_all();
  }
  signal_waiter();
}

// The latest wanted frame waits in `pending` until the next read succeeds:
// when a stream breaks, the frame decoded just before the break holds the
// damaged data (FFmpeg conceals the errors and returns it as a frame), so it
// is reported with the break instead of being delivered.
void VideoReader::State::publish(Pending& p) {
  if (p.index < 0) return;
  {
    std::lock_guard lk(m);
    VideoPayload payload;
    payload.bgr = std::move(p.frame);
    ready.emplace_back(std::move(payload), p.index);
    p.frame = cv::Mat();
    p.index = -1;
    cv.notify_all();
  }
  signal_waiter();
}

// Waits for room in the queue; false when asked to stop. Takes a spare
// buffer for the next wanted frame.
bool VideoReader::State::wait_for_room(bool wanted, cv::Mat& frame) {
  std::unique_lock lk(m);
  cv.wait(lk, [&] { return stop || ready.size() < depth; });
  if (stop) return false;
  if (wanted && frame.empty() && !spare.empty()) {
    frame = std::move(spare.back());
    spare.pop_back();
  }
  return true;
}

// The end of the input at `index`: complete, broken when the declared frame
// count says more should have come, stalled when a stream's read timed out,
// or a camera that stopped.
void VideoReader::State::end_of_stream(std::int64_t index, std::int64_t expected, std::int64_t covered, bool stalled,
                                       Pending& pending) {
  const std::int64_t tolerance = std::max<std::int64_t>(2, expected / 100);
  // pending.index is -1 or index - 1: any older frame was published by the
  // successful read after it.
  const std::int64_t at = pending.index >= 0 ? pending.index : index;
  if (stalled && index == 0) {
    finish(fmt::format("stream stalled: opened, but no frame came within {:g} s (input.video.read_timeout_s)",
                       opts.stream.read_s),
           0);
  } else if (stalled) {
    finish(fmt::format("stream stalled at frame {}: no data for {:g} s (input.video.read_timeout_s)", at,
                       opts.stream.read_s),
           at);
  } else if (camera) {
    finish(fmt::format("camera stopped delivering frames at frame {} (unplugged, or no frame within V4L2's timeout)",
                       at),
           at);
  } else if (index == 0) {
    finish("opened but yielded no frames", 0);
  } else if (expected > 0 && covered < expected - tolerance) {
    finish(fmt::format("stream broke at frame {} of {} declared (corrupt or truncated {})", at, expected,
                       live ? "stream" : "file"),
           at);
  } else {
    publish(pending);
    finish({}, index);
  }
}

// A file through FFmpeg's libraries (codecs::VideoFile): every frame is
// delivered as the decoder made it (YUV); damage breaks the file at the
// first frame that is not whole, after every frame before it.
void VideoReader::State::read_file(std::int64_t& index) {
  std::unique_ptr<codecs::VideoFile> file;
  const clock::time_point opening = clock::now();
  try {
    codecs::VideoFileOptions o{opts.threads, opts.router, opts.frames, {}};
    // Clips: the route weighs the frames the clips decode, not the file's.
    if (opts.clips.on()) o.planned_work = [this](const codecs::FrameIndex& fi) { return clip_work(fi); };
    file = std::make_unique<codecs::VideoFile>(path, std::move(o));
  } catch (const std::exception& e) {
    count_decode(-1, opening, 0, false);
    // VideoFile's message starts with the path, which the failure names already.
    std::string why = e.what();
    const std::string prefix = "'" + path + "': ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    return finish(std::move(why), 0);
  }
  count_decode(file->device(), opening, 0, false);
  // Closing the decoder is its time too (destroyed before `file`, on every return).
  struct Closing {
    State& s;
    std::unique_ptr<codecs::VideoFile>& file;
    ~Closing() {
      const clock::time_point t0 = clock::now();
      const int device = file->device();
      file.reset();
      s.count_decode(device, t0, 0, false);
    }
  } closing{*this, file};
  if (opts.clips.on()) return read_clips(*file, index);
  const codecs::VideoInfo& info = file->info();
  std::int64_t delivered = 0;
  cv::Mat unused;  // a file's frames need no spare BGR buffer
  for (;; ++index) {
    if (opts.max_frames > 0 && delivered >= opts.max_frames) break;
    if (!wait_for_room(false, unused)) break;
    std::shared_ptr<codecs::VideoFrame> frame;
    const clock::time_point asked = clock::now();
    const codecs::VideoFile::Next n = file->next(frame);
    const bool wanted = n == codecs::VideoFile::Next::frame && index >= opts.start &&
                        (index - opts.start) % opts.stride == 0;
    count_decode(frame ? frame->device() : file->device(), asked, wanted ? frame->bytes() : 0, wanted);
    count_decoded(*file);
    if (n == codecs::VideoFile::Next::end) {
      if (index == 0) return finish("opened but yielded no frames", 0);
      break;
    }
    if (n == codecs::VideoFile::Next::broken) return finish(file->error(), index);
    if (!wanted) continue;
    VideoPayload p;
    p.yuv = std::move(frame);
    p.rotation = info.rotation;
    p.flip = info.flip;
    {
      std::lock_guard lk(m);
      ready.emplace_back(std::move(p), index);
    }
    cv.notify_all();
    signal_waiter();
    ++delivered;
  }
  finish({}, index);
}

void VideoReader::State::read_frames(codecs::opencv_io::Capture& cap, std::int64_t& index) {
  const double count_prop = cap.get(cv::CAP_PROP_FRAME_COUNT);
  const double fps = cap.get(cv::CAP_PROP_FPS);
  const std::int64_t expected =
      !camera && count_prop > 0 && count_prop < 1e12 ? static_cast<std::int64_t>(count_prop) : -1;
  // How far into the declared frames the stream got: frames read, or the
  // presentation time of the latest one, whichever says more.
  std::int64_t covered = 0;
  std::int64_t delivered = 0;
  cv::Mat frame;
  Pending pending;
  // A stream URL's read that times out may first return the frame it was
  // decoding, concealed, and fail on the next read: the two reads together
  // took about the read timeout.
  // (Time spent waiting for room in the queue does not count.)
  double previous_read_s = 0;
  for (;; ++index) {
    if (opts.max_frames > 0 && delivered >= opts.max_frames) break;
    const bool wanted = index >= opts.start && (index - opts.start) % opts.stride == 0;
    if (!wait_for_room(wanted, frame)) break;
    const clock::time_point read_start = clock::now();
    const bool ok = wanted ? cap.read(frame) : cap.grab();  // grab() skips without converting the frame
    const double read_s = std::chrono::duration<double>(clock::now() - read_start).count();
    count_decode(-1, read_start, ok && wanted ? frame.total() * frame.elemSize() : 0, ok && wanted);
    if (!ok) {
      const bool stalled = live && !camera && previous_read_s + read_s >= 0.9 * opts.stream.read_s;
      return end_of_stream(index, expected, covered, stalled, pending);
    }
    previous_read_s = read_s;
    publish(pending);
    covered = std::max(covered, index + 1);
    if (fps > 0 && !camera) {
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

void VideoReader::State::run() {
  std::int64_t index = 0;  // the next frame's index in the file
  try {
    route_native_logs();  // FFmpeg's own lines through imgpipe's logger
    if (!live) return read_file(index);
    if (opts.clips.on())
      return finish("a stream URL or camera cannot be cut into clips (input.video.clips needs video files)", 0);
    codecs::opencv_io::Capture cap;  // loads OpenCV's capture (throws, said below, when it cannot)
    if (std::string why = open_live_input(cap, path, opts.stream); !why.empty()) return finish(std::move(why), 0);
    read_frames(cap, index);
  } catch (const std::exception& e) {
    finish(fmt::format("video decode error at frame {}: {}", index, e.what()), index);
  } catch (...) {
    finish(fmt::format("video decode error at frame {}", index), index);
  }
}

bool VideoReader::next(VideoPayload& out, std::int64_t& index) {
  bool timed_out = false;
  return next_until(out, index, std::chrono::steady_clock::time_point::max(), timed_out);
}

bool VideoReader::next_until(VideoPayload& out, std::int64_t& index, std::chrono::steady_clock::time_point deadline,
                             bool& timed_out) {
  State& s = *s_;
  timed_out = false;
  std::unique_lock lk(s.m);
  const auto woken = [&] {
    return !s.ready.empty() || s.finished || s.stop || (cancel_ && cancel_->load(std::memory_order_relaxed));
  };
  // The cancel flag is set without this reader's lock (a signal handler may
  // set it): look at it every 50 ms.
  const auto poll = std::chrono::milliseconds(cancel_ ? 50 : 1000);
  while (!woken()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      timed_out = true;
      return false;
    }
    const auto wait = deadline - now < poll ? deadline - now : std::chrono::steady_clock::duration(poll);
    s.cv.wait_for(lk, wait, woken);
  }
  return s_->take(out, index);
}

bool VideoReader::try_next(VideoPayload& out, std::int64_t& index) {
  std::lock_guard lk(s_->m);
  return s_->take(out, index);
}

bool VideoReader::State::take(VideoPayload& out, std::int64_t& index) {
  if (ready.empty()) return false;
  // A live input's spent buffer is kept for its next frame (a file's frames need none: kept, they would pile up).
  if (live && !out.bgr.empty() && out.bgr.u && out.bgr.u->refcount == 1) spare.push_back(std::move(out.bgr));
  out = std::move(ready.front().first);
  index = ready.front().second;
  ready.pop_front();
  cv.notify_all();
  return true;
}

VideoPrefetcher::VideoPrefetcher(const std::vector<InputItem>& items, VideoOptions opts, int ahead, std::size_t depth,
                                 const std::atomic<bool>* cancel, std::shared_ptr<VideoNotifier> notify)
    : items_(items), opts_(opts), ahead_(static_cast<std::size_t>(std::max(1, ahead))), depth_(depth), cancel_(cancel),
      notify_(std::move(notify)) {}

VideoPrefetcher::~VideoPrefetcher() { stop_all(); }

VideoOptions VideoPrefetcher::opts_for(const InputItem& item) const {
  VideoOptions o = opts_;
  o.item = item.id;  // the clips' draws are the video's own
  return o;
}

void VideoPrefetcher::prefetch(std::size_t from) {
  next_to_open_ = std::max(next_to_open_, from);
  while (next_to_open_ < items_.size() && open_.size() < ahead_) {
    const InputItem& item = items_[next_to_open_];
    // A live input opens at its turn: opened ahead, a camera would be held
    // and a stream's frames would wait, going stale.
    if (item.video && !is_live_input(item.path) && !open_.count(next_to_open_))
      open_.emplace(next_to_open_, std::make_unique<VideoReader>(item.path, opts_for(item), depth_, cancel_, notify_));
    ++next_to_open_;
  }
}

VideoReader& VideoPrefetcher::reader(std::size_t i) {
  auto it = open_.find(i);
  if (it == open_.end())
    it = open_.emplace(i, std::make_unique<VideoReader>(items_[i].path, opts_for(items_[i]), depth_, cancel_, notify_))
             .first;
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
