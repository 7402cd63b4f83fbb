// Defects fuzz_video found in the video reader (tests/fuzz/fuzz_video.cpp),
// each with its reproducer or a file made the same way:
//  - FFmpeg 5.1's MPEG-4 part 2 decoder with frame threads and AV_EF_EXPLODE
//    aborts the process on a damaged frame (an assertion in libavcodec):
//    LibavDecoder decodes MPEG-4 part 2 without frame threads. Run in this
//    process: if it comes back, the suite aborts in this case.
//  - A Matroska cluster whose declared size runs past the file's end made
//    ClusterCheck allocate the declared size (up to 1 GiB) before the read
//    failed: it is now left to the demuxer without allocating.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/frame.h>
}

#include "codecs/video/damage.hpp"
#include "codecs/video/demuxer.hpp"
#include "codecs/video/libav/libav_decoder.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"

namespace fs = std::filesystem;
using imgpipe::codecs::ClusterCheck;
using imgpipe::codecs::Demuxer;
using imgpipe::codecs::LibavDecoder;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFileOptions;
using imgpipe::codecs::VideoFrame;

namespace {

// What the reader does with a file, in words: what fuzz_video's replay of
// the reproducer did (FUZZ_VIDEO_PLAN="2 0 0 4 -1 1": the file read first,
// then seeks with a few frames after each), and two more seeks. Comparable
// between thread counts.
std::string transcript(const fs::path& p, int threads) {
  VideoFileOptions opts;
  opts.threads = threads;
  VideoFile v(p.string(), opts);
  std::shared_ptr<VideoFrame> f;
  std::string out;
  auto read = [&](int most) {
    for (int n = 0; n < most; ++n) {
      const VideoFile::Next r = v.next(f);
      if (r != VideoFile::Next::frame) {
        out += r == VideoFile::Next::end ? " end" : " broken (" + v.error() + ")";
        CHECK((r != VideoFile::Next::broken || !v.error().empty()));  // a break says why
        return;
      }
      out += " " + std::to_string(f->raw()->best_effort_timestamp);
    }
  };
  read(1000);
  for (const std::int64_t t : {4, -1, 1, 0, 7}) {
    const bool ok = v.seek(t);
    out += "\nseek(" + std::to_string(t) + ") " + (ok ? "true" : "false (" + v.error() + ")") + ":";
    if (ok) read(3);
  }
  return out;
}

// This process's resident memory now (not its peak), in bytes.
std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// This process's peak resident memory so far, in bytes.
std::int64_t peak_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024;
}

// `mkv` (from FFmpeg's muxer) with its first cluster's size field widened to
// 8 bytes and set to `size`, and the segment's size to match: the shape of
// a file cut inside its first cluster, a few KB whose cluster declares `size`.
void declare_first_cluster(const fs::path& mkv, std::uint64_t size) {
  std::vector<unsigned char> b = imgpipe::test::read_bytes(mkv);
  auto find = [&](std::vector<unsigned char> id) {
    const auto it = std::search(b.begin(), b.end(), id.begin(), id.end());
    REQUIRE(it != b.end());
    return static_cast<std::size_t>(it - b.begin()) + id.size();
  };
  const std::size_t seg = find({0x18, 0x53, 0x80, 0x67});
  REQUIRE(b[seg] == 0x01);  // FFmpeg writes the segment's size in 8 bytes
  const std::size_t cluster = find({0x1F, 0x43, 0xB6, 0x75});
  int n = 1;
  while (n < 8 && !(b[cluster] & (0x80 >> (n - 1)))) ++n;
  const auto put8 = [&](std::size_t at, std::uint64_t v) {  // an 8-byte EBML size
    b[at] = 0x01;
    for (int k = 7; k >= 1; --k, v >>= 8) b[at + k] = static_cast<unsigned char>(v & 0xFF);
  };
  const auto at = b.begin() + static_cast<std::ptrdiff_t>(cluster);
  b.insert(b.erase(at, at + n), 8, 0);
  put8(cluster, size);
  put8(seg, cluster + 8 + size - (seg + 8));
  imgpipe::test::write_bytes(mkv, b);
}

}  // namespace

TEST_CASE("video reader: a damaged MPEG-4 part 2 AVI with 4 threads breaks or plays instead of aborting") {
  const fs::path avi =
      imgpipe::test::source_dir() / "tests" / "fuzz" / "corpus_video" / "regress-mpeg4-frame-threads-assert.avi";
  REQUIRE(fs::exists(avi));
  {
    Demuxer dm(avi.string());
    LibavDecoder dec(dm.stream(), dm.decoder(), 4, nullptr);
    CHECK(dec.frame_threads() == 0);  // MPEG-4 part 2 never decodes with frame threads
  }
  // Aborted the process in libavcodec (decode.c:502) after the seeks before the fix.
  const std::string four = transcript(avi, 4);
  const std::string one = transcript(avi, 1);
  CAPTURE(four);
  CHECK(four == one);  // the same with any number of threads
}

TEST_CASE("video reader: a Matroska cluster declared past the file's end is left to the demuxer, not allocated") {
  imgpipe::test::TempDir d;
  const fs::path mkv = d / "huge_cluster.mkv";
  imgpipe::test::ffmpeg("-f lavfi -i testsrc=size=64x48:rate=10 -frames:v 10 -c:v libx264 -g 5 -pix_fmt yuv420p " +
                        mkv.string());
  declare_first_cluster(mkv, (std::uint64_t{1} << 30) - 64);  // the largest the check reads is 1 GiB
  REQUIRE(fs::file_size(mkv) < 16384);
  constexpr std::int64_t kLimit = std::int64_t{200} << 20;
  const std::int64_t peak0 = peak_bytes();
  const auto t0 = std::chrono::steady_clock::now();

  SUBCASE("ClusterCheck finds no failed checksum, allocating nothing near the declared size") {
    const std::int64_t rss0 = resident_bytes();
    ClusterCheck check(mkv.string());
    std::int64_t time = -1, end = -1;
    CHECK(check.upto(INT64_MAX, time, end));  // cut short: not a checksum failure
    CHECK(resident_bytes() - rss0 < kLimit);  // the check still alive: a buffer it kept would count
  }
  SUBCASE("VideoFile breaks with the demuxer's reason") {
    const std::int64_t rss0 = resident_bytes();
    VideoFile v(mkv.string());
    std::shared_ptr<VideoFrame> f;
    VideoFile::Next r = VideoFile::Next::frame;
    for (int n = 0; n < 100 && r == VideoFile::Next::frame; ++n) r = v.next(f);
    CAPTURE(v.error());
    CHECK(r == VideoFile::Next::broken);
    CHECK(v.error().find("demuxer") != std::string::npos);  // FFmpeg's matroska demuxer: the file ended inside it
    CHECK(resident_bytes() - rss0 < kLimit);  // the file still open
  }
  CHECK(peak_bytes() - peak0 < kLimit);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
}
