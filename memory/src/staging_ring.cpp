#include "memory/staging_ring.hpp"

#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace imgpipe::memory {

std::string_view to_string(StagingMemory m) noexcept {
  switch (m) {
    case StagingMemory::write_combined: return "write_combined";
    case StagingMemory::pinned: return "pinned";
    default: return "pageable";
  }
}

struct StagingRing::Slot {
  PoolBlock block;
  // One release event per device that has read the slot; acquire() waits for
  // the last one recorded (streams of one device complete in order, and the
  // slot's users are serialised by the pipeline).
  std::map<int, gpu::Event> released;
  gpu::Event* last = nullptr;
};

void SlotWriter::write(std::size_t offset, const void* src, std::size_t bytes) const {
  if (offset > capacity_ || bytes > capacity_ - offset)
    throw std::out_of_range("staging slot write of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " passes the slot's end (" + std::to_string(capacity_) + ")");
  // A plain sequential memcpy: glibc streams large copies, which is what
  // write-combined memory wants. Never a read of the slot.
  std::memcpy(p_ + offset, src, bytes);
}

namespace {
PoolOptions pool_options(const StagingOptions& o) {
  PoolOptions p;
  p.device = o.device;
  p.budget_bytes = o.budget_bytes;
  p.fallback = o.fallback;
  p.track = o.track;
  p.name = "staging";
  if (o.device < 0 || o.memory == StagingMemory::pageable) {
    p.kind = MemoryKind::pageable;
    return p;
  }
  p.kind = o.memory == StagingMemory::write_combined ? MemoryKind::write_combined : MemoryKind::pinned;
  if (o.portable) p.extra_flags |= PinnedResource::portable;
  if (o.transfer == TransferMode::zero_copy) p.extra_flags |= PinnedResource::mapped;
  return p;
}
}  // namespace

StagingRing::StagingRing(int device, int slots, std::size_t slot_bytes, StagingMemory requested)
    : StagingRing(StagingOptions{device, slots, slot_bytes, requested}) {}

StagingRing::StagingRing(const StagingOptions& o) : slot_bytes_(o.slot_bytes) {
  if (o.slots < 2) throw std::invalid_argument("StagingRing: at least 2 slots are needed");
  if (o.slot_bytes == 0) throw std::invalid_argument("StagingRing: slot size is 0");
  pool_ = std::make_unique<PinnedPool>(pool_options(o));
  for (int i = 0; i < o.slots; ++i) {
    auto s = std::make_unique<Slot>();
    s->block = pool_->allocate_block(o.slot_bytes, 4096);
    // Fault every page in now, not on the hot path (a write: allowed for WC).
    std::memset(s->block.host, 0, o.slot_bytes);
    slots_.push_back(std::move(s));
  }
  // Every slot is asked for with the same kind; after a fallback they may
  // differ (a budget reached halfway): the ring reports the least capable.
  kind_ = slots_.front()->block.kind;
  zero_copy_ = o.transfer == TransferMode::zero_copy;
  for (const auto& s : slots_) {
    if (s->block.kind == MemoryKind::pageable) kind_ = MemoryKind::pageable;
    if (!s->block.device) zero_copy_ = false;
  }
  if (o.transfer == TransferMode::zero_copy && !zero_copy_)
    spdlog::warn("staging.transfer zero_copy: the slots are not mapped ({}); copying instead",
                 fallback_reason().empty() ? std::string("no CUDA device") : fallback_reason());
}

StagingRing::~StagingRing() {
  try {
    drain();
  } catch (...) {
    // A sticky CUDA error at shutdown: the memory is freed regardless.
  }
  for (auto& s : slots_) pool_->deallocate(s->block.host);
}

SlotWriter StagingRing::acquire() {
  Slot& s = *slots_[next_];
  const auto t0 = std::chrono::steady_clock::now();
  if (s.last) s.last->synchronize();
  wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  SlotWriter w(static_cast<unsigned char*>(s.block.host), slot_bytes_, next_);
  next_ = (next_ + 1) % slots();
  return w;
}

void StagingRing::copy_to_device(int slot, void* d_dst, std::size_t bytes, const gpu::Stream& stream) const {
  if (bytes > slot_bytes_) throw std::out_of_range("StagingRing::copy_to_device: more bytes than a slot holds");
  gpu::copy_h2d_async(d_dst, slots_.at(slot)->block.host, bytes, stream);
}

const void* StagingRing::device_pointer(int slot) const noexcept {
  return zero_copy_ ? slots_.at(slot)->block.device : nullptr;
}

void StagingRing::release(int slot, const gpu::Stream& stream) {
  Slot& s = *slots_.at(slot);
  if (stream.device() < 0) {
    s.last = nullptr;  // host work is done when it returns
    return;
  }
  auto it = s.released.find(stream.device());
  if (it == s.released.end()) it = s.released.emplace(stream.device(), gpu::Event(stream.device(), false)).first;
  it->second.record(stream);
  s.last = &it->second;
}

void StagingRing::drain() {
  for (auto& s : slots_)
    if (s->last) s->last->synchronize();
}

StagingMemory StagingRing::memory() const noexcept {
  switch (kind_) {
    case MemoryKind::pageable: return StagingMemory::pageable;
    case MemoryKind::write_combined: return StagingMemory::write_combined;
    default: return StagingMemory::pinned;
  }
}

std::size_t StagingRing::pinned_bytes() const noexcept { return pool_->stats().pinned_bytes; }

int StagingRing::fallbacks() const noexcept { return static_cast<int>(pool_->stats().fallbacks); }

std::string StagingRing::fallback_reason() const {
  std::string out;
  for (const auto& f : pool_->fallbacks()) {
    if (!out.empty()) out += "; ";
    out += std::string(to_string(f.from)) + " -> " + std::string(to_string(f.to)) + ": " + f.reason;
  }
  return out;
}

}  // namespace imgpipe::memory
