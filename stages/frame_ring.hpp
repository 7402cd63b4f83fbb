// Where each GPU decode call's frames go in a device's frame area, used as a
// ring: a call takes one contiguous range after the previous call's, and
// wraps to the start when the rest of the area is too short. Before the
// engines write a range (they write when called, whatever the stream
// holds), every earlier use of it must be finished: place() hands the caller
// each use that may overlap, oldest first, to wait for. A use's Payload is
// what the caller waits on (a CUDA event recorded after the kernels that
// read the frames; an int in the tests).
//
// Positions are linear (they only grow); a range's place in the area is its
// position modulo the capacity, and no range crosses the end of the area.
#pragma once

#include <cstddef>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>

namespace imgpipe::stages {

template <class Payload>
class FrameRing {
 public:
  explicit FrameRing(std::size_t capacity) : capacity_(capacity) {}

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t uses() const noexcept { return uses_.size(); }

  // Reserves `bytes` (0 < bytes <= capacity) after the last range and
  // returns its offset from the area's start. Each earlier use the range may
  // overlap is passed to wait(Payload&) and forgotten (oldest first; a use
  // wholly outside the range may be among them: waiting for it is harmless,
  // the uses are in order). Then the range is the newest use, with `payload`.
  // Throws std::invalid_argument when bytes is 0 or exceeds the capacity.
  template <class Wait>
  std::size_t place(std::size_t bytes, Payload payload, Wait&& wait) {
    if (bytes == 0 || bytes > capacity_)
      throw std::invalid_argument("FrameRing::place: a range of " + std::to_string(bytes) +
                                  " bytes in an area of " + std::to_string(capacity_));
    std::size_t start = head_;
    const std::size_t in_lap = start % capacity_;
    if (in_lap + bytes > capacity_) start += capacity_ - in_lap;  // to the start of the area
    const std::size_t end = start + bytes;
    // A use that begins at or after end - capacity lies in the part of the
    // last lap this range does not cover; the older ones may overlap.
    while (!uses_.empty() && uses_.front().lo + capacity_ < end) {
      wait(uses_.front().payload);
      uses_.pop_front();
    }
    uses_.push_back({start, std::move(payload)});
    head_ = end;
    return start % capacity_;
  }

  // The newest use's payload (the last place()'s); precondition: uses() > 0.
  Payload& newest() { return uses_.back().payload; }

  // Forgets every use (their work is known to be done) and starts again at
  // the area's start.
  template <class Drop>
  void clear(Drop&& drop) {
    for (Use& u : uses_) drop(u.payload);
    uses_.clear();
    head_ = 0;
  }

 private:
  struct Use {
    std::size_t lo;
    Payload payload;
  };
  std::size_t capacity_;
  std::size_t head_ = 0;
  std::deque<Use> uses_;
};

}  // namespace imgpipe::stages
