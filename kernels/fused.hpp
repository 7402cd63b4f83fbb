// Fused resize + normalise + layout: a batch of u8 HWC images of any sizes
// (ResizeBatch: stretch, letterbox or centre crop, bilinear or nearest) ->
// one dense float32 / float16 / uint8 tensor in NCHW or NHWC, in one kernel.
//
// Definition (and the CPU twin's implementation): resample each image to the
// u8 canvas exactly as resize_ref / letterbox_ref / center_crop_ref do
// (integer arithmetic, resize.hpp), padding included, then apply normalize
// (normalize.hpp) with the same mean/std/scale/swap_rb/layout/dtype:
//
//   fused(p) == normalize(resize(p.in), normalize_params(p, canvas))   bit for bit
//
// on both twins: the u8 value is computed in integers, then normalised with
// three IEEE float32 operations rounded to nearest (v * scale, - mean[c],
// / std[c]; no FMA), float16 rounds that float32 to nearest-even. Output
// channel c takes input channel (swap_rb && c < 3 ? 2 - c : c); mean and std
// are in output channel order. The pad value is a u8 and is normalised like
// any pixel. A YUV image of the batch (SrcImage::yuv, resize.hpp) is
// resampled as its BGR conversion (yuv_to_bgr_ref) would be, so the identity
// above holds for mixed batches too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "imgpipe/types.hpp"
#include "normalize.hpp"
#include "resize.hpp"

namespace imgpipe::kernels {

struct FusedParams {
  ResizeBatch in;            // images, canvas size, fit, interpolation, pad value
  void* dst = nullptr;       // dense: batch x C x H x W (nchw) or batch x H x W x C (nhwc)
  Layout layout = Layout::nchw;
  DType dtype = DType::float32;
  bool swap_rb = false;
  float scale = 1.0f;
  std::array<float, 4> mean{0, 0, 0, 0};
  std::array<float, 4> std{1, 1, 1, 1};
};

// Throws std::invalid_argument naming the offending field.
void validate(const FusedParams& p);

// Output bytes of one call.
std::size_t output_bytes(const FusedParams& p) noexcept;

// The normalise step alone: NormalizeParams over the dense u8 canvas batch at
// `canvas` (batch x height x width x channels) that gives the same output.
NormalizeParams normalize_params(const FusedParams& p, const std::uint8_t* canvas) noexcept;

// CPU twin (host pointers). Images in parallel with oneTBB when `parallel`.
void fused_ref(const FusedParams& p, bool parallel = false);

// GPU twin: enqueues on `stream` (p.in.src and p.dst device or mapped
// pointers). Throws std::invalid_argument, imgpipe::CudaError on launch
// failure, std::logic_error in builds without CUDA.
void fused_gpu(const FusedParams& p, CUstream_st* stream);

}  // namespace imgpipe::kernels
