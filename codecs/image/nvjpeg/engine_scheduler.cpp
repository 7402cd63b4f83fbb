#include "codecs/image/nvjpeg/engine_scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "core/nvtx.hpp"

namespace imgpipe::codecs {

namespace {
std::int64_t ns_of(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// EngineWork's default: the decoder's batched decode.
int decode_on_engines(EngineCall& c) {
  if (c.decoder == nullptr) throw std::invalid_argument("engine call without a decoder");
  const int decoded = c.decoder->decode_batch(c.data.data(), c.sizes.data(), static_cast<int>(c.data.size()),
                                              c.frames.data(), c.status.data(), c.stream->get(),
                                              /*inputs_ready=*/true);
  c.decoded.record(*c.stream);
  return decoded;
}
}  // namespace

// A device's engine thread: makes the calls queued to it, one after the other.
class EngineThread {
 public:
  EngineThread(int device, GpuDecodeMeter& meter, std::atomic<std::uint64_t>& calls, CallTrace* trace,
               const EngineWork& work)
      : device_(device), meter_(&meter), call_count_(&calls), trace_(trace), work_(&work) {
    // Started here, not in the member initialisers: every member the thread
    // uses must exist first.
    thread_ = std::thread([this] { loop(); });
  }
  ~EngineThread() {
    {
      std::lock_guard lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  int device() const noexcept { return device_; }
  void enqueue(EngineCall* c) {
    {
      std::lock_guard lk(m_);
      queue_.push_back(c);
    }
    cv_.notify_all();
  }
  bool done(const EngineCall& c) {
    std::lock_guard lk(m_);
    return c.done;
  }
  void wait(const EngineCall& c) {
    std::unique_lock lk(m_);
    cv_.wait(lk, [&] { return c.done; });
  }

 private:
  void loop() {
    for (;;) {
      EngineCall* c = nullptr;
      {
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;  // the calls still queued are not wanted: the run is over
        c = queue_.front();
        queue_.pop_front();
      }
      run(*c);
      {
        std::lock_guard lk(m_);
        c->done = true;
      }
      cv_.notify_all();
    }
  }

  void run(EngineCall& c) {
    try {
      if (c.decoder) gpu::set_device(device_);
      const nvtx::Range range("jpeg decode", call_count_->load());
      const int n = static_cast<int>(c.data.size());
      // The decoder keeps the largest size asked so far (across runs) and
      // allocates only when a call needs more.
      if (c.decoder) c.decoder->preallocate(n, c.max_w, c.max_h);
      // The engines read the bitstreams when called: their copies must be
      // done. Only those: the stream holds later copies too. (Nothing
      // pending writes the frames: the caller placed them where no earlier
      // work writes.)
      const auto tw = std::chrono::steady_clock::now();
      for (const gpu::Event* e : c.uploads) e->synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      const GpuJpegStats before = c.decoder ? c.decoder->stats() : GpuJpegStats{};
      meter_->call_begins(ns_of(t0));
      int decoded = 0;
      try {
        decoded = *work_ ? (*work_)(c) : decode_on_engines(c);
      } catch (...) {
        meter_->call_ends(ns_of(t0), ns_of(std::chrono::steady_clock::now()));
        throw;
      }
      const auto t1 = std::chrono::steady_clock::now();
      const GpuJpegStats after = c.decoder ? c.decoder->stats() : GpuJpegStats{};
      meter_->call_ends(ns_of(t0), ns_of(t1));
      meter_->input_wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t0 - tw).count();
      meter_->submit_ns += static_cast<std::int64_t>(after.submit_ns - before.submit_ns);
      meter_->previous_wait_ns += static_cast<std::int64_t>(after.previous_wait_ns - before.previous_wait_ns);
      meter_->initializations += after.initializations - before.initializations;
      meter_->initialize_ns += static_cast<std::int64_t>(after.initialize_ns - before.initialize_ns);
      meter_->images += static_cast<std::uint64_t>(decoded);
      ++*call_count_;
      if (trace_) {
        std::lock_guard lk(trace_->m);
        trace_->calls.push_back({c.queued_ns, ns_of(t0), ns_of(t1), n});
      }
    } catch (...) {
      c.error = std::current_exception();
    }
  }

  int device_;
  GpuDecodeMeter* meter_;
  std::atomic<std::uint64_t>* call_count_;
  CallTrace* trace_;
  const EngineWork* work_;  // the scheduler's: empty for decode_on_engines
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<EngineCall*> queue_;
  bool stop_ = false;
  std::thread thread_;
};

EngineScheduler::EngineScheduler(GpuDecodeMeter& meter, CallTrace* trace, EngineWork work)
    : meter_(meter), trace_(trace), work_(std::move(work)) {}
EngineScheduler::~EngineScheduler() = default;

EngineThread& EngineScheduler::of(int device) {
  for (auto& t : threads_)
    if (t->device() == device) return *t;
  threads_.push_back(std::make_unique<EngineThread>(device, meter_, calls_, trace_, work_));
  return *threads_.back();
}

void EngineScheduler::submit(EngineCall& c) {
  c.queued_ns = ns_of(std::chrono::steady_clock::now());
  of(c.device).enqueue(&c);
}

bool EngineScheduler::done(const EngineCall& c) { return of(c.device).done(c); }

void EngineScheduler::wait(const EngineCall& c) { of(c.device).wait(c); }

void CallTrace::append_to(const std::string& path) const {
  constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t t0 = first_token > 0 ? first_token : none;
  for (const auto& a : arrivals) t0 = std::min(t0, a[0]);
  for (const auto& c : calls) t0 = std::min(t0, c[0]);
  if (t0 == none) return;
  std::string line = "{\"calls\":[";
  const auto us = [&](std::int64_t t) { return (t - t0) / 1000; };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    line += fmt::format("{}[{},{},{},{}]", i ? "," : "", us(c[0]), us(c[1]), us(c[2]), c[3]);
  }
  line += "],\"arrivals\":[";
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    const auto& a = arrivals[i];
    line += fmt::format("{}[{},{},{}]", i ? "," : "", us(a[0]), a[1], a[2]);
  }
  line += fmt::format("],\"end\":{}}}\n", end_token > 0 ? us(end_token) : -1);
  if (FILE* f = std::fopen(path.c_str(), "a")) {
    std::fputs(line.c_str(), f);
    std::fclose(f);
  }
}

}  // namespace imgpipe::codecs
