// The frame index (codecs/video/frame_index.hpp): one pass over a stream's
// packets gives every frame's presentation time in display order and the
// keyframe to decode it from, the same frames, in the same order, as a
// sequential decode puts out, over the files that trip seekers: B-frames,
// an open GOP, a variable frame rate, an MP4 edit list, a stream whose size
// changes mid-way, HEVC, VP9 and AV1. Clips made here with Debian's ffmpeg.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "codecs/video/demuxer.hpp"
#include "codecs/video/frame_index.hpp"
#include "common.hpp"

using imgpipe::codecs::Demuxer;
using imgpipe::codecs::FrameIndex;
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

}  // namespace

TEST_CASE("video index: B-frames, open GOPs, a variable frame rate and an edit list index as they decode") {
  imgpipe::test::TempDir dir;
  const std::string src = "-f lavfi -i testsrc2=size=96x64:rate=25:duration=3 -pix_fmt yuv420p ";
  SUBCASE("H.264 with B-frames in MP4, closed GOPs of 12") {
    ffmpeg(src + "-c:v libx264 -bf 3 -g 12 -x264-params scenecut=0 " + (dir / "b.mp4").string());
    const FrameIndex x = checked_index((dir / "b.mp4").string());
    CHECK(x.size() == 75);
    CHECK(keys_used(x) == 7);
  }
  SUBCASE("H.264 open GOPs in Matroska and MPEG-TS: leading B-frames decode from the keyframe before") {
    for (const char* ext : {".mkv", ".ts"}) {
      const std::string f = (dir / (std::string("open") + ext)).string();
      ffmpeg(src + "-c:v libx264 -bf 3 -x264-params keyint=12:min-keyint=12:open-gop=1:scenecut=0 " + f);
      const FrameIndex x = checked_index(f);
      CHECK(x.size() == 75);
      std::size_t leading = 0;  // frames shown before the keyframe that follows them in the file
      for (std::size_t i = 0; i + 1 < x.size(); ++i) leading += x.key_of[i] + 1 < x.keys.size() &&
                                                                x.keys[x.key_of[i] + 1].pts < x.pts[i] ? 1 : 0;
      CHECK(leading == 0);  // every frame starts from a keyframe shown at or before it
    }
  }
  SUBCASE("a variable frame rate: frames dropped, gaps in time, named by index") {
    ffmpeg(src + "-vf \"select='lt(n\\,10)+not(mod(n\\,3))'\" -fps_mode vfr -c:v libx264 -bf 2 " +
           (dir / "vfr.mkv").string());
    const FrameIndex x = checked_index((dir / "vfr.mkv").string());
    CHECK(x.size() == 10 + 21);  // frames 0-9, then 12, 15, ... 72
  }
  SUBCASE("an MP4 edit list: the frames it cuts are decoded, not shown") {
    ffmpeg(src + "-c:v libx264 -bf 3 -g 25 " + (dir / "whole.mp4").string());
    ffmpeg("-ss 0.5 -i " + (dir / "whole.mp4").string() + " -c copy " + (dir / "cut.mp4").string());
    const FrameIndex x = checked_index((dir / "cut.mp4").string());
    CHECK(x.discarded > 0);
    CHECK(x.size() < 75);
  }
}

TEST_CASE("video index: a size change mid-stream, HEVC, VP9 and AV1 index as they decode") {
  imgpipe::test::TempDir dir;
  SUBCASE("two MPEG-TS streams of different sizes joined, their times overlapping") {
    ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=25:duration=1 -c:v libx264 -bf 2 -g 10 " + (dir / "a.ts").string());
    ffmpeg("-f lavfi -i testsrc2=size=64x48:rate=25:duration=1 -c:v libx264 -bf 2 -g 10 -output_ts_offset 1 " +
           (dir / "b.ts").string());
    {
      std::ofstream joined(dir / "ab.ts", std::ios::binary);
      for (const char* part : {"a.ts", "b.ts"}) joined << std::ifstream(dir / part, std::ios::binary).rdbuf();
    }
    const FrameIndex x = checked_index((dir / "ab.ts").string());
    CHECK(x.size() == 50);
    REQUIRE(x.segments.size() == 2);  // time goes back at the second stream's first keyframe
    CHECK(x.segments[1] == 25);
    CHECK(x.start_of(25).pts == x.pts[25]);
  }
  const std::string src = "-f lavfi -i testsrc2=size=96x64:rate=25:duration=2 -pix_fmt yuv420p ";
  SUBCASE("HEVC with B-frames") {
    ffmpeg(src + "-c:v libx265 -x265-params log-level=none:bframes=3:keyint=10 " + (dir / "h.mp4").string());
    CHECK(checked_index((dir / "h.mp4").string()).size() == 50);
  }
  SUBCASE("VP9 with hidden alt-ref frames in WebM") {
    ffmpeg(src + "-c:v libvpx-vp9 -auto-alt-ref 1 -lag-in-frames 16 -g 20 -deadline realtime -cpu-used 8 " +
           (dir / "v.webm").string());
    CHECK(checked_index((dir / "v.webm").string()).size() == 50);
  }
  SUBCASE("AV1") {
    ffmpeg(src + "-c:v libaom-av1 -cpu-used 8 -g 20 " + (dir / "a.mkv").string());
    CHECK(checked_index((dir / "a.mkv").string()).size() == 50);
  }
}
