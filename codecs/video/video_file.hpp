// A video file through FFmpeg's libraries directly (libavformat demuxes,
// libavcodec decodes with its own threads): the CPU video route. Frames come
// out in display order as the decoder made them (YUV planes, 8 to 16 bits),
// with what the container and the stream say about them: the colour matrix
// and range (kernels/yuv.hpp converts them), the display rotation, the frame
// count. docs/video.md has the route's rules; this header the API.
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

#include <cstdarg>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/yuv.hpp"

struct AVFrame;
struct AVStream;

namespace imgpipe::memory {
class FramePool;
}

namespace imgpipe::codecs {

struct VideoInfo {
  std::string codec;            // FFmpeg's codec name ("h264", "hevc", "vp9", "av1", ...; not the decoder's)
  std::string container;        // the demuxer ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "mpegts", ...)
  std::string pixel_format;     // the decoder's output (FFmpeg's name: "yuv420p", "yuv420p10le", ...)
  int width = 0, height = 0;    // coded frame size of the first frame (later frames may differ)
  int bit_depth = 8;
  int chroma_shift_x = 1, chroma_shift_y = 1;
  bool monochrome = false;      // grey: no chroma planes
  int profile = -1;             // FFmpeg's profile number (FF_PROFILE_*), -1 unknown
  std::int64_t declared_frames = -1;  // the container's count (or duration x rate), -1 unknown
  bool declared_exact = false;  // the count is the container's index (MP4), not an estimate
  double fps = 0;
  // The display rotation the container asks for, clockwise degrees to apply
  // (0, 90, 180, 270), and a horizontal flip applied after it.
  int rotation = 0;
  bool flip = false;
};

// One decoded frame: a reference to libavcodec's buffer in host memory, or
// a frame an NVDEC engine decoded, in device memory (codecs/video_nvdec.hpp).
// Holding it keeps that buffer; dropping it returns the buffer to its pool.
class VideoFrame {
 public:
  // Takes the reference. `direct`: the planes are in one block of a
  // memory::FramePool that the device can copy out of (page-locked).
  explicit VideoFrame(AVFrame* f, bool direct = false) noexcept : f_(f), direct_(direct) {}
  // A frame in device memory of `device`: `image`'s planes are device
  // pointers into `memory`, which the frame keeps.
  VideoFrame(int device, const kernels::YuvImage& image, std::shared_ptr<const void> memory) noexcept
      : device_(device), image_(image), memory_(std::move(memory)) {}
  ~VideoFrame();
  VideoFrame(const VideoFrame&) = delete;
  VideoFrame& operator=(const VideoFrame&) = delete;

  int width() const noexcept;
  int height() const noexcept;
  // The frame's planes as kernels::yuv_to_bgr converts them, with the
  // frame's own matrix and range (the stream's tags; untagged: BT.709 for HD
  // sizes, BT.601 below, limited range; the yuvj formats are full range).
  // False for formats that are not YUV (RGB, palette): to_bgr() handles those.
  // For a device frame the planes are device pointers.
  bool yuv(kernels::YuvImage& out) const noexcept;
  // The frame as BGR u8 (3 bytes a pixel, rows `pitch` bytes apart): through
  // kernels::yuv_to_bgr_ref for YUV, libswscale for other formats. Host
  // frames only (std::logic_error for a device frame).
  void to_bgr(std::uint8_t* dst, std::size_t pitch) const;
  std::size_t bytes() const noexcept;  // of the decoded planes
  const AVFrame* raw() const noexcept { return f_; }  // null for a device frame
  int device() const noexcept { return device_; }     // -1: host memory
  // A host frame the staging copies to the device by DMA (FramePool::Block::direct).
  bool direct() const noexcept { return direct_; }

 private:
  AVFrame* f_ = nullptr;
  bool direct_ = false;
  int device_ = -1;
  kernels::YuvImage image_;  // a device frame's planes
  std::shared_ptr<const void> memory_;
};

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
  const std::string& error() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// The libav* versions this was built and runs with ("libavformat 59.27.100, ...").
std::string libav_versions();

// FFmpeg's log lines go through one callback of the process, installed by
// the first VideoFile (or by this call): it notes the errors a VideoFile's
// demuxer reports while it skips damaged data (a Matroska block it cannot
// parse: "Error parsing frame sizes"), which break that file, and passes
// every line to `sink` (null: FFmpeg's own printing to stderr).
using FfmpegLogSink = void (*)(void* avcl, int level, const char* fmt, std::va_list args);
void set_ffmpeg_log_sink(FfmpegLogSink sink);

}  // namespace imgpipe::codecs
