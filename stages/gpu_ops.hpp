// GPU ops stage (serial, in order): enqueues the batch's kernels on its
// device's stream after the copy — the fused resize + normalise kernel when
// the GPU resizes, the normalise kernel when only normalisation runs there —
// or on the host backend runs their CPU twins over the batch in parallel.
// Records the batch's ready event either way.
//
// With GPU decode, the batch's JPEGs (BatchSlot::jpegs) are first decoded by
// the device's JPEG engines from the copied slot into the device frame area;
// the fused kernel then resizes and normalises every sample, GPU-decoded or
// staged by the CPU, in batch order. A JPEG the engines reject is read again
// and decoded on the CPU (its frame uploaded in its place); one the CPU
// rejects too is reported (path and reason) and leaves the batch.
#pragma once

#include <atomic>
#include <vector>

#include "imgpipe/config.hpp"
#include "imgpipe/report.hpp"
#include "kernels/fused.hpp"
#include "kernels/normalize.hpp"
#include "probe.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

class GpuOps : public Stage<GpuOps, Takes::batches> {
 public:
  enum class Op { none, normalize, resize_normalize };
  // `params` describes one image at the target size (src/dst/batch are set
  // per batch); `resize` the fit, interpolation and padding for resize_normalize.
  GpuOps(const kernels::NormalizeParams& params, const kernels::ResizeBatch& resize, Op work)
      : Stage("gpu_ops", false), params_(params), resize_(resize), work_(work) {}
  // GPU decode: counts into `meter`; `cpu_decode` decodes the JPEGs the
  // engines reject; `on_error` as input.on_error for those the CPU rejects too.
  void enable_gpu_decode(GpuDecodeMeter& meter, const DecodeConfig& cpu_decode, OnError on_error);
  Tally run(Work& w);

  // Inputs that failed here (GPU and CPU decode both refused them), in order.
  const std::vector<InputFailure>& failures() const noexcept { return failures_; }
  // Their number so far; any thread (the progress line).
  std::uint64_t failed_count() const noexcept { return failed_count_.load(std::memory_order_relaxed); }

 private:
  void decode_jpegs(BatchSlot& b);
  std::string decode_on_cpu(BatchSlot& b, const GpuJpegSample& j);
  kernels::NormalizeParams params_;
  kernels::ResizeBatch resize_;
  Op work_;
  GpuDecodeMeter* meter_ = nullptr;
  DecodeConfig cpu_decode_;
  OnError on_error_ = OnError::skip;
  std::vector<InputFailure> failures_;
  std::atomic<std::uint64_t> failed_count_{0};
  std::vector<const std::uint8_t*> data_;  // per batch, reused
  std::vector<std::size_t> sizes_;
  std::vector<kernels::DecodedFrame> frames_;
  std::vector<int> status_;
  std::vector<unsigned char> bytes_;  // CPU fallback
  cv::Mat frame_;
  int prealloc_w_ = 0, prealloc_h_ = 0;
};

}  // namespace imgpipe::stages
