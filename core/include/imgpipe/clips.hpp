// Video clips (input.video.clips): which frames of a video each clip takes.
// A clip is `length` frames, `stride` apart, named by their index in
// presentation order (codecs/video/frame_index.hpp counts them; never time x
// nominal fps). A video's clips depend only on the config, its frame count,
// transform.seed, the epoch and the video's place in the looped input list
// (`item`), so every route, thread and rank draws the same, a new epoch new
// ones (place random), and a user can draw them again with plan_clips().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "imgpipe/config.hpp"

namespace imgpipe {

struct ClipPlan {
  // Each clip's frame indices, `length` of them, ascending except where a
  // short video's clip repeats (pad: the last frame again; loop: from 0).
  std::vector<std::vector<std::int64_t>> clips;
  // Set when the video is shorter than a clip spans: the reason it has no
  // clip (short: skip), or empty with `filled` true (pad, loop).
  std::string skipped;
  bool filled = false;  // the one clip was padded or looped
};

// The clips of a video of `frames` frames (> 0) under `c` (c.on()), in the
// order they are delivered: by first frame, so that decoding moves forward.
// place random: per_video starts, each uniform over [0, frames - span]
// (drawn independently: two clips may coincide, as torchcodec's
// clips_at_random_indices may), from SampleRandom(seed, epoch, item, -2).
// uniform: per_video starts spread evenly over [0, frames - span], rounded
// to the nearest frame (one clip: the middle start). every: 0, step, 2 x step,
// ... while the clip fits (at most per_video when it is > 0). A video
// shorter than the span gets, by c.shorter, no clip (skip), or one clip from
// frame 0 padded with its last frame (pad) or wrapped to frame 0 (loop).
ClipPlan plan_clips(const ClipConfig& c, std::int64_t frames, std::uint64_t seed, std::uint64_t epoch,
                    std::uint64_t item);

}  // namespace imgpipe
