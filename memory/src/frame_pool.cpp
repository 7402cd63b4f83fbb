#include "memory/frame_pool.hpp"

#include <algorithm>
#include <stdexcept>

#include "memory/gpu.hpp"

namespace imgpipe::memory {

namespace {
constexpr std::size_t kPage = 4096;

HostChainOptions chain_options(const FramePoolOptions& o) {
  HostChainOptions c;
  c.kind = o.device < 0 || !o.page_locked ? MemoryKind::pageable : MemoryKind::pinned;
  c.extra_flags = o.portable ? PinnedResource::portable : 0u;
  c.budget_bytes = o.budget_bytes;
  c.fallback = true;  // past the budget: pageable blocks, copied as before
  c.device = o.device;
  c.name = "video frames";
  return c;
}
}  // namespace

FramePool::FramePool(FramePoolOptions options) : opt_(options), chain_(chain_options(options)) {}

FramePool::~FramePool() {
  for (auto& [p, info] : blocks_) chain_.deallocate(const_cast<void*>(p), info.bytes, kPage);
}

std::vector<std::pair<void*, FramePool::Info>> FramePool::take_idle_other_than(std::size_t bytes) {
  std::vector<std::pair<void*, Info>> out;
  for (auto it = idle_.begin(); it != idle_.end();) {
    if (it->first == bytes) {
      ++it;
      continue;
    }
    auto b = blocks_.find(it->second);
    out.emplace_back(it->second, b->second);
    if (b->second.locked) figures_.page_locked_bytes -= it->first;
    figures_.idle_bytes -= it->first;
    ++figures_.blocks_freed;
    blocks_.erase(b);
    it = idle_.erase(it);
  }
  return out;
}

FramePool::Block FramePool::allocate(std::size_t bytes) {
  if (bytes == 0) throw std::invalid_argument("FramePool: a block of 0 bytes");
  const std::size_t size = (bytes + kPage - 1) / kPage * kPage;
  const bool pinning = opt_.page_locked && !chain_.host_backend();
  std::vector<std::pair<void*, Info>> freed;
  {
    std::lock_guard lk(m_);
    if (auto it = idle_.find(size); it != idle_.end()) {
      void* p = it->second;
      idle_.erase(it);
      Info& info = blocks_.at(p);
      info.idle = false;
      figures_.idle_bytes -= size;
      ++figures_.reused;
      return {p, size, info.direct};
    }
    // Blocks of a size no decoder asks for now (a finished video's) go before
    // the budget turns new blocks pageable.
    if ((pinning && opt_.budget_bytes > 0 && figures_.page_locked_bytes + size > opt_.budget_bytes) ||
        figures_.idle_bytes > opt_.idle_bytes)
      freed = take_idle_other_than(size);
  }
  for (const auto& [p, info] : freed) chain_.deallocate(p, info.bytes, kPage);
  // The decoders' threads have no device of their own: pin from the run's
  // (a thread's first CUDA call would otherwise start device 0's context).
  if (pinning) gpu::set_device(opt_.device);
  void* p = chain_.allocate(size, kPage);
  const MemoryKind kind = chain_.kind_of(p);
  const bool direct = direct_kind(kind);
  const bool locked = is_page_locked(kind) && !chain_.host_backend();
  std::lock_guard lk(m_);
  blocks_[p] = Info{size, direct, locked, false};
  ++figures_.blocks_made;
  if (opt_.page_locked && !direct) ++figures_.pageable_blocks;
  if (locked) {
    figures_.page_locked_bytes += size;
    figures_.peak_page_locked_bytes = std::max(figures_.peak_page_locked_bytes, figures_.page_locked_bytes);
  }
  return {p, size, direct};
}

void FramePool::release(void* p) noexcept {
  std::lock_guard lk(m_);
  auto it = blocks_.find(p);
  if (it == blocks_.end() || it->second.idle) return;
  it->second.idle = true;
  idle_.emplace(it->second.bytes, p);
  figures_.idle_bytes += it->second.bytes;
}

bool FramePool::direct_kind(MemoryKind k) const noexcept {
  return opt_.page_locked && (is_page_locked(k) || chain_.host_backend());
}

bool FramePool::direct(const void* p) const {
  std::lock_guard lk(m_);
  auto it = blocks_.find(p);
  return it != blocks_.end() && !it->second.idle && it->second.direct;
}

FramePool::Figures FramePool::figures() const {
  std::lock_guard lk(m_);
  return figures_;
}

void FramePool::begin_run() {
  std::lock_guard lk(m_);
  Figures f;
  f.page_locked_bytes = f.peak_page_locked_bytes = figures_.page_locked_bytes;
  f.idle_bytes = figures_.idle_bytes;
  figures_ = f;
}

}  // namespace imgpipe::memory
