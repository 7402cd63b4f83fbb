// What codecs::VideoFile drives to turn a stream's packets into frames: the
// same send/receive shape as libavcodec's, so that one demuxer and one damage
// policy (video_file.hpp) serve every decoder. Two implement it: libavcodec
// (video_file.cpp, the CPU route) and NVDEC (video_nvdec.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codecs/video/video_file.hpp"

struct AVPacket;
struct AVStream;
struct AVBSFContext;
struct AVCodecParameters;

namespace imgpipe::codecs {

// One result of FrameDecoder::receive: a frame, or damage found where a
// frame was due (then `frame` is null).
struct Decoded {
  std::shared_ptr<VideoFrame> frame;
  std::int64_t pts = INT64_MIN;  // presentation time (the packets' time base); INT64_MIN unknown
  std::string damage;            // not whole: why
  std::int64_t seq = -1;         // VideoFile's: the number of the packet it was decoded from (-1 unknown)
};

class FrameDecoder {
 public:
  virtual ~FrameDecoder() = default;
  // A packet of the stream (its data is not kept), or null for the end: the
  // decoder drains. 0, or an AVERROR code when the packet is rejected; then
  // reason() says why.
  virtual int send(const AVPacket* pkt) = 0;
  // 0 with `out` set, AVERROR(EAGAIN) when a packet must come first,
  // AVERROR_EOF once drained, another AVERROR on failure (reason()).
  virtual int receive(Decoded& out) = 0;
  // The last failure's reason ("the h264 decoder failed (Invalid data ...)").
  virtual std::string reason(int code) const = 0;
};

// The packets of a stream as NVDEC's parser takes them: H.264 and HEVC in
// Annex B (MP4 and MKV store them length-prefixed: FFmpeg's h264_mp4toannexb
// and hevc_mp4toannexb, which pass Annex B input through), MPEG-4 part 2
// with packed B-frames unpacked (mpeg4_unpack_bframes); other codecs as they
// are (FFmpeg's null filter).
class PacketFilter {
 public:
  explicit PacketFilter(const AVStream* st);  // throws Error
  ~PacketFilter();
  PacketFilter(const PacketFilter&) = delete;
  PacketFilter& operator=(const PacketFilter&) = delete;
  const char* name() const noexcept;
  // The stream's parameters after the filter (extradata in Annex B for H.264).
  const AVCodecParameters* output() const noexcept;
  int send(const AVPacket* pkt);  // null: the end (as av_bsf_send_packet, which takes the packet's data)
  int receive(AVPacket* out);     // 0, AVERROR(EAGAIN), AVERROR_EOF (as av_bsf_receive_packet)

 private:
  AVBSFContext* bsf_ = nullptr;
  AVPacket* in_ = nullptr;  // send()'s reference to the caller's packet, reused
};

// The colour matrix and range of a stream's or frame's tags (FFmpeg's
// AVColorSpace and AVColorRange values; untagged: kernels::default_matrix
// for the size, limited range; FFmpeg's yuvj formats are full range).
kernels::ColorMatrix matrix_of(int av_color_space, int width, int height) noexcept;
bool is_full_range(int av_color_range, int av_pixel_format) noexcept;

}  // namespace imgpipe::codecs
