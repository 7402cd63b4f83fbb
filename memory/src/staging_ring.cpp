#include "memory/staging_ring.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
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
  // A fixed table, not a vector: writers of the slot's earlier chunks read
  // their entries while the slot's holder adds one.
  std::array<SlotChunk, kMaxChunks> chunks{};
  int count = 0;              // chunks made
  std::size_t capacity = 0;   // their room
  bool pooled = false;        // chunks[0] is a block of the FixedSlotResource (made at construction)
  // One release event per device that has read the slot; acquire() waits for
  // the last one recorded (streams of one device complete in order, and the
  // slot's users are serialised by the pipeline).
  std::map<int, gpu::Event> released;
  gpu::Event* last = nullptr;
  bool held = false;    // acquired and not yet released
  bool handed = false;  // acquired at least once (its pages written)
};

namespace {
// How long acquire() waits, with prefer_written, for a slot handed out
// before to come back before it hands out a fresh one: longer than a quick
// consumer takes to finish a batch (the last samples' copies, then the
// sink), and paid at most once per fresh slot when the consumer is slow
// (docs/benchmarks.md, "Host video").
constexpr auto kFreshWait = std::chrono::milliseconds(100);

// Calls f(host, done, n) for each piece of [offset, offset + bytes) of a
// slot, chunk by chunk in order: `host` the piece's first byte, `done` the
// bytes of the range before it, `n` its length. Looks at the chunks up to the
// range's end only.
template <typename F>
void for_each_span(const SlotChunk* chunks, std::size_t offset, std::size_t bytes, F&& f) {
  std::size_t done = 0;
  for (const SlotChunk* c = chunks; done < bytes; ++c) {
    if (offset >= c->offset + c->bytes) continue;
    const std::size_t at = offset - c->offset;
    const std::size_t n = std::min(bytes - done, c->bytes - at);
    f(c->host + at, done, n);
    done += n;
    offset += n;
  }
}
}  // namespace

void SlotWriter::write(std::size_t offset, const void* src, std::size_t bytes) const {
  if (offset > capacity_ || bytes > capacity_ - offset)
    throw std::out_of_range("staging slot write of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " passes the slot's end (" + std::to_string(capacity_) + ")");
  // A plain sequential memcpy per chunk: glibc streams large copies, which
  // is what write-combined memory wants. Never a read of the slot. Only the
  // chunks up to the range's end are looked at: they existed when this
  // writer was made (the holder may be adding a later one).
  const auto* from = static_cast<const unsigned char*>(src);
  for_each_span(chunks_, offset, bytes, [&](unsigned char* host, std::size_t done, std::size_t n) {
    std::memcpy(host, from + done, n);
  });
}

unsigned char* SlotWriter::plain_span(std::size_t offset, std::size_t bytes) const {
  if (offset > capacity_ || bytes > capacity_ - offset)
    throw std::out_of_range("staging slot span of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " passes the slot's end (" + std::to_string(capacity_) + ")");
  for (const SlotChunk* c = chunks_;; ++c) {
    if (offset >= c->offset + c->bytes) continue;
    if (c->kind != MemoryKind::pageable || offset + bytes > c->offset + c->bytes) return nullptr;
    return c->host + (offset - c->offset);
  }
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

std::size_t whole_pages(std::size_t bytes) {
  constexpr std::size_t page = FixedSlotResource::slot_alignment;
  return std::max<std::size_t>((bytes + page - 1) / page, 1) * page;
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

StagingRing::StagingRing(const StagingOptions& o) : slot_bytes_(o.slot_bytes), prefer_written_(o.prefer_written) {
  if (o.slots < 2) throw std::invalid_argument("StagingRing: at least 2 slots are needed");
  if (o.slot_bytes == 0) throw std::invalid_argument("StagingRing: slot size is 0");
  // Kernels read a zero-copy slot in place, as one mapped block: made whole.
  const bool whole = o.transfer == TransferMode::zero_copy;
  initial_bytes_ = whole || o.initial_bytes == 0 ? o.slot_bytes : std::min(o.initial_bytes, o.slot_bytes);
  const int made = whole || o.initial_slots < 0 ? o.slots : std::min(o.initial_slots, o.slots);
  const HostChainOptions chain = chain_options(o);
  kind_ = chain.kind;
  chain_ = std::make_unique<HostMemoryChain>(chain);
  if (made > 0) {
    slot_resource_ = std::make_unique<FixedSlotResource>(*chain_, initial_bytes_, static_cast<std::size_t>(made));
    if (o.track) tracker_ = std::make_unique<TrackingAdaptor<FixedSlotResource>>(*slot_resource_, "staging");
  }
  if (o.track) grow_tracker_ = std::make_unique<TrackingAdaptor<HostMemoryChain>>(*chain_, "staging (grown)");
  for (int i = 0; i < o.slots; ++i) {
    auto s = std::make_unique<Slot>();
    if (i < made) add_chunk(*s, initial_bytes_, true);
    slots_.push_back(std::move(s));
  }
  // Every chunk is asked for with the same kind; after a fallback they may
  // differ (a budget reached, a failure halfway): kind(slot) tells each
  // slot's, and the ring reports the furthest step down the chain that a
  // chunk took (add_chunk).
  zero_copy_ = whole;
  for (const auto& s : slots_)
    for (int k = 0; k < s->count; ++k)
      if (!s->chunks[k].device) zero_copy_ = false;
  if (o.transfer == TransferMode::zero_copy && !zero_copy_)
    imgpipe::logger()->warn("staging.transfer zero_copy: the slots are not mapped ({}); copying instead",
                            fallback_reason().empty() ? std::string("no CUDA device") : fallback_reason());
}

void StagingRing::add_chunk(Slot& s, std::size_t bytes, bool initial) {
  if (s.count == kMaxChunks) throw std::logic_error("StagingRing: a slot has all its chunks");
  constexpr std::size_t align = FixedSlotResource::slot_alignment;
  void* p = nullptr;
  if (initial)
    p = tracker_ ? tracker_->allocate(bytes, align) : slot_resource_->allocate(bytes, align);
  else
    p = grow_tracker_ ? grow_tracker_->allocate(whole_pages(bytes), align) : chain_->allocate(whole_pages(bytes), align);
  SlotChunk c;
  c.host = static_cast<unsigned char*>(p);
  c.kind = chain_->kind_of(p);
  c.device = chain_->device_pointer(p);
  c.offset = s.capacity;
  c.bytes = bytes;
  // Fault every page in now, not on the hot path (a write: allowed for WC);
  // plain memory on huge pages (page-locked memory is the driver's). On the
  // host backend no copy engine reads the slots and a slot is made whole
  // when the run's size is not known (plan_staging): its pages fault in as
  // the packer writes them, so a short run touches what it carries only.
  if (c.kind == MemoryKind::pageable) gpu::advise_huge_pages(c.host, bytes);
  if (chain_->options().device >= 0) std::memset(c.host, 0, bytes);
  s.chunks[static_cast<std::size_t>(s.count)] = c;
  if (s.count == 0) s.pooled = initial;
  ++s.count;
  s.capacity += bytes;
  staged_bytes_ += bytes;
  if (step(c.kind) > step(kind_.load())) kind_ = c.kind;  // one thread adds chunks: the packer (or the constructor)
}

void StagingRing::free_chunk(const SlotChunk& c, bool pooled) noexcept {
  constexpr std::size_t align = FixedSlotResource::slot_alignment;
  if (pooled) {
    if (tracker_) tracker_->deallocate(c.host, initial_bytes_, align);
    else slot_resource_->deallocate(c.host, initial_bytes_, align);
  } else if (grow_tracker_) {
    grow_tracker_->deallocate(c.host, whole_pages(c.bytes), align);
  } else {
    chain_->deallocate(c.host, whole_pages(c.bytes), align);
  }
}

SlotWriter StagingRing::grow(int slot, std::size_t bytes) {
  Slot& s = *slots_.at(static_cast<std::size_t>(slot));
  if (bytes > slot_bytes_)
    throw std::out_of_range("StagingRing::grow: " + std::to_string(bytes) + " bytes are more than a slot holds (" +
                            std::to_string(slot_bytes_) + ")");
  {
    std::lock_guard lk(m_);
    if (!s.held) throw std::logic_error("StagingRing::grow: slot " + std::to_string(slot) + " is not held");
  }
  if (bytes > s.capacity) {
    if (zero_copy_) throw std::logic_error("StagingRing::grow: a zero-copy slot is one mapped block");
    // Page-locked memory of the ring's device's context (the holder's thread
    // may have another current), as the constructor's; no CUDA call at all
    // on the host backend.
    std::optional<gpu::CurrentDeviceGuard> on;
    if (chain_->options().device >= 0) on.emplace(chain_->options().device);
    std::size_t target = s.count == 0 ? initial_bytes_ : s.capacity > slot_bytes_ / 2 ? slot_bytes_ : 2 * s.capacity;
    target = std::min(std::max(target, bytes), slot_bytes_);
    if (s.count == kMaxChunks - 1) target = slot_bytes_;
    add_chunk(s, target - s.capacity, false);
    ++grown_;
    imgpipe::logger()->debug("staging slot {} grew to {} bytes ({} chunk(s), {})", slot, s.capacity, s.count,
                             to_string(s.chunks[static_cast<std::size_t>(s.count - 1)].kind));
  }
  return SlotWriter(s.chunks.data(), s.capacity, slot);
}

StagingRing::~StagingRing() {
  try {
    drain();
  } catch (...) {
    // A sticky CUDA error at shutdown: the memory is freed regardless.
  }
  for (auto& s : slots_)
    for (int k = 0; k < s->count; ++k) free_chunk(s->chunks[static_cast<std::size_t>(k)], k == 0 && s->pooled);
  // Members then go in reverse order: trackers, slot resource (returns the
  // blocks to the chain), chain.
}

SlotWriter StagingRing::acquire() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lk(m_);
  // The next slot in ring order that is not held; with every slot held
  // (a consumer of the pull API keeps batches), wait for a release.
  auto free_slot = [&]() -> int {
    int fresh = -1;
    for (int k = 0; k < slots(); ++k) {
      const int i = (next_ + k) % slots();
      if (slots_[i]->held) continue;
      if (!prefer_written_ || slots_[i]->handed) return i;
      if (fresh < 0) fresh = i;
    }
    return fresh;
  };
  int i = free_slot();
  if (prefer_written_ && i >= 0 && !slots_[i]->handed) {
    // Only fresh slots are free: one handed out before may come back soon.
    const bool any_handed = std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->handed; });
    if (any_handed)
      released_cv_.wait_for(lk, kFreshWait, [&] {
        const int j = free_slot();
        return abandoned_ || (j >= 0 && slots_[j]->handed);
      });
    i = free_slot();
  }
  while (i < 0) {
    if (abandoned_) throw RingAbandoned("staging ring: every slot is held and the run was abandoned");
    released_cv_.wait(lk);
    i = free_slot();
  }
  Slot& s = *slots_[i];
  s.held = true;
  s.handed = true;
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
  return SlotWriter(s.chunks.data(), s.capacity, i);
}

void StagingRing::copy_to_device(int slot, void* d_dst, std::size_t bytes, const gpu::Stream& stream) const {
  copy_to_device(slot, 0, d_dst, bytes, stream);
}

void StagingRing::copy_to_device(int slot, std::size_t offset, void* d_dst, std::size_t bytes,
                                 const gpu::Stream& stream) const {
  const Slot& s = *slots_.at(static_cast<std::size_t>(slot));
  if (offset > s.capacity || bytes > s.capacity - offset)
    throw std::out_of_range("StagingRing::copy_to_device: past the end of the slot");
  auto* to = static_cast<unsigned char*>(d_dst);
  for_each_span(s.chunks.data(), offset, bytes, [&](unsigned char* host, std::size_t done, std::size_t n) {
    gpu::copy_h2d_async(to + done, host, n, stream);  // one copy per chunk the range spans
  });
}

const unsigned char* StagingRing::host_block(int slot) const {
  const Slot& s = *slots_.at(static_cast<std::size_t>(slot));
  return s.count == 1 && s.chunks[0].kind == MemoryKind::pageable ? s.chunks[0].host : nullptr;
}

gpu::DeviceAddress StagingRing::device_pointer(int slot) const {
  const Slot& s = *slots_.at(static_cast<std::size_t>(slot));
  return zero_copy_ && s.count > 0 ? gpu::DeviceAddress(s.chunks[0].device) : gpu::DeviceAddress();
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

MemoryKind StagingRing::kind(int slot) const {
  const Slot& s = *slots_.at(static_cast<std::size_t>(slot));
  MemoryKind k = s.count > 0 ? s.chunks[0].kind : MemoryKind::pageable;
  for (int i = 1; i < s.count; ++i)
    if (step(s.chunks[static_cast<std::size_t>(i)].kind) > step(k)) k = s.chunks[static_cast<std::size_t>(i)].kind;
  return k;
}

std::size_t StagingRing::capacity(int slot) const { return slots_.at(static_cast<std::size_t>(slot))->capacity; }

void StagingRing::rewind() {
  std::lock_guard lk(m_);
  next_ = 0;
}

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
  switch (kind_.load()) {
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
  s.misses = (slot_resource_ ? slot_resource_->upstream_allocations() : 0) + grown_.load();
  s.staged_bytes = staged_bytes_.load();
  s.grown = grown_.load();
  s.fallbacks = chain_->fallback_count();
  return s;
}

std::string StagingRing::tracking_report() const {
  std::string out = tracker_ ? tracker_->leak_report() : std::string();
  if (grow_tracker_) out += grow_tracker_->leak_report();
  return out;
}

}  // namespace imgpipe::memory
