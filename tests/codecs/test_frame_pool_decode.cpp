// libavcodec decoding into a memory::FramePool (the CPU route's get_buffer2,
// codecs/video/libav/libav_decoder.cpp) gives the frames its own buffers
// give, for every layout the pool takes (4:2:0 of an odd size, 4:2:2, 4:4:4,
// 10 bits, grey, JPEG's full-range formats) with one thread and with frame
// threads; formats the GPU does not convert (RGB) keep libavcodec's buffers.
// Clips made here with Debian's ffmpeg CLI.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "codecs/video/frame_hash.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"
#include "memory/frame_pool.hpp"

namespace fs = std::filesystem;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;
using imgpipe::memory::FramePool;

namespace {

struct Decoded {
  std::vector<std::uint64_t> hashes;
  std::int64_t direct = 0;
  std::string pixel_format;
};

Decoded decode(const fs::path& p, int threads, const std::shared_ptr<FramePool>& pool) {
  Decoded d;
  VideoFile v(p.string(), {threads, nullptr, pool});
  d.pixel_format = v.info().pixel_format;
  std::vector<std::shared_ptr<VideoFrame>> kept;  // every frame held: each block in use at once
  std::shared_ptr<VideoFrame> f;
  VideoFile::Next n;
  while ((n = v.next(f)) == VideoFile::Next::frame) {
    d.hashes.push_back(imgpipe::codecs::frame_hash(*f));
    d.direct += f->direct();
    kept.push_back(std::move(f));
  }
  CHECK_MESSAGE(n == VideoFile::Next::end, v.error());
  return d;
}

}  // namespace

TEST_CASE("frame pool decode: every layout decodes into the pool as into libavcodec's buffers, with 1 and 4 threads") {
  imgpipe::test::TempDir dir;
  const fs::path d = dir.path();
  const std::string src = "-f lavfi -i testsrc2=size=97x61:rate=25 -frames:v 12 ";
  struct Clip {
    const char* name;
    std::string args;
    bool pooled;  // a YUV layout the GPU converts
  };
  const std::vector<Clip> clips = {
      {"h264_420_odd.mp4", src + "-c:v libx264 -bf 2 -pix_fmt yuv420p", true},
      {"h264_422.mkv", src + "-c:v libx264 -bf 2 -pix_fmt yuv422p", true},
      {"h264_444_10.mkv", src + "-c:v libx264 -pix_fmt yuv444p10le", true},
      {"h264_grey.mkv", src + "-c:v libx264 -pix_fmt gray", true},
      {"hevc_420_10.mkv", src + "-c:v libx265 -x265-params log-level=error -pix_fmt yuv420p10le", true},
      {"vp9_420.webm", src + "-c:v libvpx-vp9 -deadline realtime -pix_fmt yuv420p", true},
      {"mjpeg_422.avi", src + "-c:v mjpeg -pix_fmt yuvj422p", true},
      {"mpeg4.avi", src + "-c:v mpeg4 -bf 2", true},
      {"ffv1_rgb.mkv", src + "-c:v ffv1 -pix_fmt bgr0", false},
  };
  for (const Clip& c : clips) imgpipe::test::ffmpeg(c.args + " " + (d / c.name).string());
  for (const bool page_locked : {false, true}) {  // pageable blocks; "page-locked" ones (the host backend's: direct)
    imgpipe::memory::FramePoolOptions o;
    o.device = -1;
    o.page_locked = page_locked;
    auto pool = std::make_shared<FramePool>(o);
    for (const Clip& c : clips) {
      for (const int threads : {1, 4}) {
        CAPTURE(c.name);
        CAPTURE(threads);
        CAPTURE(page_locked);
        const Decoded own = decode(d / c.name, threads, nullptr);
        const Decoded pooled = decode(d / c.name, threads, pool);
        CAPTURE(own.pixel_format);
        CHECK(own.hashes.size() == 12);
        CHECK(pooled.hashes == own.hashes);
        CHECK(own.direct == 0);
        CHECK(pooled.direct == (c.pooled && page_locked ? 12 : 0));
      }
    }
    const FramePool::Figures f = pool->figures();
    CHECK(f.blocks_made > 0);
    CHECK(f.reused > f.blocks_made);  // blocks go from file to file
  }
}
