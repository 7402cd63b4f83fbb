#include "source.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "live_input.hpp"

namespace imgpipe::stages {

namespace {
// Adds the scope's duration to `total`: the source waiting for a video's
// next frame, which is the decoder's time (VideoDecodeStats), not the source's.
class Waiting {
 public:
  explicit Waiting(std::chrono::steady_clock::duration& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  ~Waiting() { total_ += std::chrono::steady_clock::now() - t0_; }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  std::chrono::steady_clock::duration& total_;
  std::chrono::steady_clock::time_point t0_;
};
}  // namespace

Source::Source(const std::vector<InputItem>& items, const VideoConfig& video, int threads,
               const std::atomic<bool>& stop, LiveOptions live, codecs::VideoRouter* router,
               std::shared_ptr<memory::FramePool> frames, std::uint64_t seed, std::uint64_t epoch)
    : items_(items), stop_(stop), live_(std::move(live)) {
  live_.batch_size = std::max(1, live_.batch_size);
  threads = std::max(1, threads);
  const auto files = std::count_if(items.begin(), items.end(), [](const InputItem& i) { return i.video; });
  if (files == 0) return;
  interleave_ = video.interleave > 0 ? video.interleave : threads;
  ready_ = video.order == VideoOrder::ready;
  if (ready_) notify_ = std::make_shared<VideoNotifier>();
  // Threads auto: the decode threads shared among the videos decoding at once.
  const int at_once = static_cast<int>(std::min<std::int64_t>(interleave_, files));
  video_threads_ = video.threads > 0 ? video.threads : std::max(1, threads / std::max(1, at_once));
  video_decode_ = std::make_shared<VideoDecodeStats>();
  VideoOptions opts{video.start,  video.stride, video.max_frames,  {video.open_timeout_s, video.read_timeout_s},
                    video_threads_, router,     std::move(frames), video_decode_};
  opts.clips = video.clips;
  opts.seed = seed;
  opts.epoch = epoch;
  clip_length_ = video.clips.length;
  // Open beside the videos in turn a few more, so that the next one's header
  // is read before its turn comes; and, where NVDEC may take some, the
  // files its engines decode at once, so that the CPU threads keep files
  // of their own (codecs::VideoRouter::slots).
  const int ahead = interleave_ + std::max(2, threads / 4) + (router ? router->slots(true) : 0);
  // Eight frames queued a video absorb the decoders' jitter (I, P and B
  // frames differ several times in cost), for which the videos would
  // otherwise wait in turns order.
  videos_ = std::make_unique<VideoPrefetcher>(items, opts, ahead, 8, &stop_, notify_);
  videos_->prefetch(0);  // the first videos decode while the pipeline starts
}

Source::~Source() = default;  // the prefetcher stops and joins its readers

void Source::start_videos() {
  turn_ = 0;
  while (next_ < items_.size() && items_[next_].video && static_cast<int>(active_.size()) < interleave_) {
    const bool live = is_live_input(items_[next_].path);
    if (live && !active_.empty()) break;  // a live input is taken alone
    active_.push_back(next_++);
    if (live) break;
  }
  videos_->prefetch(next_);
}

Source::Step Source::video_step(std::size_t item) {
  VideoReader& r = videos_->reader(item);
  bool got = false, timed_out = false;
  {
    const Waiting waiting(starved_);
    // batch.timeout_ms: wait no longer than the pending batch may.
    got = cut_pending_ ? r.next_until(frame_, frame_index_, cut_deadline_, timed_out) : r.next(frame_, frame_index_);
  }
  if (got) return Step::frame;
  if (timed_out) return Step::cut;
  if (!r.finished()) return Step::end;  // the stop came while waiting for a frame: next() sees it
  return reader_ended(r, item);
}

Source::Step Source::reader_ended(const VideoReader& r, std::size_t item) {
  if (!r.error().empty()) {
    failure_ = r.error();
    failure_frame_ = r.stopped_at();
    return Step::failure;  // the caller emits it, then finish_video()
  }
  finish_video(item);
  return Step::end;
}

Source::Step Source::ready_step(std::size_t& item) {
  using clock = std::chrono::steady_clock;
  // The stop flag is set without the notifier's lock (a signal handler may
  // set it): look at it every 50 ms, as VideoReader::next() does.
  constexpr auto poll = std::chrono::milliseconds(50);
  for (;;) {
    const std::uint64_t seen = notify_->count();  // before looking: a frame queued after the look changes it
    for (std::size_t k = 0; k < active_.size(); ++k) {
      const std::size_t at = (turn_ + k) % active_.size();
      item = active_[at];
      VideoReader& r = videos_->reader(item);
      bool got = r.try_next(frame_, frame_index_);
      const bool ended = !got && r.finished();
      if (ended) got = r.try_next(frame_, frame_index_);  // its last frames, queued just before it ended
      if (!got && !ended) continue;
      turn_ = at;
      return got ? Step::frame : reader_ended(r, item);
    }
    if (stop_.load(std::memory_order_relaxed)) return Step::end;  // the caller sees it
    clock::time_point until = clock::now() + poll;
    if (cut_pending_) {  // batch.timeout_ms: wait no longer than the pending batch may
      if (clock::now() >= cut_deadline_) return Step::cut;
      until = std::min(until, cut_deadline_);
    }
    const Waiting waiting(starved_);
    notify_->wait_until(seen, until);
  }
}

void Source::take_frame(Work& w) {
  Pixels& px = w.pixels;
  px.video = std::move(frame_.yuv);
  if (px.video && px.video->device() >= 0) w.route = Route::gpu_video;  // NVDEC's: it stays in device memory
  px.video_rotation = frame_.rotation;
  px.video_flip = frame_.flip;
  frame_.yuv.reset();
  w.sample.clip = frame_.clip;
  w.sample.clip_frame = frame_.clip_frame;
  w.sample.pts = frame_.pts;
  clip_left_ = frame_.clip >= 0 ? clip_length_ - 1 - frame_.clip_frame : 0;
  // The frame's bytes are the decoder's (VideoDecodeStats); px.decoded keeps
  // the Work's buffer, which the decode stage converts a file's frame into.
  if (!px.video) std::swap(px.decoded, frame_.bgr);  // frame_.bgr now holds the Work's spent buffer, recycled by the live reader
}

void Source::finish_video(std::size_t item) {
  clip_left_ = 0;
  {
    const Waiting waiting(starved_);  // for its reader to close the decoder and end
    videos_->release(item);
  }
  const auto at = std::find(active_.begin(), active_.end(), item);
  if (at == active_.end()) return;
  // The next video file in the list takes the finished one's turn.
  if (next_ < items_.size() && items_[next_].video && !is_live_input(items_[next_].path) &&
      !is_live_input(items_[item].path)) {
    *at = next_++;
  } else {
    active_.erase(at);
    if (turn_ >= active_.size()) turn_ = 0;
  }
  videos_->prefetch(next_);
}

void Source::fill_pushed(Work& w) {
  PushedItem& it = pushed_item_;
  w.reset_for(it.encoded ? Work::Kind::image : Work::Kind::video_frame, next_, nullptr);
  w.own_input.path = std::move(it.id);
  w.own_input.error.clear();
  w.own_input.frame = -1;
  w.own_input.video = false;
  w.own_input.label = it.label;
  w.sample.input = &w.own_input;
  w.sample.t0 = it.pushed;  // the latency starts when the application handed it over
  if (it.encoded) {
    w.preloaded = true;
    std::swap(w.pixels.bytes, it.bytes);  // it.bytes keeps the Work's old buffer for the next item
  } else {
    cv::Mat& m = w.pixels.decoded;
    m.create(it.height, it.width, CV_8UC3);  // reuses the Work's buffer when the size repeats
    std::memcpy(m.data, it.bytes.data(), m.total() * m.elemSize());
    stats_.bytes += m.total() * m.elemSize();
  }
  ++next_;
  ++emitted_;
  ++stats_.items;
  note_sample();
}

void Source::note_sample() {
  if (live_.batch_timeout.count() <= 0) return;
  if (since_cut_ == 0) {
    cut_pending_ = true;
    cut_deadline_ = std::chrono::steady_clock::now() + live_.batch_timeout;
  }
  if (++since_cut_ >= live_.batch_size) {  // a full batch goes on its own
    since_cut_ = 0;
    cut_pending_ = false;
  }
}

Work* Source::cut(Work* w) {
  w->reset_for(Work::Kind::cut, next_, nullptr);
  since_cut_ = 0;
  cut_pending_ = false;
  return w;
}

Work* Source::end_pushed(Work* w) {
  end_of_input();
  w->reset_for(Work::Kind::flush, next_, nullptr);
  return w;
}

void Source::end_of_input() {
  done_ = true;
  if (videos_) videos_->stop_all();
}

}  // namespace imgpipe::stages
