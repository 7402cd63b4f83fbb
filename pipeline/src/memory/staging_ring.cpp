#include "imgpipe/memory/staging_ring.hpp"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "imgpipe/memory/resources.hpp"

namespace imgpipe::memory {

std::string_view to_string(StagingMemory m) noexcept {
  switch (m) {
    case StagingMemory::write_combined: return "write_combined";
    case StagingMemory::pinned: return "pinned";
    default: return "pageable";
  }
}

struct StagingRing::Slot {
  PageableResource pageable;
  PinnedResource pinned;
  Allocation<PageableResource> host;
  Allocation<PinnedResource> page_locked;
  gpu::Event released;
  unsigned char* data() const {
    return static_cast<unsigned char*>(page_locked ? page_locked.get() : host.get());
  }
};

void SlotWriter::write(std::size_t offset, const void* src, std::size_t bytes) {
  if (offset > capacity_ || bytes > capacity_ - offset)
    throw std::out_of_range("staging slot write of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " passes the slot's end (" + std::to_string(capacity_) + ")");
  // A plain sequential memcpy: glibc streams large copies, which is what
  // write-combined memory wants. Never a read of the slot.
  std::memcpy(p_ + offset, src, bytes);
}

StagingRing::StagingRing(int device, int slots, std::size_t slot_bytes, StagingMemory requested)
    : slot_bytes_(slot_bytes), memory_(device < 0 ? StagingMemory::pageable : requested), device_(device) {
  if (slots < 2) throw std::invalid_argument("StagingRing: at least 2 slots are needed");
  if (slot_bytes == 0) throw std::invalid_argument("StagingRing: slot size is 0");
  // Every slot is the same kind: on failure free what was made and walk the
  // fallback chain write_combined -> pinned -> pageable.
  for (;;) {
    try {
      for (int i = 0; i < slots; ++i) {
        auto s = std::make_unique<Slot>();
        s->released = gpu::Event(device, false);
        if (memory_ == StagingMemory::pageable) {
          s->host = Allocation<PageableResource>(s->pageable, slot_bytes, 4096);
          std::memset(s->host.get(), 0, slot_bytes);  // fault the pages in now, not on the hot path
        } else {
          s->pinned = PinnedResource(memory_ == StagingMemory::write_combined ? PinnedResource::write_combined
                                                                               : PinnedResource::none);
          s->page_locked = Allocation<PinnedResource>(s->pinned, slot_bytes);
        }
        slots_.push_back(std::move(s));
      }
      return;
    } catch (const std::exception& e) {
      if (memory_ == StagingMemory::pageable) throw;
      slots_.clear();
      const StagingMemory next =
          memory_ == StagingMemory::write_combined ? StagingMemory::pinned : StagingMemory::pageable;
      ++fallbacks_;
      fallback_reason_ = std::string(to_string(memory_)) + " staging allocation of " + std::to_string(slots) +
                         " x " + std::to_string(slot_bytes) + " bytes failed (" + e.what() + "); using " +
                         std::string(to_string(next));
      spdlog::warn("{}", fallback_reason_);
      memory_ = next;
    }
  }
}

StagingRing::~StagingRing() {
  try {
    drain();
  } catch (...) {
    // A sticky CUDA error at shutdown: the memory is freed regardless.
  }
}

SlotWriter StagingRing::acquire() {
  Slot& s = *slots_[next_];
  const auto t0 = std::chrono::steady_clock::now();
  s.released.synchronize();
  wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  SlotWriter w(s.data(), slot_bytes_, next_);
  next_ = (next_ + 1) % slots();
  return w;
}

void StagingRing::copy_to_device(int slot, void* d_dst, std::size_t bytes, const gpu::Stream& stream) const {
  if (bytes > slot_bytes_) throw std::out_of_range("StagingRing::copy_to_device: more bytes than a slot holds");
  gpu::copy_h2d_async(d_dst, slots_.at(slot)->data(), bytes, stream);
}

void StagingRing::release(int slot, const gpu::Stream& stream) { slots_.at(slot)->released.record(stream); }

void StagingRing::drain() {
  for (auto& s : slots_) s->released.synchronize();
}

std::size_t StagingRing::pinned_bytes() const noexcept {
  return memory_ == StagingMemory::pageable ? 0 : slot_bytes_ * slots_.size();
}

}  // namespace imgpipe::memory
