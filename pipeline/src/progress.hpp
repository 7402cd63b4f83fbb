// The progress line on a terminal: "imgpipe: 1234/5000 inputs, 567 img/s",
// redrawn every 250 ms on its own thread while the run lasts.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

namespace imgpipe::detail {

class Progress {
 public:
  Progress(bool on, std::size_t total, const std::atomic<std::uint64_t>& done) : total_(total), done_(done) {
    if (on) t_ = std::thread([this] { loop(); });
  }
  ~Progress() {
    if (!t_.joinable()) return;
    {
      std::lock_guard lk(m_);
      quit_ = true;
    }
    cv_.notify_all();
    t_.join();
    std::fprintf(stderr, "\r\033[K");
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  void loop() {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lk(m_);
    while (!cv_.wait_for(lk, std::chrono::milliseconds(250), [&] { return quit_; })) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto d = done_.load();
      std::fprintf(stderr, "\r\033[Kimgpipe: %llu/%zu inputs, %.0f img/s", static_cast<unsigned long long>(d), total_,
                   s > 0 ? d / s : 0.0);
      std::fflush(stderr);
    }
  }
  std::size_t total_;
  const std::atomic<std::uint64_t>& done_;
  std::thread t_;
  std::mutex m_;
  std::condition_variable cv_;
  bool quit_ = false;
};

}  // namespace imgpipe::detail
