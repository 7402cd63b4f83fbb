// Seeking and its cost (codecs/video/video_file.hpp): VideoFile::decoded()
// counts every frame the decoder put out, those a seek drops before its
// target too (the decode amplification the pipeline reports), over clips
// that trip seekers (H.264 with B-frames in MP4, open GOPs in Matroska,
// HEVC with B-frames), made here with Debian's ffmpeg as
// tests/codecs/test_video_index.cpp makes its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/video/frame_index.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"

using imgpipe::codecs::FrameIndex;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;
using imgpipe::test::ffmpeg;

namespace {

// The clips, made once: name -> (path, frames). 192x160: within NVDEC's
// smallest HEVC size (144x144) too.
struct Clip {
  std::string path;
  std::int64_t frames;
};
const std::map<std::string, Clip>& clips() {
  static imgpipe::test::TempDir dir;
  static std::map<std::string, Clip> made;
  if (!made.empty()) return made;
  const auto at = [&](const char* name) { return (dir / name).string(); };
  const std::string src = "-f lavfi -i testsrc2=size=192x160:rate=25:duration=3 -pix_fmt yuv420p ";
  ffmpeg(src + "-c:v libx264 -bf 3 -g 12 -x264-params scenecut=0 " + at("b.mp4"));
  made["H.264 B-frames, closed GOPs, MP4"] = {at("b.mp4"), 75};
  ffmpeg(src + "-c:v libx264 -bf 3 -x264-params keyint=12:min-keyint=12:open-gop=1:scenecut=0 " + at("open.mkv"));
  made["H.264 open GOPs, MKV"] = {at("open.mkv"), 75};
  ffmpeg(src + "-c:v libx265 -x265-params log-level=none:bframes=3:keyint=10 " + at("h.mp4"));
  made["HEVC with B-frames, MP4"] = {at("h.mp4"), 75};
  return made;
}

// The display index of the keyframe seeking to frame `i` decodes from.
std::int64_t key_frame(const FrameIndex& x, std::int64_t i) {
  const auto at = static_cast<std::size_t>(i);
  const std::optional<std::size_t> k = x.frame_at(x.start_of(at).pts, x.segment_of(at));
  REQUIRE(k.has_value());
  return static_cast<std::int64_t>(*k);
}

}  // namespace

TEST_CASE("video seek: decoded() counts every frame the decoder put out, those dropped before a seek's target too") {
  for (const auto& [name, clip] : clips()) {
    CAPTURE(name);
    {  // A sequential decode: every frame decoded once, and delivered.
      VideoFile f(clip.path);
      std::shared_ptr<VideoFrame> frame;
      CHECK(f.decoded() == 0);
      while (f.next(frame) == VideoFile::Next::frame) {
      }
      REQUIRE_MESSAGE(f.error().empty(), f.error());
      CHECK(f.frames() == clip.frames);
      CHECK(f.decoded() == f.frames());
    }
    VideoFile f(clip.path);
    const FrameIndex& x = f.frame_index();
    REQUIRE(static_cast<std::int64_t>(x.size()) == clip.frames);
    const std::int64_t n = clip.frames;
    // Forwards, backwards, a keyframe's own frame, the last frame.
    for (const std::int64_t t : std::vector<std::int64_t>{n / 2, 5, 13, n - 1, 12, 40, 1}) {
      CAPTURE(t);
      const std::int64_t before = f.decoded();
      REQUIRE(f.seek(t));
      CHECK(f.decoded() == before);  // a seek decodes nothing until next()
      std::shared_ptr<VideoFrame> frame;
      REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
      CHECK(f.frames() == t + 1);
      // At least the frames from the keyframe up to the target came out
      // (the keyframe is shown at or before it); at most those of a decode
      // from the start, and the few a B-frame's references add.
      const std::int64_t grew = f.decoded() - before;
      CHECK(grew >= t - key_frame(x, t) + 1);
      CHECK(grew <= t + 1 + 8);
    }
    // To the end from a seek: every frame from the keyframe on comes out once.
    const std::int64_t t = n - 20;
    const std::int64_t before = f.decoded();
    REQUIRE(f.seek(t));
    std::shared_ptr<VideoFrame> frame;
    while (f.next(frame) == VideoFile::Next::frame) {
    }
    REQUIRE_MESSAGE(f.error().empty(), f.error());
    CHECK(f.frames() == n);
    CHECK(f.decoded() - before >= n - key_frame(x, t));
    CHECK(f.decoded() - before <= n + 8);
  }
}
