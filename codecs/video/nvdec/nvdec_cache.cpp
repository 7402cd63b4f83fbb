#include "codecs/video/nvdec/nvdec_cache.hpp"

#include <map>
#include <stdexcept>
#include <utility>

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

void Cache::destroy(Engine& e) {
  gpu::set_device(e.device);
  api().cuvidDestroyDecoder(e.dec);
}

Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// --------------------------------------------------------------- frame pool

std::atomic<std::uint64_t>& FramePool::held_bytes() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

std::shared_ptr<const void> FramePool::get() {
  gpu::DeviceBuffer b;
  {
    const std::lock_guard lock(mu_);
    if (!free_.empty()) {
      b = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!b.get()) {
    b = gpu::DeviceBuffer(device_, bytes_);
    held_bytes() += bytes_;
  }
  auto* held = new gpu::DeviceBuffer(std::move(b));
  return {held->get(), [pool = shared_from_this(), held](const void*) {
            {
              const std::lock_guard lock(pool->mu_);
              if (pool->free_.size() < kMaxFree) {
                pool->free_.push_back(std::move(*held));
              }
            }
            if (held->get()) held_bytes() -= pool->bytes_;
            delete held;
          }};
}

std::shared_ptr<FramePool> FramePool::of(int device, std::size_t bytes) {
  static auto* pools = new std::map<std::pair<int, std::size_t>, std::weak_ptr<FramePool>>;
  static std::mutex mu;
  const std::lock_guard lock(mu);
  std::erase_if(*pools, [](const auto& kv) { return kv.second.expired(); });
  std::weak_ptr<FramePool>& w = (*pools)[{device, bytes}];
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

NvdecFigures nvdec_figures() {
  if (!nvdec::library().f) return {};
  NvdecFigures n = nvdec::cache().figures();
  n.frame_bytes = nvdec::FramePool::held_bytes().load();
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
  std::shared_ptr<const void> mem = nvdec::FramePool::of(device, bytes)->get();
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

NvdecFigures nvdec_figures() { return {}; }

std::shared_ptr<VideoFrame> copy_frame_to(const VideoFrame&, int, const gpu::Stream&) {
  throw std::logic_error("copy_frame_to: imgpipe was built without CUDA");
}

#endif  // IMGPIPE_HAS_CUDA

}  // namespace imgpipe::codecs
