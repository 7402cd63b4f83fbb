// What the NVDEC backend keeps between videos, private to codecs/video/nvdec/:
// the decoders (kept per device and format when a file closes, reused by the
// next file of a format they can take; hold_nvdec_decoders() says how long)
// and the device buffers the decoded frames are copied into, pooled by
// device and size (freeing device memory synchronises the device).
#pragma once

#if IMGPIPE_HAS_CUDA

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"
#include "codecs/video/nvdec/cuvid.hpp"
#include "codecs/video/video_devices.hpp"

namespace imgpipe::codecs::nvdec {

// A decoder as made, with what it can be reconfigured to.
struct Engine {
  CUvideodecoder dec = nullptr;
  int device = -1;
  cudaVideoCodec codec{};
  cudaVideoChromaFormat chroma{};
  int depth_minus8 = 0;
  unsigned surfaces = 0;
  unsigned max_width = 0, max_height = 0;
  CUVIDRECONFIGUREDECODERINFO now{};  // its present size
};

// The idle decoders, up to kMaxIdle while anything holds the cache.
class Cache {
 public:
  // An idle decoder that can take the format, or null.
  std::unique_ptr<Engine> take(int device, cudaVideoCodec codec, cudaVideoChromaFormat chroma, int depth_minus8,
                               unsigned surfaces, unsigned width, unsigned height);
  // A decoder done with its video: kept, or destroyed when nothing holds
  // the cache (the oldest goes when it is full).
  void give(std::unique_ptr<Engine> e);
  void hold();
  // The last holder gone: the idle decoders are destroyed.
  void release();
  void made();  // counts a decoder made
  NvdecFigures figures();
  // Destroys the decoder in its device's context, the caller's device and
  // context restored. Never throws: it runs from destructors (~NvdecDecoder,
  // the hold's deleter), during unwinding and static destruction; a failure
  // is reported on stderr once and the decoder is left to its context.
  static void destroy(Engine& e) noexcept;

 private:
  static constexpr std::size_t kMaxIdle = 32;
  std::mutex mu_;
  std::deque<std::unique_ptr<Engine>> idle_;
  int holders_ = 0;  // hold_nvdec_decoders()
  std::uint64_t made_ = 0, reused_ = 0;
};

// Never destroyed (decoders given back during static destruction still find it).
Cache& cache();

// NVDEC's frame memory on a device is full (memory.nvdec_frames_mb): the
// decoder reports it as such, not as damage (the file goes on on the CPU).
class FrameMemoryFull : public Error {
 public:
  using Error::Error;
};

// Device buffers of one size for decoded frames, reused: freeing device
// memory synchronises the device. A frame's buffer returns here when the
// last holder (the batch that read it) lets it go. Every pool of a device
// holds at most the device's budget (set_nvdec_frame_budget) in use and
// idle together; at the budget, idle buffers of the device's other sizes
// are freed first.
class FramePool : public std::enable_shared_from_this<FramePool> {
 public:
  FramePool(int device, std::size_t bytes) : device_(device), bytes_(bytes) {}
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;
  ~FramePool();
  // Device bytes held by every pool of every device, in use and idle (nvdec_figures).
  static std::uint64_t held_bytes();
  // A buffer of the pool's size, back in the pool when the last holder lets
  // it go. `budgeted`: throws FrameMemoryFull when the device's budget has no
  // room for it (else it is counted, and taken beyond the budget).
  std::shared_ptr<const void> get(bool budgeted = true);
  // The pool of `device` for buffers of `bytes`, shared by every decoder and
  // frame of that size while any of them holds it. When the last lets go
  // (the run is over), the pool and its idle buffers are freed: a process
  // that runs pipelines one after another over videos of many sizes does
  // not keep device memory for sizes it no longer decodes.
  static std::shared_ptr<FramePool> of(int device, std::size_t bytes);
  // Frees the idle buffers of every pool of `device`.
  static void trim(int device);

 private:
  static constexpr std::size_t kMaxFree = 256;
  int device_;
  std::size_t bytes_;
  std::mutex mu_;
  std::vector<gpu::DeviceBuffer> free_;
};

}  // namespace imgpipe::codecs::nvdec

#endif  // IMGPIPE_HAS_CUDA
