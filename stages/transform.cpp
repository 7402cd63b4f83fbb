#include "transform.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <opencv2/imgproc.hpp>

#include <fmt/format.h>

#include "geometry.hpp"
#include "kernels/yuv_fused.hpp"

namespace imgpipe::stages {

namespace {
int cv_interpolation(Interpolation i) {
  switch (i) {
    case Interpolation::nearest: return cv::INTER_NEAREST;
    case Interpolation::area: return cv::INTER_AREA;
    case Interpolation::cubic: return cv::INTER_CUBIC;
    default: return cv::INTER_LINEAR;
  }
}
}  // namespace

Transform::Transform(const TransformConfig& cfg, bool normalize_on_cpu, bool resize_on_gpu,
                     std::size_t frame_budget, std::uint64_t epoch)
    : Stage("transform", true), cfg_(cfg), on_cpu_(normalize_on_cpu && !resize_on_gpu), resize_on_gpu_(resize_on_gpu),
      frame_budget_(std::max(frame_budget, static_cast<std::size_t>(cfg.resize.width) * cfg.resize.height * 3)),
      epoch_(epoch) {}

std::size_t Transform::frame_bytes() const noexcept {
  const std::size_t pixels = static_cast<std::size_t>(cfg_.resize.width) * cfg_.resize.height * 3;
  if (resize_on_gpu_) return frame_budget_;
  return on_cpu_ ? pixels * dtype_size(cfg_.dtype) : pixels;
}

kernels::NormalizeParams Transform::normalize_params() const noexcept {
  kernels::NormalizeParams p;
  p.batch = 1;
  p.height = cfg_.resize.height;
  p.width = cfg_.resize.width;
  p.channels = 3;
  p.layout = cfg_.layout;
  p.dtype = cfg_.dtype;
  p.swap_rb = cfg_.swap_rb;
  p.scale = cfg_.normalize.scale;
  // Config mean/std are in output channel order (R, G, B when swapping).
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = cfg_.normalize.mean[c];
    p.std[c] = cfg_.normalize.std[c];
  }
  return p;
}

void Transform::resize(const cv::Mat& in, cv::Mat& out, cv::Mat& scratch, const Augment* augment) const {
  const int W = cfg_.resize.width, H = cfg_.resize.height;
  const int interp = cv_interpolation(cfg_.resize.interpolation);
  // A boxed resize (random_crop, center_crop with short_side): the box as
  // the image (cv::resize reads nothing outside a ROI), stretched.
  const ResizeMode mode = cfg_.resize.boxed() ? ResizeMode::random_crop : cfg_.resize.mode;
  switch (mode) {
    case ResizeMode::random_crop: {
      const cv::Mat box = augment ? in(cv::Rect(augment->x, augment->y, augment->width, augment->height)) : in;
      if (box.cols == W && box.rows == H) box.copyTo(out);
      else cv::resize(box, out, cv::Size(W, H), 0, 0, interp);
      break;
    }
    case ResizeMode::stretch:
      if (in.cols == W && in.rows == H) in.copyTo(out);
      else cv::resize(in, out, cv::Size(W, H), 0, 0, interp);
      break;
    case ResizeMode::letterbox: {
      out.create(H, W, CV_8UC3);
      const double s = std::min(static_cast<double>(W) / in.cols, static_cast<double>(H) / in.rows);
      const int nw = std::clamp(static_cast<int>(std::lround(in.cols * s)), 1, W);
      const int nh = std::clamp(static_cast<int>(std::lround(in.rows * s)), 1, H);
      const int x0 = (W - nw) / 2, y0 = (H - nh) / 2;
      const cv::Scalar pad = cv::Scalar::all(cfg_.resize.pad_value);
      // Pad only the borders: the image area is written by resize.
      if (y0 > 0) out.rowRange(0, y0).setTo(pad);
      if (y0 + nh < H) out.rowRange(y0 + nh, H).setTo(pad);
      if (x0 > 0) out(cv::Rect(0, y0, x0, nh)).setTo(pad);
      if (x0 + nw < W) out(cv::Rect(x0 + nw, y0, W - x0 - nw, nh)).setTo(pad);
      cv::Mat roi = out(cv::Rect(x0, y0, nw, nh));
      if (nw == in.cols && nh == in.rows) in.copyTo(roi);
      else cv::resize(in, roi, roi.size(), 0, 0, interp);
      break;
    }
    case ResizeMode::center_crop: {
      // As cv::dnn::blobFromImage(crop=true): scale so the image covers the
      // target, then cut the centre.
      const float f = std::max(static_cast<float>(W) / in.cols, static_cast<float>(H) / in.rows);
      cv::resize(in, scratch, cv::Size(), f, f, interp);
      const cv::Rect crop(static_cast<int>(0.5 * (scratch.cols - W)), static_cast<int>(0.5 * (scratch.rows - H)), W, H);
      scratch(crop).copyTo(out);
      break;
    }
  }
  if (augment && (augment->flip_x || augment->flip_y))
    cv::flip(out, out, augment->flip_x && augment->flip_y ? -1 : augment->flip_x ? 1 : 0);
}

FrameView::Yuv staged_yuv(const kernels::YuvImage& img) {
  const kernels::YuvFormat& f = img.format;
  FrameView::Yuv y;
  y.staged.format = f;
  const int planes = f.monochrome ? 1 : f.uv_interleaved ? 2 : 3;
  const std::size_t cw = static_cast<std::size_t>(kernels::chroma_width(f, img.width)) * f.bytes;
  const int ch = kernels::chroma_height(f, img.height);
  for (int k = 0; k < planes; ++k) {
    y.src[k] = img.plane[k];
    y.src_pitch[k] = img.pitch[k];
    y.row_bytes[k] = k == 0 ? static_cast<std::size_t>(img.width) * f.bytes : f.uv_interleaved ? 2 * cw : cw;
    y.rows[k] = k == 0 ? img.height : ch;
    y.staged.plane[k] = y.bytes;
    y.staged.pitch[k] = y.row_bytes[k];
    y.bytes += y.row_bytes[k] * static_cast<std::size_t>(y.rows[k]);
  }
  return y;
}

bool cpu_one_pass(const TransformConfig& cfg) noexcept {
  return cfg.resize.interpolation == Interpolation::linear || cfg.resize.interpolation == Interpolation::nearest;
}

Tally Transform::one_pass(Work& w) const {
  Pixels& px = w.pixels;
  kernels::YuvImage img;
  if (!px.video->yuv(img)) throw std::logic_error("transform: a YUV frame is not YUV");
  SampleGeometry& g = w.sample.geometry;
  const std::optional<Augment> a = augment_of(cfg_, epoch_, w.sample.input ? w.sample.input->id : 0,
                                              w.sample.draw_key(), g, img.width, img.height);
  complete_geometry(g, img.width, img.height, cfg_.resize, a ? &*a : nullptr);
  g.epoch = epoch_;
  const ResizeConfig& r = cfg_.resize;
  const kernels::ResizeBatch k = resize_batch_of(r);
  kernels::YuvFusedParams p;
  p.src = img;
  p.width = k.width;
  p.height = k.height;
  p.fit = k.fit;
  p.interp = k.interp;
  p.pad_value = k.pad_value;
  if (r.boxed() && a)  // the box, stretched (as resize() cuts it)
    p.box_x = a->x, p.box_y = a->y, p.box_width = a->width, p.box_height = a->height;
  if (a) p.flip_x = a->flip_x, p.flip_y = a->flip_y;
  if (on_cpu_) {  // the normalised tensor
    const kernels::NormalizeParams n = normalize_params();
    p.layout = n.layout;
    p.dtype = n.dtype;
    p.swap_rb = n.swap_rb;
    p.scale = n.scale;
    for (int c = 0; c < 3; ++c) p.mean[c] = n.mean[c], p.std[c] = n.std[c];
  } else {  // the u8 BGR canvas the GPU normalises
    p.layout = Layout::nhwc;
    p.dtype = DType::uint8;
  }
  // Checked here, where a failure is the sample's; made by the pack-copy
  // stage in the slot (FrameView::one_pass), whose address only it knows.
  kernels::YuvFusedParams checked = p;
  checked.dst = &checked;
  try {
    kernels::validate(checked);
  } catch (const std::exception& e) {
    w.sample.error = fmt::format("frame {} cannot be converted: {}", w.sample.frame, e.what());
    px.video.reset();  // the decoder's buffer goes back to its pool
    return {0, 0};
  }
  px.out = {};
  px.out.one_pass = p;
  px.out.width = r.width;
  px.out.height = r.height;
  px.out.bytes = frame_bytes();
  return {1, 0};
}

Tally Transform::run(Work& w) const {
  Pixels& px = w.pixels;
  if (px.video && !resize_on_gpu_ && w.route != Route::gpu_video) return one_pass(w);
  if (px.video) {  // left YUV by the decode stage, or NVDEC's: the GPU converts and resizes it
    kernels::YuvImage img;
    if (!px.video->yuv(img)) throw std::logic_error("transform: a YUV frame is not YUV");
    SampleGeometry& g = w.sample.geometry;
    if (w.route == Route::gpu_video) {  // not through the decode stage: as it has it for a YUV frame
      g.stored_width = g.width = img.width;
      g.stored_height = g.height = img.height;
    }
    // The GPU converts it: flips, but no box (the run plan resizes on the
    // CPU when random_crop meets videos).
    const std::optional<Augment> a = augment_of(cfg_, epoch_, w.sample.input ? w.sample.input->id : 0, w.sample.draw_key(), g,
                                                img.width, img.height);
    if (a && cfg_.resize.boxed())
      throw std::logic_error("transform: a boxed resize of a YUV frame (the plan resizes such runs on the CPU)");
    complete_geometry(g, img.width, img.height, cfg_.resize, a ? &*a : nullptr);
    g.epoch = epoch_;
    px.out = {};
    if (a) px.out.gpu = gpu_window(*a, cfg_.resize);
    if (w.route == Route::gpu_video) {  // nothing to stage: pack points the batch at the device frame
      px.out.width = img.width;
      px.out.height = img.height;
      return {1, 0};
    }
    px.out.yuv = staged_yuv(img);
    px.out.bytes = px.out.yuv->bytes;
    px.out.width = img.width;
    px.out.height = img.height;
    return {1, 0};
  }
  // The same placement whichever side resizes (kernels::placement).
  SampleGeometry& g = w.sample.geometry;
  const std::optional<Augment> drawn = augment_of(cfg_, epoch_, w.sample.input ? w.sample.input->id : 0,
                                                  w.sample.draw_key(), g, px.decoded.cols, px.decoded.rows);
  complete_geometry(g, px.decoded.cols, px.decoded.rows, cfg_.resize, drawn ? &*drawn : nullptr);
  g.epoch = epoch_;
  // The box in the decoded frame, which starts at the original's (origin_x,
  // origin_y) when the decode stage decoded the box alone (decode.region).
  std::optional<Augment> a = drawn;
  if (a && cfg_.resize.boxed()) {
    a->x -= px.origin_x;
    a->y -= px.origin_y;
    if (a->x < 0 || a->y < 0 || a->x + a->width > px.decoded.cols || a->y + a->height > px.decoded.rows)
      throw std::logic_error("transform: the resize's box is not inside the decoded frame");
  }
  if (resize_on_gpu_) {
    const std::size_t bytes = px.decoded.total() * px.decoded.elemSize();
    if (bytes <= frame_budget_ && px.decoded.isContinuous()) {
      px.out = {px.decoded.ptr<std::uint8_t>(), bytes, px.decoded.cols, px.decoded.rows};
      if (a) px.out.gpu = gpu_window(*a, cfg_.resize);
      return {1, 0};  // the GPU resizes and normalises
    }
    ++cpu_resized_;  // too large for its share of the slot: resize it here
  }
  try {
    resize(px.decoded, px.resized, px.scratch, a ? &*a : nullptr);
  } catch (const cv::Exception& e) {
    w.sample.error = std::string("resize failed: ") + e.what();
    return {0, 0};
  }
  px.out = {px.resized.ptr<std::uint8_t>(), px.resized.total() * px.resized.elemSize(), px.resized.cols,
            px.resized.rows};
  if (on_cpu_) {
    kernels::NormalizeParams p = normalize_params();
    px.tensor.resize(frame_bytes());
    p.src = px.resized.ptr<std::uint8_t>();
    p.src_pitch = px.resized.step[0];
    p.dst = px.tensor.data();
    kernels::normalize_image_ref(p);
    px.out.data = px.tensor.data();
    px.out.bytes = px.tensor.size();
  }
  return {1, px.out.bytes};
}

}  // namespace imgpipe::stages
