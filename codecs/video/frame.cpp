#include "codecs/video/frame.hpp"

#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include "imgpipe/error.hpp"

namespace imgpipe::codecs {

bool yuv_format_of(int av_pixel_format, kernels::YuvFormat& f) noexcept {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(av_pixel_format));
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

// ---------------------------------------------------------------- VideoFrame

VideoFrame::~VideoFrame() { av_frame_free(&f_); }

int VideoFrame::width() const noexcept { return f_ ? f_->width : image_.width; }
int VideoFrame::height() const noexcept { return f_ ? f_->height : image_.height; }

bool VideoFrame::yuv(kernels::YuvImage& out) const noexcept {
  if (!f_) {
    out = image_;
    return true;
  }
  kernels::YuvFormat f;
  if (!yuv_format_of(f_->format, f)) return false;
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


}  // namespace imgpipe::codecs
