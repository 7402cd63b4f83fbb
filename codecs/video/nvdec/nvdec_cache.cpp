#include "codecs/video/nvdec/nvdec_cache.hpp"

#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif
#include "memory/gpu.hpp"
#include "codecs/video/video_devices.hpp"

namespace imgpipe::codecs {

#if IMGPIPE_HAS_CUDA

namespace nvdec {

// ------------------------------------------------------------ decoder cache

std::unique_ptr<Engine> Cache::take(int device, cudaVideoCodec codec, cudaVideoChromaFormat chroma, int depth_minus8,
                                    unsigned surfaces, unsigned width, unsigned height) {
  const std::lock_guard lock(mu_);
  for (auto it = idle_.begin(); it != idle_.end(); ++it) {
    Engine& e = **it;
    if (e.device == device && e.codec == codec && e.chroma == chroma && e.depth_minus8 == depth_minus8 &&
        e.surfaces >= surfaces && e.max_width >= width && e.max_height >= height) {
      std::unique_ptr<Engine> out = std::move(*it);
      idle_.erase(it);
      ++reused_;
      return out;
    }
  }
  return nullptr;
}

void Cache::give(std::unique_ptr<Engine> e) {
  std::unique_ptr<Engine> dropped;
  {
    const std::lock_guard lock(mu_);
    if (holders_ == 0) {  // no run to reuse it
      dropped = std::move(e);
    } else {
      idle_.push_back(std::move(e));
      if (idle_.size() > kMaxIdle) {  // the oldest goes
        dropped = std::move(idle_.front());
        idle_.pop_front();
      }
    }
  }
  if (dropped) destroy(*dropped);
}

void Cache::hold() {
  const std::lock_guard lock(mu_);
  ++holders_;
}

void Cache::release() {
  std::deque<std::unique_ptr<Engine>> dropped;
  {
    const std::lock_guard lock(mu_);
    if (--holders_ == 0) dropped.swap(idle_);
  }
  for (auto& e : dropped) destroy(*e);
}

void Cache::made() {
  const std::lock_guard lock(mu_);
  ++made_;
}

NvdecFigures Cache::figures() {
  const std::lock_guard lock(mu_);
  return {static_cast<int>(idle_.size()), made_, reused_};
}

void Cache::destroy(Engine& e) noexcept {
  const Library& lib = library();
  if (!lib.f || !e.dec) return;
  const gpu::CurrentDeviceGuard restore;  // noexcept; the caller's device and context come back
  const cudaError_t made_current = cudaSetDevice(e.device);
  if (made_current != cudaSuccess) {
    // Static destruction (the runtime unloading) or a device gone: the
    // decoder goes with its context.
    IMGPIPE_CUDA_TRY_NOTHROW(made_current);
    return;
  }
  const CUresult r = lib.f->cuvidDestroyDecoder(e.dec);
  e.dec = nullptr;
  constexpr int kDeinitialized = 4;  // CUDA_ERROR_DEINITIALIZED (the driver shutting down; ffnvcodec lacks the name)
  if (r != CUDA_SUCCESS && static_cast<int>(r) != kDeinitialized) {
    static bool once = false;
    if (!once) {
      once = true;
      try {
        const std::string name = fmt::format("CUresult {}", static_cast<int>(r));
        imgpipe::detail::report_cuda_nothrow("cuvidDestroyDecoder", __FILE__, __LINE__, name.c_str());
      } catch (...) {
      }
    }
  }
}

Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// --------------------------------------------------------------- frame pool

namespace {

// What every pool of a device holds (in use and idle), and its budget.
struct DeviceFrames {
  std::uint64_t held = 0;
  std::uint64_t budget = 0;  // 0: none set (no limit)
};

std::mutex& frames_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}

std::map<int, DeviceFrames>& device_frames() {
  static auto* m = new std::map<int, DeviceFrames>;
  return *m;
}

// Takes `bytes` of the device's budget: false when it has no room.
bool take_frame_bytes(int device, std::uint64_t bytes, bool budgeted) {
  const std::lock_guard lock(frames_mu());
  DeviceFrames& d = device_frames()[device];
  if (budgeted && d.budget > 0 && d.held + bytes > d.budget) return false;
  d.held += bytes;
  return true;
}

void give_frame_bytes(int device, std::uint64_t bytes) noexcept {
  const std::lock_guard lock(frames_mu());
  DeviceFrames& d = device_frames()[device];
  d.held -= std::min(d.held, bytes);
}

std::mutex& pools_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}

std::map<std::pair<int, std::size_t>, std::weak_ptr<FramePool>>& pools() {
  static auto* m = new std::map<std::pair<int, std::size_t>, std::weak_ptr<FramePool>>;
  return *m;
}

}  // namespace

std::uint64_t FramePool::held_bytes() {
  const std::lock_guard lock(frames_mu());
  std::uint64_t n = 0;
  for (const auto& [device, d] : device_frames()) n += d.held;
  return n;
}

std::shared_ptr<const void> FramePool::get(bool budgeted) {
  gpu::DeviceBuffer b;
  {
    const std::lock_guard lock(mu_);
    if (!free_.empty()) {
      b = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!b.get()) {
    if (!take_frame_bytes(device_, bytes_, budgeted)) {
      trim(device_);  // the idle buffers of other sizes first
      if (!take_frame_bytes(device_, bytes_, budgeted)) {
        std::uint64_t held = 0, budget = 0;
        {
          const std::lock_guard lock(frames_mu());
          held = device_frames()[device_].held;
          budget = device_frames()[device_].budget;
        }
        throw FrameMemoryFull(fmt::format(
            "NVDEC's frame memory on GPU {} is full: frames in flight hold {} MiB of memory.nvdec_frames_mb = {} MiB",
            device_, held >> 20, budget >> 20));
      }
    }
    try {
      b = gpu::DeviceBuffer(device_, bytes_);
    } catch (...) {
      give_frame_bytes(device_, bytes_);
      throw;
    }
  }
  auto* held = new gpu::DeviceBuffer(std::move(b));
  return {held->get(), [pool = shared_from_this(), held](const void*) {
            {
              const std::lock_guard lock(pool->mu_);
              if (pool->free_.size() < kMaxFree) {
                pool->free_.push_back(std::move(*held));
              }
            }
            if (held->get()) give_frame_bytes(pool->device_, pool->bytes_);
            delete held;
          }};
}

FramePool::~FramePool() {
  give_frame_bytes(device_, free_.size() * bytes_);
}

void FramePool::trim(int device) {
  std::vector<std::shared_ptr<FramePool>> of_device;
  {
    const std::lock_guard lock(pools_mu());
    for (const auto& [key, w] : pools())
      if (key.first == device)
        if (std::shared_ptr<FramePool> p = w.lock()) of_device.push_back(std::move(p));
  }
  for (const std::shared_ptr<FramePool>& p : of_device) {
    std::vector<gpu::DeviceBuffer> idle;
    {
      const std::lock_guard lock(p->mu_);
      idle.swap(p->free_);
    }
    give_frame_bytes(device, idle.size() * p->bytes_);
  }
}

std::shared_ptr<FramePool> FramePool::of(int device, std::size_t bytes) {
  std::map<std::pair<int, std::size_t>, std::weak_ptr<FramePool>>* pools_of = &pools();
  const std::lock_guard lock(pools_mu());
  std::erase_if(*pools_of, [](const auto& kv) { return kv.second.expired(); });
  std::weak_ptr<FramePool>& w = (*pools_of)[{device, bytes}];
  std::shared_ptr<FramePool> p = w.lock();
  if (!p) {
    p = std::make_shared<FramePool>(device, bytes);
    w = p;
  }
  return p;
}

}  // namespace nvdec

// ------------------------------------------------ what video_devices.hpp offers

std::shared_ptr<void> hold_nvdec_decoders() {
  nvdec::cache().hold();
  return {nullptr, [](void*) { nvdec::cache().release(); }};
}

void set_nvdec_frame_budget(int device, std::uint64_t bytes) {
  const std::lock_guard lock(nvdec::frames_mu());
  nvdec::device_frames()[device].budget = bytes;
}

NvdecFigures nvdec_figures() {
  if (!nvdec::library().f) return {};
  NvdecFigures n = nvdec::cache().figures();
  n.frame_bytes = nvdec::FramePool::held_bytes();
  n.caps_asked = nvdec::caps_asked();
  return n;
}

std::shared_ptr<VideoFrame> copy_frame_to(const VideoFrame& f, int device, const gpu::Stream& stream) {
  kernels::YuvImage from;
  if (f.device() < 0 || !f.yuv(from)) throw std::logic_error("copy_frame_to: not a device frame");
  kernels::YuvImage to = from;
  const kernels::YuvFormat& fmt = from.format;
  const int planes = fmt.monochrome ? 1 : fmt.uv_interleaved ? 2 : 3;
  std::size_t at[3] = {0, 0, 0}, bytes = 0;
  for (int k = 0; k < planes; ++k) {
    at[k] = bytes;
    bytes += from.pitch[k] * static_cast<std::size_t>(k == 0 ? from.height : kernels::chroma_height(fmt, from.height));
  }
  // Not refused at the budget: the batch that waits for it is already formed.
  std::shared_ptr<const void> mem = nvdec::FramePool::of(device, bytes)->get(/*budgeted=*/false);
  auto* base = static_cast<std::uint8_t*>(const_cast<void*>(mem.get()));
  for (int k = 0; k < planes; ++k) {
    const int rows = k == 0 ? from.height : kernels::chroma_height(fmt, from.height);
    to.plane[k] = base + at[k];
    gpu::copy_2d_async(base + at[k], from.pitch[k], from.plane[k], from.pitch[k], from.pitch[k],
                       static_cast<std::size_t>(rows), stream);
  }
  return std::make_shared<VideoFrame>(device, to, std::move(mem));
}

#else  // !IMGPIPE_HAS_CUDA

std::shared_ptr<void> hold_nvdec_decoders() { return nullptr; }

void set_nvdec_frame_budget(int, std::uint64_t) {}

NvdecFigures nvdec_figures() { return {}; }

std::shared_ptr<VideoFrame> copy_frame_to(const VideoFrame&, int, const gpu::Stream&) {
  throw std::logic_error("copy_frame_to: imgpipe was built without CUDA");
}

#endif  // IMGPIPE_HAS_CUDA

}  // namespace imgpipe::codecs
