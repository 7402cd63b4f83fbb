#include "imgpipe/push_source.hpp"

#include <cstring>
#include <stdexcept>

namespace imgpipe {

namespace {

int channels_of(PixelFormat f) noexcept { return f == PixelFormat::gray ? 1 : 3; }

// The frame as packed BGR u8 (what the decode stage produces for files).
std::vector<unsigned char> to_packed_bgr(const FrameRef& f) {
  const int ch = channels_of(f.format);
  const std::size_t row = static_cast<std::size_t>(f.width) * ch;
  const std::size_t stride = f.stride ? f.stride : row;
  if (stride < row)
    throw std::invalid_argument("PushSource::push_frame: stride " + std::to_string(stride) + " is smaller than a row (" +
                                std::to_string(row) + " bytes)");
  std::vector<unsigned char> out(static_cast<std::size_t>(f.width) * f.height * 3);
  const auto* src = static_cast<const unsigned char*>(f.data);
  unsigned char* dst = out.data();
  for (int y = 0; y < f.height; ++y, src += stride) {
    switch (f.format) {
      case PixelFormat::bgr: std::memcpy(dst, src, row); dst += row; break;
      case PixelFormat::rgb:
        for (int x = 0; x < f.width; ++x, dst += 3) {
          dst[0] = src[3 * x + 2];
          dst[1] = src[3 * x + 1];
          dst[2] = src[3 * x];
        }
        break;
      case PixelFormat::gray:
        for (int x = 0; x < f.width; ++x, dst += 3) dst[0] = dst[1] = dst[2] = src[x];
        break;
    }
  }
  return out;
}

}  // namespace

PushSource::PushSource(std::size_t capacity) : capacity_(capacity) {
  if (capacity == 0) throw std::invalid_argument("PushSource: capacity must be at least 1");
}

PushSource::Result PushSource::enqueue(PushedItem&& item, std::chrono::milliseconds wait) {
  std::unique_lock lk(m_);
  auto room = [&] { return closed_ || queue_.size() < capacity_; };
  if (!room()) {
    if (wait == wait_forever) not_full_.wait(lk, room);
    else if (wait > std::chrono::milliseconds::zero()) not_full_.wait_for(lk, wait, room);
  }
  if (closed_) return Result::closed;
  if (queue_.size() >= capacity_) return Result::full;
  item.pushed = std::chrono::steady_clock::now();
  queue_.push_back(std::move(item));
  ++pushed_;
  lk.unlock();
  not_empty_.notify_one();
  return Result::ok;
}

PushSource::Result PushSource::push_encoded(std::vector<unsigned char> bytes, std::string id,
                                            std::chrono::milliseconds wait, std::int64_t label) {
  PushedItem item;
  item.id = std::move(id);
  item.label = label;
  item.encoded = true;
  item.bytes = std::move(bytes);
  return enqueue(std::move(item), wait);
}

PushSource::Result PushSource::push_encoded(const void* data, std::size_t size, std::string id,
                                            std::chrono::milliseconds wait, std::int64_t label) {
  if (!data && size) throw std::invalid_argument("PushSource::push_encoded: null data");
  const auto* p = static_cast<const unsigned char*>(data);
  return push_encoded(std::vector<unsigned char>(p, p + size), std::move(id), wait, label);
}

PushSource::Result PushSource::push_frame(const FrameRef& frame, std::string id, std::chrono::milliseconds wait,
                                          std::int64_t label) {
  if (!frame.data) throw std::invalid_argument("PushSource::push_frame: null data");
  if (frame.width < 1 || frame.height < 1)
    throw std::invalid_argument("PushSource::push_frame: size " + std::to_string(frame.width) + "x" +
                                std::to_string(frame.height) + " (each must be at least 1)");
  {
    std::lock_guard lk(m_);
    if (closed_) return Result::closed;  // no copy for nothing
  }
  PushedItem item;
  item.id = std::move(id);
  item.label = label;
  item.encoded = false;
  item.width = frame.width;
  item.height = frame.height;
  item.bytes = to_packed_bgr(frame);
  return enqueue(std::move(item), wait);
}

void PushSource::close() {
  {
    std::lock_guard lk(m_);
    closed_ = true;
  }
  not_full_.notify_all();
  not_empty_.notify_all();
}

bool PushSource::closed() const {
  std::lock_guard lk(m_);
  return closed_;
}

std::size_t PushSource::size() const {
  std::lock_guard lk(m_);
  return queue_.size();
}

std::uint64_t PushSource::pushed() const {
  std::lock_guard lk(m_);
  return pushed_;
}

PushSource::Take PushSource::take(PushedItem& out, std::chrono::steady_clock::duration timeout) {
  std::unique_lock lk(m_);
  if (!not_empty_.wait_for(lk, timeout, [&] { return closed_ || !queue_.empty(); })) return Take::empty;
  if (queue_.empty()) return Take::end;  // closed and drained
  out = std::move(queue_.front());
  queue_.pop_front();
  lk.unlock();
  not_full_.notify_one();
  return Take::got;
}

}  // namespace imgpipe
