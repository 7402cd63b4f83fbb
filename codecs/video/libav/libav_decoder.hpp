// The CPU video route's FrameDecoder: libavcodec with its own frame and
// slice threads (no frame threads for MPEG-4 part 2: FFmpeg 5.1 aborts on
// some damaged frames with them, libav_decoder.cpp). Damage it would
// conceal is reported (AV_EF_EXPLODE, frames flagged corrupt):
// video_file.hpp's policy. With a memory::FramePool, the frames of the
// formats the GPU converts are decoded into its blocks (page-locked ones
// the staging copies by DMA), laid out as libavcodec's own buffers are;
// other formats, and decoders that take no custom buffers, get libavcodec's.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "codecs/video/video_decoder.hpp"

struct AVCodec;
struct AVCodecContext;
struct AVFrame;

namespace imgpipe::memory {
class FramePool;
}

namespace imgpipe::codecs {

class LibavDecoder final : public FrameDecoder {
 public:
  // `codec`: libavcodec's decoder for the stream; `threads` 0: FFmpeg's
  // choice; `pool` may be null. Throws imgpipe::Error when it cannot start.
  LibavDecoder(const AVStream* st, const AVCodec* codec, int threads, std::shared_ptr<memory::FramePool> pool);
  ~LibavDecoder() override;
  LibavDecoder(const LibavDecoder&) = delete;
  LibavDecoder& operator=(const LibavDecoder&) = delete;

  int send(const AVPacket* pkt) override;
  int receive(Decoded& out) override;
  std::string reason(int code) const override;
  void skip_unreferenced(bool on) override;
  // The frames decoding at once with frame threading (0 without it).
  std::size_t frame_threads() const noexcept;

 private:
  void release() noexcept;
  std::string codec_;
  std::shared_ptr<memory::FramePool> pool_;  // ctx_->opaque points at it
  AVCodecContext* ctx_ = nullptr;
  AVFrame* frame_ = nullptr;
};

}  // namespace imgpipe::codecs
