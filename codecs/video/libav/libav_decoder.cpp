#include "codecs/video/libav/libav_decoder.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
}

#include "imgpipe/error.hpp"
#include "memory/frame_pool.hpp"
#include "codecs/video/av_error.hpp"

namespace imgpipe::codecs {

namespace {

// libavcodec's get_buffer2 with a memory::FramePool (ctx->opaque points at
// the decoder's shared_ptr to it): the formats the GPU converts are decoded
// into one pool block a frame, laid out as avcodec_default_get_buffer2 lays
// them out (dimensions and line sizes aligned as the decoder asks, each
// plane padded); other formats, and decoders that take no custom buffers,
// get libavcodec's own. Called from the frame threads, one at a time.
constexpr int kPlaneAlign = 64;

void release_pool_block(void* opaque, std::uint8_t* data) {
  auto* pool = static_cast<std::shared_ptr<memory::FramePool>*>(opaque);
  (*pool)->release(data);
  delete pool;
}

int pool_get_buffer(AVCodecContext* ctx, AVFrame* f, int flags) {
  const auto* pool = static_cast<const std::shared_ptr<memory::FramePool>*>(ctx->opaque);
  const auto pf = static_cast<AVPixelFormat>(f->format);
  kernels::YuvFormat yuv;
  if (!pool || !(ctx->codec->capabilities & AV_CODEC_CAP_DR1) || !yuv_format_of(pf, yuv))
    return avcodec_default_get_buffer2(ctx, f, flags);
  int w = f->width, h = f->height;
  int align[AV_NUM_DATA_POINTERS] = {};
  avcodec_align_dimensions2(ctx, &w, &h, align);
  int lines[4] = {};
  for (bool aligned = false; !aligned;) {  // widen until every line size is aligned, as libavcodec does
    if (av_image_fill_linesizes(lines, pf, w) < 0) return avcodec_default_get_buffer2(ctx, f, flags);
    w += w & ~(w - 1);
    aligned = true;
    for (int i = 0; i < 4; ++i) aligned = aligned && lines[i] % std::max(align[i], kPlaneAlign) == 0;
  }
  const ptrdiff_t pitches[4] = {lines[0], lines[1], lines[2], lines[3]};
  std::size_t sizes[4] = {};
  if (av_image_fill_plane_sizes(sizes, pf, h, pitches) < 0) return avcodec_default_get_buffer2(ctx, f, flags);
  std::size_t offsets[4] = {}, total = 0;
  for (int i = 0; i < 4 && sizes[i] > 0; ++i) {
    offsets[i] = total;
    // libavcodec's padding after each plane: 16 bytes read past the end, and the alignment
    total += (sizes[i] + 16 + kPlaneAlign - 1 + kPlaneAlign - 1) / kPlaneAlign * kPlaneAlign;
  }
  memory::FramePool::Block b;
  try {
    b = (*pool)->allocate(total);
  } catch (const std::exception&) {
    return AVERROR(ENOMEM);
  }
  // Zeroed, as libavcodec's own pool makes its buffers: a picture whose
  // decode leaves part of it unwritten without an error (an HEVC slice
  // lost to damage) shows zeros there, not the pixels of whichever frame
  // held the block before, so a seek and a sequential decode deliver the
  // same frame (tests/fuzz/corpus_video/regress-hevc-unwritten-area.mov).
  // Not for H.264 frame pictures: libavcodec's error resilience there
  // conceals every macroblock a damaged picture misses and flags the frame
  // (decode_error_flags), which the reader reports, and the memset is a
  // share of the CPU route's time worth saving (docs/video.md, "Damage the
  // decoder does not see"). Field pictures, where error resilience does not
  // run, keep it where the container says the stream is interlaced.
  const bool interlaced = ctx->field_order != AV_FIELD_PROGRESSIVE && ctx->field_order != AV_FIELD_UNKNOWN;
  if (ctx->codec_id != AV_CODEC_ID_H264 || interlaced) std::memset(b.data, 0, b.bytes);
  auto* owner = new (std::nothrow) std::shared_ptr<memory::FramePool>(*pool);
  AVBufferRef* buf = owner ? av_buffer_create(static_cast<std::uint8_t*>(b.data), static_cast<int>(b.bytes),
                                              release_pool_block, owner, 0)
                           : nullptr;
  if (!buf) {
    (*pool)->release(b.data);
    delete owner;
    return AVERROR(ENOMEM);
  }
  f->buf[0] = buf;
  for (int i = 0; i < 4; ++i) {
    f->data[i] = sizes[i] > 0 ? buf->data + offsets[i] : nullptr;
    f->linesize[i] = sizes[i] > 0 ? lines[i] : 0;
  }
  f->extended_data = f->data;
  return 0;
}

// Whether libavcodec's frame threads may decode `id` with AV_EF_EXPLODE.
// Not MPEG-4 part 2 (DivX, Xvid): FFmpeg 5.1's decoder (h263dec.c) returns
// an error for a damaged frame while setting got_frame, and a frame thread
// (pthread_frame.c) then frees the frame but passes got_frame on, so that
// decode.c:502 fails "Assertion frame->buf[0]" and ABORTS the process (one
// damaged file with threads > 1 ends a whole run; the reproducer is
// tests/fuzz/corpus_video/regress-mpeg4-frame-threads-assert.avi). Without
// frame threads the same error reaches us as a failed packet: AV_EF_EXPLODE
// stays on, so damage is still reported, not concealed. Slice threads stay
// asked for: libavcodec 59 has none for MPEG-4 part 2 (it decodes with one
// thread), a later one may. The rest of its family, the decoders sharing
// ff_h263_decode_frame (H.263, H.263+, Intel H.263, FLV, MS-MPEG-4 v1 to v3,
// WMV1/2), has neither frame nor slice threads in libavcodec 59: one
// thread, never that path.
bool frame_threads_safe(AVCodecID id) noexcept { return id != AV_CODEC_ID_MPEG4; }

}  // namespace

LibavDecoder::LibavDecoder(const AVStream* st, const AVCodec* codec, int threads,
                           std::shared_ptr<memory::FramePool> pool)
    : codec_(codec->name), pool_(std::move(pool)) {
  ctx_ = avcodec_alloc_context3(codec);
  frame_ = av_frame_alloc();
  try {
    if (!ctx_ || !frame_) throw std::bad_alloc();
    int r = avcodec_parameters_to_context(ctx_, st->codecpar);
    if (r < 0) throw Error("bad codec parameters (" + av_error(r) + ")");
    if (pool_) {
      ctx_->opaque = &pool_;
      ctx_->get_buffer2 = pool_get_buffer;
#if LIBAVCODEC_VERSION_MAJOR < 60
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      // pool_get_buffer may be called from the frame threads (always so from lavc 60)
      ctx_->thread_safe_callbacks = 1;
#pragma GCC diagnostic pop
#endif
    }
    ctx_->thread_count = std::max(0, threads);
    ctx_->thread_type = frame_threads_safe(codec->id) ? FF_THREAD_FRAME | FF_THREAD_SLICE : FF_THREAD_SLICE;
    ctx_->err_recognition |= AV_EF_EXPLODE;  // damage is reported, not concealed (video_file.hpp's policy)
    ctx_->pkt_timebase = st->time_base;
    r = avcodec_open2(ctx_, codec, nullptr);
    if (r < 0) throw Error(fmt::format("cannot start the {} decoder ({})", codec->name, av_error(r)));
  } catch (...) {  // the destructor does not run for a constructor that throws
    release();
    throw;
  }
}

LibavDecoder::~LibavDecoder() { release(); }

int LibavDecoder::send(const AVPacket* pkt) { return avcodec_send_packet(ctx_, pkt); }

int LibavDecoder::receive(Decoded& out) {
  const int r = avcodec_receive_frame(ctx_, frame_);
  if (r < 0) return r;
  out.pts = frame_->best_effort_timestamp;
  if ((frame_->flags & AV_FRAME_FLAG_CORRUPT) || frame_->decode_error_flags) {
    out.damage = fmt::format("the decoder concealed damage in it (FFmpeg decode error flags {:#x})",
                             static_cast<unsigned>(frame_->decode_error_flags));
    av_frame_unref(frame_);
    return 0;
  }
  AVFrame* ref = av_frame_alloc();
  if (!ref) return AVERROR(ENOMEM);
  av_frame_move_ref(ref, frame_);
  out.frame = std::make_shared<VideoFrame>(ref, pool_ && pool_->direct(ref->data[0]));
  return 0;
}

// H.264 only: a picture whose NAL units say that no other refers to it
// (nal_ref_idc 0) is then skipped whole (AVDISCARD_NONREF), leaving every
// reference picture as a full decode leaves it. Other codecs' rules are not
// relied on (HEVC's sub-layer non-reference pictures may be referred to by a
// higher temporal layer). libavcodec reads the setting for each packet: with
// frame threads when the packet is handed to a thread, with one thread while
// avcodec_send_packet decodes it (VideoFile sends a packet only once
// receive has nothing more, so the packet is decoded there and then).
void LibavDecoder::skip_unreferenced(bool on) {
  if (ctx_->codec_id == AV_CODEC_ID_H264) ctx_->skip_frame = on ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
}

std::string LibavDecoder::reason(int code) const {
  return fmt::format("the {} decoder failed ({})", codec_, av_error(code));
}

std::size_t LibavDecoder::frame_threads() const noexcept {
  return (ctx_->active_thread_type & FF_THREAD_FRAME) ? static_cast<std::size_t>(std::max(0, ctx_->thread_count)) : 0;
}

void LibavDecoder::release() noexcept {
  av_frame_free(&frame_);
  avcodec_free_context(&ctx_);
}

}  // namespace imgpipe::codecs
