#include "imgpipe/clips.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "imgpipe/augment.hpp"

namespace imgpipe {

namespace {

// The draws' frame key: apart from every frame's own (>= 0) and an image's (-1).
constexpr std::int64_t kClipDraws = -2;

std::vector<std::int64_t> clip_from(std::int64_t first, const ClipConfig& c) {
  std::vector<std::int64_t> f(static_cast<std::size_t>(c.length));
  for (int j = 0; j < c.length; ++j) f[static_cast<std::size_t>(j)] = first + std::int64_t{j} * c.stride;
  return f;
}

std::vector<std::int64_t> starts_of(const ClipConfig& c, std::int64_t last_start, std::uint64_t seed,
                                    std::uint64_t epoch, std::uint64_t item) {
  std::vector<std::int64_t> s;
  switch (c.place) {
    case ClipPlace::random: {
      SampleRandom r(seed, epoch, item, kClipDraws);
      for (int k = 0; k < c.per_video; ++k) s.push_back(r.integer(0, last_start));
      std::sort(s.begin(), s.end());
      break;
    }
    case ClipPlace::uniform:
      if (c.per_video == 1) {
        s.push_back(last_start / 2);
        break;
      }
      for (int k = 0; k < c.per_video; ++k)
        s.push_back(std::llround(static_cast<double>(last_start) * k / (c.per_video - 1)));
      break;
    case ClipPlace::every: {
      const std::int64_t step = c.step > 0 ? c.step : c.span();
      for (std::int64_t first = 0; first <= last_start; first += step) {
        if (c.per_video > 0 && static_cast<std::int64_t>(s.size()) >= c.per_video) break;
        s.push_back(first);
      }
      break;
    }
  }
  return s;
}

}  // namespace

ClipPlan plan_clips(const ClipConfig& c, std::int64_t frames, std::uint64_t seed, std::uint64_t epoch,
                    std::uint64_t item) {
  ClipPlan p;
  if (!c.on() || frames <= 0) return p;
  const std::int64_t span = c.span();
  if (frames < span) {
    if (c.shorter == ClipShort::skip) {
      p.skipped = fmt::format(
          "{} frames, shorter than a clip ({} frames every {}: {} frames; input.video.clips.short: skip)", frames,
          c.length, c.stride, span);
      return p;
    }
    std::vector<std::int64_t> f = clip_from(0, c);
    for (std::int64_t& i : f) i = c.shorter == ClipShort::pad ? std::min(i, frames - 1) : i % frames;
    p.clips.push_back(std::move(f));
    p.filled = true;
    return p;
  }
  for (std::int64_t first : starts_of(c, frames - span, seed, epoch, item)) p.clips.push_back(clip_from(first, c));
  return p;
}

}  // namespace imgpipe
