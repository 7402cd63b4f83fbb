// The packets of a stream as NVDEC's parser takes them, through FFmpeg's
// bitstream filters (libavcodec): H.264 and HEVC in Annex B (MP4 and MKV
// store them length-prefixed), MPEG-4 part 2 with packed B-frames unpacked.
// FFmpeg code, no CUDA, beside the backends rather than in nvdec/ so that it
// builds and is tested without a GPU (tests/codecs/test_video_route.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

struct AVBSFContext;
struct AVCodecParameters;
struct AVPacket;
struct AVStream;

namespace imgpipe::codecs {

// H.264 and HEVC through FFmpeg's h264_mp4toannexb and hevc_mp4toannexb
// (which pass Annex B input through), MPEG-4 part 2 through
// mpeg4_unpack_bframes; other codecs as they are (FFmpeg's null filter).
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
  // Drops what the filter holds and its state (after the end too), for
  // packets from elsewhere in the stream (av_bsf_flush).
  void flush() noexcept;

 private:
  AVBSFContext* bsf_ = nullptr;
  AVPacket* in_ = nullptr;  // send()'s reference to the caller's packet, reused
};

// Whether an H.264 access unit in Annex B (PacketFilter's output) is a
// picture no other picture refers to: it holds a slice, and every slice NAL
// unit (types 1 to 5) has nal_ref_idc 0. False where it holds none, any
// reference slice, an SVC or MVC slice (type 20), or a parameter set (an
// SPS or PPS the pictures after it need): such a unit is decoded. Dropping
// such units leaves every other picture as it decodes (the same rule as
// libavcodec's AVDISCARD_NONREF).
bool h264_unreferenced(const std::uint8_t* data, std::size_t size) noexcept;
// The same rule for an access unit whose NAL units are each preceded by
// their size in `length_bytes` (1 to 4) big-endian bytes (AVCC: MP4,
// Matroska; the stream's extradata names the size). False for a unit whose
// sizes do not add up.
bool h264_unreferenced_sized(const std::uint8_t* data, std::size_t size, int length_bytes) noexcept;
// The rule for a packet of stream `st` as the demuxer gives it: sizes as
// the extradata's avcC record says (MP4, Matroska), else start codes
// (MPEG-TS, raw H.264). False for any other codec.
bool h264_unreferenced_packet(const AVStream* st, const AVPacket& p) noexcept;

}  // namespace imgpipe::codecs
