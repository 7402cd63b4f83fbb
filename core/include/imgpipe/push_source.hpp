// A source the application feeds: encoded images (bytes from a network, a
// file it already read) or decoded frames (a camera's, any BGR/RGB/grey u8
// buffer with a row stride), each with the application's own id, from any
// thread. A bounded queue: push() says when it is full or closed instead of
// buffering without end. Give it to RunOptions::source; the run then takes
// its inputs from here (input.paths is not read) until close() and the queue
// is empty, or until the run is stopped.
//
//   auto src = std::make_shared<imgpipe::PushSource>(64);
//   auto stream = pipeline.start({.source = src});
//   // any thread:
//   src->push_frame({frame.data, frame.cols, frame.rows, frame.step, imgpipe::PixelFormat::bgr}, "cam0/42");
//   src->close();
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace imgpipe {

enum class PixelFormat : std::uint8_t { bgr, rgb, gray };

// A decoded frame the caller owns: u8, interleaved, `stride` bytes from one
// row's start to the next (at least width x channels). push_frame() copies it.
struct FrameRef {
  const void* data = nullptr;
  int width = 0;
  int height = 0;
  std::size_t stride = 0;  // 0: rows are packed (width x channels)
  PixelFormat format = PixelFormat::bgr;
};

// One queued input, as the run's source stage takes it.
struct PushedItem {
  std::string id;  // SampleId::path and the name in reports
  std::int64_t label = -1;
  bool encoded = true;              // bytes hold an encoded image; else a packed BGR u8 frame
  std::vector<unsigned char> bytes;
  int width = 0, height = 0;        // the frame's size (encoded == false)
  std::chrono::steady_clock::time_point pushed;  // when push() accepted it (latency starts here)
};

class PushSource {
 public:
  enum class Result : std::uint8_t {
    ok,      // queued
    full,    // the queue held `capacity` items for the whole wait: nothing queued
    closed,  // close() was called (or the run was stopped): nothing queued
  };

  // Throws std::invalid_argument for capacity 0.
  explicit PushSource(std::size_t capacity = 64);
  PushSource(const PushSource&) = delete;
  PushSource& operator=(const PushSource&) = delete;

  // Queues an encoded image (JPEG, PNG, BMP, WebP or TIFF; decoded and
  // checked like a file's bytes). `wait`: how long to wait for room when
  // the queue is full (zero: not at all; wait_forever: until there is room
  // or the source is closed). `label`: the sample's label (-1: none).
  Result push_encoded(std::vector<unsigned char> bytes, std::string id,
                      std::chrono::milliseconds wait = std::chrono::milliseconds::zero(), std::int64_t label = -1);
  Result push_encoded(const void* data, std::size_t size, std::string id,
                      std::chrono::milliseconds wait = std::chrono::milliseconds::zero(), std::int64_t label = -1);
  // Queues a copy of a decoded frame (converted to BGR). Throws
  // std::invalid_argument for a null pointer, a size below 1 or a stride
  // smaller than a row.
  Result push_frame(const FrameRef& frame, std::string id,
                    std::chrono::milliseconds wait = std::chrono::milliseconds::zero(), std::int64_t label = -1);

  // No more items: the run ends once the queued ones are through. Any thread; idempotent.
  void close();
  bool closed() const;
  std::size_t size() const;
  std::size_t capacity() const noexcept { return capacity_; }
  // Items accepted since construction.
  std::uint64_t pushed() const;

  static constexpr std::chrono::milliseconds wait_forever = std::chrono::milliseconds::max();

  // For the run's source stage: waits up to `timeout` for an item. Returns
  // `got` when `out` was filled, `empty` on time-out, `end` when closed and
  // drained.
  enum class Take : std::uint8_t { got, empty, end };
  Take take(PushedItem& out, std::chrono::steady_clock::duration timeout);

 private:
  Result enqueue(PushedItem&& item, std::chrono::milliseconds wait);
  const std::size_t capacity_;
  mutable std::mutex m_;
  std::condition_variable not_full_, not_empty_;
  std::deque<PushedItem> queue_;
  bool closed_ = false;
  std::uint64_t pushed_ = 0;
};

}  // namespace imgpipe
