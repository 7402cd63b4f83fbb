#include "codecs/video/packet_filter.hpp"

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
}

#include "imgpipe/error.hpp"
#include "codecs/video/av_error.hpp"

namespace imgpipe::codecs {

PacketFilter::PacketFilter(const AVStream* st) {
  const char* name = "null";
  switch (st->codecpar->codec_id) {
    case AV_CODEC_ID_H264: name = "h264_mp4toannexb"; break;
    case AV_CODEC_ID_HEVC: name = "hevc_mp4toannexb"; break;
    case AV_CODEC_ID_MPEG4: name = "mpeg4_unpack_bframes"; break;
    default: break;
  }
  const AVBitStreamFilter* f = av_bsf_get_by_name(name);
  if (!f) throw Error(fmt::format("FFmpeg has no {} bitstream filter", name));
  in_ = av_packet_alloc();
  int r = in_ ? av_bsf_alloc(f, &bsf_) : AVERROR(ENOMEM);
  if (r >= 0) r = avcodec_parameters_copy(bsf_->par_in, st->codecpar);
  if (r >= 0) {
    bsf_->time_base_in = st->time_base;
    r = av_bsf_init(bsf_);
  }
  if (r < 0) {
    av_bsf_free(&bsf_);
    av_packet_free(&in_);
    throw Error(fmt::format("cannot start the {} bitstream filter ({})", name, av_error(r)));
  }
}

PacketFilter::~PacketFilter() {
  av_bsf_free(&bsf_);
  av_packet_free(&in_);
}
const char* PacketFilter::name() const noexcept { return bsf_->filter->name; }
const AVCodecParameters* PacketFilter::output() const noexcept { return bsf_->par_out; }

int PacketFilter::send(const AVPacket* pkt) {
  if (!pkt) return av_bsf_send_packet(bsf_, nullptr);
  int r = av_packet_ref(in_, pkt);  // av_bsf_send_packet takes the reference and blanks in_
  if (r < 0) return r;
  r = av_bsf_send_packet(bsf_, in_);
  if (r < 0) av_packet_unref(in_);  // refused: left as it was
  return r;
}

int PacketFilter::receive(AVPacket* out) { return av_bsf_receive_packet(bsf_, out); }

void PacketFilter::flush() noexcept {
  av_bsf_flush(bsf_);
  av_packet_unref(in_);
}

namespace {
// One NAL unit's header under h264_unreferenced's rule: -1 the unit is decoded
// (a reference slice, a parameter set, an SVC/MVC slice), 1 an unreferenced
// slice, 0 neither.
int judge_nal(std::uint8_t header) noexcept {
  const int type = header & 0x1f;
  const int ref_idc = (header >> 5) & 3;
  if (type >= 1 && type <= 5) return ref_idc != 0 ? -1 : 1;
  if (type == 7 || type == 8 || type == 13 || type == 15 || type == 20) return -1;
  return 0;
}
}  // namespace

bool h264_unreferenced_sized(const std::uint8_t* data, std::size_t size, int length_bytes) noexcept {
  if (length_bytes < 1 || length_bytes > 4) return false;
  const auto n = static_cast<std::size_t>(length_bytes);
  bool slice = false;
  for (std::size_t i = 0; i < size;) {
    if (size - i < n + 1) return false;
    std::size_t len = 0;
    for (std::size_t k = 0; k < n; ++k) len = len << 8 | data[i + k];
    i += n;
    if (len == 0 || len > size - i) return false;
    const int j = judge_nal(data[i]);
    if (j < 0) return false;
    slice = slice || j > 0;
    i += len;
  }
  return slice;
}

bool h264_unreferenced(const std::uint8_t* data, std::size_t size) noexcept {
  bool slice = false;
  // Each NAL unit follows a 00 00 01 start code (emulation prevention keeps
  // the sequence out of the units' payloads).
  for (std::size_t i = 0; i + 3 < size; ++i) {
    if (data[i] != 0 || data[i + 1] != 0 || data[i + 2] != 1) continue;
    // A reference slice, a parameter set (SPS, PPS, SPS extension, subset
    // SPS) or an SVC/MVC slice: decoded.
    const int j = judge_nal(data[i + 3]);
    if (j < 0) return false;
    slice = slice || j > 0;
    i += 3;
  }
  return slice;
}

bool h264_unreferenced_packet(const AVStream* st, const AVPacket& p) noexcept {
  const AVCodecParameters* c = st->codecpar;
  if (c->codec_id != AV_CODEC_ID_H264 || p.data == nullptr || p.size <= 0) return false;
  const auto size = static_cast<std::size_t>(p.size);
  if (c->extradata_size >= 5 && c->extradata[0] == 1) return h264_unreferenced_sized(p.data, size, (c->extradata[4] & 3) + 1);
  return h264_unreferenced(p.data, size);
}

}  // namespace imgpipe::codecs
