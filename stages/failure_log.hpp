// Failed inputs as warnings through imgpipe's logger (docs/config.md,
// input.on_error): one line per input, "<path>: <reason>" (a video frame:
// "<path> frame <n>: <reason>"), the first kFailureLines of them, then one
// line with the count of the rest. The report keeps every failure.
#pragma once

#include <cstddef>
#include <vector>

#include "imgpipe/report.hpp"

namespace imgpipe::stages {

inline constexpr std::size_t kFailureLines = 20;

void log_failures(const std::vector<InputFailure>& failures, std::size_t max_lines = kFailureLines);

}  // namespace imgpipe::stages
