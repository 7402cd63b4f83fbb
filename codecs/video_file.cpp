#include "video_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include "imgpipe/error.hpp"

namespace imgpipe::codecs {

namespace {

std::string av_error(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

kernels::ColorMatrix matrix_of(AVColorSpace cs, int width, int height) {
  switch (cs) {
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

// The yuvj formats are full-range yuv by definition (JPEG-style MJPEG).
bool is_yuvj(AVPixelFormat f) {
  return f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ444P ||
         f == AV_PIX_FMT_YUVJ440P || f == AV_PIX_FMT_YUVJ411P;
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

}  // namespace

// ---------------------------------------------------------------- VideoFrame

VideoFrame::~VideoFrame() { av_frame_free(&f_); }

int VideoFrame::width() const noexcept { return f_->width; }
int VideoFrame::height() const noexcept { return f_->height; }

bool VideoFrame::yuv(kernels::YuvImage& out) const noexcept {
  const auto pf = static_cast<AVPixelFormat>(f_->format);
  kernels::YuvFormat f;
  if (!yuv_format_of(pf, f)) return false;
  f.matrix = matrix_of(f_->colorspace, f_->width, f_->height);
  f.range = f_->color_range == AVCOL_RANGE_JPEG || is_yuvj(pf) ? kernels::ColorRange::full
                                                                : kernels::ColorRange::limited;
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
  std::size_t n = 0;
  for (int p = 0; p < AV_NUM_DATA_POINTERS && f_->buf[p]; ++p) n += f_->buf[p]->size;
  return n;
}

// ----------------------------------------------------------------- VideoFile

struct VideoFile::Impl {
  std::string path;
  VideoInfo info;
  AVFormatContext* fmt = nullptr;
  AVCodecContext* ctx = nullptr;
  AVPacket* pkt = nullptr;
  AVPacket* ahead = nullptr;  // a packet read ahead (after one marked corrupt)
  bool have_ahead = false;
  AVFrame* frame = nullptr;
  int stream = -1;
  std::int64_t frames = 0;
  // How far into the declared frames the file got: frames returned, or the
  // presentation time of the latest one in frames, whichever says more (AVI
  // files may hold empty "repeat the last frame" chunks that count without
  // being decoded).
  std::int64_t covered = 0;
  std::string error;
  Next done = Next::frame;  // end or broken once the file is over
  bool draining = false;    // the decoder was sent its end (file end or damage)
  // Damage found while reading or decoding: the reason, and the presentation
  // time from which frames are not whole (INT64_MIN: no frame drained after
  // it is delivered; the drain still runs so that later calls are clean).
  std::string damage;
  std::int64_t damage_pts = AV_NOPTS_VALUE;

  ~Impl() {
    av_frame_free(&frame);
    av_packet_free(&pkt);
    av_packet_free(&ahead);
    avcodec_free_context(&ctx);
    avformat_close_input(&fmt);
  }

  void open(VideoFileOptions opts);
  Next next(std::shared_ptr<VideoFrame>& out);
  int read_video_packet(AVPacket* into);
  Next finish();
  Next broken(std::string why) {
    error = std::move(why);
    done = Next::broken;
    return done;
  }
  // Damage at packet `pts`: stop reading, drain what the decoder holds, and
  // deliver of it only the frames shown before `pts`.
  void damaged(std::string why, std::int64_t pts) {
    if (damage.empty()) {
      damage = std::move(why);
      damage_pts = pts == AV_NOPTS_VALUE ? INT64_MIN : pts;
    }
    if (!draining) {
      avcodec_send_packet(ctx, nullptr);
      draining = true;
    }
  }
};

void VideoFile::Impl::open(VideoFileOptions opts) {
  auto fail = [&](const std::string& why) { throw Error(fmt::format("'{}': {}", path, why)); };
  int r = avformat_open_input(&fmt, path.c_str(), nullptr, nullptr);
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
  ctx = avcodec_alloc_context3(codec);
  if (!ctx) fail("out of memory for the decoder");
  r = avcodec_parameters_to_context(ctx, st->codecpar);
  if (r < 0) fail("bad codec parameters (" + av_error(r) + ")");
  ctx->thread_count = std::max(0, opts.threads);
  ctx->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  ctx->err_recognition |= AV_EF_EXPLODE;  // damage is reported, not concealed (the header's policy)
  ctx->pkt_timebase = st->time_base;
  r = avcodec_open2(ctx, codec, nullptr);
  if (r < 0) fail(fmt::format("cannot start the {} decoder ({})", codec->name, av_error(r)));
  pkt = av_packet_alloc();
  ahead = av_packet_alloc();
  frame = av_frame_alloc();
  if (!pkt || !ahead || !frame) fail("out of memory for the decoder");

  info.codec = codec->name;
  info.container = fmt->iformat ? fmt->iformat->name : "";
  const auto pf = static_cast<AVPixelFormat>(st->codecpar->format);
  info.pixel_format = pf == AV_PIX_FMT_NONE ? "" : av_get_pix_fmt_name(pf);
  info.width = st->codecpar->width;
  info.height = st->codecpar->height;
  info.profile = st->codecpar->profile;
  if (const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pf)) {
    info.bit_depth = d->comp[0].depth;
    info.chroma_shift_x = d->log2_chroma_w;
    info.chroma_shift_y = d->log2_chroma_h;
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
}

VideoFile::Next VideoFile::Impl::finish() {
  if (!damage.empty()) return broken(fmt::format("damaged data at frame {}: {}", frames, damage));
  const std::int64_t declared = info.declared_frames;
  const std::int64_t tolerance = info.declared_exact ? 0 : std::max<std::int64_t>(2, declared / 100);
  if (frames == 0) return broken("no frame could be decoded");
  // An MPEG-TS file is a whole number of transport packets (188 bytes, 192
  // with timestamps, 204 with error correction): one that is not was cut,
  // even where the cut fell between frames.
  if (info.container == "mpegts" && fmt->pb) {
    const std::int64_t size = avio_size(fmt->pb);
    if (size > 0 && size % 188 != 0 && size % 192 != 0 && size % 204 != 0)
      return broken(fmt::format("the file ends at frame {} inside a transport stream packet (truncated)", frames));
  }
  if (declared > 0 && std::max(frames, covered) < declared - tolerance)
    return broken(fmt::format("the file ends at frame {} of {} its container declares (truncated)", frames,
                              declared));
  done = Next::end;
  return done;
}

VideoFile::Next VideoFile::Impl::next(std::shared_ptr<VideoFrame>& out) {
  if (done != Next::frame) return done;
  for (;;) {
    int r = avcodec_receive_frame(ctx, frame);
    if (r == 0) {
      const std::int64_t pts = frame->best_effort_timestamp;
      if (!damage.empty() &&
          (damage_pts == INT64_MIN || pts == AV_NOPTS_VALUE || pts >= damage_pts)) {
        av_frame_unref(frame);  // shown at or after the damage: the drain goes on, nothing more is delivered
        continue;
      }
      if ((frame->flags & AV_FRAME_FLAG_CORRUPT) || frame->decode_error_flags) {
        av_frame_unref(frame);
        damaged(fmt::format("the decoder concealed damage in it (FFmpeg decode error flags {:#x})",
                            static_cast<unsigned>(frame->decode_error_flags)),
                INT64_MIN);
        continue;
      }
      if (pts != AV_NOPTS_VALUE && info.fps > 0) {
        const AVStream* st = fmt->streams[stream];
        const std::int64_t start = st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time;
        const double at = static_cast<double>(pts - start) * av_q2d(st->time_base) * info.fps;
        covered = std::max(covered, static_cast<std::int64_t>(std::llround(at)) + 1);
      }
      covered = std::max(covered, frames + 1);
      AVFrame* ref = av_frame_alloc();
      if (!ref) return broken("out of memory");
      av_frame_move_ref(ref, frame);
      out = std::make_shared<VideoFrame>(ref);
      ++frames;
      return Next::frame;
    }
    if (r == AVERROR_EOF) return finish();
    if (r != AVERROR(EAGAIN)) {
      // Frame threading reports a packet's damage when its frame is due.
      damaged(fmt::format("the {} decoder failed ({})", info.codec, av_error(r)), INT64_MIN);
      continue;
    }
    if (draining) return finish();  // cannot happen: a draining decoder ends with EOF
    r = read_video_packet(pkt);
    if (r == AVERROR_EOF) {
      avcodec_send_packet(ctx, nullptr);
      draining = true;
      continue;
    }
    if (r < 0) {
      damaged(fmt::format("the file cannot be read further ({})", av_error(r)), AV_NOPTS_VALUE);
      continue;
    }
    const std::int64_t pts = pkt->pts;
    if (pkt->flags & AV_PKT_FLAG_CORRUPT) {
      // A packet the container marks corrupt: the last of the file is cut
      // short (the file ends inside it: truncated); one inside the file (an
      // MPEG-TS continuity jump where two streams were joined) goes to the
      // decoder, which judges its data, so a joined stream plays on.
      r = read_video_packet(ahead);
      have_ahead = r >= 0;
      if (r == AVERROR_EOF) {
        av_packet_unref(pkt);
        damaged("the file ends inside a frame's data (truncated)", pts);
        continue;
      }
    }
    r = avcodec_send_packet(ctx, pkt);
    av_packet_unref(pkt);
    if (r < 0 && r != AVERROR(EAGAIN))
      damaged(fmt::format("the {} decoder rejected a packet ({})", info.codec, av_error(r)), pts);
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
VideoFile::Next VideoFile::next(std::shared_ptr<VideoFrame>& out) { return d_->next(out); }
std::int64_t VideoFile::frames() const noexcept { return d_->frames; }
const std::string& VideoFile::error() const noexcept { return d_->error; }

std::string libav_versions() {
  const auto v = [](unsigned x) { return fmt::format("{}.{}.{}", x >> 16, (x >> 8) & 0xff, x & 0xff); };
  return fmt::format("libavformat {}, libavcodec {}, libavutil {}, libswscale {}", v(avformat_version()),
                     v(avcodec_version()), v(avutil_version()), v(swscale_version()));
}

}  // namespace imgpipe::codecs
