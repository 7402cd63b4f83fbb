#include "codecs/video/demuxer.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
}

#include "imgpipe/error.hpp"
#include "codecs/video/ffmpeg_log.hpp"
#include "codecs/video/av_error.hpp"

namespace imgpipe::codecs {

namespace {

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

// ------------------------------------------------------------------ Demuxer

Demuxer::Demuxer(std::string path) : path_(std::move(path)) {
  auto fail = [&](const std::string& why) {
    release();  // the destructor does not run for a constructor that throws
    throw Error(fmt::format("'{}': {}", path_, why));
  };
  install_ffmpeg_log();
  int r = open_input(fmt_);
  if (r < 0) fail("cannot open video (" + av_error(r) + ")");
  r = avformat_find_stream_info(fmt_, nullptr);
  if (r < 0) fail("cannot read the stream information (" + av_error(r) + ")");
  stream_ = av_find_best_stream(fmt_, AVMEDIA_TYPE_VIDEO, -1, -1, &codec_, 0);
  if (stream_ == AVERROR_STREAM_NOT_FOUND) fail("no video stream in the file");
  if (stream_ == AVERROR_DECODER_NOT_FOUND || !codec_) {
    const AVCodecParameters* par = fmt_->streams[std::max(stream_, 0)]->codecpar;
    fail(fmt::format("no decoder for its video codec ({})", par ? avcodec_get_name(par->codec_id) : "unknown"));
  }
  if (stream_ < 0) fail("no video stream (" + av_error(stream_) + ")");
  ahead_ = av_packet_alloc();
  if (!ahead_) fail("out of memory for the decoder");
}

Demuxer::~Demuxer() { release(); }

void Demuxer::release() noexcept {
  av_packet_free(&ahead_);
  close_input(fmt_);
}

int Demuxer::open_input(AVFormatContext*& into) {
  into = avformat_alloc_context();
  if (!into) return AVERROR(ENOMEM);
  watch_demuxer(into, &skipped_);
  const AVFormatContext* was = into;
  const int r = avformat_open_input(&into, path_.c_str(), nullptr, nullptr);  // frees it on failure
  if (r < 0) watch_demuxer(was, nullptr);
  return r;
}

void Demuxer::close_input(AVFormatContext*& f) {
  if (f) watch_demuxer(f, nullptr);
  avformat_close_input(&f);
}

const AVStream* Demuxer::stream() const noexcept { return fmt_->streams[stream_]; }

VideoInfo Demuxer::info() const {
  VideoInfo info;
  const AVStream* st = stream();
  info.codec = avcodec_get_name(st->codecpar->codec_id);
  info.container = fmt_->iformat ? fmt_->iformat->name : "";
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
    info.rgb_coded = (d->flags & AV_PIX_FMT_FLAG_RGB) != 0;
  }
  info.rgb_coded = info.rgb_coded || st->codecpar->color_space == AVCOL_SPC_RGB;
  const AVRational rate = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
  info.fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0;
  info.time_base = st->time_base.num > 0 && st->time_base.den > 0 ? av_q2d(st->time_base) : 0;
  info.start_pts = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
  if (st->nb_frames > 0) {
    info.declared_frames = st->nb_frames;
    info.declared_exact = std::strstr(info.container.c_str(), "mp4") != nullptr;
  } else if (info.fps > 0) {
    double seconds = -1;
    if (st->duration > 0 && st->duration != AV_NOPTS_VALUE) seconds = st->duration * av_q2d(st->time_base);
    else if (fmt_->duration > 0) seconds = static_cast<double>(fmt_->duration) / AV_TIME_BASE;
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
  return info;
}

std::int64_t Demuxer::file_size() const noexcept { return fmt_->pb ? avio_size(fmt_->pb) : -1; }

int Demuxer::read(AVPacket* into) {
  if (have_ahead_) {
    have_ahead_ = false;
    av_packet_move_ref(into, ahead_);
    return 0;
  }
  return read_stream(into);
}

int Demuxer::read_stream(AVPacket* into) {
  for (;;) {
    const int r = av_read_frame(fmt_, into);
    if (r < 0) return r;
    if (into->stream_index == stream_) return 0;
    av_packet_unref(into);
  }
}

int Demuxer::peek() {
  const int r = read_stream(ahead_);
  have_ahead_ = r >= 0;
  return r;
}

void Demuxer::drop_peeked() noexcept {
  have_ahead_ = false;
  av_packet_unref(ahead_);
}

bool Demuxer::seek_before(std::int64_t pts) {
  return av_seek_frame(fmt_, stream_, pts, AVSEEK_FLAG_BACKWARD) >= 0;
}

bool Demuxer::reopen() {
  AVFormatContext* again = nullptr;
  if (open_input(again) < 0) return false;
  if (avformat_find_stream_info(again, nullptr) < 0 || static_cast<int>(again->nb_streams) <= stream_ ||
      again->streams[stream_]->codecpar->codec_id != fmt_->streams[stream_]->codecpar->codec_id) {
    close_input(again);
    return false;
  }
  close_input(fmt_);
  fmt_ = again;
  return true;
}

double Demuxer::seconds(std::int64_t ticks) const noexcept {
  return static_cast<double>(ticks) * av_q2d(stream()->time_base);
}

std::int64_t Demuxer::start_time() const noexcept {
  const AVStream* st = stream();
  return st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time;
}

}  // namespace imgpipe::codecs
