// Normalise/convert: a batch of u8 HWC images (1, 3 or 4 channels, any row
// pitch) -> a dense tensor in NCHW or NHWC, float32, float16 or uint8.
//
//   out[c] = ((v * scale) - mean[c]) / std[c]   for float outputs
//   out[c] = v                                  for uint8 (mean/std ignored)
//
// Rounding (both twins, bit-identical): each of the three operations is one
// IEEE float32 operation rounded to nearest (no fused multiply-add); float16
// outputs round that float32 to nearest-even. The CPU twin evaluates the formula
// once per (channel, value) into a table, which gives the same bits.
//
// swap_rb reverses the order of the first three channels (BGR <-> RGB); a
// fourth channel (alpha) keeps its place. Output channel c is input channel
// (swap_rb && c < 3 ? 2 - c : c).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "imgpipe/types.hpp"

namespace imgpipe::kernels {

struct NormalizeParams {
  int batch = 1;
  int height = 0;
  int width = 0;
  int channels = 3;                 // 1, 3 or 4 (input and output)
  const std::uint8_t* src = nullptr;  // first pixel of image 0
  std::size_t src_pitch = 0;        // bytes between rows; 0 means width * channels
  std::size_t src_image_stride = 0;  // bytes between images; 0 means height * pitch
  void* dst = nullptr;              // dense output: batch x C x H x W or batch x H x W x C
  Layout layout = Layout::nchw;
  DType dtype = DType::float32;
  bool swap_rb = false;
  float scale = 1.0f;
  std::array<float, 4> mean{0, 0, 0, 0};
  std::array<float, 4> std{1, 1, 1, 1};
};

// Throws std::invalid_argument naming the offending field.
void validate(const NormalizeParams& p);

// Output bytes of one call.
std::size_t output_bytes(const NormalizeParams& p) noexcept;

// The value the kernel stores for input v in channel c, as float32 (the shared
// definition of the rounding above).
float normalize_value(const NormalizeParams& p, int c, std::uint8_t v) noexcept;

// CPU twin. Runs over images (and rows) in parallel with oneTBB when
// `parallel` is true.
void normalize_ref(const NormalizeParams& p, bool parallel = false);

// Same, on one image in cached host memory: writes a single dense image.
// Used by the transform stage for normalize.where: cpu.
void normalize_image_ref(const NormalizeParams& p);

// GPU twin: enqueues the kernel on `stream` (src and dst device or mapped
// pointers). Throws imgpipe::CudaError on launch failure; throws
// std::logic_error in builds without CUDA.
void normalize_gpu(const NormalizeParams& p, CUstream_st* stream);

}  // namespace imgpipe::kernels
