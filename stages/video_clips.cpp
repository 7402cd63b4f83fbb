// input.video.clips on a video file: the reader decodes each clip the plan
// names (imgpipe/clips.hpp) whole, seeking to the keyframe before its first
// frame where that is nearer than decoding on (codecs::VideoFile::seek:
// frame-accurate, by index in presentation order), leaving undecoded the
// H.264 frames between its frames that no frame refers to
// (codecs::VideoFile::want, skip_to), and queues its frames
// only once all are decoded, so that the source never takes part of a clip.
// A break inside a clip is the video's one failure, naming the clip and
// the frame; the clips before it are delivered.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "imgpipe/clips.hpp"
#include "video_state.hpp"

namespace imgpipe::stages {

std::int64_t VideoReader::State::selected_frames(std::int64_t all) const noexcept {
  std::int64_t n = all > opts.start ? (all - opts.start + opts.stride - 1) / opts.stride : 0;
  return opts.max_frames > 0 ? std::min(n, opts.max_frames) : n;
}

ClipPlan VideoReader::State::clip_plan(std::int64_t all) const {
  ClipPlan plan = plan_clips(opts.clips, selected_frames(all), opts.seed, opts.epoch, opts.item);
  for (auto& clip : plan.clips)
    for (std::int64_t& i : clip) i = opts.start + i * opts.stride;
  return plan;
}

// What decode_frame() will have the decoder do for the plan: each clip from
// the frame its decoder is at when that is no later than the clip's
// keyframe, else from the keyframe (the first frame decoded from it); a
// file that seeks from its start (FrameIndex::seeks_from_start) decodes on
// forwards and from frame 0 backwards.
std::int64_t VideoReader::State::clip_work(const codecs::FrameIndex& fi) const {
  const auto all = static_cast<std::int64_t>(fi.size());
  const auto key = [&](std::int64_t i) { return fi.key_of[static_cast<std::size_t>(i)]; };
  std::int64_t work = 0, at = 0;  // `at`: the frame the decoder is at
  for (const std::vector<std::int64_t>& clip : clip_plan(all).clips)
    for (std::size_t j = 0; j < clip.size(); ++j) {
      const std::int64_t i = clip[j];
      if (i < 0 || i >= all || (j > 0 && i == clip[j - 1])) continue;  // a padded frame is the last one again
      if (fi.seeks_from_start) {
        if (i < at) at = 0;
      } else if (i < at || (i > at && at < all && key(i) > key(at))) {  // a seek: from i's keyframe's first frame
        at = i;
        while (at > 0 && key(at - 1) == key(i)) --at;
      }
      work += std::max<std::int64_t>(0, i - at + 1);
      at = std::max(at, i + 1);
    }
  return work;
}

void VideoReader::State::count_decoded(const codecs::VideoFile& file) {
  const std::int64_t now = file.decoded();
  if (opts.decode_stats && now > decoded_seen)
    opts.decode_stats->decoded(file.device()) += static_cast<std::uint64_t>(now - decoded_seen);
  decoded_seen = now;
}

bool VideoReader::State::decode_frame(codecs::VideoFile& file, std::int64_t index,
                                      std::shared_ptr<codecs::VideoFrame>& out) {
  const codecs::FrameIndex& fi = file.frame_index();
  const std::int64_t at = file.frames();  // the frame next() returns
  const auto size = static_cast<std::int64_t>(fi.size());
  // Back, past the end, or into a later keyframe's frames: decoding on would
  // pass every frame between.
  bool seek = index < at || at >= size;
  if (!seek && index > at && index < size && !file.seeks_from_start())
    seek = fi.key_of[static_cast<std::size_t>(index)] > fi.key_of[static_cast<std::size_t>(at)];
  if (seek && !file.seek(index)) return false;
  // Decoding on: the frames between are not wanted (the decoder may leave
  // some undecoded); where the file cannot skip, they are passed one by one.
  if (!seek && index > at) file.skip_to(index);
  for (;;) {
    const std::int64_t n = file.frames();
    if (file.next(out) != codecs::VideoFile::Next::frame) return false;
    if (n >= index) return true;  // n == index: seek() and next() keep the count
  }
}

bool VideoReader::State::queue_clip(std::vector<VideoPayload>& frames, const std::vector<std::int64_t>& indices) {
  cv::Mat unused;  // a file's frames need no spare BGR buffer
  for (std::size_t j = 0; j < frames.size(); ++j) {
    if (!wait_for_room(false, unused)) return false;
    {
      std::lock_guard lk(m);
      ready.emplace_back(std::move(frames[j]), indices[j]);
    }
    cv.notify_all();
    signal_waiter();
  }
  return true;
}

void VideoReader::State::read_clips(codecs::VideoFile& file, std::int64_t& index) {
  const codecs::FrameIndex& fi = file.frame_index();  // throws for a file it cannot index: the run() catch names it
  const auto all = static_cast<std::int64_t>(fi.size());
  if (all == 0) return finish("opened but yielded no frames", 0);
  if (selected_frames(all) == 0)
    return finish(fmt::format("no frame selected: {} frames, input.video.start is {}", all, opts.start), 0);
  const ClipPlan plan = clip_plan(all);
  VideoDecodeStats* stats = opts.decode_stats.get();
  if (!plan.skipped.empty()) {
    if (stats) ++stats->short_skipped;
    return finish(plan.skipped, 0);
  }
  if (plan.filled && stats) ++(opts.clips.shorter == ClipShort::pad ? stats->short_padded : stats->short_looped);
  const codecs::VideoInfo& info = file.info();
  std::vector<VideoPayload> clip;
  for (std::size_t k = 0; k < plan.clips.size(); ++k) {
    const std::vector<std::int64_t>& at = plan.clips[k];
    clip.clear();
    file.want(at);  // the frames between the clip's (its stride) need not be decoded
    for (std::size_t j = 0; j < at.size(); ++j) {
      index = at[j];
      VideoPayload p;
      if (j > 0 && at[j] == at[j - 1]) {  // pad: the last frame again
        p = clip.back();
      } else {
        const clock::time_point asked = clock::now();
        const bool ok = decode_frame(file, index, p.yuv);
        count_decode(p.yuv ? p.yuv->device() : file.device(), asked, ok ? p.yuv->bytes() : 0, ok);
        count_decoded(file);
        if (!ok) {
          const std::string why = !file.error().empty()
                                      ? file.error()
                                      : fmt::format("no frame {}: the file ended after {} of the {} frames its "
                                                    "packets list",
                                                    index, file.frames(), all);
          return finish(fmt::format("clip {} (frames {}..{}): {}", k, at.front(), at.back(), why), index);
        }
        p.rotation = info.rotation;
        p.flip = info.flip;
        p.pts = info.time_base > 0 ? static_cast<double>(fi.pts[static_cast<std::size_t>(index)] - info.start_pts) *
                                         info.time_base
                                   : std::numeric_limits<double>::quiet_NaN();
      }
      p.clip = static_cast<std::int64_t>(k);
      p.clip_frame = static_cast<int>(j);
      clip.push_back(std::move(p));
    }
    if (!queue_clip(clip, at)) return finish({}, index);  // stopped
    if (stats) ++stats->clips;
  }
  finish({}, all);
}

}  // namespace imgpipe::stages
