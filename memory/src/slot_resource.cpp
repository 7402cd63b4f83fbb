#include "memory/slot_resource.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>

#include <spdlog/logger.h>

#include "imgpipe/log.hpp"

namespace imgpipe::memory {

FixedSlotResource::FixedSlotResource(HostResourceRef upstream, std::size_t slot_bytes, std::size_t count)
    : upstream_(upstream),
      slot_bytes_(std::max<std::size_t>((slot_bytes + slot_alignment - 1) / slot_alignment, 1) * slot_alignment) {
  if (count == 0) throw std::invalid_argument("FixedSlotResource: at least one slot is needed");
  blocks_.reserve(count);
  try {
    for (std::size_t i = 0; i < count; ++i) blocks_.push_back(upstream_.allocate(slot_bytes_, slot_alignment));
  } catch (...) {
    for (void* p : blocks_) upstream_.deallocate(p, slot_bytes_, slot_alignment);
    throw;
  }
  // allocate() takes from the back: the first slot made is handed out first.
  free_.assign(blocks_.rbegin(), blocks_.rend());
}

FixedSlotResource::~FixedSlotResource() {
  if (free_.size() != blocks_.size())
    imgpipe::logger()->warn(
        "FixedSlotResource: {} of {} slot(s) still allocated at destruction; returning them upstream",
        blocks_.size() - free_.size(), blocks_.size());
  for (void* p : blocks_) upstream_.deallocate(p, slot_bytes_, slot_alignment);
}

void* FixedSlotResource::allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > slot_alignment)
    throw std::invalid_argument("FixedSlotResource: alignment must be a power of two no larger than 4096");
  if (bytes > slot_bytes_)
    throw std::invalid_argument("FixedSlotResource: " + std::to_string(bytes) + " bytes do not fit a slot of " +
                                std::to_string(slot_bytes_));
  std::lock_guard lock(m_);
  if (free_.empty()) throw std::bad_alloc();
  void* p = free_.back();
  free_.pop_back();
  ++hits_;
  return p;
}

void FixedSlotResource::deallocate(void* p, std::size_t, std::size_t) noexcept {
  if (!p) return;
  std::lock_guard lock(m_);
  const bool ours = std::find(blocks_.begin(), blocks_.end(), p) != blocks_.end();
  const bool is_free = std::find(free_.begin(), free_.end(), p) != free_.end();
  if (!ours || is_free) {
    imgpipe::logger()->error("FixedSlotResource: deallocate of {} {}; ignored", p,
                             ours ? "a slot that is already free" : "a pointer that is not a slot");
    return;
  }
  free_.push_back(p);  // cannot throw: capacity is reserved for every slot
}

std::size_t FixedSlotResource::free_slots() const {
  std::lock_guard lock(m_);
  return free_.size();
}

std::uint64_t FixedSlotResource::hits() const {
  std::lock_guard lock(m_);
  return hits_;
}

}  // namespace imgpipe::memory
