#include "monitor.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace imgpipe::detail {

namespace {

double seconds_since(RunMonitor::clock::time_point t0) {
  return std::chrono::duration<double>(RunMonitor::clock::now() - t0).count();
}

// Microseconds are plenty for a chart and keep the JSON short.
double round_us(double s) { return std::round(s * 1e6) / 1e6; }

}  // namespace

std::uint64_t resident_bytes() noexcept {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  const long page = ::sysconf(_SC_PAGESIZE);
  return n == 2 && page > 0 ? resident * static_cast<std::uint64_t>(page) : 0;
}

void thin(Timeline& t) {
  std::vector<Timeline::Tick> kept;
  kept.reserve(t.ticks.size() / 2 + 1);
  for (std::size_t i = 1; i < t.ticks.size(); i += 2) {
    kept.push_back(std::move(t.ticks[i]));
    kept.back().ring_in_use = std::max(kept.back().ring_in_use, t.ticks[i - 1].ring_in_use);
  }
  if (t.ticks.size() % 2 == 1) kept.push_back(std::move(t.ticks.back()));  // the newest stays
  t.ticks = std::move(kept);
  t.interval_s *= 2;
}

RunMonitor::RunMonitor(const StageSet& s, const memory::StagingRing& ring, std::size_t inputs,
                       const RunOptions& options, clock::time_point t0)
    : s_(s),
      ring_(ring),
      stats_(s.stats()),
      total_(s.has_videos ? 0 : inputs),  // a video's frames are not known ahead
      t0_(t0),
      tick_s_(options.timeline_interval_s > 0 ? options.timeline_interval_s : 0.1),
      sampling_(options.timeline_interval_s > 0) {
  if (options.progress != RunOptions::Progress::off)
    printer_ = std::make_unique<ProgressPrinter>(
        options.progress == RunOptions::Progress::redraw ? ProgressStyle::redraw : ProgressStyle::line,
        options.progress_interval_s, stderr);
  if (sampling_) {
    timeline_.interval_s = tick_s_;
    for (const auto* st : stats_) timeline_.stages.push_back(st->name);
  }
  if (sampling_ || printer_) thread_ = std::thread([this] { loop(); });
}

RunMonitor::~RunMonitor() {
  stop();
  if (printer_) printer_->abandon();
}

void RunMonitor::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(m_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Timeline::Tick RunMonitor::sample(double t_s) const {
  Timeline::Tick k;
  k.t_s = round_us(t_s);
  k.items.reserve(stats_.size());
  k.busy_s.reserve(stats_.size());
  k.wait_s.reserve(stats_.size());
  for (const auto* st : stats_) {
    k.items.push_back(st->items.load(std::memory_order_relaxed));
    k.busy_s.push_back(round_us(st->busy_ns.load(std::memory_order_relaxed) * 1e-9));
    k.wait_s.push_back(round_us(st->wait_ns.load(std::memory_order_relaxed) * 1e-9));
  }
  k.done = s_.finished.load(std::memory_order_relaxed);
  k.failed = s_.failed_so_far();
  k.ring_in_use = ring_.in_use();
  k.rss_bytes = resident_bytes();
  return k;
}

ProgressFigures RunMonitor::progress(double t_s) const {
  return {s_.finished.load(std::memory_order_relaxed), total_, s_.failed_so_far(), t_s, s_.sample_unit};
}

void RunMonitor::loop() {
  const auto tick = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(tick_s_));
  std::uint64_t n = 0;
  std::unique_lock lk(m_);
  // Each tick's time is measured, so the wake-ups may drift.
  while (!cv_.wait_for(lk, tick, [&] { return quit_; })) {
    ++n;
    const double t = seconds_since(t0_);
    if (sampling_ && n % stride_ == 0) {
      timeline_.ticks.push_back(sample(t));
      if (timeline_.ticks.size() >= Timeline::kMaxTicks) {
        thin(timeline_);
        stride_ *= 2;
      }
    }
    if (printer_) printer_->tick(progress(t));
  }
}

Timeline RunMonitor::finish() {
  stop();
  const double t = seconds_since(t0_);
  if (sampling_) {
    timeline_.ticks.push_back(sample(t));
    drop_unreported_lanes();
  }
  if (printer_) printer_->finish(progress(t));
  printer_.reset();
  return std::move(timeline_);
}

void RunMonitor::drop_unreported_lanes() {
  const std::vector<const stages::StageStats*> kept = s_.reported_stats();
  for (std::size_t j = stats_.size(); j-- > 0;) {
    if (std::find(kept.begin(), kept.end(), stats_[j]) != kept.end()) continue;
    const auto at = [j](auto& v) { v.erase(v.begin() + static_cast<std::ptrdiff_t>(j)); };
    at(timeline_.stages);
    for (Timeline::Tick& k : timeline_.ticks) {
      at(k.items);
      at(k.busy_s);
      at(k.wait_s);
    }
  }
}

}  // namespace imgpipe::detail
