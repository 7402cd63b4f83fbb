// Batched resize of u8 HWC images (1, 3 or 4 channels) into one output canvas
// size, bilinear or nearest, as cv::resize computes it; the images of a batch
// may all have different sizes and row pitches. The same machinery does
// letterbox (letterbox.hpp), centre crop (crop.hpp) and the fused
// resize + normalise (fused.hpp).
//
// Input: one base pointer and, per image, a descriptor {offset, width,
// height, pitch}: image i's pixel (x, y) channel c is the byte
//   src[images[i].offset + y * pitch + x * channels + c].
// Images packed one after another in one buffer are offsets 0, size0,
// size0 + size1, ...; a sub-image (ROI) is an offset into its parent with the
// parent's pitch.
//
// YUV images (decoded video frames: NV12/P016 from NVDEC, I420/I422/I444 and
// 10-bit planar from libavcodec): an image with SrcImage::yuv set holds YUV
// planes instead of u8 BGR pixels (channels must be 3); a batch may mix the
// two. Definition: a YUV image is resampled exactly as its BGR conversion
// (kernels::yuv_to_bgr_ref, yuv.hpp) would be, bit for bit, on both twins: the
// CPU twin converts the image, then resamples the BGR pixels; the kernels
// convert each tap with yuv.hpp's integer arithmetic (detail::yuv_at) and
// resample with the same integer arithmetic as for BGR images.
//
// Output: a dense batch x height x width x channels u8 tensor (HWC, input
// channel order). Each image is resized to its placement (see Fit) and the
// canvas pixels not covered are set to pad_value.
//
// Rounding (both twins, bit-identical, integer arithmetic; resize_math.hpp
// has the formulas): INTER_LINEAR uses OpenCV's 11-bit fixed-point weights and
// its two-pass rounding, INTER_NEAREST OpenCV's floor(x * scale). Against
// cv::resize (OpenCV 4.6.0, x86-64, no IPP, no custom HAL) the result is
// bit-exact for INTER_LINEAR and INTER_NEAREST at every size and scale
// (checked on ~100M random samples and the sample photos), including the
// exact-2x downscale that OpenCV routes to INTER_AREA and the dsize == ssize
// copy. Where exactness was established: the vertical rounding is OpenCV's
// (h0 >> 4) * b0 >> 16 form in both its SIMD and scalar code, not
// round(sum / 2^22), which differs by 1 on ~1 in 8 pixels of random data. OpenCV builds that
// route u8 INTER_LINEAR through IPP or a HAL (e.g. carotene on ARM) can differ
// by 1; the tests accept +-1 there and require exact equality otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

#include <optional>

#include "imgpipe/types.hpp"
#include "yuv.hpp"

namespace imgpipe::kernels {

enum class Interp : std::uint8_t { nearest, linear };

// How each image maps into the canvas.
enum class Fit : std::uint8_t {
  stretch,      // cv::resize(img, out, Size(width, height))
  letterbox,    // keep aspect, centred, padded (letterbox.hpp has the geometry)
  center_crop,  // shorter side to the canvas, centre cut (crop.hpp has the geometry)
};

// Where the planes of a YUV source image lie. Plane k starts `plane[k]`
// bytes after the image's base (SrcImage::data, or ResizeBatch::src +
// SrcImage::offset): plane 0 is Y, plane 1 U (or the interleaved UV pairs of
// NV12/P016), plane 2 V (unused when interleaved or monochrome). Examples: an
// NVDEC NV12 surface is data = the surface, plane = {0, pitch * surface
// height}, pitch = {pitch, pitch}; a w x h I420 frame staged densely at
// `offset` is plane = {0, w * h, w * h + cw * ch} (cw x ch: chroma_width /
// chroma_height, yuv.hpp), pitches 0.
struct SrcYuv {
  YuvFormat format;
  std::size_t plane[3] = {0, 0, 0};  // bytes from the image base to the plane's first row
  std::size_t pitch[3] = {0, 0, 0};  // bytes between the plane's rows; 0: its row bytes (dense)
};

// One source image of a batch.
struct SrcImage {
  std::size_t offset = 0;  // bytes from ResizeBatch::src to pixel (0, 0)
  int width = 0;
  int height = 0;
  std::size_t pitch = 0;   // bytes between rows; 0 means width * channels
  // The image's own pixels (device memory for the GPU kernels), for an image
  // that does not lie in `src` (a frame the GPU decoded); null: src + offset.
  const std::uint8_t* data = nullptr;  // (then `offset` counts from data)
  // Set: the image is YUV (SrcYuv above; width/height are the luma size,
  // `pitch` must be 0: the planes' pitches are in yuv->pitch). Unset: u8
  // pixels of `channels` channels.
  std::optional<SrcYuv> yuv = std::nullopt;
  // The image's canvas mirrored after the resize: left to right (flip_x),
  // top to bottom (flip_y); the padding mirrors with it.
  bool flip_x = false, flip_y = false;
};

// Where one resized image lies in the canvas: the source is resized as
// cv::resize(src, tmp, Size(width, height), inv_scale_x, inv_scale_y) and
// tmp(u, v) lands on canvas(x0 + u, y0 + v); x0/y0 < 0 cut the left/top.
struct Placement {
  int x0 = 0, y0 = 0;
  int width = 0, height = 0;  // resized size
  // cv::resize's fx/fy; the sampling step is 1 / inv_scale. When width/height
  // came from a destination size these are width / src.width etc.
  double inv_scale_x = 0.0, inv_scale_y = 0.0;
};

// A batch to resize. `images` is a host array of `batch` descriptors; the
// launchers read it during the call only (the GPU launchers copy what they
// need into the kernel arguments), so it may be freed when they return.
struct ResizeBatch {
  int channels = 3;                    // 1, 3 or 4
  const std::uint8_t* src = nullptr;   // base pointer (device/mapped for _gpu, host for _ref)
  const SrcImage* images = nullptr;    // host array
  int batch = 0;                       // number of images, >= 1
  int width = 0, height = 0;           // output canvas
  Interp interp = Interp::linear;
  Fit fit = Fit::stretch;
  std::uint8_t pad_value = 0;          // canvas pixels no image covers (letterbox)
};

// Throws std::invalid_argument naming the offending field ("images[3].pitch ...").
void validate(const ResizeBatch& b);

// Image i's placement under b.fit (the geometry the CPU pipeline uses).
Placement placement(const ResizeBatch& b, int i);

// Bytes of the u8 output: batch * height * width * channels.
std::size_t output_bytes(const ResizeBatch& b) noexcept;

// CPU twin: writes the dense u8 output to dst (host memory). Images in
// parallel with oneTBB when `parallel` is true.
void resize_ref(const ResizeBatch& b, std::uint8_t* dst, bool parallel = false);

// GPU twin: enqueues on `stream`; b.src and d_dst are device (or mapped)
// pointers. Throws std::invalid_argument for bad arguments, imgpipe::CudaError
// on launch failure, std::logic_error in builds without CUDA.
void resize_gpu(const ResizeBatch& b, std::uint8_t* d_dst, CUstream_st* stream);

}  // namespace imgpipe::kernels
