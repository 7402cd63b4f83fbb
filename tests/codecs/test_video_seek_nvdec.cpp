// Seeking and its cost (codecs/video/video_file.hpp), over clips that trip
// seekers (H.264 with B-frames in MP4, open GOPs in Matroska, HEVC with
// B-frames), made here with Debian's ffmpeg as
// tests/codecs/test_video_index.cpp makes its own:
//  - VideoFile::decoded() counts every frame the decoder put out, those a
//    seek drops before its target too (the decode amplification the
//    pipeline reports), and a seek decodes from the keyframe the index
//    names, not from the file's start (host);
//  - on NVDEC (GPU cases; they skip without a CUDA device or NVDEC), a seek
//    forwards or back keeps the file on the device and its decoder (flushed,
//    not made again nor taken from the cache), and lands on the frame a
//    sequential CPU decode gives at that index, within one level once both
//    are converted to BGR by kernels::yuv_to_bgr_ref (the definition both
//    routes' conversions share); damage NVDEC finds after a seek is placed
//    by libavcodec as before.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
}

#include "codecs/route/video_route.hpp"
#include "codecs/video/frame_index.hpp"
#include "codecs/video/video_devices.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"
#include "core/fault.hpp"
#include "kernels/yuv.hpp"
#include "memory/gpu.hpp"

using imgpipe::codecs::FrameIndex;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;
using imgpipe::test::ffmpeg;
namespace codecs = imgpipe::codecs;
namespace gpu = imgpipe::gpu;
namespace kernels = imgpipe::kernels;

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

// Frames beyond those from the keyframe to the target that a seek may
// decode: those a B-frame's references add (3 B-frames), an open GOP's
// leading ones, the frames NVDEC holds back (4).
constexpr std::int64_t kSlack = 8;

// The display index of the keyframe seeking to frame `i` decodes from, or
// of the one `back` keyframes before it.
std::int64_t key_frame(const FrameIndex& x, std::int64_t i, std::uint32_t back = 0) {
  const auto at = static_cast<std::size_t>(i);
  const std::uint32_t key = x.key_of.at(at) - std::min(back, x.key_of.at(at));
  const std::optional<std::size_t> k = x.frame_at(x.keys.at(key).pts, x.segment_of(at));
  REQUIRE(k.has_value());
  return static_cast<std::int64_t>(*k);
}

bool have_nvdec(std::string& why) {
  if (!imgpipe::test::have_gpu()) {
    why = "no CUDA device";
    return false;
  }
  return !codecs::nvdec_caps(0, why).empty();
}

// A router that sends every file NVDEC takes to device 0 (input.video.where: gpu).
std::unique_ptr<codecs::VideoRouter> nvdec_router() {
  codecs::VideoRouter::Options o;
  o.where = codecs::VideoWhere::gpu;
  o.devices = {0};
  std::string why;
  o.caps = {codecs::nvdec_caps(0, why)};
  return std::make_unique<codecs::VideoRouter>(o);
}

// What an NVDEC case holds: the idle decoders kept for its length, the
// router to device 0 and the file options that name it.
struct OnNvdec {
  std::shared_ptr<void> hold = codecs::hold_nvdec_decoders();
  std::unique_ptr<codecs::VideoRouter> router = nvdec_router();
  codecs::VideoFileOptions vo;
  OnNvdec() { vo.router = router.get(); }
};

// A frame as BGR u8 (width x 3 bytes a row) through kernels::yuv_to_bgr_ref,
// a device frame's planes copied to the host first.
std::vector<std::uint8_t> bgr_of(const VideoFrame& f) {
  kernels::YuvImage y;
  REQUIRE(f.yuv(y));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(y.width) * y.height * 3);
  if (f.device() < 0) {
    f.to_bgr(out.data(), static_cast<std::size_t>(y.width) * 3);
    return out;
  }
  const kernels::YuvFormat& fm = y.format;
  const int planes = fm.monochrome ? 1 : fm.uv_interleaved ? 2 : 3;
  std::vector<std::uint8_t> host[3];
  const gpu::Stream s(f.device());
  for (int k = 0; k < planes; ++k) {
    const int w = k == 0 ? y.width : kernels::chroma_width(fm, y.width) * (fm.uv_interleaved ? 2 : 1);
    const std::size_t row = static_cast<std::size_t>(w) * static_cast<std::size_t>(fm.bytes);
    const auto rows = static_cast<std::size_t>(k == 0 ? y.height : kernels::chroma_height(fm, y.height));
    host[k].resize(row * rows);
    gpu::copy_2d_async(host[k].data(), row, y.plane[k], y.pitch[k], row, rows, s);
    y.plane[k] = host[k].data();
    y.pitch[k] = row;
  }
  s.synchronize();
  kernels::yuv_to_bgr_ref(y, out.data(), static_cast<std::size_t>(y.width) * 3);
  return out;
}

int max_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  REQUIRE(a.size() == b.size());
  int m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(int{a[i]} - int{b[i]}));
  return m;
}

// Every frame of a sequential CPU decode, as BGR.
std::vector<std::vector<std::uint8_t>> cpu_frames(const std::string& path) {
  VideoFile f(path);
  std::vector<std::vector<std::uint8_t>> out;
  std::shared_ptr<VideoFrame> frame;
  while (f.next(frame) == VideoFile::Next::frame) out.push_back(bgr_of(*frame));
  REQUIRE_MESSAGE(f.error().empty(), f.error());
  return out;
}

// The targets of a file of `n` frames: forwards, backwards, both ends, each
// keyframe's frame and the frames around it (an open GOP's leading
// B-frames), the same frame twice.
std::vector<std::int64_t> targets(const FrameIndex& x, std::int64_t n) {
  std::vector<std::int64_t> t = {n / 2, 5, n - 1, 0, 13, 40, 40, 1, n - 3};
  for (std::size_t i = 1; i < x.size(); ++i)
    if (x.key_of[i] != x.key_of[i - 1])
      for (const std::int64_t d : {-1, 0, 1}) t.push_back(static_cast<std::int64_t>(i) + d);
  t.push_back(n / 3);
  std::erase_if(t, [&](std::int64_t v) { return v < 0 || v >= n; });
  return t;
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
      // (the keyframe is shown at or before it); at most those from the
      // keyframe before it (libavcodec puts out no frame after some H.264
      // I-frames that are not IDRs, near an open GOP's end: decoded again
      // from the keyframe before) and the few of `kSlack`. Not from the
      // file's start: an MP4 with B-frames and a Matroska file land a
      // keyframe early when the container is asked by decode time, and an
      // open GOP's leading frames, which the decoder drops, must not hold
      // the target back.
      // H.264 leaves the frames before the target that no frame refers to
      // undecoded (the case below): of four frames in decode order at
      // least one is a reference (3 B-frames).
      const std::int64_t grew = f.decoded() - before;
      const std::int64_t from_key = t - key_frame(x, t) + 1;
      CHECK(grew >= (name.starts_with("H.264") ? (from_key + 3) / 4 : from_key));
      CHECK(grew <= t - key_frame(x, t, 1) + 1 + kSlack);
      if (name != "H.264 open GOPs, MKV") CHECK(grew <= t - key_frame(x, t) + 1 + kSlack);
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
    // From the keyframe to the target as above (H.264: a quarter at least), then every frame.
    const std::int64_t to_target = t - key_frame(x, t);
    CHECK(f.decoded() - before >= (name.starts_with("H.264") ? (to_target + 3) / 4 : to_target) + n - t);
    CHECK(f.decoded() - before <= n - key_frame(x, t, 1) + kSlack);
  }
}

namespace {
// An H.264 file of 100 frames (192x160, 25 a second, GOPs of 50) whose
// B-frames are all non-reference pictures (x264 without B-pyramid), made
// at `path`.
void make_nonref_clip(const std::string& path) {
  ffmpeg("-f lavfi -i testsrc2=size=192x160:rate=25:duration=4 -pix_fmt yuv420p -c:v libx264 -bf 3 -g 50 "
         "-x264-params scenecut=0:b-pyramid=none " + path);
}

// make_nonref_clip's file in a folder of its own, with its 100 frames as
// the sequential CPU decode gives them.
struct NonrefClip {
  imgpipe::test::TempDir dir;
  std::string path = (dir / "nonref.mp4").string();
  std::vector<std::vector<std::uint8_t>> whole;
  NonrefClip() {
    make_nonref_clip(path);
    whole = cpu_frames(path);
    REQUIRE(whole.size() == 100);
  }
};

// Seeks over an H.264 file whose B-frames are all non-reference pictures
// (x264 without B-pyramid: three of every four frames, 2 s GOPs of 50), on
// the route `vo` sends it to (`device`): about a quarter of the frames
// before each target are decoded, and the target and the frames after it
// are the sequential CPU decode's within `tolerance` levels.
void check_unreferenced_left(const codecs::VideoFileOptions& vo, int device, int tolerance) {
  const NonrefClip clip;
  const std::string& path = clip.path;
  const std::vector<std::vector<std::uint8_t>>& whole = clip.whole;
  VideoFile f(path, vo);
  REQUIRE_MESSAGE(f.device() == device, f.cpu_reason());
  const FrameIndex& x = f.frame_index();
  for (const std::int64_t t : {49, 30, 99, 75, 10, 50, 0}) {
    CAPTURE(t);
    const std::int64_t before = f.decoded();
    REQUIRE(f.seek(t));
    std::shared_ptr<VideoFrame> frame;
    REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
    // The frames shown before the target from its keyframe: about a
    // quarter of them are decoded (the I- and P-frames), and the target.
    const std::int64_t before_target = t - key_frame(x, t);
    const std::int64_t grew = f.decoded() - before;
    CAPTURE(grew);
    CHECK(grew >= before_target / 4 + 1);
    CHECK(grew <= before_target / 2 + kSlack);
    if (before_target >= 20) CHECK(grew < before_target);
    // The target and the frames after it, each one (B-frames included)
    // bit for bit the sequential decode's.
    for (std::int64_t k = t; k < std::min<std::int64_t>(100, t + 6); ++k) {
      if (k > t) REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
      CHECK(frame->device() == device);
      CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(k)]) <= tolerance);
    }
  }
  CHECK(f.device() == device);
}
}  // namespace

TEST_CASE("video seek: an H.264 seek leaves undecoded the frames before its target that no frame refers to") {
  check_unreferenced_left({}, -1, 0);  // bit for bit on the CPU route
}

TEST_CASE("video seek: with skip_unreferenced false a seek decodes every frame from its keyframe, as a sequential decode") {
  const NonrefClip clip;
  const std::string& path = clip.path;
  const std::vector<std::vector<std::uint8_t>>& whole = clip.whole;
  codecs::VideoFileOptions vo;
  vo.skip_unreferenced = false;
  VideoFile f(path, vo);
  const FrameIndex& x = f.frame_index();
  for (const std::int64_t t : {49, 30, 75}) {
    CAPTURE(t);
    const std::int64_t before = f.decoded();
    REQUIRE(f.seek(t));
    std::shared_ptr<VideoFrame> frame;
    REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
    CHECK(f.decoded() - before >= t - key_frame(x, t) + 1);  // the B-frames before the target too
    CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(t)]) == 0);
  }
}

namespace {
// Every other frame of make_nonref_clip's file from `first`, as a clip of
// stride 2 reads them (want() told of them all, then skip_to() each), on
// the route `vo` sends it to (`device`): each frame within `tolerance`
// levels of the sequential CPU decode's, and the B-frames between left
// undecoded (frames are held back under frame threads and on NVDEC: the
// decoder is sent them before skip_to() asks, and want() is what spares them).
void check_stride_two(const std::string& path, const std::vector<std::vector<std::uint8_t>>& whole,
                      const codecs::VideoFileOptions& vo, int device, int tolerance, std::int64_t first) {
  CAPTURE(first);
  VideoFile f(path, vo);
  REQUIRE_MESSAGE(f.device() == device, f.cpu_reason());
  f.frame_index();
  std::vector<std::int64_t> every_other;
  for (std::int64_t k = first; k < 100; k += 2) every_other.push_back(k);
  f.want(every_other);
  std::shared_ptr<VideoFrame> frame;
  for (const std::int64_t k : every_other) {
    CAPTURE(k);
    if (k > 0) REQUIRE(f.skip_to(k));
    CHECK(f.frames() == k);
    REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
    CHECK(frame->device() == device);
    CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(k)]) <= tolerance);
  }
  // Of the frames passed over, the B-frames are left undecoded; the I- and
  // P-frames are decoded. Without the skip all 100 are.
  CAPTURE(f.decoded());
  CHECK(f.decoded() <= (first == 0 ? 85 : 95));
  CHECK(f.decoded() >= 50);
  CHECK_FALSE(f.skip_to(f.frames()));  // not ahead
}
}  // namespace

TEST_CASE("video seek: skip_to decodes on to a later frame, leaving the unreferenced frames between undecoded") {
  const NonrefClip clip;
  const std::string& path = clip.path;
  const std::vector<std::vector<std::uint8_t>>& whole = clip.whole;
  // Every other frame, from frame 0 and from frame 1, bit for bit, with one
  // thread and under frame threads (frames held back).
  codecs::VideoFileOptions vo;
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    vo.threads = threads;
    for (const std::int64_t first : {0, 1}) check_stride_two(path, whole, vo, -1, 0, first);
  }
  {  // Where the file cannot skip: nothing changes, the frames come one by one.
    VideoFile before(path);  // no index yet
    CHECK_FALSE(before.skip_to(10));
    CHECK(before.frames() == 0);
  }
  // Damage among the frames passed over breaks the file as a frame-by-frame
  // decode does: the IDR frame at 50 overwritten in the middle. Read from
  // frame 1 every other frame, the frames delivered are the sequential
  // decode's before its break, and the break is at that frame; under frame
  // threads too, where a one-thread decode from the frame delivered last
  // places the damage.
  std::vector<std::uint8_t> bytes = imgpipe::test::read_bytes(path);
  std::int64_t key_pos = -1;
  {
    VideoFile f(path);
    const FrameIndex& x = f.frame_index();
    REQUIRE(x.keys.size() == 2);
    key_pos = x.keys[1].pos;
  }
  REQUIRE(key_pos > 0);
  for (std::size_t i = 0; i < 96; ++i) bytes.at(static_cast<std::size_t>(key_pos) + 120 + i) ^= 0x5a;
  const std::string broken = (clip.dir / "broken.mp4").string();
  imgpipe::test::write_bytes(broken, bytes);
  std::int64_t seq_break = 0;
  std::string seq_error;
  {
    VideoFile f(broken);
    std::shared_ptr<VideoFrame> frame;
    while (f.next(frame) == VideoFile::Next::frame) {
    }
    seq_break = f.frames();
    seq_error = f.error();
  }
  CAPTURE(seq_error);
  REQUIRE(!seq_error.empty());
  REQUIRE(seq_break >= 40);
  REQUIRE(seq_break <= 55);
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    vo.threads = threads;
    VideoFile f(broken, vo);
    f.frame_index();
    std::vector<std::int64_t> odd;
    for (std::int64_t k = 1; k < 100; k += 2) odd.push_back(k);
    f.want(odd);
    std::shared_ptr<VideoFrame> frame;
    VideoFile::Next got = VideoFile::Next::frame;
    for (const std::int64_t k : odd) {
      CAPTURE(k);
      f.skip_to(k);  // as the clip reader: where it cannot skip, frame by frame
      while (got == VideoFile::Next::frame && f.frames() <= k) got = f.next(frame);
      if (got != VideoFile::Next::frame) break;
      CHECK(k < seq_break);
      CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(k)]) == 0);
    }
    CAPTURE(f.error());
    CHECK(f.error() == seq_error);
    CHECK(f.frames() == seq_break);
  }
}

TEST_CASE("video seek: damage skip_to passes over in a frame others refer to breaks the file at that frame") {
  imgpipe::test::TempDir dir;
  const std::string path = (dir / "p.mp4").string();
  make_nonref_clip(path);
  // The largest packet shown at frames 20 to 35 (by its time, 25 frames a
  // second): a P-frame, which the frames after it refer to.
  std::int64_t pos = -1, size = 0, pts = 0;
  {
    AVFormatContext* fmt = nullptr;
    REQUIRE(avformat_open_input(&fmt, path.c_str(), nullptr, nullptr) == 0);
    REQUIRE(avformat_find_stream_info(fmt, nullptr) >= 0);
    const AVStream* st = fmt->streams[0];
    AVPacket* p = av_packet_alloc();
    while (av_read_frame(fmt, p) >= 0) {
      const double at = static_cast<double>(p->pts - st->start_time) * av_q2d(st->time_base) * 25;
      if (at >= 19.5 && at <= 35.5 && (p->flags & AV_PKT_FLAG_KEY) == 0 && p->size > size) {
        pos = p->pos;
        size = p->size;
        pts = p->pts;
      }
      av_packet_unref(p);
    }
    av_packet_free(&p);
    avformat_close_input(&fmt);
  }
  REQUIRE(pos > 0);
  std::int64_t damaged_frame = -1;
  {
    VideoFile f(path);
    const auto i = f.frame_index().frame_at(pts);
    REQUIRE(i.has_value());
    damaged_frame = static_cast<std::int64_t>(*i);
  }
  CAPTURE(damaged_frame);
  std::vector<std::uint8_t> bytes = imgpipe::test::read_bytes(path);
  for (std::int64_t i = size / 3; i < size / 3 + 64; ++i) bytes.at(static_cast<std::size_t>(pos + i)) ^= 0x5a;
  const std::string broken = (dir / "broken.mp4").string();
  imgpipe::test::write_bytes(broken, bytes);
  std::int64_t seq_break = 0;
  {
    VideoFile f(broken);
    std::shared_ptr<VideoFrame> frame;
    while (f.next(frame) == VideoFile::Next::frame) {
    }
    REQUIRE_FALSE(f.error().empty());
    seq_break = f.frames();
  }
  CAPTURE(seq_break);
  REQUIRE(seq_break <= damaged_frame);  // B-frames shown before it are decoded after it
  // Frame 0, then on to frame 45 in the same GOP: the damaged P-frame is
  // decoded on the way (others refer to it), and the file breaks there.
  // Under frame threads the damage is placed by a one-thread decode of
  // every frame from frame 0: the frames up to the break come one by one,
  // as the reader passes them, and the break is the sequential decode's.
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    codecs::VideoFileOptions vo;
    vo.threads = threads;
    VideoFile f(broken, vo);
    f.frame_index();
    f.want({0, 45});
    std::shared_ptr<VideoFrame> frame;
    REQUIRE(f.next(frame) == VideoFile::Next::frame);
    REQUIRE(f.skip_to(45));
    VideoFile::Next got = f.next(frame);
    if (threads > 1)
      while (got == VideoFile::Next::frame && f.frames() <= 45) got = f.next(frame);
    const std::int64_t at = threads > 1 ? seq_break : damaged_frame;
    CHECK(got == VideoFile::Next::broken);
    CHECK(f.frames() == at);
    CHECK(f.error().starts_with("damaged data at frame " + std::to_string(at) + ": "));
  }
}

TEST_CASE("video seek nvdec: an H.264 seek on NVDEC leaves the unreferenced frames before its target undecoded too") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  const OnNvdec on;
  const codecs::VideoFileOptions& vo = on.vo;
  check_unreferenced_left(vo, 0, 1);  // within one level of the CPU's frames
}

TEST_CASE("video seek nvdec: a clip's stride on NVDEC leaves the unreferenced frames between its frames undecoded") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  const OnNvdec on;
  const NonrefClip clip;
  const std::string& path = clip.path;
  const std::vector<std::vector<std::uint8_t>>& whole = clip.whole;
  for (const std::int64_t first : {0, 1}) check_stride_two(path, whole, on.vo, 0, 1, first);
}

TEST_CASE("video seek nvdec: seeks forwards and back stay on NVDEC with the same decoder, on the CPU's frames") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  const OnNvdec on;
  const codecs::VideoFileOptions& vo = on.vo;
  bool h264_before = false;  // an H.264 file of this size was decoded on NVDEC before (its decoder is idle in the cache)
  for (const auto& [name, clip] : clips()) {
    CAPTURE(name);
    const std::vector<std::vector<std::uint8_t>> whole = cpu_frames(clip.path);
    const auto n = static_cast<std::int64_t>(whole.size());
    REQUIRE(n == clip.frames);
    const codecs::NvdecFigures opened = codecs::nvdec_figures();
    VideoFile f(clip.path, vo);
    REQUIRE_MESSAGE(f.device() == 0, f.cpu_reason());
    const FrameIndex& x = f.frame_index();
    REQUIRE(static_cast<std::int64_t>(x.size()) == n);
    std::shared_ptr<VideoFrame> frame;
    REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());  // the decoder is taken or made
    CHECK(frame->device() == 0);
    CHECK(max_diff(bgr_of(*frame), whole[0]) <= 1);
    const codecs::NvdecFigures started = codecs::nvdec_figures();
    // One decoder for the file: made, or (the second H.264 file, which
    // has the first's format) taken from the cache.
    CHECK(started.made + started.reused == opened.made + opened.reused + 1);
    if (name.rfind("H.264", 0) == 0) {
      if (h264_before) CHECK(started.made == opened.made);
      h264_before = true;
    }
    for (const std::int64_t t : targets(x, n)) {
      CAPTURE(t);
      const std::int64_t before = f.decoded();
      REQUIRE(f.seek(t));
      CHECK(f.device() == 0);
      for (std::int64_t k = t; k < std::min(n, t + 3); ++k) {
        CAPTURE(k);
        REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
        CHECK(f.frames() == k + 1);
        CHECK(frame->device() == 0);
        CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(k)]) <= 1);
      }
      CHECK(f.device() == 0);
      // Decoded from the keyframe the index names (or the one before, where
      // the decoder put out none of the frames after it), not the start.
      // H.264 leaves the frames before the target that no frame refers to
      // undecoded (as on the CPU, the case below): a quarter at least.
      const std::int64_t to_target = t - key_frame(x, t);
      CHECK(f.decoded() - before >=
            (name.starts_with("H.264") ? (to_target + 3) / 4 : to_target) + std::min(n, t + 3) - t);
      CHECK(f.decoded() - before <= std::min(n, t + 3) - key_frame(x, t, 1) + kSlack);
    }
    // Seeks flushed the decoder: none made, none taken from the cache.
    const codecs::NvdecFigures after = codecs::nvdec_figures();
    CHECK(after.made == started.made);
    CHECK(after.reused == started.reused);
    // Back near the start, then on to the end: every frame, on the device.
    REQUIRE(f.seek(2));
    std::int64_t k = 2;
    while (f.next(frame) == VideoFile::Next::frame) {
      CAPTURE(k);
      CHECK(frame->device() == 0);
      CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(k)]) <= 1);
      ++k;
    }
    CHECK_MESSAGE(f.error().empty(), f.error());
    CHECK(k == n);
    CHECK(f.device() == 0);
    CHECK(codecs::nvdec_figures().made == started.made);
    // Past the end, then back: the end, then frames again.
    CHECK_FALSE(f.seek(n));
    CHECK(f.next(frame) == VideoFile::Next::end);
    REQUIRE(f.seek(n - 2));
    CHECK(f.next(frame) == VideoFile::Next::frame);
    CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(n - 2)]) <= 1);
    CHECK(f.next(frame) == VideoFile::Next::frame);
    CHECK(f.next(frame) == VideoFile::Next::end);
    CHECK(f.device() == 0);
    frame.reset();
  }
}

TEST_CASE("video seek nvdec: damage NVDEC finds after a seek is placed by libavcodec, no stale frame delivered") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  const OnNvdec on;
  const codecs::VideoFileOptions& vo = on.vo;
  const Clip& clip = clips().at("H.264 B-frames, closed GOPs, MP4");
  const std::vector<std::vector<std::uint8_t>> whole = cpu_frames(clip.path);
  // The drill: the 40th picture the file's decoder is handed (in decode
  // order, counted across seeks) is left undecoded and still displayed.
  // The first seek and its 4 frames hand it far fewer than 40 (from
  // keyframe 48), so it falls after the second seek (from keyframe 24).
  imgpipe::fault::inject("nvdec_skip", 40);
  VideoFile f(clip.path, vo);
  REQUIRE(f.device() == 0);
  std::shared_ptr<VideoFrame> frame;
  REQUIRE(f.seek(50));
  for (std::int64_t k = 50; k < 54; ++k) {
    REQUIRE_MESSAGE(f.next(frame) == VideoFile::Next::frame, f.error());
    CHECK(frame->device() == 0);
    CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(k)]) <= 1);
  }
  REQUIRE(f.seek(24));
  CHECK(f.device() == 0);
  std::int64_t k = 24, on_device = 0, on_host = 0;
  while (f.next(frame) == VideoFile::Next::frame) {
    CAPTURE(k);
    (frame->device() == 0 ? on_device : on_host) += 1;
    CHECK(max_diff(bgr_of(*frame), whole[static_cast<std::size_t>(k)]) <= 1);
    ++k;
  }
  imgpipe::fault::clear();
  // libavcodec, placing the damage, finds none: the file plays to its end,
  // on the CPU from the frame after the last one NVDEC delivered.
  CHECK_MESSAGE(f.error().empty(), f.error());
  CHECK(k == clip.frames);
  CHECK(on_device > 0);
  CHECK(on_host > 0);
  CHECK(f.device() == -1);
}
