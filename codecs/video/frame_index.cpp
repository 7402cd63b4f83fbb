#include "codecs/video/frame_index.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "codecs/video/av_error.hpp"
#include "codecs/video/demuxer.hpp"
#include "imgpipe/error.hpp"

namespace imgpipe::codecs {

std::size_t FrameIndex::segment_of(std::size_t i) const noexcept {
  const auto it = std::upper_bound(segments.begin(), segments.end(), i);
  return it == segments.begin() ? 0 : static_cast<std::size_t>(it - segments.begin()) - 1;
}

std::optional<std::size_t> FrameIndex::frame_at(std::int64_t t, std::size_t segment) const noexcept {
  if (segment >= segments.size()) return std::nullopt;
  const auto first = pts.begin() + static_cast<std::ptrdiff_t>(segments[segment]);
  const auto last = segment + 1 < segments.size() ? pts.begin() + static_cast<std::ptrdiff_t>(segments[segment + 1])
                                                  : pts.end();
  const auto it = std::lower_bound(first, last, t);
  if (it == last || *it != t) return std::nullopt;
  return static_cast<std::size_t>(it - pts.begin());
}

FrameIndex FrameIndex::scan(Demuxer& d) {
  FrameIndex x;
  AVPacket* pkt = av_packet_alloc();
  if (pkt == nullptr) throw Error(fmt::format("'{}': out of memory indexing its frames", d.path()));
  // Each shown packet's (segment, presentation time, keyframe before it in file order).
  struct Shown {
    std::uint32_t segment;
    std::int64_t pts;
    std::uint32_t key;
  };
  std::vector<Shown> shown;
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
  std::int64_t last = kNone;  // the latest presentation time of the segment
  std::uint32_t segment = 0;
  std::vector<std::uint32_t> first_key;  // of each segment
  int rc = 0;
  bool untimed = false, timed_apart = false;  // a packet without a presentation time; one whose differs from its decode time
  while ((rc = d.read(pkt)) == 0) {
    if (pkt->pts == AV_NOPTS_VALUE) untimed = true;
    else if (pkt->pts != pkt->dts) timed_apart = true;
    std::int64_t t = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    if (t == AV_NOPTS_VALUE) t = last == kNone ? 0 : last + 1;
    if ((pkt->flags & AV_PKT_FLAG_KEY) != 0) {
      if (last != kNone && t <= last && !shown.empty()) {  // time went back: a join or a reset
        ++segment;
        last = kNone;
      }
      x.keys.push_back({t, pkt->dts == AV_NOPTS_VALUE ? kNone : pkt->dts, pkt->pos});
      if (first_key.size() == segment) first_key.push_back(static_cast<std::uint32_t>(x.keys.size() - 1));
    }
    last = last == kNone ? t : std::max(last, t);
    if ((pkt->flags & AV_PKT_FLAG_DISCARD) != 0) {
      ++x.discarded;
    } else if (!x.keys.empty()) {
      shown.push_back({segment, t, static_cast<std::uint32_t>(x.keys.size() - 1)});
    }
    // Packets before the first keyframe cannot be decoded from a seek: a
    // stream that starts with them (a cut MPEG-TS) leaves them out.
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  if (rc != AVERROR_EOF)
    throw Error(fmt::format("'{}': reading its packets to index the frames failed ({})", d.path(), av_error(rc)));
  x.seeks_from_start = untimed && !timed_apart && d.stream()->codecpar->video_delay > 0;
  if (x.keys.empty() && !shown.empty())
    throw Error(fmt::format("'{}': its video stream has no keyframe to decode from", d.path()));
  std::stable_sort(shown.begin(), shown.end(), [](const Shown& a, const Shown& b) {
    return a.segment != b.segment ? a.segment < b.segment : a.pts < b.pts;
  });
  x.pts.reserve(shown.size());
  x.key_of.reserve(shown.size());
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const bool first_of_segment = i == 0 || shown[i].segment != shown[i - 1].segment;
    if (!first_of_segment && shown[i].pts == shown[i - 1].pts) {
      ++x.duplicates;
      continue;
    }
    if (first_of_segment) x.segments.push_back(x.pts.size());
    // A frame shown before its keyframe (an open GOP's leading B-frames) is
    // decoded from the keyframe before that one, shown at or before it.
    std::uint32_t k = shown[i].key;
    while (k > first_key[shown[i].segment] && x.keys[k].pts > shown[i].pts) --k;
    x.pts.push_back(shown[i].pts);
    x.key_of.push_back(k);
  }
  return x;
}

}  // namespace imgpipe::codecs
