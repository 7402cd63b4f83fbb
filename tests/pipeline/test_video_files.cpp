// Video files through FFmpeg's libraries (docs/video.md), on clips made here
// with Debian's ffmpeg CLI (setup.sh test installs it): colours follow the
// stream's matrix and range tags, the container's rotation is applied, and
// damaged files break at the first frame that is not whole.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "codecs/video/video_file.hpp"
#include "common.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::Pipeline;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;

namespace {

using imgpipe::test::ffmpeg;

// Frame `index` of a file as BGR, through codecs::VideoFile.
cv::Mat frame_of(const fs::path& p, int index = 0) {
  VideoFile v(p.string());
  std::shared_ptr<VideoFrame> f;
  for (int i = 0; i <= index; ++i) REQUIRE(v.next(f) == VideoFile::Next::frame);
  cv::Mat m(f->height(), f->width(), CV_8UC3);
  f->to_bgr(m.data, m.step);
  return m;
}

// The largest difference of any pixel from a flat BGR colour.
double off_by(const cv::Mat& m, cv::Scalar bgr) {
  cv::Mat diff;
  cv::absdiff(m, bgr, diff);
  double most = 0;
  cv::minMaxLoc(diff.reshape(1), nullptr, &most);
  return most;
}

}  // namespace

TEST_CASE("video files: colours follow the stream's matrix and range (BT.601, BT.709, limited, full)") {
  imgpipe::test::TempDir d;
  // A flat (R, G, B) = (200, 50, 80), converted to YUV by ffmpeg with the
  // matrix and range the stream is then tagged with, stored losslessly.
  struct Clip {
    const char* name;
    const char* matrix;  // swscale's and the tag's name
    const char* range;   // tv | pc
  };
  for (const Clip& c : {Clip{"601_tv.mkv", "bt601", "tv"}, Clip{"709_tv.mkv", "bt709", "tv"},
                        Clip{"709_pc.mkv", "bt709", "pc"}, Clip{"601_pc.mkv", "bt601", "pc"}}) {
    CAPTURE(c.name);
    const std::string tag = std::string(c.matrix) == "bt601" ? "smpte170m" : "bt709";
    ffmpeg("-f lavfi -i color=c=0xC83250:s=64x48:d=0.2 -vf scale=out_color_matrix=" + std::string(c.matrix) +
           ":out_range=" + c.range + ",format=yuv444p -c:v libx264 -qp 0 -colorspace " + tag +
           " -color_range " + c.range + " " + (d / c.name).string());
    const cv::Mat m = frame_of(d / c.name);
    CHECK(m.cols == 64);
    CHECK(off_by(m, cv::Scalar(80, 50, 200)) <= 3);  // BGR; limited range quantises to 219 levels
  }
  // RGB-coded 4:4:4 HEVC (matrix coefficients identity): G, B and R
  // planes, no YUV matrix (tests/pipeline/test_nvdec.cpp: the NVDEC route
  // leaves it to this one).
  ffmpeg("-f lavfi -i color=c=0xC83250:s=64x48:d=0.2 -vf format=gbrp -c:v libx265 -x265-params "
         "lossless=1:log-level=none " + (d / "rgb.mkv").string());
  CHECK(off_by(frame_of(d / "rgb.mkv"), cv::Scalar(80, 50, 200)) <= 1);
  // The same BT.709 samples read as BT.601 (what cv::VideoCapture does) are
  // far off: the tags are what makes the difference.
  ffmpeg("-f lavfi -i color=c=0xC83250:s=64x48:d=0.2 -vf scale=out_color_matrix=bt709:out_range=tv,format=yuv444p "
         "-c:v libx264 -qp 0 -colorspace smpte170m -color_range tv " + (d / "709_as_601.mkv").string());
  CHECK(off_by(frame_of(d / "709_as_601.mkv"), cv::Scalar(80, 50, 200)) >= 10);
}

TEST_CASE("video files: a phone clip's rotation is applied (as FFmpeg's CLI shows it), unless orientation is false") {
  imgpipe::test::TempDir d;
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=10 -frames:v 3 -c:v libx264 -qp 0 -pix_fmt yuv444p " +
         (d / "plain.mp4").string());
  for (const char* rot : {"90", "180", "270"}) {
    CAPTURE(rot);
    const fs::path turned = d / (std::string("rot") + rot + ".mp4");
    ffmpeg("-i " + (d / "plain.mp4").string() + " -c copy -metadata:s:v:0 rotate=" + rot + " " + turned.string());
    // FFmpeg's own display of the first frame (autorotate), as BGR.
    const fs::path raw = d / "shown.bgr";
    ffmpeg("-i " + turned.string() + " -frames:v 1 -f rawvideo -pix_fmt bgr24 " + raw.string());
    const auto shown_bytes = imgpipe::test::read_bytes(raw);
    const bool quarter = std::string(rot) != "180";
    const int w = quarter ? 64 : 96, h = quarter ? 96 : 64;
    REQUIRE(shown_bytes.size() == static_cast<std::size_t>(w * h * 3));
    const cv::Mat shown(h, w, CV_8UC3, const_cast<unsigned char*>(shown_bytes.data()));
    for (bool orientation : {true, false}) {
      CAPTURE(orientation);
      Config cfg;
      cfg.input.paths = {turned.string()};
      cfg.input.video.orientation = orientation;
      cfg.devices = imgpipe::DeviceSelection::parse("cpu");
      cfg.transform.resize.width = orientation ? w : 96;  // the displayed size: no resampling
      cfg.transform.resize.height = orientation ? h : 64;
      cfg.transform.dtype = imgpipe::DType::uint8;
      cfg.transform.layout = imgpipe::Layout::nhwc;
      cfg.transform.swap_rb = false;  // BGR out
      cfg.batch.size = 4;
      cv::Mat first;
      int orientation_tag = 0;
      Pipeline p(cfg);
      const auto report = p.run([&](const DeviceBatch& b) {
        if (!first.empty()) return;
        first = cv::Mat(cfg.transform.resize.height, cfg.transform.resize.width, CV_8UC3,
                        const_cast<void*>(b.data)).clone();
        orientation_tag = b.samples[0].geometry.orientation;
      });
      CHECK(report.inputs.delivered == 3);
      REQUIRE_FALSE(first.empty());
      if (orientation) {
        // Debian's FFmpeg 5.1 stores `rotate=N` as a display matrix that
        // turns N degrees counter-clockwise (ffprobe: rotation=N), which its
        // CLI applies as such: 90 -> 270 clockwise (EXIF 8), 270 -> EXIF 6.
        CHECK(orientation_tag == (std::string(rot) == "90" ? 8 : std::string(rot) == "180" ? 3 : 6));
        // FFmpeg converts with swscale, imgpipe with kernels/yuv.hpp: a few levels apart.
        cv::Mat diff;
        cv::absdiff(first, shown, diff);
        double most = 0;
        cv::minMaxLoc(diff.reshape(1), nullptr, &most);
        CHECK(most <= 4);
      } else {
        CHECK(orientation_tag == 1);
        CHECK(first.cols == 96);
      }
    }
  }
}

TEST_CASE("video files: a cut MP4 with B-frames delivers every frame before the cut, drained from the decoder") {
  imgpipe::test::TempDir d;
  // 60 frames, B-frames, the index at the front (+faststart): a cut copy
  // opens, and its index still lists all 60.
  ffmpeg("-f lavfi -i testsrc2=size=160x120:rate=30 -frames:v 60 -c:v libx264 -bf 3 -g 30 -pix_fmt yuv420p "
         "-movflags +faststart " + (d / "b.mp4").string());
  const auto bytes = imgpipe::test::read_bytes(d / "b.mp4");
  imgpipe::test::write_bytes(d / "cut.mp4", std::vector<unsigned char>(bytes.begin(), bytes.begin() + bytes.size() * 6 / 10));
  // What FFmpeg decodes of it, frame by frame, as the reference.
  VideoFile whole((d / "b.mp4").string());
  std::vector<cv::Mat> good;
  std::shared_ptr<VideoFrame> f;
  while (whole.next(f) == VideoFile::Next::frame) {
    cv::Mat m(f->height(), f->width(), CV_8UC3);
    f->to_bgr(m.data, m.step);
    good.push_back(m);
  }
  REQUIRE(good.size() == 60);
  VideoFile cut((d / "cut.mp4").string());
  std::int64_t n = 0;
  VideoFile::Next r;
  while ((r = cut.next(f)) == VideoFile::Next::frame) {
    cv::Mat m(f->height(), f->width(), CV_8UC3);
    f->to_bgr(m.data, m.step);
    CHECK(cv::norm(m, good[static_cast<std::size_t>(n)], cv::NORM_INF) == 0);  // every delivered frame whole
    ++n;
  }
  CHECK(r == VideoFile::Next::broken);
  CHECK(cut.frames() == n);
  CHECK(cut.error().find("at frame " + std::to_string(n)) != std::string::npos);
  // Up to the cut: about 60% of the frames (the decoder's B-frame reorder
  // queue drained, not dropped).
  CHECK(n >= 30);
  CHECK(n < 40);
}

TEST_CASE("video files: an MPEG-TS joined from two sizes plays through, one cut inside a transport packet breaks") {
  imgpipe::test::TempDir d;
  ffmpeg("-f lavfi -i testsrc2=size=160x120:rate=30 -frames:v 20 -c:v libx264 -bf 2 -pix_fmt yuv420p " +
         (d / "a.ts").string());
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 20 -c:v libx264 -bf 2 -pix_fmt yuv420p " +
         (d / "b.ts").string());
  // Joined byte for byte, as `cat a.ts b.ts` does: the second stream's
  // packets carry a continuity jump, which the demuxer marks corrupt.
  auto joined = imgpipe::test::read_bytes(d / "a.ts");
  const auto second = imgpipe::test::read_bytes(d / "b.ts");
  joined.insert(joined.end(), second.begin(), second.end());
  imgpipe::test::write_bytes(d / "joined.ts", joined);
  {
    VideoFile v((d / "joined.ts").string());
    std::shared_ptr<VideoFrame> f;
    int small = 0, large = 0;
    VideoFile::Next r;
    while ((r = v.next(f)) == VideoFile::Next::frame) (f->width() == 160 ? large : small) += 1;
    CAPTURE(v.error());
    CHECK(r == VideoFile::Next::end);
    CHECK(large == 20);
    CHECK(small == 20);
  }
  // Cut 100 bytes into a transport packet near the middle.
  const auto a = imgpipe::test::read_bytes(d / "a.ts");
  REQUIRE(a.size() % 188 == 0);
  const std::size_t cut = (a.size() / 188 / 2) * 188 + 100;
  imgpipe::test::write_bytes(d / "cut.ts", std::vector<unsigned char>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(cut)));
  VideoFile v((d / "cut.ts").string());
  std::shared_ptr<VideoFrame> f;
  VideoFile::Next r;
  while ((r = v.next(f)) == VideoFile::Next::frame) {
  }
  CAPTURE(v.error());
  CHECK(r == VideoFile::Next::broken);
  CHECK(v.frames() > 0);
  CHECK(v.frames() < 20);
  CHECK(v.error().find("at frame " + std::to_string(v.frames())) != std::string::npos);
}

namespace {

// Every frame a file delivers, as BGR, and how it ended.
struct Decoded {
  std::vector<cv::Mat> frames;
  VideoFile::Next end = VideoFile::Next::end;
  std::string error;
};

Decoded decode_all(const fs::path& p, int threads = 1) {
  Decoded out;
  VideoFile v(p.string(), {threads, nullptr, nullptr});
  std::shared_ptr<VideoFrame> f;
  while ((out.end = v.next(f)) == VideoFile::Next::frame) {
    cv::Mat m(f->height(), f->width(), CV_8UC3);
    f->to_bgr(m.data, m.step);
    out.frames.push_back(m);
  }
  out.error = v.error();
  return out;
}

// XORs `n` bytes of `b` from `at` with 0x5a.
void flip(std::vector<unsigned char>& b, std::size_t at, std::size_t n) {
  for (std::size_t i = at; i < std::min(b.size(), at + n); ++i) b[i] ^= 0x5a;
}

// Every frame `bad` delivered equals the undamaged file's at its place.
void check_prefix_of(const Decoded& bad, const Decoded& good) {
  REQUIRE(bad.frames.size() <= good.frames.size());
  for (std::size_t i = 0; i < bad.frames.size(); ++i) {
    CAPTURE(i);
    CHECK(cv::norm(bad.frames[i], good.frames[i], cv::NORM_INF) == 0);
  }
}

// 2 s of 320x240 H.264 with 3 B-frames in Matroska, encoded with one x264
// thread: its bytes are the same on every machine, so damage placed at a
// fraction of the file hits the same data everywhere.
fs::path bframes_clip(const imgpipe::test::TempDir& d) {
  const fs::path p = d / "b.mkv";
  ffmpeg("-f lavfi -i mandelbrot=s=320x240:r=25 -t 2 -pix_fmt yuv420p -c:v libx264 -threads 1 -g 25 -bf 3 " +
         p.string());
  return p;
}

}  // namespace

TEST_CASE("video files: damaged files (bytes flipped mid-stream, an MPEG-TS cut) break at the same frame with any number of threads, and deliver only frames equal to the undamaged file's") {
  imgpipe::test::TempDir d;
  const std::string src = "-f lavfi -i testsrc2=s=320x240:r=25:d=2 -pix_fmt yuv420p -c:v libx264 -g 25 ";
  ffmpeg(src + "-bf 0 " + (d / "plain.mkv").string());
  ffmpeg(src + "-bf 3 " + (d / "bframes.mkv").string());
  ffmpeg(src + "-bf 2 " + (d / "stream.ts").string());
  struct Damage {
    const char* whole;
    const char* name;
    bool cut;
  };
  // The flipped MPEG-TS cannot be sought back to a keyframe exactly: the
  // one-thread decode that places damage found by frame threads starts it
  // again from the beginning.
  for (const Damage& c : {Damage{"plain.mkv", "flipped.mkv", false}, Damage{"bframes.mkv", "flipped_b.mkv", false},
                          Damage{"stream.ts", "flipped.ts", false}, Damage{"stream.ts", "cut.ts", true}}) {
    const std::string name = c.name;
    CAPTURE(name);
    std::vector<unsigned char> b = imgpipe::test::read_bytes(d / c.whole);
    if (c.cut) {
      b.resize(b.size() * 6 / 10);
    } else {
      flip(b, b.size() / 2, 64);
    }
    imgpipe::test::write_bytes(d / c.name, b);
    const Decoded good = decode_all(d / c.whole);
    REQUIRE(good.frames.size() == 50);
    // One decoding thread, and frame threads (which see damage when its
    // frame is due, frames later: the file is then decoded again with one
    // thread from the frame delivered last, to find the place).
    std::size_t single = 0;
    std::string single_error;
    for (const int threads : {1, 4}) {
      CAPTURE(threads);
      const Decoded bad = decode_all(d / c.name, threads);
      CHECK(bad.end == VideoFile::Next::broken);
      MESSAGE(name << ", " << threads << " threads: " << bad.frames.size() << " frames, " << bad.error);
      if (threads == 1) {
        single = bad.frames.size();
        single_error = bad.error;
        CHECK(single >= 20);
      } else {
        CHECK(bad.frames.size() == single);
        CHECK(bad.error == single_error);
      }
      check_prefix_of(bad, good);
    }
  }
}

TEST_CASE("video files: a frame decoded after a damaged one is not delivered, though shown before it") {
  // B-frames refer to the P-frame decoded before them and are shown before
  // it; libavcodec flags the concealed P-frame only. At these places (found
  // by a sweep over this clip) a B-frame decoded from a damaged P-frame was
  // delivered when frames were judged in display order alone.
  imgpipe::test::TempDir d;
  const fs::path clip = bframes_clip(d);
  const Decoded good = decode_all(clip);
  REQUIRE(good.frames.size() == 50);
  const std::vector<unsigned char> whole = imgpipe::test::read_bytes(clip);
  for (const std::size_t sixtieth : {18, 30, 51}) {
    CAPTURE(sixtieth);
    std::vector<unsigned char> b = whole;
    flip(b, b.size() * sixtieth / 60, 16);
    imgpipe::test::write_bytes(d / "flipped.mkv", b);
    const Decoded bad = decode_all(d / "flipped.mkv");
    MESSAGE(sixtieth << "/60: " << bad.frames.size() << " frames, " << bad.error);
    CHECK(bad.end == VideoFile::Next::broken);
    CHECK(bad.frames.size() >= 10);
    check_prefix_of(bad, good);
  }
}

TEST_CASE("video files: a Matroska block the demuxer cannot parse and skips breaks the file, with any number of threads") {
  // FFmpeg's Matroska demuxer logs "Error parsing frame sizes" and goes on
  // at the next cluster: a dozen frames would be lost without a word.
  imgpipe::test::TempDir d;
  const fs::path clip = bframes_clip(d);
  const Decoded good = decode_all(clip);
  REQUIRE(good.frames.size() == 50);
  std::vector<unsigned char> b = imgpipe::test::read_bytes(clip);
  flip(b, b.size() * 12 / 60, 16);  // a block's lace sizes
  imgpipe::test::write_bytes(d / "skipped.mkv", b);
  std::size_t single = 0;
  for (const int threads : {1, 4}) {
    CAPTURE(threads);
    const Decoded bad = decode_all(d / "skipped.mkv", threads);
    MESSAGE(threads << " threads: " << bad.frames.size() << " frames, " << bad.error);
    CHECK(bad.end == VideoFile::Next::broken);
    CHECK(bad.error.find("the demuxer skipped damaged data") != std::string::npos);
    if (threads == 1) single = bad.frames.size();
    CHECK(bad.frames.size() == single);
    CHECK(bad.frames.size() >= 5);
    check_prefix_of(bad, good);
  }
}

TEST_CASE("video files: damage in a Matroska cluster fails its CRC-32 check, also where the decoder sees none") {
  // Most damage in HEVC (and VP9) entropy-coded data decodes without an
  // error; FFmpeg's Matroska muxer writes a CRC-32 in every cluster, which
  // its demuxer does not check. The break is at the cluster's first frame,
  // where the decoder finds no place of its own.
  imgpipe::test::TempDir d;
  ffmpeg("-f lavfi -i mandelbrot=s=320x240:r=25 -t 2 -pix_fmt yuv420p -c:v libx265 -x265-params log-level=error "
         "-g 25 " + (d / "h.mkv").string());
  const Decoded good = decode_all(d / "h.mkv");
  REQUIRE(good.frames.size() == 50);
  REQUIRE(good.end == VideoFile::Next::end);
  std::vector<unsigned char> b = imgpipe::test::read_bytes(d / "h.mkv");
  flip(b, b.size() / 2, 16);
  imgpipe::test::write_bytes(d / "flipped.mkv", b);
  std::string single_error;
  for (const int threads : {1, 4}) {
    CAPTURE(threads);
    const Decoded bad = decode_all(d / "flipped.mkv", threads);
    MESSAGE(threads << " threads: " << bad.frames.size() << " frames, " << bad.error);
    CHECK(bad.end == VideoFile::Next::broken);
    CHECK(bad.error.find("fails its CRC-32 check") != std::string::npos);
    if (threads == 1) single_error = bad.error;
    CHECK(bad.error == single_error);  // the same reason, its time too, with frame threads
    // At the cluster's first frame, or before it: x265's open GOPs show
    // frames of a cluster (decoded after its keyframe) before the keyframe.
    CHECK(bad.frames.size() >= 10);
    CHECK(bad.frames.size() <= 25);
    check_prefix_of(bad, good);
  }
}
