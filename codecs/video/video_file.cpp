#include "codecs/video/video_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavutil/crc.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include "imgpipe/error.hpp"
#include "memory/frame_pool.hpp"
#include "codecs/video/video_decoder.hpp"
#include "codecs/video/nvdec/nvdec_decoder.hpp"
#include "codecs/route/video_route.hpp"

namespace imgpipe::codecs {

namespace {

std::string av_error(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

// The planes of a planar or semi-planar YUV (or grey) format, as
// kernels::YuvFormat describes them; false for anything else.
bool yuv_format_of(AVPixelFormat pf, kernels::YuvFormat& f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pf);
  if (!d || (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM |
                         AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_FLOAT)))
    return false;
  if (!(d->flags & AV_PIX_FMT_FLAG_PLANAR) && d->nb_components != 1) return false;  // packed YUYV etc.
  const AVComponentDescriptor& y = d->comp[0];
  if (y.plane != 0 || y.depth < 8 || y.depth > 16) return false;
  f = {};
  f.bits = y.depth;
  f.bytes = y.step == 1 ? 1 : 2;
  if (f.bytes == 1 && y.depth != 8) return false;
  f.shift = y.shift;
  if (d->nb_components == 1 || d->nb_components == 2) {  // grey (+ alpha)
    f.monochrome = true;
    return true;
  }
  if (d->nb_components > 4) return false;
  const AVComponentDescriptor& u = d->comp[1];
  const AVComponentDescriptor& v = d->comp[2];
  if (u.depth != y.depth || v.depth != y.depth || u.shift != y.shift || v.shift != y.shift) return false;
  if (d->log2_chroma_w > 1 || d->log2_chroma_h > 1) return false;  // 4:1:0, 4:1:1
  f.chroma_shift_x = d->log2_chroma_w;
  f.chroma_shift_y = d->log2_chroma_h;
  if (u.plane == 1 && v.plane == 1) {  // NV12 / P010 / P016: U then V in one plane
    if (u.offset >= v.offset || u.step != 2 * f.bytes) return false;
    f.uv_interleaved = true;
  } else if (u.plane != 1 || v.plane != 2 || u.step != f.bytes || v.step != f.bytes) {
    return false;  // NV21 and other orders
  }
  return true;
}

// ---------------------------------------------------- Matroska's checksums

// The CRC-32 elements that FFmpeg's Matroska muxer (and others) write first
// in every cluster, checked as the demuxer reaches each cluster: FFmpeg's
// demuxer skips them, and damage in a frame's entropy-coded data decodes
// without an error in most HEVC and VP9 streams. The file is read a second
// time, a cluster at a time, through its own handle.
class ClusterCheck {
 public:
  explicit ClusterCheck(const std::string& path) : f_(std::fopen(path.c_str(), "rb")) {
    std::uint32_t id = 0;
    std::uint64_t size = 0;
    int at = 0;
    // The EBML header, then the segment whose children are the clusters.
    if (!f_ || !header(0, id, size, at) || id != 0x1A45DFA3) {
      stop();
      return;
    }
    const std::int64_t seg = at + static_cast<std::int64_t>(size);
    if (!header(seg, id, size, at) || id != 0x18538067) {
      stop();
      return;
    }
    next_ = seg + at;
    end_ = size == kUnknown ? INT64_MAX : next_ + static_cast<std::int64_t>(size);
  }
  ~ClusterCheck() { stop(); }
  ClusterCheck(const ClusterCheck&) = delete;
  ClusterCheck& operator=(const ClusterCheck&) = delete;

  // Checks the clusters up to the one holding byte `pos` of the file. False
  // when one fails its check; `time` is then its timestamp (the packets'
  // time base: Matroska's TimestampScale) and `end` the byte after it.
  bool upto(std::int64_t pos, std::int64_t& time, std::int64_t& end) {
    while (f_ && next_ <= pos && next_ < end_) {
      std::uint32_t id = 0;
      std::uint64_t size = 0;
      int at = 0;
      if (!header(next_, id, size, at) || size == kUnknown) {
        stop();  // a live-written file (sizes unknown) or a broken header: the demuxer judges it
        break;
      }
      const std::int64_t body = next_ + at;
      next_ = body + static_cast<std::int64_t>(size);
      if (id != 0x1F43B675 || size < 6 || size > (std::uint64_t{1} << 30)) continue;  // not a cluster
      buf_.resize(size);
      if (std::fseek(f_, static_cast<long>(body), SEEK_SET) != 0 || std::fread(buf_.data(), 1, size, f_) != size) {
        stop();  // cut short: the demuxer finds that
        break;
      }
      if (buf_[0] != 0xBF || buf_[1] != 0x84) continue;  // no CRC-32 element
      const std::uint32_t stored = buf_[2] | (buf_[3] << 8) | (buf_[4] << 16) | (std::uint32_t{buf_[5]} << 24);
      const std::uint32_t crc =
          av_crc(av_crc_get_table(AV_CRC_32_IEEE_LE), UINT32_MAX, buf_.data() + 6, size - 6) ^ UINT32_MAX;
      if (crc != stored) {
        time = timestamp();
        end = next_;
        return false;
      }
    }
    return true;
  }

 private:
  static constexpr std::uint64_t kUnknown = ~std::uint64_t{0};
  void stop() {
    if (f_) std::fclose(f_);
    f_ = nullptr;
  }
  // An EBML element's ID and data size at `pos` (`at`: the header's bytes).
  bool header(std::int64_t pos, std::uint32_t& id, std::uint64_t& size, int& at) {
    unsigned char h[12];
    if (std::fseek(f_, static_cast<long>(pos), SEEK_SET) != 0) return false;
    const std::size_t got = std::fread(h, 1, sizeof h, f_);
    int n = 0;
    std::uint64_t v = 0;
    if (!vint(h, got, 0, true, v, n) || n > 4) return false;
    id = static_cast<std::uint32_t>(v);
    int m = 0;
    if (!vint(h, got, n, false, size, m)) return false;
    at = n + m;
    return true;
  }
  // An EBML variable-length integer at h[i] (with its length marker for IDs).
  static bool vint(const unsigned char* h, std::size_t got, int i, bool keep, std::uint64_t& v, int& n) {
    if (static_cast<std::size_t>(i) >= got || h[i] == 0) return false;
    n = 1;
    unsigned mask = 0x80;
    while (!(h[i] & mask)) ++n, mask >>= 1;
    if (static_cast<std::size_t>(i + n) > got) return false;
    v = keep ? h[i] : (h[i] & (mask - 1));
    bool ones = v == mask - 1;
    for (int k = 1; k < n; ++k) {
      v = (v << 8) | h[i + k];
      ones = ones && h[i + k] == 0xFF;
    }
    if (!keep && ones) v = kUnknown;
    return true;
  }
  // The timestamp of the cluster in buf_ (its Timestamp child), 0 if none.
  std::int64_t timestamp() const {
    std::size_t i = 6;
    while (i + 2 <= buf_.size()) {
      std::uint64_t id = 0, size = 0;
      int n = 0, m = 0;
      if (!vint(buf_.data(), buf_.size(), static_cast<int>(i), true, id, n) ||
          !vint(buf_.data(), buf_.size(), static_cast<int>(i) + n, false, size, m) || size > 8)
        break;
      i += static_cast<std::size_t>(n + m);
      if (id == 0xE7 && i + size <= buf_.size()) {
        std::int64_t t = 0;
        for (std::uint64_t k = 0; k < size; ++k) t = (t << 8) | buf_[i + k];
        return t;
      }
      i += size;
    }
    return 0;
  }

  std::FILE* f_ = nullptr;
  std::int64_t next_ = 0;  // the next segment child to check
  std::int64_t end_ = 0;   // of the segment
  std::vector<unsigned char> buf_;
};

// ------------------------------------------------------------ FFmpeg's log

// The demuxers of open VideoFiles, and where an error each reported goes.
// An error is noted on the thread that reads the file (FFmpeg logs from
// inside av_read_frame), the one that reads the note.
std::mutex g_watch_mutex;
std::unordered_map<const void*, std::string*> g_watched;
std::atomic<FfmpegLogSink> g_sink{nullptr};

void on_ffmpeg_log(void* avcl, int level, const char* fmt, va_list args) {
  if (level <= AV_LOG_ERROR && avcl && *static_cast<const AVClass* const*>(avcl) == avformat_get_class()) {
    std::lock_guard lock(g_watch_mutex);
    const auto it = g_watched.find(avcl);
    if (it != g_watched.end() && it->second->empty()) {
      char line[256];
      va_list copy;
      va_copy(copy, args);
      const int n = std::vsnprintf(line, sizeof line, fmt, copy);
      va_end(copy);
      std::string text(line, n > 0 ? std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - 1) : 0);
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.')) text.pop_back();
      *it->second = text.empty() ? "an error" : text;
    }
  }
  if (const FfmpegLogSink sink = g_sink.load()) return sink(avcl, level, fmt, args);
  av_log_default_callback(avcl, level, fmt, args);
}

void install_ffmpeg_log() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(&on_ffmpeg_log); });
}

void watch_demuxer(const AVFormatContext* fmt, std::string* error) {
  std::lock_guard lock(g_watch_mutex);
  if (error) g_watched[fmt] = error;
  else g_watched.erase(fmt);
}

}  // namespace

void set_ffmpeg_log_sink(FfmpegLogSink sink) {
  g_sink.store(sink);
  install_ffmpeg_log();
}

kernels::ColorMatrix matrix_of(int av_color_space, int width, int height) noexcept {
  switch (static_cast<AVColorSpace>(av_color_space)) {
    case AVCOL_SPC_BT709: return kernels::ColorMatrix::bt709;
    case AVCOL_SPC_BT470BG:
    case AVCOL_SPC_SMPTE170M:
    case AVCOL_SPC_FCC: return kernels::ColorMatrix::bt601;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL: return kernels::ColorMatrix::bt2020;
    case AVCOL_SPC_SMPTE240M: return kernels::ColorMatrix::smpte240m;
    default: return kernels::default_matrix(width, height);
  }
}

bool is_full_range(int av_color_range, int av_pixel_format) noexcept {
  const auto f = static_cast<AVPixelFormat>(av_pixel_format);
  return av_color_range == AVCOL_RANGE_JPEG || f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P ||
         f == AV_PIX_FMT_YUVJ444P || f == AV_PIX_FMT_YUVJ440P || f == AV_PIX_FMT_YUVJ411P;
}

// -------------------------------------------------------------- PacketFilter

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

// ---------------------------------------------------------------- VideoFrame

VideoFrame::~VideoFrame() { av_frame_free(&f_); }

int VideoFrame::width() const noexcept { return f_ ? f_->width : image_.width; }
int VideoFrame::height() const noexcept { return f_ ? f_->height : image_.height; }

bool VideoFrame::yuv(kernels::YuvImage& out) const noexcept {
  if (!f_) {
    out = image_;
    return true;
  }
  const auto pf = static_cast<AVPixelFormat>(f_->format);
  kernels::YuvFormat f;
  if (!yuv_format_of(pf, f)) return false;
  f.matrix = matrix_of(f_->colorspace, f_->width, f_->height);
  f.range = is_full_range(f_->color_range, f_->format) ? kernels::ColorRange::full : kernels::ColorRange::limited;
  out = {};
  out.width = f_->width;
  out.height = f_->height;
  out.format = f;
  for (int p = 0; p < 3; ++p) {
    if (p > 0 && f.monochrome) break;
    if (p == 2 && f.uv_interleaved) break;
    if (f_->linesize[p] <= 0) return false;  // flipped (negative) pitches are not produced by decoders
    out.plane[p] = f_->data[p];
    out.pitch[p] = static_cast<std::size_t>(f_->linesize[p]);
  }
  return true;
}

void VideoFrame::to_bgr(std::uint8_t* dst, std::size_t pitch) const {
  if (!f_) throw std::logic_error("VideoFrame::to_bgr: the frame is in device memory");
  kernels::YuvImage img;
  if (yuv(img)) return kernels::yuv_to_bgr_ref(img, dst, pitch);
  SwsContext* sws = sws_getContext(f_->width, f_->height, static_cast<AVPixelFormat>(f_->format), f_->width,
                                   f_->height, AV_PIX_FMT_BGR24, SWS_POINT, nullptr, nullptr, nullptr);
  if (!sws)
    throw Error(fmt::format("cannot convert frames of pixel format {} to BGR",
                            av_get_pix_fmt_name(static_cast<AVPixelFormat>(f_->format))));
  std::uint8_t* planes[4] = {dst, nullptr, nullptr, nullptr};
  int pitches[4] = {static_cast<int>(pitch), 0, 0, 0};
  sws_scale(sws, f_->data, f_->linesize, 0, f_->height, planes, pitches);
  sws_freeContext(sws);
}

std::size_t VideoFrame::bytes() const noexcept {
  if (!f_) {
    const kernels::YuvFormat& f = image_.format;
    const std::size_t chroma = f.monochrome ? 0
                               : static_cast<std::size_t>(kernels::chroma_height(f, image_.height)) *
                                     (f.uv_interleaved ? image_.pitch[1] : image_.pitch[1] + image_.pitch[2]);
    return image_.pitch[0] * static_cast<std::size_t>(image_.height) + chroma;
  }
  std::size_t n = 0;
  for (int p = 0; p < AV_NUM_DATA_POINTERS && f_->buf[p]; ++p) n += f_->buf[p]->size;
  return n;
}

// ------------------------------------------------------------- the CPU route

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

// libavcodec with its own frame and slice threads; damage it would conceal
// is reported (AV_EF_EXPLODE, corrupt frames). With a pool, the frames of
// the formats the GPU converts are decoded into its blocks.
class LibavDecoder final : public FrameDecoder {
 public:
  LibavDecoder(const AVStream* st, const AVCodec* codec, int threads, std::shared_ptr<memory::FramePool> pool)
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
      ctx_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
      ctx_->err_recognition |= AV_EF_EXPLODE;  // damage is reported, not concealed (video_file.hpp's policy)
      ctx_->pkt_timebase = st->time_base;
      r = avcodec_open2(ctx_, codec, nullptr);
      if (r < 0) throw Error(fmt::format("cannot start the {} decoder ({})", codec->name, av_error(r)));
    } catch (...) {  // the destructor does not run for a constructor that throws
      release();
      throw;
    }
  }
  ~LibavDecoder() override { release(); }
  int send(const AVPacket* pkt) override { return avcodec_send_packet(ctx_, pkt); }
  int receive(Decoded& out) override {
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
  std::string reason(int code) const override { return fmt::format("the {} decoder failed ({})", codec_, av_error(code)); }
  // The frames decoding at once with frame threading (0 without it).
  std::size_t frame_threads() const noexcept {
    return (ctx_->active_thread_type & FF_THREAD_FRAME) ? static_cast<std::size_t>(std::max(0, ctx_->thread_count)) : 0;
  }

 private:
  void release() noexcept {
    av_frame_free(&frame_);
    avcodec_free_context(&ctx_);
  }
  std::string codec_;
  std::shared_ptr<memory::FramePool> pool_;  // ctx_->opaque points at it
  AVCodecContext* ctx_ = nullptr;
  AVFrame* frame_ = nullptr;
};

}  // namespace

// ----------------------------------------------------------------- VideoFile

struct VideoFile::Impl {
  std::string path;
  VideoInfo info;
  AVFormatContext* fmt = nullptr;
  std::unique_ptr<FrameDecoder> dec;
  AVPacket* pkt = nullptr;
  AVPacket* ahead = nullptr;  // a packet read ahead (after one marked corrupt)
  bool have_ahead = false;
  int stream = -1;
  int device = -1;  // NVDEC's, or -1: libavcodec
  std::string cpu_reason;
  VideoRouter* router = nullptr;
  std::shared_ptr<memory::FramePool> frame_pool;  // libavcodec's frame memory (VideoFileOptions::frames)
  bool ts_cut = false;  // an MPEG-TS file that ends inside a transport packet
  std::int64_t frames = 0;
  // How far into the declared frames the file got: frames returned, or the
  // presentation time of the latest one in frames, whichever says more (AVI
  // files may hold empty "repeat the last frame" chunks that count without
  // being decoded).
  std::int64_t covered = 0;
  std::string error;
  Next done = Next::frame;  // end or broken once the file is over
  bool draining = false;    // the decoder was sent its end (file end or damage)
  bool drained = false;     // and gave its last frame
  // Frames decoded but not yet delivered. With frame threads, libavcodec
  // reports a packet's damage only when its frame is due, after frames
  // decoded from it (B-frames shown before it) may have come out: so that
  // none of those is delivered, `hold` frames (the frame threads) are kept
  // back. Damage the decoder finds then has no place: the file is decoded
  // again from the last frame delivered with one thread, which finds the
  // place (relocate()), so the break does not depend on the threads. NVDEC
  // is held back the same way (kNvdecHold), its damage placed by libavcodec.
  std::deque<Decoded> held;
  std::size_t hold = 0;
  static constexpr std::size_t kNvdecHold = 4;
  const AVCodec* lib_codec = nullptr;  // libavcodec's decoder for the stream
  std::int64_t last_pts = AV_NOPTS_VALUE;  // of the frame delivered last
  // After relocate(): frames decoded again are dropped until the one
  // delivered last has come again (`overlap`), or by count from the start.
  enum class Resync { none, overlap, count } resync = Resync::none;
  std::int64_t skip = 0;  // Resync::count: frames still to drop
  bool relocated = false;
  // Damage found while reading or decoding: the reason, and the presentation
  // time from which frames are not whole (INT64_MIN: no frame drained after
  // it is delivered; the drain still runs so that later calls are clean).
  std::string damage;
  std::int64_t damage_pts = AV_NOPTS_VALUE;
  // An error the demuxer logged while it read (FFmpeg's log callback): it
  // skipped data it could not parse, and frames with it.
  std::string demux_error;
  std::unique_ptr<ClusterCheck> clusters;  // a Matroska file's CRC-32 checks
  // A cluster that failed its check, from its timestamp to its end (a byte
  // offset): its frames wait, so that the decoder can place the damage; if
  // it finds none by the cluster's end, the break is at its start.
  std::int64_t suspect_time = INT64_MAX, suspect_end = -1;
  std::int64_t suspect_begin = -1;  // the file position of its first packet read
  std::int64_t suspect_seq = INT64_MAX;  // the number of its first packet sent
  bool crc_drain = false;  // past the cluster: the decoder drains, its last chance to place the damage
  // The packets sent whose frames have not come out, in decode order
  // (number, presentation time). A frame is delivered only once every frame
  // decoded before it has come out: a frame the decoder finds damaged (a P
  // frame, shown after the B-frames that refer to it) then stops those that
  // were decoded after it (`damage_seq`). A decoder that meets damage may
  // drop a frame decoded before it without a word: the break then comes at
  // the first such frame, so that no frame is skipped silently.
  struct Sent {
    std::int64_t seq, pts;
  };
  std::deque<Sent> pending;
  std::int64_t sent = 0;                 // packets sent
  std::int64_t sent_dts = AV_NOPTS_VALUE;  // the decode time of the last packet sent with one
  std::int64_t damage_seq = INT64_MAX;   // frames decoded after this one are not whole
  // A packet whose frame has not come out this many packets later makes no
  // frame of its own (H.264 reorders at most 16 frames; a second field).
  static constexpr std::int64_t kReorder = 34;

  ~Impl() {
    if (router) router->closed(device, info, frames);
    dec.reset();
    av_packet_free(&pkt);
    av_packet_free(&ahead);
    close_input(fmt);
  }
  // Opens `path` into `into`, its demuxer's errors watched (demux_error).
  int open_input(AVFormatContext*& into) {
    into = avformat_alloc_context();
    if (!into) return AVERROR(ENOMEM);
    watch_demuxer(into, &demux_error);
    const AVFormatContext* was = into;
    const int r = avformat_open_input(&into, path.c_str(), nullptr, nullptr);  // frees it on failure
    if (r < 0) watch_demuxer(was, nullptr);
    return r;
  }
  static void close_input(AVFormatContext*& f) {
    if (f) watch_demuxer(f, nullptr);
    avformat_close_input(&f);
  }

  void open(VideoFileOptions opts);
  Next next(std::shared_ptr<VideoFrame>& out);
  Next deliver(std::shared_ptr<VideoFrame>& out);
  int read_video_packet(AVPacket* into);
  Next finish();
  Next broken(std::string why) {
    error = std::move(why);
    done = Next::broken;
    return done;
  }
  // Damage at packet `pts`: stop reading, drain what the decoder holds, and
  // deliver of it only the frames shown before `pts`. Damage found without
  // its place (a decoder error, a concealed frame) also drops the frames
  // held back (see `hold`): they may have been decoded from it.
  void damaged(std::string why, std::int64_t pts, std::int64_t seq = INT64_MAX) {
    if (damage.empty()) {
      damage = std::move(why);
      damage_pts = pts == AV_NOPTS_VALUE ? INT64_MIN : pts;
      damage_seq = seq;
      std::erase_if(held, [&](const Decoded& d) { return after_damage(d); });
    }
    drain();
  }
  // Sends the decoder its end (once): it puts out what it holds.
  void drain() {
    if (!draining) {
      dec->send(nullptr);
      draining = true;
    }
  }
  // With frame threads or NVDEC (frames held back), the first damage is
  // placed by a one-thread libavcodec decode (relocate()): true when that
  // decode has started instead.
  bool place_with_one_thread() { return hold > 0 && !relocated && damage.empty() && relocate(); }
  // A frame shown at or after the damage, or decoded after a damaged frame.
  bool after_damage(const Decoded& d) const noexcept {
    return !damage.empty() && (damage_pts == INT64_MIN || d.pts == AV_NOPTS_VALUE || d.pts >= damage_pts ||
                               (d.seq >= 0 && d.seq > damage_seq));
  }
  // Damage the decoder found (a rejected packet, a frame with concealed
  // damage at `pts`, decoded `seq`-th): placed by a one-thread decoder when
  // frame threads or NVDEC found it, else as damaged() places it.
  void decoder_damage(std::string why, std::int64_t pts, std::int64_t seq = INT64_MAX) {
    if (place_with_one_thread()) return;
    // Damage before the decoder is back at the frame delivered last: the
    // seek may have landed between keyframes; from the start.
    if (resync == Resync::overlap && damage.empty() && restart(Resync::count)) return;
    damaged(std::move(why), hold > 0 ? INT64_MIN : pts, seq);
  }
  bool relocate();
  bool restart(Resync how);
  // A frame of a cluster that failed its CRC-32 check, or shown after one:
  // it waits for the decoder's verdict on the cluster.
  bool suspect(const Decoded& d) const noexcept {
    return suspect_end >= 0 && (d.pts == AV_NOPTS_VALUE || d.pts >= suspect_time || (d.seq >= 0 && d.seq >= suspect_seq));
  }
  // Every frame decoded before `d` has come out (so none of them can still
  // turn out damaged).
  bool decoded_before_out(const Decoded& d) const noexcept {
    return d.seq < 0 || pending.empty() || pending.front().seq > d.seq;
  }
  // True for a frame decoded again after relocate() that was delivered already.
  bool seen_before(const Decoded& d);
};

// Decodes the file again with one thread from the keyframe before the frame
// delivered last (from the start when the container cannot seek there), so
// that damage frame threads found is placed where one thread finds it: the
// first packet the decoder rejects, or the first frame it flags.
bool VideoFile::Impl::relocate() {
  relocated = true;
  if (frames > 0 && last_pts != AV_NOPTS_VALUE && restart(Resync::overlap)) return true;
  return restart(Resync::count);
}

bool VideoFile::Impl::restart(Resync how) {
  if (how == Resync::overlap) {
    if (av_seek_frame(fmt, stream, last_pts, AVSEEK_FLAG_BACKWARD) < 0) return false;
  } else {  // from the start: opened again (a seek to the start is not exact in every container)
    AVFormatContext* again = nullptr;
    if (open_input(again) < 0) return false;
    if (avformat_find_stream_info(again, nullptr) < 0 || static_cast<int>(again->nb_streams) <= stream ||
        again->streams[stream]->codecpar->codec_id != fmt->streams[stream]->codecpar->codec_id) {
      close_input(again);
      return false;
    }
    close_input(fmt);
    fmt = again;
  }
  try {
    dec = std::make_unique<LibavDecoder>(fmt->streams[stream], lib_codec, 1, frame_pool);
  } catch (const std::exception&) {
    return false;
  }
  hold = 0;
  held.clear();
  pending.clear();
  sent_dts = AV_NOPTS_VALUE;
  demux_error.clear();
  crc_drain = false;
  draining = drained = false;
  have_ahead = false;
  av_packet_unref(ahead);
  resync = how;
  skip = frames;
  return true;
}

bool VideoFile::Impl::seen_before(const Decoded& d) {
  switch (resync) {
    case Resync::none: return false;
    case Resync::count:
      if (skip == 0) {
        resync = Resync::none;
        return false;
      }
      --skip;
      return true;
    case Resync::overlap:
      if (d.pts != AV_NOPTS_VALUE && d.pts < last_pts) return true;
      if (d.pts == last_pts) {  // the frame delivered last: in step again
        resync = Resync::none;
        return true;
      }
      // The seek landed past it: from the start, by count.
      if (!restart(Resync::count)) damaged("the decoder lost its place in the file", INT64_MIN);
      return true;
  }
  return false;
}

void VideoFile::Impl::open(VideoFileOptions opts) {
  auto fail = [&](const std::string& why) { throw Error(fmt::format("'{}': {}", path, why)); };
  install_ffmpeg_log();
  int r = open_input(fmt);
  if (r < 0) fail("cannot open video (" + av_error(r) + ")");
  r = avformat_find_stream_info(fmt, nullptr);
  if (r < 0) fail("cannot read the stream information (" + av_error(r) + ")");
  const AVCodec* codec = nullptr;
  stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (stream == AVERROR_STREAM_NOT_FOUND) fail("no video stream in the file");
  if (stream == AVERROR_DECODER_NOT_FOUND || !codec) {
    const AVCodecParameters* par = fmt->streams[std::max(stream, 0)]->codecpar;
    fail(fmt::format("no decoder for its video codec ({})", par ? avcodec_get_name(par->codec_id) : "unknown"));
  }
  if (stream < 0) fail("no video stream (" + av_error(stream) + ")");
  AVStream* st = fmt->streams[stream];
  pkt = av_packet_alloc();
  ahead = av_packet_alloc();
  if (!pkt || !ahead) fail("out of memory for the decoder");
  info.codec = avcodec_get_name(st->codecpar->codec_id);
  // An MPEG-TS file is a whole number of transport packets (188 bytes, 192
  // with timestamps, 204 with error correction): one that is not was cut,
  // even where the cut fell between frames.
  if (std::string_view(fmt->iformat->name) == "mpegts" && fmt->pb) {
    const std::int64_t size = avio_size(fmt->pb);
    ts_cut = size > 0 && size % 188 != 0 && size % 192 != 0 && size % 204 != 0;
  }
  info.container = fmt->iformat ? fmt->iformat->name : "";
  if (info.container.rfind("matroska", 0) == 0) clusters = std::make_unique<ClusterCheck>(path);
  const auto pf = static_cast<AVPixelFormat>(st->codecpar->format);
  info.pixel_format = pf == AV_PIX_FMT_NONE ? "" : av_get_pix_fmt_name(pf);
  info.width = st->codecpar->width;
  info.height = st->codecpar->height;
  info.profile = st->codecpar->profile;
  if (const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pf)) {
    info.bit_depth = d->comp[0].depth;
    info.chroma_shift_x = d->log2_chroma_w;
    info.chroma_shift_y = d->log2_chroma_h;
    info.monochrome = d->nb_components <= 2;
  }
  const AVRational rate = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
  info.fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0;
  if (st->nb_frames > 0) {
    info.declared_frames = st->nb_frames;
    info.declared_exact = std::strstr(info.container.c_str(), "mp4") != nullptr;
  } else if (info.fps > 0) {
    double seconds = -1;
    if (st->duration > 0 && st->duration != AV_NOPTS_VALUE) seconds = st->duration * av_q2d(st->time_base);
    else if (fmt->duration > 0) seconds = static_cast<double>(fmt->duration) / AV_TIME_BASE;
    if (seconds > 0) info.declared_frames = std::llround(seconds * info.fps);
  }
  // FFmpeg 5.1 keeps the display matrix as stream side data (later versions
  // in codecpar's coded side data as well).
  if (const auto* m = reinterpret_cast<const std::int32_t*>(
          av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, nullptr))) {
    const double ccw = av_display_rotation_get(m);  // counter-clockwise degrees
    if (!std::isnan(ccw)) {
      const long cw = std::lround(-ccw / 90.0) * 90;
      info.rotation = static_cast<int>(((cw % 360) + 360) % 360);
    }
    // A negative determinant mirrors the picture.
    info.flip = static_cast<double>(m[0]) * m[4] - static_cast<double>(m[1]) * m[3] < 0;
  }

  // The route: NVDEC when the router sends it there and its decoder starts,
  // else libavcodec.
  router = opts.router;
  frame_pool = opts.frames;
  if (router) {
    VideoRouter::Choice c = router->choose(info);
    cpu_reason = std::move(c.cpu_reason);
    if (c.device >= 0) {
      try {
        dec = make_nvdec_decoder(st, info, c.device);
        device = c.device;
      } catch (const std::exception& e) {
        cpu_reason = fmt::format("NVDEC could not start ({})", e.what());
        router->fell_back(c.device, info, cpu_reason);
      }
    }
  }
  lib_codec = codec;
  if (dec) {
    // NVDEC finds some damage a few frames after libavcodec would (it
    // conceals what libavcodec rejects, and flags a later picture): frames
    // are held back as for frame threads, and damage NVDEC finds is placed
    // by a one-thread libavcodec decode (relocate()), so that both routes
    // break at the same frame.
    hold = kNvdecHold;
    return;
  }
  try {
    auto lib = std::make_unique<LibavDecoder>(st, codec, opts.threads, opts.frames);
    hold = lib->frame_threads();
    dec = std::move(lib);
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

VideoFile::Next VideoFile::Impl::finish() {
  if (!damage.empty()) return broken(fmt::format("damaged data at frame {}: {}", frames, damage));
  const std::int64_t declared = info.declared_frames;
  const std::int64_t tolerance = info.declared_exact ? 0 : std::max<std::int64_t>(2, declared / 100);
  if (frames == 0) return broken("no frame could be decoded");
  if (ts_cut)
    return broken(fmt::format("the file ends at frame {} inside a transport stream packet (truncated)", frames));
  if (declared > 0 && std::max(frames, covered) < declared - tolerance)
    return broken(fmt::format("the file ends at frame {} of {} its container declares (truncated)", frames,
                              declared));
  done = Next::end;
  return done;
}

VideoFile::Next VideoFile::Impl::deliver(std::shared_ptr<VideoFrame>& out) {
  Decoded d = std::move(held.front());
  held.pop_front();
  if (d.pts != AV_NOPTS_VALUE && info.fps > 0) {
    const AVStream* st = fmt->streams[stream];
    const std::int64_t start = st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time;
    const double at = static_cast<double>(d.pts - start) * av_q2d(st->time_base) * info.fps;
    covered = std::max(covered, static_cast<std::int64_t>(std::llround(at)) + 1);
  }
  covered = std::max(covered, frames + 1);
  last_pts = d.pts;
  out = std::move(d.frame);
  ++frames;
  if (router) router->delivered(device);
  return Next::frame;
}

VideoFile::Next VideoFile::Impl::next(std::shared_ptr<VideoFrame>& out) {
  if (done != Next::frame) return done;
  for (;;) {
    // Once damage is found, frames wait for the drain: it tells which are missing.
    if (!held.empty() && (drained || (held.size() > hold && damage.empty() && decoded_before_out(held.front()) &&
                                      !suspect(held.front()))))
      return deliver(out);
    if (drained) return finish();
    Decoded d;
    int r = dec->receive(d);
    if (r == 0) {
      const std::int64_t pts = d.pts;
      if (pts != AV_NOPTS_VALUE) {
        const auto it = std::find_if(pending.begin(), pending.end(), [&](const Sent& p) { return p.pts == pts; });
        if (it != pending.end()) {
          d.seq = it->seq;
          pending.erase(it);
        }
      }
      // Shown at or after the damage: the drain goes on, nothing more is delivered.
      if (after_damage(d)) continue;
      if (!d.damage.empty()) {
        decoder_damage(std::move(d.damage), pts == AV_NOPTS_VALUE ? INT64_MIN : pts, d.seq < 0 ? INT64_MAX : d.seq);
        continue;
      }
      if (seen_before(d)) continue;
      held.push_back(std::move(d));
      continue;
    }
    if (r == AVERROR_EOF) {
      drained = true;
      // Frame threads lose some of libavcodec's concealment flags, and NVDEC
      // sees damage differently: one libavcodec thread decodes the cluster
      // again before it is judged unseen damage.
      if (crc_drain && place_with_one_thread()) continue;
      if (crc_drain && damage.empty()) {
        // The decoder saw nothing wrong in the cluster: no frame decoded
        // from it is delivered, nor any shown after one.
        const double at = static_cast<double>(suspect_time) * av_q2d(fmt->streams[stream]->time_base);
        damaged(fmt::format("the Matroska cluster from {:.3f} s fails its CRC-32 check (damage the decoder did "
                            "not see)", at),
                suspect_time, suspect_seq - 1);
      }
      // A frame sent before the damage that never came out: the break is there.
      if (!damage.empty() && damage_pts != INT64_MIN) {
        for (const Sent& p : pending) damage_pts = std::min(damage_pts, p.pts);
        std::erase_if(held, [&](const Decoded& h) { return after_damage(h); });
      }
      continue;
    }
    if (r != AVERROR(EAGAIN)) {
      // Frame threading reports a packet's damage when its frame is due.
      decoder_damage(dec->reason(r), INT64_MIN);
      continue;
    }
    if (draining) return finish();  // cannot happen: a draining decoder ends with EOF
    r = read_video_packet(pkt);
    if (!demux_error.empty() && damage.empty()) {
      // The demuxer skipped data it could not parse, frames with it. Each
      // skipped frame comes after every packet sent in decode order, and no
      // frame is shown before it is decoded: the frames shown up to the last
      // packet's decode time are whole, those after it may have a skipped
      // one before them. The rule reads the stream alone, so every decoder
      // and thread count breaks at the same frame. Without decode times (the
      // first packets of some files), the frames the decoder has put out.
      if (r >= 0) av_packet_unref(pkt);
      std::string why = fmt::format("the demuxer skipped damaged data ({})", demux_error);
      if (sent_dts != AV_NOPTS_VALUE) {
        damaged(std::move(why), sent_dts + 1);
      } else {
        damage = std::move(why);
        damage_pts = INT64_MIN;  // the frames already put out (held) are delivered
        drain();
      }
      continue;
    }
    if (r >= 0 && clusters && pkt->pos >= 0 && suspect_end < 0 &&
        !clusters->upto(pkt->pos, suspect_time, suspect_end)) {
      clusters.reset();  // one damaged cluster is enough
      suspect_seq = sent;
      suspect_begin = pkt->pos;
    }
    if (suspect_end >= 0 && damage.empty() && (r < 0 || pkt->pos >= suspect_end)) {
      // Past the damaged cluster: the decoder drains (frame threads report
      // damage frames later); if it finds none, the break is at the cluster.
      if (r >= 0) av_packet_unref(pkt);
      crc_drain = true;
      drain();
      continue;
    }
    // The cluster's frames shown first (open GOPs); not those read again
    // before it after a relocation.
    if (r >= 0 && suspect_end >= 0 && pkt->pts != AV_NOPTS_VALUE && pkt->pos >= suspect_begin)
      suspect_time = std::min(suspect_time, pkt->pts);
    if (r == AVERROR_EOF) {
      drain();
      continue;
    }
    if (r < 0) {
      damaged(fmt::format("the file cannot be read further ({})", av_error(r)), AV_NOPTS_VALUE);
      continue;
    }
    const std::int64_t pts = pkt->pts;
    if ((pkt->flags & AV_PKT_FLAG_CORRUPT) || ts_cut) {
      // A packet the container marks corrupt: the last of the file is cut
      // short (the file ends inside it: truncated); one inside the file (an
      // MPEG-TS continuity jump where two streams were joined) goes to the
      // decoder, which judges its data, so a joined stream plays on. An
      // MPEG-TS file that ends inside a transport packet has its last packet
      // cut (FFmpeg does not mark it): the same rule, whatever the decoder
      // makes of the data left.
      r = read_video_packet(ahead);
      have_ahead = r >= 0;
      if (r == AVERROR_EOF) {
        av_packet_unref(pkt);
        damaged("the file ends inside a frame's data (truncated)", pts);
        continue;
      }
    }
    if (pts != AV_NOPTS_VALUE) pending.push_back({sent, pts});
    if (pkt->dts != AV_NOPTS_VALUE) sent_dts = pkt->dts;
    while (!pending.empty() && pending.front().seq < sent - kReorder) pending.pop_front();
    ++sent;
    r = dec->send(pkt);
    av_packet_unref(pkt);
    // With frame threads the error is an earlier packet's: its place is not known.
    if (r < 0 && r != AVERROR(EAGAIN)) decoder_damage(dec->reason(r), pts);
  }
}

// The next packet of the video stream (the one read ahead first, if any);
// av_read_frame's result.
int VideoFile::Impl::read_video_packet(AVPacket* into) {
  if (have_ahead && into != ahead) {
    have_ahead = false;
    av_packet_move_ref(into, ahead);
    return 0;
  }
  for (;;) {
    const int r = av_read_frame(fmt, into);
    if (r < 0) return r;
    if (into->stream_index == stream) return 0;
    av_packet_unref(into);
  }
}

VideoFile::VideoFile(const std::string& path, VideoFileOptions opts) : d_(std::make_unique<Impl>()) {
  d_->path = path;
  d_->open(opts);
}

VideoFile::~VideoFile() = default;

const VideoInfo& VideoFile::info() const noexcept { return d_->info; }
int VideoFile::device() const noexcept { return d_->device; }
const std::string& VideoFile::cpu_reason() const noexcept { return d_->cpu_reason; }
VideoFile::Next VideoFile::next(std::shared_ptr<VideoFrame>& out) { return d_->next(out); }
std::int64_t VideoFile::frames() const noexcept { return d_->frames; }
const std::string& VideoFile::error() const noexcept { return d_->error; }

std::string libav_versions() {
  const auto v = [](unsigned x) { return fmt::format("{}.{}.{}", x >> 16, (x >> 8) & 0xff, x & 0xff); };
  return fmt::format("libavformat {}, libavcodec {}, libavutil {}, libswscale {}", v(avformat_version()),
                     v(avcodec_version()), v(avutil_version()), v(swscale_version()));
}

}  // namespace imgpipe::codecs
