// The video reader's CPU decoder on its own (codecs/video/libav/
// libav_decoder.hpp, driven by the demuxer as VideoFile drives it): every
// frame once, in display order, with any number of threads; damage reported
// with its reason; and the reader's break at the first frame that is not
// whole, where the file's own packets say it is. The frames' matrix, range
// and plane layout follow FFmpeg's tags (codecs/video/frame.hpp). Clips made
// here with Debian's ffmpeg CLI.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixfmt.h>
}

#include "codecs/video/demuxer.hpp"
#include "codecs/video/frame_hash.hpp"
#include "codecs/video/libav/libav_decoder.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"

namespace fs = std::filesystem;
using imgpipe::codecs::Decoded;
using imgpipe::codecs::Demuxer;
using imgpipe::codecs::LibavDecoder;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;
using imgpipe::kernels::ColorMatrix;
using imgpipe::kernels::ColorRange;
using imgpipe::test::ffmpeg;

namespace {

// What the decoder put out for a file: frames (or damage) in order, and the
// first failure of send() or receive() with its reason.
struct Run {
  std::vector<Decoded> out;
  std::string failure;
  std::size_t failed_after = 0;  // results put out before the failure
  std::size_t frame_threads = 0;
  std::vector<std::int64_t> packet_pts;  // in decode order
};

Run decode(const fs::path& p, int threads) {
  Run run;
  Demuxer dm(p.string());
  LibavDecoder dec(dm.stream(), dm.decoder(), threads, nullptr);
  run.frame_threads = dec.frame_threads();
  AVPacket* pkt = av_packet_alloc();
  REQUIRE(pkt != nullptr);
  // Everything the decoder has ready: false once it failed or ended.
  auto receive = [&] {
    for (;;) {
      Decoded d;
      const int r = dec.receive(d);
      if (r == AVERROR(EAGAIN)) return true;
      if (r == AVERROR_EOF) return false;
      if (r < 0) {
        run.failure = dec.reason(r);
        run.failed_after = run.out.size();
        return false;
      }
      run.out.push_back(std::move(d));
    }
  };
  bool going = true;
  while (going && dm.read(pkt) == 0) {
    run.packet_pts.push_back(pkt->pts);
    const int r = dec.send(pkt);
    av_packet_unref(pkt);
    if (r < 0) {
      run.failure = dec.reason(r);
      run.failed_after = run.out.size();
      going = false;
    } else {
      going = receive();
    }
  }
  av_packet_free(&pkt);
  if (run.failure.empty()) {
    REQUIRE(dec.send(nullptr) == 0);
    receive();
  }
  return run;
}

// The hashes of every frame a file delivers through the reader, and how it ended.
struct Read {
  std::vector<std::uint64_t> hashes;
  VideoFile::Next end = VideoFile::Next::end;
  std::string error;
};

Read read_file(const fs::path& p, int threads) {
  Read out;
  VideoFile v(p.string(), {threads, nullptr, nullptr, {}});
  std::shared_ptr<VideoFrame> f;
  while ((out.end = v.next(f)) == VideoFile::Next::frame) out.hashes.push_back(imgpipe::codecs::frame_hash(*f));
  CHECK(v.frames() == static_cast<std::int64_t>(out.hashes.size()));
  out.error = v.error();
  return out;
}

// One packet's place in the file.
struct Placed {
  std::int64_t pos, size, pts;
};

std::vector<Placed> placed_packets(const fs::path& p) {
  std::vector<Placed> out;
  Demuxer dm(p.string());
  AVPacket* pkt = av_packet_alloc();
  while (dm.read(pkt) == 0) {
    out.push_back({pkt->pos, pkt->size, pkt->pts});
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  return out;
}

// XORs `n` bytes of `b` from `at` with 0x5a.
void flip(std::vector<unsigned char>& b, std::size_t at, std::size_t n) {
  for (std::size_t i = at; i < std::min(b.size(), at + n); ++i) b[i] ^= 0x5a;
}

// The first frame of a one-frame clip made with `args`, through the reader.
std::shared_ptr<VideoFrame> first_frame(const imgpipe::test::TempDir& d, const std::string& name,
                                        const std::string& args) {
  const fs::path p = d / name;
  ffmpeg(args + " " + p.string());
  VideoFile v(p.string());
  std::shared_ptr<VideoFrame> f;
  REQUIRE(v.next(f) == VideoFile::Next::frame);
  return f;
}

}  // namespace

TEST_CASE("video reader: libavcodec's decoder gives every frame once, in display order, the same with 1 and 4 threads") {
  imgpipe::test::TempDir d;
  const fs::path clip = d / "b.mp4";
  ffmpeg("-f lavfi -i testsrc2=size=160x120:rate=30 -frames:v 30 -c:v libx264 -bf 3 -g 15 -pix_fmt yuv420p " +
         clip.string());
  std::vector<std::uint64_t> single;
  for (const int threads : {1, 4}) {
    CAPTURE(threads);
    const Run run = decode(clip, threads);
    CHECK(run.failure.empty());
    CHECK(run.frame_threads == (threads == 1 ? 0u : 4u));
    REQUIRE(run.out.size() == 30);
    // The packets come in decode order (B-frames after the frame they refer to) ...
    CHECK_FALSE(std::is_sorted(run.packet_pts.begin(), run.packet_pts.end()));
    std::vector<std::int64_t> shown = run.packet_pts;
    std::sort(shown.begin(), shown.end());
    // ... the frames in display order, one for each packet's time.
    std::vector<std::uint64_t> hashes;
    for (std::size_t i = 0; i < run.out.size(); ++i) {
      CAPTURE(i);
      const Decoded& o = run.out[i];
      CHECK(o.damage.empty());
      REQUIRE(o.frame != nullptr);
      CHECK(o.pts == shown[i]);
      CHECK(o.frame->width() == 160);
      CHECK(o.frame->height() == 120);
      CHECK(o.frame->device() == -1);
      CHECK_FALSE(o.frame->direct());  // libavcodec's own buffers: no pool given
      hashes.push_back(imgpipe::codecs::frame_hash(*o.frame));
    }
    if (threads == 1) single = hashes;
    else CHECK(hashes == single);
  }
  // The reader delivers the same frames, and ends cleanly.
  const Read r = read_file(clip, 4);
  CHECK(r.end == VideoFile::Next::end);
  CHECK(r.error.empty());
  CHECK(r.hashes == single);
}

TEST_CASE("video reader: a cut MP4 breaks at the first frame in display order whose data is not whole") {
  imgpipe::test::TempDir d;
  const fs::path clip = d / "b.mp4";
  // The index at the front (+faststart): a cut copy opens, and still lists every frame.
  ffmpeg("-f lavfi -i testsrc2=size=160x120:rate=30 -frames:v 60 -c:v libx264 -bf 3 -g 30 -pix_fmt yuv420p "
         "-movflags +faststart " + clip.string());
  const std::vector<Placed> packets = placed_packets(clip);
  REQUIRE(packets.size() == 60);
  const Read whole = read_file(clip, 1);
  REQUIRE(whole.hashes.size() == 60);
  const auto bytes = imgpipe::test::read_bytes(clip);
  for (const std::size_t cut_in : {std::size_t{20}, std::size_t{37}}) {
    CAPTURE(cut_in);
    // Cut halfway through the cut_in-th packet (decode order = file order).
    const Placed& p = packets[cut_in];
    REQUIRE(p.size > 2);
    const auto cut = static_cast<std::ptrdiff_t>(p.pos + p.size / 2);
    imgpipe::test::write_bytes(d / "cut.mp4", std::vector<unsigned char>(bytes.begin(), bytes.begin() + cut));
    // Every frame shown before the first one whose packet is cut or missing is whole.
    std::int64_t first_missing = INT64_MAX;
    for (std::size_t i = cut_in; i < packets.size(); ++i) first_missing = std::min(first_missing, packets[i].pts);
    const auto expected = static_cast<std::size_t>(
        std::count_if(packets.begin(), packets.end(), [&](const Placed& q) { return q.pts < first_missing; }));
    CHECK(expected > 0);
    for (const int threads : {1, 4}) {
      CAPTURE(threads);
      const Read r = read_file(d / "cut.mp4", threads);
      CHECK(r.end == VideoFile::Next::broken);
      CHECK(r.hashes.size() == expected);
      CHECK(r.error == "damaged data at frame " + std::to_string(expected) +
                           ": the file ends inside a frame's data (truncated)");
      CHECK(std::equal(r.hashes.begin(), r.hashes.end(), whole.hashes.begin()));
    }
  }
}

TEST_CASE("video reader: damage the decoder finds is reported with its reason, and the file breaks there") {
  // Bytes flipped in a frame's data of an H.264 clip made with one x264
  // thread (the same bytes everywhere): libavcodec rejects a packet or
  // flags a frame; the reader breaks with the decoder's reason.
  imgpipe::test::TempDir d;
  const fs::path clip = d / "b.mkv";
  ffmpeg("-f lavfi -i mandelbrot=s=320x240:r=25 -t 2 -pix_fmt yuv420p -c:v libx264 -threads 1 -g 25 -bf 3 " +
         clip.string());
  const Read whole = read_file(clip, 1);
  REQUIRE(whole.hashes.size() == 50);
  const std::vector<unsigned char> bytes = imgpipe::test::read_bytes(clip);
  for (const std::size_t sixtieth : {18, 30, 51}) {
    CAPTURE(sixtieth);
    std::vector<unsigned char> b = bytes;
    flip(b, b.size() * sixtieth / 60, 16);
    imgpipe::test::write_bytes(d / "flipped.mkv", b);
    // The decoder alone, one thread: its first report of the damage.
    const Run run = decode(d / "flipped.mkv", 1);
    std::string reason = run.failure;
    for (std::size_t i = 0; i < run.out.size() && (run.failure.empty() || i < run.failed_after); ++i) {
      if (!run.out[i].damage.empty()) {
        CHECK(run.out[i].frame == nullptr);  // a damaged frame is never handed on
        reason = run.out[i].damage;
        break;
      }
    }
    MESSAGE(sixtieth << "/60: " << reason);
    REQUIRE_FALSE(reason.empty());
    const bool rejected = reason.rfind("the h264 decoder failed (", 0) == 0;
    const bool concealed = reason.rfind("the decoder concealed damage in it (FFmpeg decode error flags 0x", 0) == 0;
    CHECK((rejected || concealed));
    // The reader: the same reason, at the frame it gives, after only whole frames.
    for (const int threads : {1, 4}) {
      CAPTURE(threads);
      const Read r = read_file(d / "flipped.mkv", threads);
      CHECK(r.end == VideoFile::Next::broken);
      CHECK(r.error == "damaged data at frame " + std::to_string(r.hashes.size()) + ": " + reason);
      CHECK(r.hashes.size() >= 10);
      CHECK(r.hashes.size() < 50);
      CHECK(std::equal(r.hashes.begin(), r.hashes.end(), whole.hashes.begin()));
    }
  }
}

TEST_CASE("video reader: FFmpeg's tags read as the frames' colour matrix, range and plane layout") {
  using imgpipe::codecs::is_full_range;
  using imgpipe::codecs::matrix_of;
  CHECK(matrix_of(AVCOL_SPC_BT709, 64, 48) == ColorMatrix::bt709);
  CHECK(matrix_of(AVCOL_SPC_BT470BG, 1920, 1080) == ColorMatrix::bt601);
  CHECK(matrix_of(AVCOL_SPC_SMPTE170M, 1920, 1080) == ColorMatrix::bt601);
  CHECK(matrix_of(AVCOL_SPC_FCC, 64, 48) == ColorMatrix::bt601);
  CHECK(matrix_of(AVCOL_SPC_BT2020_NCL, 64, 48) == ColorMatrix::bt2020);
  CHECK(matrix_of(AVCOL_SPC_BT2020_CL, 64, 48) == ColorMatrix::bt2020);
  CHECK(matrix_of(AVCOL_SPC_SMPTE240M, 64, 48) == ColorMatrix::smpte240m);
  CHECK(matrix_of(AVCOL_SPC_UNSPECIFIED, 720, 576) == ColorMatrix::bt601);  // untagged: by size
  CHECK(matrix_of(AVCOL_SPC_UNSPECIFIED, 1280, 720) == ColorMatrix::bt709);
  CHECK(is_full_range(AVCOL_RANGE_JPEG, AV_PIX_FMT_YUV420P));
  CHECK_FALSE(is_full_range(AVCOL_RANGE_MPEG, AV_PIX_FMT_YUV420P));
  CHECK_FALSE(is_full_range(AVCOL_RANGE_UNSPECIFIED, AV_PIX_FMT_YUV420P));
  CHECK(is_full_range(AVCOL_RANGE_UNSPECIFIED, AV_PIX_FMT_YUVJ420P));  // the yuvj formats are full range
  CHECK(is_full_range(AVCOL_RANGE_MPEG, AV_PIX_FMT_YUVJ444P));

  using imgpipe::codecs::yuv_format_of;
  imgpipe::kernels::YuvFormat f;
  REQUIRE(yuv_format_of(AV_PIX_FMT_YUV420P, f));
  CHECK(f.bits == 8);
  CHECK(f.bytes == 1);
  CHECK(f.chroma_shift_x == 1);
  CHECK(f.chroma_shift_y == 1);
  CHECK_FALSE(f.uv_interleaved);
  CHECK_FALSE(f.monochrome);
  REQUIRE(yuv_format_of(AV_PIX_FMT_YUV422P10LE, f));
  CHECK(f.bits == 10);
  CHECK(f.bytes == 2);
  CHECK(f.shift == 0);
  CHECK(f.chroma_shift_y == 0);
  REQUIRE(yuv_format_of(AV_PIX_FMT_NV12, f));
  CHECK(f.uv_interleaved);
  REQUIRE(yuv_format_of(AV_PIX_FMT_P010LE, f));
  CHECK(f.uv_interleaved);
  CHECK(f.bits == 10);
  CHECK(f.shift == 6);  // P010: the bits at the top
  REQUIRE(yuv_format_of(AV_PIX_FMT_GRAY8, f));
  CHECK(f.monochrome);
  REQUIRE(yuv_format_of(AV_PIX_FMT_YUV444P, f));
  CHECK(f.chroma_shift_x == 0);
  CHECK_FALSE(yuv_format_of(AV_PIX_FMT_RGB24, f));
  CHECK_FALSE(yuv_format_of(AV_PIX_FMT_NV21, f));     // V before U
  CHECK_FALSE(yuv_format_of(AV_PIX_FMT_YUYV422, f));  // packed
  CHECK_FALSE(yuv_format_of(AV_PIX_FMT_YUV420P10BE, f));
  CHECK_FALSE(yuv_format_of(AV_PIX_FMT_YUV411P, f));

  // Decoded frames carry their stream's tags.
  imgpipe::test::TempDir d;
  struct Tagged {
    const char* name;
    std::string args;
    ColorMatrix matrix;
    ColorRange range;
  };
  const std::string src = "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 1 ";
  const std::vector<Tagged> cases = {
      {"709.mp4", src + "-c:v libx264 -pix_fmt yuv420p -colorspace bt709 -color_range tv", ColorMatrix::bt709,
       ColorRange::limited},
      {"601full.mp4", src + "-c:v libx264 -pix_fmt yuv420p -colorspace bt470bg -color_range pc", ColorMatrix::bt601,
       ColorRange::full},
      {"2020.mkv", src + "-c:v libx265 -x265-params log-level=none -pix_fmt yuv420p10le -colorspace bt2020nc",
       ColorMatrix::bt2020, ColorRange::limited},
      {"untagged.mp4", src + "-c:v libx264 -pix_fmt yuv420p", ColorMatrix::bt601, ColorRange::limited},
      {"untagged_hd.mp4", "-f lavfi -i testsrc2=size=1280x720:rate=10 -frames:v 1 -c:v libx264 -pix_fmt yuv420p",
       ColorMatrix::bt709, ColorRange::limited},
      {"j.avi", src + "-c:v mjpeg -pix_fmt yuvj420p", ColorMatrix::bt601, ColorRange::full},
  };
  for (const Tagged& c : cases) {
    CAPTURE(c.name);
    const std::shared_ptr<VideoFrame> frame = first_frame(d, c.name, c.args);
    imgpipe::kernels::YuvImage y;
    REQUIRE(frame->yuv(y));
    CHECK(y.format.matrix == c.matrix);
    CHECK(y.format.range == c.range);
    CHECK(y.width == frame->width());
    CHECK(y.plane[0] != nullptr);
    CHECK(frame->bytes() >= static_cast<std::size_t>(y.width * y.height * y.format.bytes));
  }
  // A format that is not YUV: no planes, but BGR through libswscale.
  const std::shared_ptr<VideoFrame> rgb = first_frame(d, "rgb.avi", src + "-c:v ffv1 -pix_fmt bgr0");
  imgpipe::kernels::YuvImage y;
  CHECK_FALSE(rgb->yuv(y));
  std::vector<std::uint8_t> bgr(64 * 48 * 3);
  rgb->to_bgr(bgr.data(), 64 * 3);
  CHECK(std::any_of(bgr.begin(), bgr.end(), [](std::uint8_t v) { return v != 0; }));
}
