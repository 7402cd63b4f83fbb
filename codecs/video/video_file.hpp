// A video file through FFmpeg's libraries directly: the reader that every
// video file goes through, whichever decoder the router picks. Frames come
// out in display order as the decoder made them (YUV planes, 8 to 16 bits),
// with what the container and the stream say about them (frame.hpp): the
// colour matrix and range (kernels/yuv.hpp converts them), the display
// rotation, the frame count. docs/video.md has the route's rules; this
// header the API. Its parts: demuxer.hpp (libavformat), damage.hpp (what
// the container shows), video_decoder.hpp (the decoders: libav/, the CPU
// route, libavcodec with its own threads; nvdec/).
//
// Damage policy (the same on every route): a video BREAKS at the first frame
// that is not whole. Every frame before it, in display order, is delivered
// (the decoder is drained first, so B-frames still inside it are not lost);
// the break is the video's one failure, naming that frame. A frame is not
// whole when
//  - the demuxer reports data it skips (FFmpeg logs it and reads on: a
//    Matroska block it cannot parse loses the rest of its cluster), or
//    fails other than at the end of the file (a read error), or
//    the file ends inside a packet (the container marks the last packet cut
//    short or corrupt; one marked inside the file, as at an MPEG-TS
//    continuity jump where two streams were joined, goes to the decoder);
//  - the decoder rejects a packet (libavcodec's AV_EF_EXPLODE: it reports
//    damage it would otherwise conceal), or returns a frame flagged corrupt
//    or with decode errors (concealed damage), or drops a frame without a
//    word; or the frame was decoded after such a frame (a B-frame refers to
//    the P-frame decoded before it, though shown before it);
//  - a Matroska cluster fails its CRC-32 check (the break is where the
//    decoder finds the damage in it, else at the cluster's first frame);
//  - the file ends before the frame count its container declares (a cut MP4
//    or MKV whose index still lists the missing frames), beyond a tolerance
//    of max(2, 1%) frames for containers whose count is an estimate, or an
//    MPEG-TS file ends inside a transport packet (its size is not a whole
//    number of them).
// FFmpeg's own CLI conceals such damage and goes on; here a frame a decoder
// finds damaged is never delivered as if it were good, and the break does
// not depend on the number of threads (damage frame threads find is placed
// by decoding again with one). Bytes flipped in entropy-coded data can also
// decode to a valid, wrong picture that no decoder sees (docs/video.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codecs/video/frame.hpp"
#include "codecs/video/frame_index.hpp"

namespace imgpipe::memory {
class FramePool;
}

namespace imgpipe::codecs {

class VideoRouter;

struct VideoFileOptions {
  int threads = 1;  // libavcodec's decoding threads (frame and slice threading); 0 = FFmpeg's choice
  // Picks the route of the file once its stream is known (NVDEC on a
  // device, or the CPU); null: the CPU. Must outlive the file.
  VideoRouter* router = nullptr;
  // Where libavcodec decodes the frames of the YUV formats (blocks reused
  // from file to file; page-locked ones the staging copies by DMA); null:
  // libavcodec's own buffers.
  std::shared_ptr<memory::FramePool> frames = nullptr;
  // The frames the reader will have the file decode, from its index (clips:
  // from each clip's keyframe to its end); set, the index is built before
  // the router is asked, which weighs that work (VideoInfo::planned_work)
  // instead of the whole file. Empty: the whole file.
  std::function<std::int64_t(const FrameIndex&)> planned_work;
  // H.264 frames no other frame refers to, before a seek's target and
  // between the frames skip_to() and want() ask for, are left undecoded.
  // false: they are decoded, as in a sequential decode (a damaged stream
  // whose decoder conceals damage in such a frame without a word may
  // decode later frames differently then; the video fuzz target compares
  // seeks with a sequential decode so).
  bool skip_unreferenced = true;
};

class VideoFile {
 public:
  // Opens the file and its first video stream and starts the decoder.
  // Throws imgpipe::Error with the reason (no such file, not a media file, no
  // video stream, no decoder for the codec) and the path.
  VideoFile(const std::string& path, VideoFileOptions opts = {});
  ~VideoFile();
  VideoFile(const VideoFile&) = delete;
  VideoFile& operator=(const VideoFile&) = delete;

  const VideoInfo& info() const noexcept;
  // Where the file decodes: the device whose NVDEC engines decode it, or -1
  // for the CPU (libavcodec); with the reason it is not on NVDEC when a
  // router was asked (empty when it is, or when none was).
  int device() const noexcept;
  const std::string& cpu_reason() const noexcept;

  enum class Next { frame, end, broken };
  // The next frame in display order into `out`, or the end of the file, or
  // the break (then error() says why and frames() is where it broke). After
  // end or broken every later call returns the same.
  Next next(std::shared_ptr<VideoFrame>& out);
  // Frames returned so far (the index of the next one).
  std::int64_t frames() const noexcept;
  // Frames the decoder put out since the file was opened, delivered or not:
  // those dropped before a seek's target, those decoded again to place
  // damage (relocate) or after a seek that missed, an edit list's discarded
  // frames where the decoder puts them out. Decoded against delivered is
  // the decode amplification of seeks (the pipeline reports it per route,
  // device() naming the route). A sequential decode of a whole file gives
  // decoded() == frames(). Frames a decoder still held when a seek
  // dropped them never came out, and are not counted.
  std::int64_t decoded() const noexcept;

  // Frame-accurate seeking (clips): the next frame next() returns is frame
  // `index` in presentation order, the same frame a sequential decode
  // returns `index`-th. The file's FrameIndex is built on the first call (one
  // pass over its packets). Decoding starts at the keyframe the index names
  // for the frame, where the container's seek (by the keyframe's decode
  // time, then its presentation time) lands on it; at an earlier keyframe
  // of the index where it lands there, in a stream of one segment; from the
  // file's start, counting, where it lands elsewhere (an MPEG-TS file has no
  // index; joined streams repeat times). Frames before `index` are decoded
  // and dropped, whatever the decoder says of them (an open GOP's leading
  // frames lack their references there). Damage found before the seek is
  // forgotten: the file breaks, as video_file.hpp says, only at damage the
  // frames from `index` on meet. The decoder stays: a file NVDEC decodes
  // stays on its device, its decoder flushed and kept (no decoder is made
  // or taken from the cache for a seek); damage NVDEC finds after it is
  // placed by libavcodec as before. False, with next() at the end, when the
  // file has no frame `index`.
  bool seek(std::int64_t index);
  // Decoding on, the frames before `index` are not wanted (a clip's stride
  // passes them): next() returns frame `index` next, and an H.264 frame
  // among those before it that no other frame refers to is not decoded, as
  // before a seek's target. Damage met before `index` breaks the file as
  // decoding each frame would, at the frame it is found in (where the
  // decoder gives no time, at the first frame not delivered; under frame
  // threads and on NVDEC, where a one-thread decode from the frame
  // delivered last places it). False, and nothing changes (next() goes on
  // frame by frame), where the file cannot tell frames by time: before the
  // index is built, with decode times only, several segments, after damage,
  // or `index` not ahead of frames().
  bool skip_to(std::int64_t index);
  // The frames the caller asks for next (a clip's), by index: where the
  // decoder is fed ahead of what is delivered (frame threads, NVDEC), an
  // H.264 frame before the last of them that is not among them and that no
  // other frame refers to is not decoded (with one thread, skip_to() alone
  // spares the same frames). The caller then reaches each of them with
  // seek() or skip_to(). Replaces the last call's; forgotten when the file
  // is decoded again to place damage or off NVDEC, and ignored where
  // skip_to() cannot skip. An empty list: every frame.
  void want(const std::vector<std::int64_t>& indices);
  // The index seek() builds (built here when it was not).
  const FrameIndex& frame_index();
  // Whether seek() decodes from the file's start, counting frames (a
  // container with decode times only, and B-frames: FrameIndex's
  // seeks_from_start): then going forwards is never dearer by decoding on.
  bool seeks_from_start();
  const std::string& error() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// The libav* versions this was built and runs with ("libavformat 59.27.100, ...").
std::string libav_versions();

}  // namespace imgpipe::codecs
