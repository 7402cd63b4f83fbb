// Transform stage (parallel, cached memory): resize to the target size
// (stretch, letterbox or center_crop, OpenCV interpolation), then, when
// normalisation runs on the CPU, the fused u8 -> float32/float16/uint8
// conversion with per-channel mean/std, BGR->RGB and NCHW/NHWC layout in one
// pass (the normalise kernel's CPU twin). When normalisation runs on the GPU
// the frame stays u8 HWC BGR and the kernel does the rest.
#pragma once

#include <atomic>

#include "imgpipe/augment.hpp"
#include "imgpipe/config.hpp"
#include "kernels/normalize.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

// A decoded YUV frame as the pack stage stages it: its planes one after
// another, each dense (rows of exactly its row bytes), and the SrcYuv that
// describes them there for the GPU's conversion.
FrameView::Yuv staged_yuv(const kernels::YuvImage& img);

// Whether the CPU takes a video frame from its YUV planes to the frame pack
// copies in one pass (kernels/yuv_fused.hpp: no full-size BGR frame), when
// the CPU resizes: bilinear and nearest resizes; area and cubic ones convert
// the frame to BGR first (the decode stage) and resize it with cv::resize.
bool cpu_one_pass(const TransformConfig& cfg) noexcept;

class Transform : public Stage<Transform, Takes::samples> {
 public:
  // resize_on_gpu: stage decoded frames of at most `frame_budget` bytes as they are.
  // `epoch`: the run's, whose random augmentations (imgpipe/augment.hpp) it draws.
  Transform(const TransformConfig& cfg, bool normalize_on_cpu, bool resize_on_gpu = false,
            std::size_t frame_budget = 0, std::uint64_t epoch = 0);
  // Sets w.pixels.out to the frame pack copies, or w.sample.error. A video
  // frame the decode stage left YUV (w.pixels.video) is staged as it is when
  // the GPU resizes, else checked and left for the pack-copy stage to take to
  // the output in one pass, in the slot itself (FrameView::one_pass).
  Tally run(Work& w) const;

  // Resize `in` (u8, 3 channels) to the target into `out` (continuous);
  // `scratch` is an intermediate buffer for center_crop. `augment`: the box
  // random_crop starts from, and the flips after the resize.
  void resize(const cv::Mat& in, cv::Mat& out, cv::Mat& scratch, const Augment* augment = nullptr) const;

  // Bytes of one frame as the pack stage copies it (the most, when the GPU resizes).
  std::size_t frame_bytes() const noexcept;
  std::uint64_t cpu_resized() const noexcept { return cpu_resized_.load(); }
  // The normalise parameters for one image (src/dst left empty).
  kernels::NormalizeParams normalize_params() const noexcept;
  bool normalize_on_cpu() const noexcept { return on_cpu_; }

 private:
  Tally one_pass(Work& w) const;

  TransformConfig cfg_;
  bool on_cpu_;
  bool resize_on_gpu_;
  std::size_t frame_budget_;
  std::uint64_t epoch_;
  mutable std::atomic<std::uint64_t> cpu_resized_{0};
};

}  // namespace imgpipe::stages
