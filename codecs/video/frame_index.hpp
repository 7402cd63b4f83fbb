// A video stream's frames in presentation order, from one pass over its
// packets without decoding them: the index that frame-accurate seeking
// (clips, docs/video.md) is built on, once per file per run.
//
// A frame is named by its index in presentation order, never by time x
// nominal fps: variable frame rates, B-frames (decode order differs from
// display order) and open GOPs (frames shown before the keyframe they are
// decoded after) all keep their places. Each packet of the stream makes one
// frame, shown at its presentation time; packets the container marks to be
// discarded (an MP4 edit list's cut, AV_PKT_FLAG_DISCARD) make none. A
// packet without a presentation time (raw or AVI streams without B-frames)
// is shown at its decode time, or after the packet before it when it has
// neither. The index therefore does not depend on the frame count the
// container declares, which may be wrong. Where time goes back at a
// keyframe (MPEG-TS files joined end to end, a timestamp reset) a new
// segment starts: frames are in presentation order within a segment and
// the segments in file order, as a decoder puts them out.
//
// Seeking to frame i: decode from the keyframe start_of(i) names (the last
// keyframe in file order shown at or before frame i), keep what comes out
// from frame i's presentation time on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace imgpipe::codecs {

class Demuxer;

struct FrameIndex {
  // A keyframe packet: where decoding may start.
  struct Key {
    std::int64_t pts = 0;  // presentation time (the stream's time base)
    std::int64_t dts = 0;  // decode time (INT64_MIN: none)
    std::int64_t pos = -1;  // byte position in the file (-1: unknown)
  };
  std::vector<std::int64_t> pts;  // frame i's presentation time, ascending within its segment
  std::vector<Key> keys;          // in file order
  // The first frame of each segment (segments[0] == 0 when there is a frame).
  std::vector<std::size_t> segments;
  // For each frame, the index in `keys` to decode from (start_of()).
  std::vector<std::uint32_t> key_of;
  // Packets the container marked to be discarded (edit lists): decoded, not shown.
  std::size_t discarded = 0;
  // Packets whose presentation time another packet had already: the later is
  // left out (a second field, a broken mux); counted here.
  std::size_t duplicates = 0;
  // The container gives decode times only (AVI: some packets have no
  // presentation time and the others' equal their decode times) and the
  // stream has B-frames (its video_delay). Such a stream's order of display
  // is not in its packets, and libavcodec stamps a frame with the decode
  // time of the packet that pushed it out: `pts` is the packets' order,
  // which a seek cannot trust, so VideoFile::seek counts from the start.
  bool seeks_from_start = false;

  std::size_t size() const noexcept { return pts.size(); }
  // The segment frame i is in.
  std::size_t segment_of(std::size_t i) const noexcept;
  // The frame of segment `segment` shown at presentation time `t`, if one is.
  std::optional<std::size_t> frame_at(std::int64_t t, std::size_t segment = 0) const noexcept;
  // The keyframe to decode frame i from.
  const Key& start_of(std::size_t i) const { return keys.at(key_of.at(i)); }

  // Reads every packet of `d`'s video stream (from where it stands: a demuxer
  // just opened reads the whole file), then leaves `d` at the end of the
  // file. Throws imgpipe::Error naming the file when the stream has packets
  // but no keyframe, or a read fails before the end.
  static FrameIndex scan(Demuxer& d);
};

}  // namespace imgpipe::codecs
