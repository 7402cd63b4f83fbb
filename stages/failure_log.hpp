// Failed inputs as warnings through imgpipe's logger (docs/config.md,
// input.on_error): one line per input, "<path>: <reason>" (a video frame:
// "<path> frame <n>: <reason>"), the first kFailureLines of them, then one
// line with the count of the rest. The report keeps every failure.
// FailureLog says each as it happens (the stages that record failures call
// it), so that a long run tells at once which file broke.
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

#include "imgpipe/report.hpp"

namespace imgpipe::stages {

inline constexpr std::size_t kFailureLines = 20;

void log_failures(const std::vector<InputFailure>& failures, std::size_t max_lines = kFailureLines);

// One run's failures as they happen, from any thread: the first max_lines
// logged at once, then (finish) the count of the rest.
class FailureLog {
 public:
  explicit FailureLog(std::size_t max_lines = kFailureLines) noexcept : max_(max_lines) {}
  void failed(const InputFailure& f);
  // At the run's end, `total` failures in all: "N more failed inputs (the
  // report lists every one)" for those not logged.
  void finish(std::size_t total) const;

 private:
  std::size_t max_;
  std::atomic<std::size_t> logged_{0};
};

}  // namespace imgpipe::stages
