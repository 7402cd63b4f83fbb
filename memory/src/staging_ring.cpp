#include "memory/staging_ring.hpp"

#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>

#include <spdlog/logger.h>

#include "imgpipe/log.hpp"
#include "memory/fault_injection.hpp"

namespace imgpipe::memory {

std::string_view to_string(StagingMemory m) noexcept {
  switch (m) {
    case StagingMemory::write_combined: return "write_combined";
    case StagingMemory::pinned: return "pinned";
    default: return "pageable";
  }
}

struct StagingRing::Slot {
  void* host = nullptr;
  void* device = nullptr;  // mapped slots only
  MemoryKind kind = MemoryKind::pageable;
  // One release event per device that has read the slot; acquire() waits for
  // the last one recorded (streams of one device complete in order, and the
  // slot's users are serialised by the pipeline).
  std::map<int, gpu::Event> released;
  gpu::Event* last = nullptr;
  bool held = false;  // acquired and not yet released
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
// A kind's step in the staging chain write_combined -> pinned (portable and
// mapped are pinned with flags) -> host_registered -> pageable.
int step(MemoryKind k) noexcept {
  switch (k) {
    case MemoryKind::write_combined: return 0;
    case MemoryKind::host_registered: return 2;
    case MemoryKind::pageable: return 3;
    default: return 1;
  }
}

HostChainOptions chain_options(const StagingOptions& o) {
  HostChainOptions c;
  c.device = o.device;
  c.budget_bytes = o.budget_bytes;
  c.fallback = o.fallback;
  c.name = "staging";
  if (o.device < 0 || o.memory == StagingMemory::pageable) {
    c.kind = MemoryKind::pageable;
    return c;
  }
  c.kind = o.memory == StagingMemory::write_combined ? MemoryKind::write_combined : MemoryKind::pinned;
  if (o.portable) c.extra_flags |= PinnedResource::portable;
  if (o.transfer == TransferMode::zero_copy) c.extra_flags |= PinnedResource::mapped;
  return c;
}
}  // namespace

StagingRing::StagingRing(int device, int slots, std::size_t slot_bytes, StagingMemory requested)
    : StagingRing(StagingOptions{device, slots, slot_bytes, requested}) {}

StagingRing::StagingRing(const StagingOptions& o) : slot_bytes_(o.slot_bytes) {
  if (o.slots < 2) throw std::invalid_argument("StagingRing: at least 2 slots are needed");
  if (o.slot_bytes == 0) throw std::invalid_argument("StagingRing: slot size is 0");
  chain_ = std::make_unique<HostMemoryChain>(chain_options(o));
  slot_resource_ = std::make_unique<FixedSlotResource>(*chain_, o.slot_bytes, static_cast<std::size_t>(o.slots));
  if (o.track) tracker_ = std::make_unique<TrackingAdaptor<FixedSlotResource>>(*slot_resource_, "staging");
  for (int i = 0; i < o.slots; ++i) {
    auto s = std::make_unique<Slot>();
    s->host = allocate_slot(o.slot_bytes);
    s->kind = chain_->kind_of(s->host);
    s->device = chain_->device_pointer(s->host);
    // Fault every page in now, not on the hot path (a write: allowed for WC).
    std::memset(s->host, 0, o.slot_bytes);
    slots_.push_back(std::move(s));
  }
  // Every slot is asked for with the same kind; after a fallback they may
  // differ (a budget reached, a failure halfway): kind(slot) tells each, and
  // the ring reports the furthest step down the chain that a slot took.
  kind_ = slots_.front()->kind;
  zero_copy_ = o.transfer == TransferMode::zero_copy;
  for (const auto& s : slots_) {
    if (step(s->kind) > step(kind_)) kind_ = s->kind;
    if (!s->device) zero_copy_ = false;
  }
  if (o.transfer == TransferMode::zero_copy && !zero_copy_)
    imgpipe::logger()->warn("staging.transfer zero_copy: the slots are not mapped ({}); copying instead",
                            fallback_reason().empty() ? std::string("no CUDA device") : fallback_reason());
}

void* StagingRing::allocate_slot(std::size_t bytes) {
  if (tracker_) return tracker_->allocate(bytes, FixedSlotResource::slot_alignment);
  return slot_resource_->allocate(bytes, FixedSlotResource::slot_alignment);
}

StagingRing::~StagingRing() {
  try {
    drain();
  } catch (...) {
    // A sticky CUDA error at shutdown: the memory is freed regardless.
  }
  for (auto& s : slots_) {
    if (tracker_)
      tracker_->deallocate(s->host, slot_bytes_, FixedSlotResource::slot_alignment);
    else
      slot_resource_->deallocate(s->host, slot_bytes_, FixedSlotResource::slot_alignment);
  }
  // Members then go in reverse order: tracker, slot resource (returns the
  // blocks to the chain), chain.
}

SlotWriter StagingRing::acquire() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lk(m_);
  // The next slot in ring order that is not held; with every slot held
  // (a consumer of the pull API keeps batches), wait for a release.
  auto free_slot = [&]() -> int {
    for (int k = 0; k < slots(); ++k) {
      const int i = (next_ + k) % slots();
      if (!slots_[i]->held) return i;
    }
    return -1;
  };
  int i = free_slot();
  while (i < 0) {
    if (abandoned_) throw RingAbandoned("staging ring: every slot is held and the run was abandoned");
    released_cv_.wait(lk);
    i = free_slot();
  }
  Slot& s = *slots_[i];
  s.held = true;
  gpu::Event* last = s.last;
  next_ = (i + 1) % slots();
  ++acquires_;
  lk.unlock();
  if (last) {
    try {
      last->synchronize();  // the GPU work that read it last
    } catch (...) {
      // Not handed out: the slot is not held (a later acquire waits again).
      lk.lock();
      s.held = false;
      --acquires_;
      lk.unlock();
      released_cv_.notify_all();
      throw;
    }
  }
  wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  return SlotWriter(static_cast<unsigned char*>(s.host), slot_bytes_, i);
}

void StagingRing::copy_to_device(int slot, void* d_dst, std::size_t bytes, const gpu::Stream& stream) const {
  copy_to_device(slot, 0, d_dst, bytes, stream);
}

void StagingRing::copy_to_device(int slot, std::size_t offset, void* d_dst, std::size_t bytes,
                                 const gpu::Stream& stream) const {
  if (offset > slot_bytes_ || bytes > slot_bytes_ - offset)
    throw std::out_of_range("StagingRing::copy_to_device: past the end of the slot");
  gpu::copy_h2d_async(d_dst, static_cast<const char*>(slots_.at(slot)->host) + offset, bytes, stream);
}

gpu::DeviceAddress StagingRing::device_pointer(int slot) const {
  const Slot& s = *slots_.at(slot);
  return zero_copy_ ? gpu::DeviceAddress(s.device) : gpu::DeviceAddress();
}

void StagingRing::release(int slot, const gpu::Stream& stream) {
  {
    std::lock_guard lk(m_);
    Slot& s = *slots_.at(slot);
    // The event first: making or recording it can throw (a stream of another
    // device, a sticky error), and then the slot stays held with the event
    // it had. A failed record leaves an event unrecorded, never s.last.
    fault_injection::check_release();
    gpu::Event* done = nullptr;  // host work is done when it returns
    if (stream.device() >= 0) {
      auto it = s.released.find(stream.device());
      if (it == s.released.end()) it = s.released.emplace(stream.device(), gpu::Event(stream.device(), false)).first;
      it->second.record(stream);
      done = &it->second;
    }
    s.last = done;
    s.held = false;
    ++releases_;
  }
  released_cv_.notify_all();
}

bool StagingRing::release_or_wait(int slot, const gpu::Stream& stream) noexcept {
  if (slot < 0 || slot >= slots()) return false;
  try {
    release(slot, stream);
    return true;
  } catch (const std::exception& e) {
    try {
      imgpipe::logger()->error("staging slot {}: its release failed ({}); freeing it after its stream's work instead",
                               slot, e.what());
    } catch (...) {
    }
  } catch (...) {
  }
  try {
    stream.synchronize();
  } catch (...) {
    // A sticky error: the device runs nothing more, nothing reads the slot.
  }
  {
    std::lock_guard lk(m_);
    Slot& s = *slots_[static_cast<std::size_t>(slot)];
    s.last = nullptr;
    s.held = false;
    ++releases_;
  }
  released_cv_.notify_all();
  return false;
}

MemoryKind StagingRing::kind(int slot) const { return slots_.at(static_cast<std::size_t>(slot))->kind; }

void StagingRing::abandon(bool on) {
  {
    std::lock_guard lk(m_);
    abandoned_ = on;
  }
  released_cv_.notify_all();
}

int StagingRing::held() const {
  std::lock_guard lk(m_);
  int n = 0;
  for (const auto& s : slots_) n += s->held ? 1 : 0;
  return n;
}

void StagingRing::drain() {
  std::vector<gpu::Event*> last;
  {
    std::lock_guard lk(m_);
    for (auto& s : slots_)
      if (s->last) last.push_back(s->last);
  }
  for (gpu::Event* e : last) e->synchronize();
}

StagingMemory StagingRing::memory() const noexcept {
  switch (kind_) {
    case MemoryKind::pageable: return StagingMemory::pageable;
    case MemoryKind::write_combined: return StagingMemory::write_combined;
    default: return StagingMemory::pinned;
  }
}

std::size_t StagingRing::pinned_bytes() const noexcept { return chain_->page_locked().bytes; }

int StagingRing::fallbacks() const noexcept { return static_cast<int>(chain_->fallback_count()); }

std::vector<FallbackRecord> StagingRing::fallback_records() const { return chain_->fallbacks(); }

std::string StagingRing::fallback_reason() const {
  std::string out;
  for (const auto& f : chain_->fallbacks()) {
    if (!out.empty()) out += "; ";
    out += std::string(to_string(f.from)) + " -> " + std::string(to_string(f.to)) + ": " + f.reason;
  }
  return out;
}

StagingStats StagingRing::stats() const {
  const AllocationStats locked = chain_->page_locked();
  StagingStats s;
  s.pinned_bytes = locked.bytes;
  s.pinned_peak = locked.peak_bytes;
  s.hits = acquires_.load();
  s.misses = slot_resource_->upstream_allocations();
  s.fallbacks = chain_->fallback_count();
  return s;
}

std::string StagingRing::tracking_report() const { return tracker_ ? tracker_->leak_report() : std::string(); }

}  // namespace imgpipe::memory
