// libFuzzer target: the video reader (codecs::VideoFile, CPU route) over a
// whole file: open, the frame index, seeks forwards and back with a few
// frames after each, and the file read sequentially to its end or its
// break; and the NVDEC route's Annex B conversion (codecs::PacketFilter)
// over the same file's packets, which runs without a GPU. imgpipe's own code
// on that path: the demuxer's watch of FFmpeg's errors, the frame index and
// seeking (keyframes, resync by target, count or overlap, decoding again
// earlier), the Matroska cluster CRC-32 checks, the damage placement (the
// decode-order rule, frames held back under frame threads and the one-thread
// relocation), the truncation checks, the frame pool's get_buffer2 and the
// frame conversion to BGR. Every error must be an imgpipe::Error or a
// Next::broken with a reason; never a crash, hang, leak or sanitizer report.
//
// The bytes are written to a file of this process (libavformat and the
// cluster check read a path, several times), named with a container's
// extension picked by a hash of the bytes (mp4, mkv, ts, avi, webm, mov), so
// that where content probing is unsure the extension leads to each demuxer.
// The same hash picks the seek targets, one or two decoding threads and the
// frame pool, so the seeds are plain playable files (corpus_video/, made with
// Debian's ffmpeg by make_video_seeds.sh) and every input replays the same
// way (but for the timing of two frame threads). Work per input is bounded:
// frames decoded per pass, seek targets, packets read, the stream's declared
// size, the input's size (CI's -max_len is the largest seed's).
//
// Replaying an input: FUZZ_VIDEO_VERBOSE=1 prints what each step did;
// FUZZ_VIDEO_PLAN="THREADS POOL SEEK_FIRST T1 T2 ..." (e.g. "1 0 0 5 2")
// replaces the hash's threads, frame pool, order and seek targets.
//
// An oracle: where the sequential pass played the whole file with one
// thread and no break, the index lists exactly those frames (the same
// times in the same order), and seeks decode every frame (the hash's draw
// of VideoFileOptions::skip_unreferenced), a frame a seek delivers must be
// the sequential pass's frame of that index, bit for bit (docs/video.md,
// "Frame-accurate seeking"). FUZZ_VIDEO_NO_ORACLE=1 turns it off (crashes, hangs and
// sanitizer reports only).
//
// Left out, each where it is done and with its reproducer in corpus_video/
// (so the seeds show it the day the cause goes): FFmpeg 5.1's own fault, a
// quadratic loop (hevc_mp4toannexb, hvcc_units_fit()); and from the oracle,
// files whose index disagrees with their sequential decode (run()). (Its
// MPEG-4 part 2 frame-thread assertion is the reader's to avoid:
// LibavDecoder decodes MPEG-4 part 2 without frame threads.)
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}

#include "imgpipe/error.hpp"
#include "memory/frame_pool.hpp"
#include "codecs/video/demuxer.hpp"
#include "codecs/video/frame_hash.hpp"
#include "codecs/video/frame_index.hpp"
#include "codecs/video/packet_filter.hpp"
#include "codecs/video/video_file.hpp"

namespace {

using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;

constexpr std::size_t kMaxInput = 256 * 1024;   // bytes (the seeds are a few KB; CI's max_len is the largest)
constexpr std::int64_t kMaxFrames = 120;        // frames read by the sequential pass
constexpr int kFramesAfterSeek = 3;             // frames read after each seek
constexpr int kSeeks = 3;
constexpr std::int64_t kMaxSeekTarget = 400;    // seek targets among the first frames of the index
constexpr int kMaxPackets = 200;                // packets through the Annex B filter
constexpr std::int64_t kMaxPixels = 1 << 20;    // the stream's declared size; larger inputs are skipped

const char* const kExtensions[] = {"mp4", "mkv", "ts", "avi", "webm", "mov"};
constexpr std::size_t kNumExtensions = sizeof kExtensions / sizeof kExtensions[0];

bool g_oracle = true;
bool g_verbose = false;  // FUZZ_VIDEO_VERBOSE=1: what each input did, on stderr (replaying a reproducer)

template <class... A>
void say(const char* fmt, A... a) {
  if (g_verbose) std::fprintf(stderr, fmt, a...);
}

void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz_video: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

std::uint64_t fnv1a(const std::uint8_t* data, std::size_t size) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

// splitmix64: the input's parameters, one draw each.
struct Draws {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// The input as a file of this process ("<tmp>/imgpipe_fuzz_video.<pid>.<ext>"), removed after the input.
struct TempFile {
  std::string path;
  TempFile(const std::uint8_t* data, std::size_t size, const char* ext) {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/imgpipe_fuzz_video." + std::to_string(getpid()) + "." + ext;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) fail("cannot write the input's file", path);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) fail("cannot write the input's file", path);
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  ~TempFile() { ::unlink(path.c_str()); }
};

// A delivered frame must be a host frame with planes; its BGR conversion
// (the decode stage's) must run. Returns its hash.
std::uint64_t check_frame(const std::shared_ptr<VideoFrame>& f, bool convert) {
  if (!f) fail("next() returned frame without one");
  if (f->device() != -1 || !f->raw()) fail("a CPU-route frame is not in host memory");
  const int w = f->width(), h = f->height();
  if (w <= 0 || h <= 0) fail("a frame without a size");
  if (convert && static_cast<std::int64_t>(w) * h <= kMaxPixels * 4) {
    const std::size_t pitch = static_cast<std::size_t>(w) * 3;
    std::vector<std::uint8_t> bgr(pitch * static_cast<std::size_t>(h));
    f->to_bgr(bgr.data(), pitch);
  }
  return imgpipe::codecs::frame_hash(*f);
}

// next() once, with the API's promises checked: a frame advances frames()
// by one; end and broken stay (a broken file says why).
VideoFile::Next next_checked(VideoFile& v, std::shared_ptr<VideoFrame>& out, bool convert, std::uint64_t* hash) {
  const std::int64_t before = v.frames();
  out.reset();
  const VideoFile::Next r = v.next(out);
  if (r == VideoFile::Next::frame) {
    if (v.frames() != before + 1) fail("frames() did not advance by one with a frame");
    const std::uint64_t h = check_frame(out, convert);
    if (hash) *hash = h;
    return r;
  }
  if (r == VideoFile::Next::broken && v.error().empty()) fail("a break without a reason");
  std::shared_ptr<VideoFrame> again;
  if (v.next(again) != r || again) fail("next() after end or broken did not return the same");
  return r;
}

void check_index(const imgpipe::codecs::FrameIndex& x) {
  if (x.key_of.size() != x.size()) fail("the index's key_of and pts differ in size");
  if (x.size() > 0 && (x.segments.empty() || x.segments[0] != 0)) fail("the index's first segment is not frame 0");
  for (std::size_t s = 1; s < x.segments.size(); ++s)
    if (x.segments[s] <= x.segments[s - 1] || x.segments[s] >= x.size()) fail("the index's segments are out of order");
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x.key_of[i] >= x.keys.size()) fail("a frame's keyframe is not in the index");
    const std::size_t seg = x.segment_of(i);
    if (i > 0 && seg == x.segment_of(i - 1) && x.pts[i] <= x.pts[i - 1])
      fail("the index's times do not ascend within a segment");
    if (x.frame_at(x.pts[i], seg) != i) fail("frame_at() does not find a frame of the index");
  }
}

// Whether every NAL unit an hvcC record (HEVC's extradata in MP4 and
// Matroska) lists lies within it. FFmpeg 5.1's hevc_mp4toannexb reads the
// counts without checking them against the bytes left, and grows its output
// by a few bytes for each unit read past the end (up to 255 x 65535 of
// them): under ASan, whose realloc always moves, one 9 KB input
// (corpus_video/regress-hevc-hvcc-bsf-slow.avi) took 33 s and 1.6 GB in
// av_bsf_init alone (plain libavcodec shows it, no imgpipe code in the
// loop; glibc's realloc grows in place). Such records are left
// out of the filter pass; the reader still opens and decodes them.
bool hvcc_units_fit(const std::uint8_t* p, std::size_t size) {
  // Annex B extradata (a start code), which the filter passes through, or too short for hvcC (refused).
  if (size < 23 || (p[0] == 0 && p[1] == 0 && (p[2] == 1 || (p[2] == 0 && p[3] == 1)))) return true;
  std::size_t at = 22;
  const unsigned arrays = p[at++];
  for (unsigned a = 0; a < arrays; ++a) {
    if (at + 3 > size) return false;
    const unsigned count = (p[at + 1] << 8) | p[at + 2];
    at += 3;
    for (unsigned u = 0; u < count; ++u) {
      if (at + 2 > size) return false;
      at += 2 + ((p[at] << 8) | p[at + 1]);
      if (at > size) return false;
    }
  }
  return true;
}

// One pass over the file's first packets as the Demuxer reads them, through
// the Annex B conversion the NVDEC route puts them through (PacketFilter),
// which runs without a GPU: H.264, HEVC and MPEG-4 part 2 (other codecs pass
// through FFmpeg's null filter, not ours to fuzz). Returns the codec.
AVCodecID scan_packets(const std::string& path) {
  imgpipe::codecs::Demuxer d(path);
  std::unique_ptr<imgpipe::codecs::PacketFilter> f;
  const AVCodecParameters* par = d.stream()->codecpar;
  const AVCodecID id = par->codec_id;
  const bool hvcc_ok = id != AV_CODEC_ID_HEVC || !par->extradata ||
                       hvcc_units_fit(par->extradata, static_cast<std::size_t>(par->extradata_size));
  if ((id == AV_CODEC_ID_H264 || id == AV_CODEC_ID_HEVC || id == AV_CODEC_ID_MPEG4) && hvcc_ok) {
    f = std::make_unique<imgpipe::codecs::PacketFilter>(d.stream());
    if (!f->output()) fail("the packet filter has no output parameters");
  }
  AVPacket* in = av_packet_alloc();
  AVPacket* out = av_packet_alloc();
  if (!in || !out) fail("out of memory");
  auto drain = [&] {
    while (f && f->receive(out) == 0) {
      if (out->size < 0 || (out->size > 0 && !out->data)) fail("the packet filter put out a packet without data");
      av_packet_unref(out);
    }
  };
  for (int n = 0; n < kMaxPackets && d.read(in) >= 0; ++n) {
    if (f) f->send(in);  // a packet the filter refuses is damage on NVDEC's route, not a crash
    av_packet_unref(in);
    drain();
  }
  if (f) f->send(nullptr);
  drain();
  av_packet_free(&in);
  av_packet_free(&out);
  return id;
}

void run(const std::string& path, Draws& draw, AVCodecID /*codec*/) {
  bool two_threads = draw.next() % 4 == 0;  // frame threads: frames held back, damage placed again with one
  bool pooled = draw.next() % 2 == 0;        // libavcodec decodes into a memory::FramePool
  bool seek_first = draw.next() % 2 == 0;    // a clip on a fresh file, or seeks after the whole file
  // Seeks leave the unreferenced H.264 frames before their targets undecoded
  // (VideoFileOptions::skip_unreferenced), or decode them as the sequential
  // pass does: only then does the oracle judge them (FUZZ_VIDEO_SKIP=0/1
  // replaces the draw).
  bool skip = draw.next() % 2 == 0;
  if (const char* e = std::getenv("FUZZ_VIDEO_SKIP")) skip = *e == '1';
  // FUZZ_VIDEO_PLAN (replaying by hand) replaces the draws.
  std::vector<std::int64_t> planned;
  if (const char* p = std::getenv("FUZZ_VIDEO_PLAN")) {
    char* end = nullptr;
    two_threads = std::strtol(p, &end, 10) == 2;
    pooled = std::strtol(end, &end, 10) != 0;
    seek_first = std::strtol(end, &end, 10) != 0;
    for (;;) {
      char* const at = end;
      const long long t = std::strtoll(at, &end, 10);
      if (end == at) break;
      planned.push_back(t);
    }
  }
  imgpipe::codecs::VideoFileOptions opts;
  opts.threads = two_threads ? 2 : 1;
  opts.skip_unreferenced = skip;
  if (pooled)
    opts.frames = std::make_shared<imgpipe::memory::FramePool>(
        imgpipe::memory::FramePoolOptions{.device = -1, .page_locked = false, .idle_bytes = std::size_t{16} << 20});
  VideoFile v(path, opts);
  const imgpipe::codecs::VideoInfo& info = v.info();
  if (info.width < 0 || info.height < 0) fail("a negative frame size");
  say("fuzz_video: %s %s %dx%d, %d thread(s)%s%s, declared %lld frames\n", info.container.c_str(),
      info.codec.c_str(), info.width, info.height, opts.threads, pooled ? ", frame pool" : "",
      skip ? ", unreferenced frames skipped" : "", static_cast<long long>(info.declared_frames));
  if (static_cast<std::int64_t>(info.width) * info.height > kMaxPixels) return;  // cheap inputs only

  std::shared_ptr<VideoFrame> frame;
  std::vector<std::uint64_t> whole;  // the sequential pass's frames
  std::vector<std::int64_t> whole_pts;  // and their presentation times (libavcodec's best effort)
  bool played_whole = false;
  auto sequential = [&] {
    const bool fresh = v.frames() == 0;
    VideoFile::Next r = VideoFile::Next::frame;
    std::uint64_t h = 0;
    for (std::int64_t n = 0; n < kMaxFrames; ++n) {
      r = next_checked(v, frame, n < 4, &h);
      if (r != VideoFile::Next::frame) break;
      if (fresh) {
        whole.push_back(h);
        whole_pts.push_back(frame->raw()->best_effort_timestamp);
      }
    }
    played_whole = fresh && r == VideoFile::Next::end && !two_threads;
    say("fuzz_video: read to frame %lld: %s %s\n", static_cast<long long>(v.frames()),
        r == VideoFile::Next::end ? "end" : r == VideoFile::Next::broken ? "broken" : "cap", v.error().c_str());
  };

  if (!seek_first) sequential();
  const imgpipe::codecs::FrameIndex* index = nullptr;
  try {
    index = &v.frame_index();
  } catch (const imgpipe::Error&) {
    // No index (packets but no keyframe, a read error): no seeking; the file still plays.
    if (seek_first) sequential();
    return;
  }
  const imgpipe::codecs::FrameIndex& x = *index;
  check_index(x);
  say("fuzz_video: index %zu frames, %zu keys, %zu segments\n", x.size(), x.keys.size(), x.segments.size());
  const auto n = static_cast<std::int64_t>(x.size());
  // Judged only where the index lists the frames the sequential pass
  // delivered, in its order, at the times libavcodec gave them: elsewhere
  // the index (which reads presentation times from the packets) and the
  // decoder (which orders frames by the bitstream) disagree, and a seek
  // lands on the frame the index names, not the one a sequential decode
  // puts there. Two kinds were found that way: packets without
  // presentation times in a stream with B-frames (MPEG-4 part 2 in AVI as
  // FFmpeg writes it, the seed mpeg4_bframes.avi: every seek landed a frame
  // early; such a file now seeks by counting from the start,
  // VideoFile::seeks_from_start, and is judged wherever the index has the
  // sequential pass's count), and a keyframe's presentation time damaged
  // (one bit of an MPEG-TS PES header, regress-ts-keyframe-pts-damaged.ts:
  // the index shows that frame last, the decoder in its place; left to the
  // reader).
  const bool counted = v.seeks_from_start() && whole_pts.size() == x.size();
  // Not where seeks skip the unreferenced H.264 frames: a damaged stream's
  // decoder may conceal damage in such a frame without a word, and the
  // frames after it then decode otherwise in the sequential pass
  // (corpus_video/regress-ts-nonref-skip-differs.ts: its B-frames' damage
  // changed the P-frame after them).
  const bool oracle = g_oracle && played_whole && (whole_pts == x.pts || counted) && !skip;
  say("fuzz_video: the oracle %s\n", oracle ? "judges the seeks" : "is off");
  const int seeks = planned.empty() ? kSeeks : static_cast<int>(planned.size());
  for (int s = 0; s < seeks; ++s) {
    const std::uint64_t r = draw.next();
    std::int64_t t = static_cast<std::int64_t>(r % static_cast<std::uint64_t>(std::min(n, kMaxSeekTarget) + 2));
    if (r % 16 == 0) t = -1;
    if (r % 16 == 1 && n > 0) t = n - 1;
    if (!planned.empty()) t = planned[static_cast<std::size_t>(s)];
    const bool ok = v.seek(t);
    say("fuzz_video: seek(%lld) %s %s\n", static_cast<long long>(t), ok ? "true" : "false", v.error().c_str());
    if (t < 0 || t >= n) {
      if (ok) fail("seek() past the index's frames returned true");
      if (v.next(frame) != VideoFile::Next::end) fail("seek() past the index's frames is not the end");
      continue;
    }
    if (!ok) {
      if (v.error().empty()) fail("seek() failed without a reason");
      continue;
    }
    if (v.frames() != t) fail("frames() after seek() is not the target");
    for (int k = 0; k < kFramesAfterSeek; ++k) {
      std::uint64_t h = 0;
      if (next_checked(v, frame, k == 0, &h) != VideoFile::Next::frame) break;
      const std::size_t at = static_cast<std::size_t>(t + k);
      if (oracle && at < whole.size() && h != whole[at])
        fail("a seek delivered a frame other than the sequential decode's",
             "frame " + std::to_string(at) + " after seek(" + std::to_string(t) + ")");
    }
  }
  if (seek_first) sequential();  // on from the last seek to the end or the break
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* e = std::getenv("FUZZ_VIDEO_NO_ORACLE")) g_oracle = *e == '\0' || *e == '0';
  if (const char* e = std::getenv("FUZZ_VIDEO_VERBOSE")) g_verbose = *e != '\0' && *e != '0';
  // FFmpeg's lines are silenced (verbose: its errors, and its assertions'
  // messages); the reader still sees the demuxers' errors, its log callback
  // being called at every level.
  av_log_set_level(g_verbose ? AV_LOG_ERROR : AV_LOG_QUIET);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > kMaxInput) return 0;
  Draws draw{fnv1a(data, size)};
  const TempFile file(data, size, kExtensions[draw.next() % kNumExtensions]);
  say("fuzz_video: %zu bytes as %s\n", size, file.path.c_str());
  AVCodecID codec = AV_CODEC_ID_NONE;
  try {
    codec = scan_packets(file.path);
  } catch (const imgpipe::Error& e) {
    say("fuzz_video: packets: %s\n", e.what());
  }
  try {
    run(file.path, draw, codec);
  } catch (const imgpipe::Error& e) {
    // A reason for the file (cannot open, no video stream, no decoder): fine.
    say("fuzz_video: %s\n", e.what());
  }
  return 0;
}
