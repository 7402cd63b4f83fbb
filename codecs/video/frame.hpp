// A decoded video frame and what a stream says about its frames: the types
// every part of the video layer shares (the reader, video_file.hpp; the
// decoders behind video_decoder.hpp; the router, route/video_route.hpp), and
// the reading of FFmpeg's tags (pixel format, colour matrix and range) they
// all apply. Holds no FFmpeg header: the tags come as FFmpeg's enum values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/yuv.hpp"

struct AVFrame;

namespace imgpipe::codecs {

struct VideoInfo {
  std::string codec;            // FFmpeg's codec name ("h264", "hevc", "vp9", "av1", ...; not the decoder's)
  std::string container;        // the demuxer ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "mpegts", ...)
  std::string pixel_format;     // the decoder's output (FFmpeg's name: "yuv420p", "yuv420p10le", ...)
  int width = 0, height = 0;    // coded frame size of the first frame (later frames may differ)
  int bit_depth = 8;
  int chroma_shift_x = 1, chroma_shift_y = 1;
  bool monochrome = false;      // grey: no chroma planes
  // The planes code G, B and R, not luma and chroma (matrix coefficients 0,
  // "identity": FFmpeg's gbrp formats, screen content, some camera
  // intermediates): no YUV matrix applies.
  bool rgb_coded = false;
  int profile = -1;             // FFmpeg's profile number (FF_PROFILE_*), -1 unknown
  std::int64_t declared_frames = -1;  // the container's count (or duration x rate), -1 unknown
  // The frames the file's reader will have decoded, when it knows before the
  // route is chosen (clips: from each clip's keyframe to its end,
  // VideoFileOptions::planned_work); -1: the whole file. The route rule
  // weighs this (codecs/route/video_route.hpp).
  std::int64_t planned_work = -1;
  bool declared_exact = false;  // the count is the container's index (MP4), not an estimate
  double fps = 0;
  // The stream's time base (seconds per tick of FrameIndex::pts) and its
  // start time in ticks (0 when the container gives none): frame i is shown
  // (pts[i] - start_pts) x time_base seconds into the stream.
  double time_base = 0;
  std::int64_t start_pts = 0;
  // The display rotation the container asks for, clockwise degrees to apply
  // (0, 90, 180, 270), and a horizontal flip applied after it.
  int rotation = 0;
  bool flip = false;
};

// One decoded frame: a reference to libavcodec's buffer in host memory, or
// a frame an NVDEC engine decoded, in device memory (nvdec/nvdec_decoder.hpp).
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

// The planes of a planar or semi-planar YUV (or grey) format (FFmpeg's
// AVPixelFormat value), as kernels::YuvFormat describes them; false for
// anything else (RGB, palette, packed YUYV, big-endian, NV21 and other orders).
bool yuv_format_of(int av_pixel_format, kernels::YuvFormat& f) noexcept;

// The colour matrix and range of a stream's or frame's tags (FFmpeg's
// AVColorSpace and AVColorRange values; untagged: kernels::default_matrix
// for the size, limited range; FFmpeg's yuvj formats are full range).
kernels::ColorMatrix matrix_of(int av_color_space, int width, int height) noexcept;
bool is_full_range(int av_color_range, int av_pixel_format) noexcept;

}  // namespace imgpipe::codecs
