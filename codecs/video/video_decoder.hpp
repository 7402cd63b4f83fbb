// What codecs::VideoFile drives to turn a stream's packets into frames: the
// same send/receive shape as libavcodec's, so that one demuxer and one damage
// policy (video_file.hpp) serve every decoder. Two implement it: libavcodec
// (libav/libav_decoder.hpp, the CPU route) and NVDEC
// (nvdec/nvdec_decoder.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codecs/video/frame.hpp"

struct AVPacket;
struct AVStream;

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
  // Drops the frames in flight and what the decoder knows of the stream so
  // far, keeping the decoder itself (NVDEC's engine, nvdec_cache.hpp), so
  // that the next packets, from a keyframe elsewhere in the file
  // (VideoFile::seek), decode as from the start of a stream. False when it
  // cannot (then VideoFile makes another decoder): libavcodec's, whose
  // seeks make a new one (cheap on the CPU); NVDEC's once its frame memory
  // ran out.
  virtual bool flush() { return false; }
  // Whether the packets sent next may be left undecoded where no other frame
  // refers to theirs (a seek's frames before its target: dropped anyway).
  // A decoder that cannot tell, or whose codec's rule it does not trust,
  // decodes them all (the default).
  virtual void skip_unreferenced(bool) {}
};

}  // namespace imgpipe::codecs
