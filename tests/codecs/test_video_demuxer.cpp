// The video reader's container side on its own (codecs/video/demuxer.hpp,
// damage.hpp): what opening a file reports when it cannot, what the
// container and stream say about the frames, the packets read, and the
// damage the container shows (Matroska's cluster CRC-32s, an MPEG-TS file
// cut inside a transport packet, a file shorter than its declared count).
// Clips made here with Debian's ffmpeg CLI. The frames: test_video_decoder.cpp;
// whole files through the pipeline: tests/pipeline/test_video_files.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "codecs/video/damage.hpp"
#include "codecs/video/demuxer.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"
#include "imgpipe/error.hpp"

namespace fs = std::filesystem;
using imgpipe::codecs::ClusterCheck;
using imgpipe::codecs::Demuxer;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoInfo;
using imgpipe::test::ffmpeg;

namespace {

// The message of the imgpipe::Error that opening `p` throws (empty: none).
template <typename Reader>
std::string open_error(const fs::path& p) {
  try {
    Reader r(p.string());
  } catch (const imgpipe::Error& e) {
    return e.what();
  }
  return {};
}

// One packet as the demuxer read it.
struct Packet {
  std::int64_t pts, dts, pos;
  int size, flags, stream;
};

// Every packet Demuxer::read gives, and its result at the end.
std::vector<Packet> packets_of(Demuxer& d, int& end) {
  std::vector<Packet> out;
  AVPacket* pkt = av_packet_alloc();
  REQUIRE(pkt != nullptr);
  while ((end = d.read(pkt)) == 0) {
    out.push_back({pkt->pts, pkt->dts, pkt->pos, pkt->size, pkt->flags, pkt->stream_index});
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  return out;
}

// XORs `n` bytes of `b` from `at` with 0x5a.
void flip(std::vector<unsigned char>& b, std::size_t at, std::size_t n) {
  for (std::size_t i = at; i < std::min(b.size(), at + n); ++i) b[i] ^= 0x5a;
}

}  // namespace

TEST_CASE("video reader: a file that cannot be opened names the file and the reason") {
  imgpipe::test::TempDir d;
  const fs::path missing = d / "missing.mp4";
  const std::string no_file = "'" + missing.string() + "': cannot open video (No such file or directory)";
  CHECK(open_error<Demuxer>(missing) == no_file);
  CHECK(open_error<VideoFile>(missing) == no_file);  // the reader's message is the demuxer's

  const fs::path text = d / "notes.mp4";
  imgpipe::test::write_bytes(text, std::vector<unsigned char>(200, 'x'));
  const std::string not_media = open_error<Demuxer>(text);
  CHECK(not_media.rfind("'" + text.string() + "': cannot open video (", 0) == 0);
  CHECK(not_media.find("Invalid data found when processing input") != std::string::npos);

  const fs::path audio = d / "tone.wav";
  ffmpeg("-f lavfi -i sine=frequency=440:duration=0.2 " + audio.string());
  CHECK(open_error<Demuxer>(audio) == "'" + audio.string() + "': no video stream in the file");
  CHECK(open_error<VideoFile>(audio) == "'" + audio.string() + "': no video stream in the file");

  const fs::path good = d / "good.mp4";
  ffmpeg("-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 2 -c:v libx264 -pix_fmt yuv420p " + good.string());
  CHECK(open_error<Demuxer>(good).empty());
}

TEST_CASE("video reader: the container's and the stream's facts: codec, container, size, format, declared frames, fps, rotation") {
  imgpipe::test::TempDir d;
  ffmpeg("-f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 30 -c:v libx264 -bf 2 -pix_fmt yuv420p " +
         (d / "a.mp4").string());
  {
    Demuxer dm((d / "a.mp4").string());
    const VideoInfo v = dm.info();
    CHECK(v.codec == "h264");
    CHECK(v.container.find("mp4") != std::string::npos);
    CHECK(v.pixel_format == "yuv420p");
    CHECK(v.width == 160);
    CHECK(v.height == 120);
    CHECK(v.bit_depth == 8);
    CHECK(v.chroma_shift_x == 1);
    CHECK(v.chroma_shift_y == 1);
    CHECK_FALSE(v.monochrome);
    CHECK(v.declared_frames == 30);
    CHECK(v.declared_exact);  // MP4's index counts the frames
    CHECK(v.fps == doctest::Approx(25));
    CHECK(v.rotation == 0);
    CHECK_FALSE(v.flip);
    CHECK(dm.file_size() == static_cast<std::int64_t>(fs::file_size(d / "a.mp4")));
    CHECK(std::string(dm.decoder()->name) == "h264");
    // The same facts through the reader, which adds nothing of its own before a frame.
    VideoFile f((d / "a.mp4").string());
    CHECK(f.info().codec == v.codec);
    CHECK(f.info().declared_frames == v.declared_frames);
    CHECK(f.device() == -1);
    CHECK(f.cpu_reason().empty());
  }
  // 10-bit 4:2:2 HEVC in Matroska: no frame count in the container, an
  // estimate from the duration and rate.
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=20 -frames:v 40 -c:v libx265 -x265-params log-level=none "
         "-pix_fmt yuv422p10le " + (d / "b.mkv").string());
  {
    const VideoInfo v = Demuxer((d / "b.mkv").string()).info();
    CHECK(v.codec == "hevc");
    CHECK(v.container.rfind("matroska", 0) == 0);
    CHECK(v.pixel_format == "yuv422p10le");
    CHECK(v.bit_depth == 10);
    CHECK(v.chroma_shift_x == 1);
    CHECK(v.chroma_shift_y == 0);
    CHECK(v.fps == doctest::Approx(20));
    CHECK(v.declared_frames == 40);
    CHECK_FALSE(v.declared_exact);
  }
  // RGB-coded 4:4:4 HEVC (matrix coefficients identity): G, B, R planes.
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=20 -frames:v 4 -vf format=gbrp -c:v libx265 -x265-params "
         "log-level=none " + (d / "rgb.mkv").string());
  {
    const VideoInfo v = Demuxer((d / "rgb.mkv").string()).info();
    CHECK(v.codec == "hevc");
    CHECK(v.pixel_format == "gbrp");
    CHECK(v.chroma_shift_x == 0);
    CHECK(v.rgb_coded);
    CHECK_FALSE(Demuxer((d / "b.mkv").string()).info().rgb_coded);
  }
  // Grey FFV1 in AVI.
  ffmpeg("-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 5 -c:v ffv1 -pix_fmt gray " + (d / "g.avi").string());
  {
    const VideoInfo v = Demuxer((d / "g.avi").string()).info();
    CHECK(v.codec == "ffv1");
    CHECK(v.container == "avi");
    CHECK(v.monochrome);
  }
  // The display matrix a phone writes. FFmpeg's rotate tag and its reading
  // of the matrix (ffprobe's "rotation") count counter-clockwise degrees;
  // VideoInfo the clockwise degrees to apply.
  for (const int rot : {90, 180, 270}) {
    CAPTURE(rot);
    const fs::path turned = d / ("rot" + std::to_string(rot) + ".mp4");
    ffmpeg("-i " + (d / "a.mp4").string() + " -c copy -metadata:s:v:0 rotate=" + std::to_string(rot) + " " +
           turned.string());
    const VideoInfo v = Demuxer(turned.string()).info();
    CHECK(v.rotation == (360 - rot) % 360);
    CHECK_FALSE(v.flip);
    CHECK(v.width == 160);  // the coded size, not the displayed one
  }
}

TEST_CASE("video reader: the demuxer reads the video stream's packets in file order, the audio's skipped, one peeked ahead") {
  imgpipe::test::TempDir d;
  const fs::path clip = d / "av.mkv";
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=25 -f lavfi -i sine=frequency=300 -frames:v 25 -t 1 -c:v libx264 "
         "-bf 2 -g 10 -c:a pcm_s16le " + clip.string());
  Demuxer dm(clip.string());
  const int video = dm.stream()->index;
  int end = 0;
  const std::vector<Packet> all = packets_of(dm, end);
  CHECK(end == AVERROR_EOF);
  REQUIRE(all.size() == 25);
  std::set<std::int64_t> shown;
  bool reordered = false;
  for (std::size_t i = 0; i < all.size(); ++i) {
    CAPTURE(i);
    CHECK(all[i].stream == video);
    CHECK(all[i].size > 0);
    CHECK((all[i].flags & AV_PKT_FLAG_CORRUPT) == 0);
    if (i > 0) CHECK(all[i].pos > all[i - 1].pos);  // file order
    if (i > 0 && all[i].pts < all[i - 1].pts) reordered = true;  // B-frames: decode order is not display order
    shown.insert(all[i].pts);
  }
  CHECK(reordered);
  CHECK(shown.size() == 25);  // one presentation time per frame
  CHECK((all[0].flags & AV_PKT_FLAG_KEY) != 0);
  int again_end = 0;
  CHECK(packets_of(dm, again_end).empty());  // and stays at the end
  CHECK(again_end == AVERROR_EOF);
  CHECK(dm.skipped().empty());

  // peek() reads the next packet without taking it: read() gives it next.
  Demuxer again(clip.string());
  AVPacket* pkt = av_packet_alloc();
  REQUIRE(again.read(pkt) == 0);
  CHECK(pkt->pos == all[0].pos);
  av_packet_unref(pkt);
  REQUIRE(again.peek() == 0);
  REQUIRE(again.read(pkt) == 0);
  CHECK(pkt->pos == all[1].pos);
  av_packet_unref(pkt);
  REQUIRE(again.peek() == 0);
  again.drop_peeked();  // dropped: read() goes on after it
  REQUIRE(again.read(pkt) == 0);
  CHECK(pkt->pos == all[3].pos);
  av_packet_unref(pkt);
  // Back to the keyframe before a frame, and from the start once more.
  REQUIRE(again.seek_before(all[12].pts));
  REQUIRE(again.read(pkt) == 0);
  CHECK((pkt->flags & AV_PKT_FLAG_KEY) != 0);
  CHECK(pkt->pts <= all[12].pts);
  av_packet_unref(pkt);
  REQUIRE(again.reopen());
  REQUIRE(again.read(pkt) == 0);
  CHECK(pkt->pos == all[0].pos);
  av_packet_unref(pkt);
  av_packet_free(&pkt);
  // Stream times in seconds (Matroska: milliseconds).
  CHECK(again.seconds(1000) == doctest::Approx(1.0));
  CHECK(again.start_time() == 0);
}

TEST_CASE("video reader: the demuxer notes the data it skips (a Matroska block it cannot parse)") {
  // FFmpeg's Matroska demuxer logs "Error parsing frame sizes" and goes on
  // at the next cluster; the same damage as in test_video_files.cpp.
  imgpipe::test::TempDir d;
  const fs::path clip = d / "b.mkv";
  ffmpeg("-f lavfi -i mandelbrot=s=320x240:r=25 -t 2 -pix_fmt yuv420p -c:v libx264 -threads 1 -g 25 -bf 3 " +
         clip.string());
  std::vector<unsigned char> b = imgpipe::test::read_bytes(clip);
  flip(b, b.size() * 12 / 60, 16);  // a block's lace sizes
  imgpipe::test::write_bytes(d / "skipped.mkv", b);
  Demuxer whole(clip.string());
  int end = 0;
  const std::size_t all = packets_of(whole, end).size();
  CHECK(all == 50);
  CHECK(whole.skipped().empty());
  Demuxer bad((d / "skipped.mkv").string());
  const std::size_t read = packets_of(bad, end).size();
  CHECK(end == AVERROR_EOF);
  CHECK(read < all);  // the rest of the cluster is lost
  CHECK_FALSE(bad.skipped().empty());
  MESSAGE("skipped: " << bad.skipped());
  bad.clear_skipped();
  CHECK(bad.skipped().empty());
}

TEST_CASE("video reader: Matroska clusters are checked against their CRC-32 up to each packet's") {
  imgpipe::test::TempDir d;
  const fs::path clip = d / "h.mkv";
  ffmpeg("-f lavfi -i mandelbrot=s=320x240:r=25 -t 2 -pix_fmt yuv420p -c:v libx265 -x265-params log-level=error "
         "-g 25 " + clip.string());
  const std::vector<unsigned char> whole = imgpipe::test::read_bytes(clip);
  const auto size = static_cast<std::int64_t>(whole.size());
  std::int64_t time = -1, end = -1;
  {
    ClusterCheck c(clip.string());
    CHECK(c.upto(size, time, end));
    CHECK(time == -1);  // untouched
  }
  std::vector<unsigned char> b = whole;
  const std::size_t at = b.size() / 2;
  flip(b, at, 16);
  imgpipe::test::write_bytes(d / "flipped.mkv", b);
  {
    ClusterCheck c((d / "flipped.mkv").string());
    CHECK(c.upto(0, time, end));  // not reached yet
    CHECK_FALSE(c.upto(size, time, end));
    CHECK(end > static_cast<std::int64_t>(at));  // the cluster holding the damage ends after it
    CHECK(end <= size);
    CHECK(time >= 0);
    CHECK(time < 2000);  // milliseconds into the 2 s clip
  }
  // Through the watch the reader keeps: packets read past the damage.
  imgpipe::codecs::ClusterWatch w((d / "flipped.mkv").string(), true);
  Demuxer dm((d / "flipped.mkv").string());
  AVPacket* pkt = av_packet_alloc();
  std::int64_t seq = 0;
  while (!w.failed() && dm.read(pkt) == 0) {
    w.read(pkt->pos, seq++);
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  REQUIRE(w.failed());
  CHECK(w.past(end));
  CHECK_FALSE(w.past(end - 1));
  CHECK(w.time() == time);
  CHECK(w.holds(w.time(), -1));      // shown at the cluster's time
  CHECK_FALSE(w.holds(0, 0));        // before it, decoded before it
  CHECK(w.holds(INT64_MIN, -1));     // unknown: held
  // A file of another container is never suspect.
  imgpipe::codecs::ClusterWatch none(clip.string(), false);
  none.read(size / 2, 0);
  CHECK_FALSE(none.failed());
  CHECK_FALSE(none.holds(INT64_MIN, -1));
}

TEST_CASE("video reader: a file cut short: inside an MPEG-TS transport packet, or before its declared frame count") {
  using imgpipe::codecs::mpegts_cut;
  using imgpipe::codecs::truncation;
  CHECK_FALSE(mpegts_cut(188 * 1000));
  CHECK_FALSE(mpegts_cut(192 * 1001));  // with timestamps
  CHECK_FALSE(mpegts_cut(204 * 1003));  // with error correction
  CHECK(mpegts_cut(188 * 1000 + 100));
  CHECK_FALSE(mpegts_cut(0));
  CHECK_FALSE(mpegts_cut(-1));  // size unknown
  VideoInfo exact;
  exact.declared_frames = 60;
  exact.declared_exact = true;
  CHECK(truncation(exact, 60, 60, false).empty());
  CHECK(truncation(exact, 36, 36, false) == "the file ends at frame 36 of 60 its container declares (truncated)");
  CHECK(truncation(exact, 36, 60, false).empty());  // frames that count without being decoded (AVI)
  CHECK(truncation(exact, 60, 60, true) == "the file ends at frame 60 inside a transport stream packet (truncated)");
  VideoInfo estimate;
  estimate.declared_frames = 300;
  CHECK(truncation(estimate, 297, 297, false).empty());  // within max(2, 1%)
  CHECK(truncation(estimate, 296, 296, false) == "the file ends at frame 296 of 300 its container declares (truncated)");
  VideoInfo unknown;
  CHECK(truncation(unknown, 5, 5, false).empty());

  // A real MPEG-TS file cut 100 bytes into a transport packet, through the reader.
  imgpipe::test::TempDir d;
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=25 -frames:v 25 -c:v libx264 -pix_fmt yuv420p " +
         (d / "a.ts").string());
  const auto a = imgpipe::test::read_bytes(d / "a.ts");
  REQUIRE(a.size() % 188 == 0);
  CHECK_FALSE(mpegts_cut(Demuxer((d / "a.ts").string()).file_size()));
  const std::size_t cut = (a.size() / 188 / 2) * 188 + 100;
  imgpipe::test::write_bytes(d / "cut.ts", std::vector<unsigned char>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(cut)));
  CHECK(mpegts_cut(Demuxer((d / "cut.ts").string()).file_size()));
}
