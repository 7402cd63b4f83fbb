// Internal to kernels/: the per-image plan both twins of the resize family
// execute, and the one GPU entry point (resize.cu) that resize, letterbox,
// centre crop and the fused path share. Not a public header; no CUDA types.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "imgpipe/types.hpp"
#include "resize.hpp"
#include "yuv.hpp"

namespace imgpipe::kernels::detail {

// Everything needed to produce one image of the canvas.
struct ImagePlan {
  const std::uint8_t* src = nullptr;  // pixel (0, 0)
  std::size_t pitch = 0;              // resolved (never 0)
  int sw = 0, sh = 0;                 // source size
  int x0 = 0, y0 = 0, rw = 0, rh = 0; // placement of the resized image in the canvas
  double scale_x = 1.0, scale_y = 1.0;  // sampling step: 1 / inv_scale (1 for the dsize == ssize copy)
  // A YUV image (SrcImage::yuv): its planes; src and pitch are then unused.
  bool is_yuv = false;
  YuvImage yuv;
  bool flip_x = false, flip_y = false;  // SrcImage's: the canvas mirrored
};

// Plan of image i (b already validated).
ImagePlan plan_image(const ResizeBatch& b, int i);

// The YuvImage of image i (its yuv set): plane pointers resolved from the
// image base, pitches of 0 resolved to the planes' row bytes.
YuvImage yuv_image(const ResizeBatch& b, int i);

// What the kernel writes for each canvas pixel. uint8 output stores the
// resampled value (mean/std/scale ignored), float outputs normalise it as
// normalize_value() does.
struct OutputSpec {
  void* dst = nullptr;
  Layout layout = Layout::nhwc;
  DType dtype = DType::uint8;
  bool swap_rb = false;
  float scale = 1.0f;
  std::array<float, 4> mean{0, 0, 0, 0};
  std::array<float, 4> std{1, 1, 1, 1};
};

// Dense u8 HWC output in input channel order (resize / letterbox / crop).
inline OutputSpec u8_hwc_output(std::uint8_t* dst) {
  OutputSpec o;
  o.dst = dst;
  return o;
}

// CPU: the resampled u8 canvas (height x width x channels, dense) of one
// image; a YUV image is converted with yuv_to_bgr_ref first.
void resample_image_ref(const ResizeBatch& b, const ImagePlan& p, std::uint8_t* canvas);

// CPU: every image of b into dense u8 HWC at dst (oneTBB over images when parallel).
void resample_batch_ref(const ResizeBatch& b, std::uint8_t* dst, bool parallel);

// Which images of a batch a GPU launcher takes.
enum class Images : std::uint8_t { all, bgr, yuv };

// GPU: enqueues the resample(+normalise) kernels for the images of b that
// `which` selects (b and out already validated): u8 images through the BGR
// kernel, YUV images through the YUV kernel (both in resize.cu).
void resample_gpu(const ResizeBatch& b, const OutputSpec& out, CUstream_st* stream, Images which = Images::all);

}  // namespace imgpipe::kernels::detail
