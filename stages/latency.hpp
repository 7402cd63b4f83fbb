// Per-sample latency figures without keeping every sample: a histogram of
// logarithmic bins 1% wide from 1 microsecond to over an hour, so a live
// source running for days costs a few kilobytes and a percentile is exact to
// within 1%.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "imgpipe/report.hpp"

namespace imgpipe::stages {

class LatencyHistogram {
 public:
  void add(double ms) noexcept {
    ms = std::max(ms, kMinMs);
    const auto bin = static_cast<std::size_t>(std::log(ms / kMinMs) / kLogStep);
    ++bins_[std::min(bin, kBins - 1)];
    ++count_;
    max_ = std::max(max_, ms);
  }
  std::uint64_t count() const noexcept { return count_; }

  // The latency below which a share `q` (0..1] of the samples fall: the
  // upper edge of the bin where that sample lies, never above the maximum.
  double quantile(double q) const noexcept {
    if (count_ == 0) return 0;
    const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBins; ++i) {
      seen += bins_[i];
      if (seen >= std::max<std::uint64_t>(rank, 1)) return std::min(max_, kMinMs * std::exp(kLogStep * (i + 1)));
    }
    return max_;
  }

  Report::Latency summary() const noexcept {
    Report::Latency l;
    l.samples = count_;
    if (count_) {
      l.p50_ms = quantile(0.50);
      l.p95_ms = quantile(0.95);
      l.p99_ms = quantile(0.99);
      l.max_ms = max_;
    }
    return l;
  }

 private:
  static constexpr double kMinMs = 1e-3;
  static constexpr double kLogStep = 0.00995033085;  // log(1.01)
  static constexpr std::size_t kBins = 2200;         // 1e-3 ms x 1.01^2200 > 5 hours
  std::array<std::uint32_t, kBins> bins_{};
  std::uint64_t count_ = 0;
  double max_ = 0;
};

}  // namespace imgpipe::stages
