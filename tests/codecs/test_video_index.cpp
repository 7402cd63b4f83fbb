// The frame index (codecs/video/frame_index.hpp): one pass over a stream's
// packets gives every frame's presentation time in display order and the
// keyframe to decode it from, the same frames, in the same order, as a
// sequential decode puts out, over the files that trip seekers: B-frames,
// an open GOP, a variable frame rate, an MP4 edit list, a stream whose size
// changes mid-way, HEVC, VP9 and AV1; and VideoFile::seek lands on the
// frame it names, bit for bit the sequential decode's, on those files.
// Clips made here with Debian's ffmpeg, once for the file's cases.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "codecs/video/demuxer.hpp"
#include "codecs/video/frame_hash.hpp"
#include "codecs/video/frame_index.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"

using imgpipe::codecs::Demuxer;
using imgpipe::codecs::FrameIndex;
using imgpipe::codecs::VideoFile;
using imgpipe::test::ffmpeg;

namespace {

// The presentation times of the frames libavcodec puts out decoding the
// file's video stream from its start (one thread), in output order.
std::vector<std::int64_t> decoded_pts(const std::string& path) {
  Demuxer d(path);
  AVCodecContext* c = avcodec_alloc_context3(d.decoder());
  REQUIRE(c != nullptr);
  REQUIRE(avcodec_parameters_to_context(c, d.stream()->codecpar) >= 0);
  c->thread_count = 1;
  c->pkt_timebase = d.stream()->time_base;
  REQUIRE(avcodec_open2(c, d.decoder(), nullptr) == 0);
  AVPacket* pkt = av_packet_alloc();
  AVFrame* f = av_frame_alloc();
  std::vector<std::int64_t> out;
  auto drain = [&] {
    while (avcodec_receive_frame(c, f) == 0) {
      out.push_back(f->best_effort_timestamp);
      av_frame_unref(f);
    }
  };
  while (d.read(pkt) == 0) {
    REQUIRE(avcodec_send_packet(c, pkt) == 0);
    av_packet_unref(pkt);
    drain();
  }
  avcodec_send_packet(c, nullptr);
  drain();
  av_frame_free(&f);
  av_packet_free(&pkt);
  avcodec_free_context(&c);
  return out;
}

// The index of `path`, checked against its sequential decode: the same
// frames in the same order, each frame's keyframe shown at or before it.
FrameIndex checked_index(const std::string& path) {
  Demuxer d(path);
  const FrameIndex x = FrameIndex::scan(d);
  const std::vector<std::int64_t> decoded = decoded_pts(path);
  CHECK(x.pts == decoded);
  REQUIRE(x.key_of.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t seg = x.segment_of(i);
    CHECK(x.frame_at(x.pts[i], seg) == i);
    CHECK(x.start_of(i).pts <= x.pts[i]);
    CHECK(x.segment_of(x.segments.at(seg)) == seg);
  }
  return x;
}

// Keyframes at which decoding starts for some frame.
std::size_t keys_used(const FrameIndex& x) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < x.size(); ++i) n += (i == 0 || x.key_of[i] != x.key_of[i - 1]) ? 1 : 0;
  return n;
}

// The awkward files, made once: name -> (path, frames).
struct Clip {
  std::string path;
  std::size_t frames;
};
const std::map<std::string, Clip>& awkward() {
  static imgpipe::test::TempDir dir;
  static std::map<std::string, Clip> clips;
  if (!clips.empty()) return clips;
  const auto at = [&](const char* name) { return (dir / name).string(); };
  const std::string src3 = "-f lavfi -i testsrc2=size=96x64:rate=25:duration=3 -pix_fmt yuv420p ";
  const std::string src2 = "-f lavfi -i testsrc2=size=96x64:rate=25:duration=2 -pix_fmt yuv420p ";
  ffmpeg(src3 + "-c:v libx264 -bf 3 -g 12 -x264-params scenecut=0 " + at("b.mp4"));
  clips["H.264 B-frames, closed GOPs, MP4"] = {at("b.mp4"), 75};
  for (const char* name : {"open.mkv", "open.ts"}) {
    ffmpeg(src3 + "-c:v libx264 -bf 3 -x264-params keyint=12:min-keyint=12:open-gop=1:scenecut=0 " + at(name));
    clips[std::string("H.264 open GOPs, ") + name] = {at(name), 75};
  }
  ffmpeg(src3 + "-vf \"select='lt(n\\,10)+not(mod(n\\,3))'\" -fps_mode vfr -c:v libx264 -bf 2 " + at("vfr.mkv"));
  clips["variable frame rate"] = {at("vfr.mkv"), 10 + 21};  // frames 0-9, then 12, 15, ... 72
  ffmpeg(src3 + "-c:v libx264 -bf 3 -g 25 " + at("whole.mp4"));
  ffmpeg("-ss 0.5 -i " + at("whole.mp4") + " -c copy " + at("cut.mp4"));
  clips["MP4 edit list"] = {at("cut.mp4"), 0};  // fewer than 75: checked below
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=25:duration=1 -c:v libx264 -bf 2 -g 10 " + at("a.ts"));
  ffmpeg("-f lavfi -i testsrc2=size=64x48:rate=25:duration=1 -c:v libx264 -bf 2 -g 10 -output_ts_offset 1 " +
         at("b.ts"));
  {
    std::ofstream joined(at("ab.ts"), std::ios::binary);
    for (const char* part : {"a.ts", "b.ts"}) joined << std::ifstream(at(part), std::ios::binary).rdbuf();
  }
  clips["two MPEG-TS streams of different sizes joined, times overlapping"] = {at("ab.ts"), 50};
  ffmpeg(src2 + "-c:v libx265 -x265-params log-level=none:bframes=3:keyint=10 " + at("h.mp4"));
  clips["HEVC with B-frames"] = {at("h.mp4"), 50};
  ffmpeg(src2 + "-c:v libvpx-vp9 -auto-alt-ref 1 -lag-in-frames 16 -g 20 -deadline realtime -cpu-used 8 " +
         at("v.webm"));
  clips["VP9 with hidden alt-ref frames, WebM"] = {at("v.webm"), 50};
  ffmpeg(src2 + "-c:v libaom-av1 -cpu-used 8 -g 20 " + at("a1.mkv"));
  clips["AV1"] = {at("a1.mkv"), 50};
  return clips;
}

// Every frame's hash, decoding the file from its start.
std::vector<std::uint64_t> sequential_hashes(const std::string& path) {
  VideoFile f(path);
  std::vector<std::uint64_t> out;
  std::shared_ptr<imgpipe::codecs::VideoFrame> frame;
  while (f.next(frame) == VideoFile::Next::frame) out.push_back(imgpipe::codecs::frame_hash(*frame));
  REQUIRE_MESSAGE(f.error().empty(), f.error());
  return out;
}

}  // namespace

TEST_CASE("video index: B-frames, open GOPs, VFR, an edit list, a joined MPEG-TS, HEVC, VP9 and AV1 index as they decode") {
  for (const auto& [name, clip] : awkward()) {
    CAPTURE(name);
    const FrameIndex x = checked_index(clip.path);
    if (clip.frames > 0) CHECK(x.size() == clip.frames);
    if (name == "MP4 edit list") {
      CHECK(x.discarded > 0);
      CHECK(x.size() < 75);
    }
    if (name == "H.264 B-frames, closed GOPs, MP4") CHECK(keys_used(x) == 7);
    if (name.rfind("two MPEG-TS", 0) == 0) {
      REQUIRE(x.segments.size() == 2);  // time goes back at the second stream's first keyframe
      CHECK(x.segments[1] == 25);
      CHECK(x.start_of(25).pts == x.pts[25]);
    }
  }
}

TEST_CASE("video seek: every frame a seek lands on is the sequential decode's, bit for bit, forwards and back") {
  for (const auto& [name, clip] : awkward()) {
    CAPTURE(name);
    const std::vector<std::uint64_t> whole = sequential_hashes(clip.path);
    VideoFile f(clip.path);
    const FrameIndex& x = f.frame_index();
    REQUIRE(x.size() == whole.size());
    const auto n = static_cast<std::int64_t>(whole.size());
    // Both ends, each keyframe's frame and the frames around it (an open
    // GOP's leading B-frames), the middle, then backwards.
    std::vector<std::int64_t> targets = {0, n - 1, n / 2, 1, n - 3};
    for (std::size_t i = 0; i < x.size(); ++i)
      if (i > 0 && x.key_of[i] != x.key_of[i - 1])
        for (std::int64_t d : {-2, -1, 0, 1}) targets.push_back(static_cast<std::int64_t>(i) + d);
    targets.push_back(n / 3);
    for (const std::int64_t t : targets) {
      if (t < 0 || t >= n) continue;
      CAPTURE(t);
      REQUIRE(f.seek(t));
      std::shared_ptr<imgpipe::codecs::VideoFrame> frame;
      for (std::int64_t k = t; k < std::min(n, t + 4); ++k) {
        REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
        CHECK(imgpipe::codecs::frame_hash(*frame) == whole[static_cast<std::size_t>(k)]);
        CHECK(f.frames() == k + 1);
      }
    }
    // Past the last frame: no frame, the end.
    CHECK_FALSE(f.seek(n));
    std::shared_ptr<imgpipe::codecs::VideoFrame> frame;
    CHECK(f.next(frame) == VideoFile::Next::end);
    // And back again after the end: the file plays to its end from there.
    REQUIRE(f.seek(n - 2));
    CHECK(f.next(frame) == VideoFile::Next::frame);
    CHECK(f.next(frame) == VideoFile::Next::frame);
    CHECK(f.next(frame) == VideoFile::Next::end);
  }
}
