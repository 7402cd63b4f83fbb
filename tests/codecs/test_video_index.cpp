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
#include "awkward_videos.hpp"
#include "common.hpp"

using imgpipe::codecs::Demuxer;
using imgpipe::codecs::FrameIndex;
using imgpipe::codecs::VideoFile;
using imgpipe::test::awkward;

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

TEST_CASE("video seek: an AVI with B-frames (decode times only) lands on the sequential decode's frame, counted from the start") {
  imgpipe::test::TempDir dir;
  const std::string src = "-f lavfi -i testsrc2=size=96x64:rate=25:duration=3 -c:v mpeg4 -g 12 ";
  // FFmpeg's MPEG-4 part 2 with B-frames in AVI: no presentation time on
  // the I- and P-frames' packets, and open GOPs (B-frames after an I-frame
  // shown before it). Without B-frames every packet has its time.
  imgpipe::test::ffmpeg(src + "-bf 2 " + (dir / "b.avi").string());
  imgpipe::test::ffmpeg(src + (dir / "p.avi").string());
  for (const bool b_frames : {true, false}) {
    CAPTURE(b_frames);
    const std::string path = (dir / (b_frames ? "b.avi" : "p.avi")).string();
    const std::vector<std::uint64_t> whole = sequential_hashes(path);
    VideoFile f(path);
    const FrameIndex& x = f.frame_index();
    REQUIRE(x.size() == whole.size());
    CHECK(x.seeks_from_start == b_frames);
    CHECK(f.seeks_from_start() == b_frames);
    const auto n = static_cast<std::int64_t>(whole.size());
    for (const std::int64_t t : {n / 2, std::int64_t{1}, n - 3, std::int64_t{13}, std::int64_t{12},
                                 std::int64_t{11}, std::int64_t{0}, n - 1}) {
      CAPTURE(t);
      const std::int64_t before = f.decoded();
      REQUIRE(f.seek(t));
      std::shared_ptr<imgpipe::codecs::VideoFrame> frame;
      const std::int64_t end = std::min(n, t + 3);
      for (std::int64_t k = t; k < end; ++k) {
        REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
        CHECK(imgpipe::codecs::frame_hash(*frame) == whole[static_cast<std::size_t>(k)]);
        CHECK(f.frames() == k + 1);
      }
      // Counted from the start with B-frames; from the keyframe (12 frames
      // a GOP) without.
      if (b_frames) CHECK(f.decoded() - before >= end);
      else CHECK(f.decoded() - before <= end - t + 12);
    }
  }
}
