// Source stage: hands out the items of the ordered input list
// (discovery.hpp makes it), one work item per image and one per video frame;
// or, with a PushSource, the items the application pushes.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "imgpipe/config.hpp"
#include "imgpipe/push_source.hpp"
#include "core/fault.hpp"
#include "discovery.hpp"
#include "input_order.hpp"
#include "stage.hpp"
#include "video.hpp"

namespace imgpipe::stages {

// The serial input filter: hands out pooled Work items in input order, then
// one flush item. An image item becomes one Work that the read and decode
// stages fill. A video item becomes one Work per delivered frame
// (input.video's start, stride and max_frames), of kind video_frame with the
// frame in `pixels.video` (a file's YUV frame, which the decode stage
// converts) or `pixels.decoded` (a live input's BGR frame) and its index in
// `sample.frame`. Consecutive video files in the list (input.video.interleave
// of them at once; a finished one's place goes to the next video in the list)
// decode at once on their own threads (a VideoPrefetcher), their frames taken
// (with input.video.clips, a clip's frames one after another, never
// interleaved with another video's: the batch holds whole clips)
// as input.video.order says: `ready`, the next frame of any of them that has
// one queued, scanning from the video after the last one taken (none starves;
// the source waits only while none has a frame); `turns`, one frame of each
// in a fixed order (it does not depend on timing). Each video's frames keep
// their order. A live input is taken alone. A video that cannot be opened,
// has no frames or breaks off becomes, after the frames it did deliver, one
// failed Work whose `frame` is where it stopped. Stops early when `stop`
// becomes true.
//
// With a PushSource (`live.pushed`), the items come from the application
// instead of `items`: an encoded image becomes an image Work whose bytes are
// already there (`preloaded`), a frame a video_frame Work; the end is the
// source's close(). With `live.batch_timeout` > 0 and a partial batch
// pending (fewer than `live.batch_size` samples handed out since the last
// cut) for that long after its first sample while the source waits (for a
// pushed item, or a video's or stream's next frame), a `cut` Work tells pack
// to emit it (batch.timeout_ms).
struct LiveOptions {
  std::shared_ptr<PushSource> pushed;
  std::chrono::milliseconds batch_timeout{0};
  int batch_size = 1;
};

class Source {
 public:
  // `threads`: the run's decode threads (input.video's interleave and
  // threads auto are derived from them).
  // `router` (may be null: every video file on the CPU) picks each video
  // file's decoder; it must outlive the source. `frames` (may be null):
  // where the CPU video decoder decodes the video files' frames
  // (VideoOptions::frames). `seed` and `epoch`: input.video.clips' draws
  // (transform.seed, the run's epoch).
  Source(const std::vector<InputItem>& items, const VideoConfig& video, int threads, const std::atomic<bool>& stop,
         LiveOptions live = {}, codecs::VideoRouter* router = nullptr,
         std::shared_ptr<memory::FramePool> frames = nullptr, std::uint64_t seed = 0, std::uint64_t epoch = 0);
  ~Source();
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  // Returns the next item to process, or nullptr at the end (after the flush
  // item). `acquire` supplies a pooled Work.
  template <typename Acquire>
  Work* next(Acquire&& acquire) {
    const nvtx::Range range("source", next_);
    starved_ = {};
    BusyTimer t(stats_, &starved_);
    if (done_) return nullptr;
    if (live_.pushed) return next_pushed(acquire);
    for (;;) {
      if ((next_ >= items_.size() && active_.empty()) || stop_.load(std::memory_order_relaxed)) {
        end_of_input();
        Work* w = acquire();
        w->reset_for(Work::Kind::flush, next_, nullptr);
        return w;
      }
      if (active_.empty() && items_[next_].video) start_videos();
      std::size_t item = active_.empty() ? next_ : active_[turn_];
      Step step = Step::image;
      if (ready_ && !active_.empty() && clip_left_ == 0) {  // a clip's frames come from its video alone
        step = ready_step(item);  // picks the video, turn_ at it
        if (step == Step::end) continue;
        fault::check("source", item);
      } else {
        fault::check("source", item);
        if (items_[item].video) step = video_step(item);
      }
      const InputItem& in = items_[item];
      if (step == Step::end) continue;  // the video is done: on to the next item
      if (step == Step::cut) return cut(acquire());  // a stalled stream: the pending batch goes out
      Work* w = acquire();
      w->reset_for(in.video ? Work::Kind::video_frame : Work::Kind::image, item, &in);
      if (step == Step::frame) {
        w->sample.frame = frame_index_;
        take_frame(*w);
        if (clip_left_ == 0) turn_ = (turn_ + 1) % active_.size();  // the next video's turn
      } else if (step == Step::failure) {
        w->sample.error = std::move(failure_);
        w->sample.frame = failure_frame_;
        finish_video(item);
      } else {
        ++next_;
        if (videos_) videos_->prefetch(next_);
      }
      ++emitted_;
      ++stats_.items;
      note_sample();
      return w;
    }
  }

  // The source's own time: handing items out. Its waits for a video's next
  // frame are the video decoders' time, in video_decode() (null without videos).
  const StageStats& stats() const noexcept { return stats_; }
  const VideoDecodeStats* video_decode() const noexcept { return video_decode_.get(); }

  // Work items emitted: one per image, per video frame and per failed video.
  std::uint64_t emitted() const noexcept { return emitted_; }
  // Input items never started (0 unless stopped early; pushed items queued
  // when the run stopped count as not reached: PushSource::size()).
  std::size_t not_reached() const noexcept {
    if (live_.pushed) return live_.pushed->size();
    return items_.size() - next_;  // the videos in turn have started
  }
  // True when every item was handed out to its end (not stopped early).
  bool complete() const noexcept {
    return live_.pushed ? pushed_ended_ : next_ >= items_.size() && active_.empty();
  }
  // Videos decoding at once, and FFmpeg's threads per video.
  int interleave() const noexcept { return interleave_; }
  // input.video.order: frames taken in order of readiness (else in turns).
  bool ready_order() const noexcept { return ready_; }
  int video_threads() const noexcept { return video_threads_; }

 private:
  // The pushed items' loop: the next item, a cut when the pending batch's
  // deadline passes, or the flush at the end (close() and drained, or stop).
  template <typename Acquire>
  Work* next_pushed(Acquire&& acquire) {
    using clock = std::chrono::steady_clock;
    constexpr auto poll = std::chrono::milliseconds(20);  // how soon a stop request is seen
    for (;;) {
      if (stop_.load(std::memory_order_relaxed)) return end_pushed(acquire());
      const clock::time_point now = clock::now();
      clock::duration wait = poll;
      if (cut_pending_) {
        if (now >= cut_deadline_) return cut(acquire());
        wait = std::min<clock::duration>(wait, cut_deadline_ - now);
      }
      const PushSource::Take got = live_.pushed->take(pushed_item_, wait);
      stats_.add_wait(clock::now() - now);  // waiting for the application is not the source's work
      if (got == PushSource::Take::end) {
        pushed_ended_ = true;
        return end_pushed(acquire());
      }
      if (got == PushSource::Take::got) {
        Work* w = acquire();
        fill_pushed(*w);
        return w;
      }
    }
  }
  void fill_pushed(Work& w);     // pushed_item_ into w, counted
  Work* cut(Work* w);            // a cut Work; the pending batch starts afresh
  Work* end_pushed(Work* w);     // the flush Work at the end
  void note_sample();            // batch.timeout_ms bookkeeping for one handed-out sample

  enum class Step { image, frame, failure, end, cut };
  Step video_step(std::size_t item);  // a video's next frame, its failure, its end, or a cut (batch.timeout_ms)
  // input.video.order: ready: the first of active_, from turn_ on, with a
  // frame queued or ended (`item` and turn_ set to it), waiting while none
  // is; a cut (batch.timeout_ms), or end when the stop comes meanwhile.
  Step ready_step(std::size_t& item);
  // A reader that has ended: its failure (recorded for the caller to emit), or
  // the end of its video (finished here).
  Step reader_ended(const VideoReader& r, std::size_t item);
  void start_videos();                // the video at next_ and those after it join active_ (interleave)
  void finish_video(std::size_t item);  // closes its reader; the next video in the list takes its turn
  void take_frame(Work& w);           // frame_ into the Work (a live frame: its spent buffer back for the reader)
  void end_of_input();

  const std::vector<InputItem>& items_;
  StageStats stats_{"source"};
  const std::atomic<bool>& stop_;
  std::unique_ptr<VideoPrefetcher> videos_;  // null when the list has no video
  std::shared_ptr<VideoDecodeStats> video_decode_;  // null when the list has no video
  // This call's waits for a video's next frame (left out of its busy time).
  std::chrono::steady_clock::duration starved_{};
  std::size_t next_ = 0;    // the first item not yet started
  // The videos decoding at once whose frames are taken
  // (input.video.interleave), in the order they joined; turn_ indexes the one
  // whose frame is next (ready: the first one looked at).
  std::vector<std::size_t> active_;
  std::size_t turn_ = 0;
  int interleave_ = 1;
  bool ready_ = false;  // input.video.order: ready
  std::shared_ptr<VideoNotifier> notify_;  // ready: signalled by every reader
  int video_threads_ = 1;
  std::uint64_t emitted_ = 0;
  bool done_ = false;
  VideoPayload frame_;      // the frame taken from the reader, or a spent buffer for it
  std::int64_t frame_index_ = -1;
  int clip_length_ = 0;  // input.video.clips.length (0: frames)
  int clip_left_ = 0;    // frames of the clip taken last still to come from its video
  std::string failure_;
  std::int64_t failure_frame_ = -1;
  LiveOptions live_;
  PushedItem pushed_item_;
  bool pushed_ended_ = false;
  int since_cut_ = 0;        // samples handed out since the last cut (or full batch)
  bool cut_pending_ = false;
  std::chrono::steady_clock::time_point cut_deadline_;
};

}  // namespace imgpipe::stages
