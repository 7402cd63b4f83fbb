#include "gpu_ops.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "decode.hpp"
#include "kernels/nvjpeg_api.hpp"
#include "kernels/trap.hpp"
#include "read.hpp"

namespace imgpipe::stages {

void GpuOps::enable_gpu_decode(GpuDecodeMeter& meter, const DecodeConfig& cpu_decode, OnError on_error) {
  meter_ = &meter;
  cpu_decode_ = cpu_decode;
  cpu_decode_.reduced = false;  // the frame must have the JPEG's own size
  on_error_ = on_error;
}

// Decodes one JPEG of the batch on the CPU, from its file (the slot is
// write-combined memory and the token's bytes are gone), into its place in
// the device frame area. Returns the reason on failure.
std::string GpuOps::decode_on_cpu(BatchSlot& b, const GpuJpegSample& j) {
  const std::string& path = b.samples[j.index].path;
  if (std::string err = Read::read_file(path, bytes_); !err.empty()) return err;
  const Decode decoder(cpu_decode_, TransformConfig{});
  if (std::string err = decoder.decode(bytes_, frame_); !err.empty()) return err;
  if (frame_.cols != j.width || frame_.rows != j.height || !frame_.isContinuous())
    return fmt::format("decoded to {}x{} on the CPU, {}x{} expected (file changed?)", frame_.cols, frame_.rows,
                       j.width, j.height);
  auto* d_frame = static_cast<std::uint8_t*>(b.dev->frames.get()) + j.frame_offset;
  gpu::copy_h2d_async(d_frame, frame_.data, frame_.total() * frame_.elemSize(), b.dev->stream);
  b.dev->stream.synchronize();  // frame_ is reused for the next one
  return {};
}

void GpuOps::decode_jpegs(BatchSlot& b) {
  // Ready: the probe routes JPEGs to the GPU only once the first device's
  // decoder is; another device's may still be in the making.
  kernels::GpuJpegDecoder* engines = b.dev->jpeg ? b.dev->jpeg->wait() : nullptr;
  if (!engines) throw Error("GPU JPEG decode: no decoder on device " + std::to_string(b.dev->device) + ": " +
                            (b.dev->jpeg ? b.dev->jpeg->error() : std::string("not made")));
  kernels::GpuJpegDecoder& dec = *engines;
  const std::size_t n = b.jpegs.size();
  auto* base = static_cast<std::uint8_t*>(b.buffers().d_input.get());
  auto* frames = static_cast<std::uint8_t*>(b.dev->frames.get());
  data_.resize(n);
  sizes_.resize(n);
  frames_.resize(n);
  status_.assign(n, 0);
  int max_w = 0, max_h = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const GpuJpegSample& j = b.jpegs[k];
    data_[k] = base + j.offset;
    sizes_[k] = j.size;
    frames_[k] = {frames + j.frame_offset, static_cast<std::size_t>(j.width) * 3, j.width, j.height};
    max_w = std::max(max_w, j.width);
    max_h = std::max(max_h, j.height);
  }
  if (max_w > prealloc_w_ || max_h > prealloc_h_) {  // nvJPEG's buffers for the largest frame so far
    prealloc_w_ = std::max(prealloc_w_, max_w);
    prealloc_h_ = std::max(prealloc_h_, max_h);
    dec.preallocate(static_cast<int>(b.samples.size()), prealloc_w_, prealloc_h_);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int decoded = dec.decode_batch(data_.data(), sizes_.data(), static_cast<int>(n), frames_.data(),
                                       status_.data(), b.dev->stream.get());
  meter_->ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  meter_->images += static_cast<std::uint64_t>(decoded);
  // Rejected by the engines: the CPU tries; what it rejects too leaves the batch.
  std::vector<int> drop;
  for (std::size_t k = 0; k < n; ++k) {
    if (status_[k] == 0) continue;
    const GpuJpegSample& j = b.jpegs[k];
    const std::string err = decode_on_cpu(b, j);
    if (err.empty()) {
      ++meter_->fallbacks;
      b.samples[j.index].decoded_on_gpu = false;
      continue;
    }
    const SampleId& s = b.samples[j.index];
    const std::string reason = fmt::format("{} (GPU decode: {})", err, nvj::status_name(status_[k]));
    failures_.push_back({s.path, s.frame, reason});
    failed_count_.fetch_add(1, std::memory_order_relaxed);
    if (on_error_ == OnError::fail) throw InputError(s.path, s.frame, reason);
    drop.push_back(j.index);
  }
  for (auto it = drop.rbegin(); it != drop.rend(); ++it) b.remove(*it);
}

Tally GpuOps::run(Work& w) {
  BatchSlot& b = *w.batch;
  DeviceBuffers& buf = b.buffers();
  const gpu::Stream& stream = b.dev->stream;
  const bool on_gpu = stream.device() >= 0;
  if (on_gpu && fault::trap(b.index)) kernels::trap_gpu(stream.get());
  if (!b.jpegs.empty()) {
    const nvtx::Range range("jpeg decode", b.index);
    decode_jpegs(b);
  }
  std::size_t bytes = 0;
  if (b.count == 0) {  // every sample failed
    buf.ready.record(stream);
    return {1, 0};
  }
  // The launches (their CPU twins on the host backend).
  const nvtx::Range range("kernels", b.index);
  if (work_ == Op::normalize) {
    kernels::NormalizeParams p = params_;
    p.batch = b.count;
    p.src = static_cast<const std::uint8_t*>(b.staged);
    p.src_pitch = 0;
    p.dst = buf.d_output.get();
    if (on_gpu) kernels::normalize_gpu(p, stream.get());
    else kernels::normalize_ref(p, /*parallel=*/true);
    bytes = kernels::output_bytes(p);
  } else if (work_ == Op::resize_normalize) {
    kernels::FusedParams f;
    f.in = resize_;
    f.in.src = static_cast<const std::uint8_t*>(b.staged);
    f.in.images = b.images.data();
    f.in.batch = b.count;
    f.dst = buf.d_output.get();
    f.layout = params_.layout;
    f.dtype = params_.dtype;
    f.swap_rb = params_.swap_rb;
    f.scale = params_.scale;
    f.mean = params_.mean;
    f.std = params_.std;
    if (on_gpu) kernels::fused_gpu(f, stream.get());
    else kernels::fused_ref(f, /*parallel=*/true);
    bytes = kernels::output_bytes(f);
  }
  buf.ready.record(stream);
  return {1, bytes};
}

}  // namespace imgpipe::stages
