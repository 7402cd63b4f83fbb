#include "failure_log.hpp"

#include <spdlog/logger.h>

#include "imgpipe/log.hpp"

namespace imgpipe::stages {

void log_failures(const std::vector<InputFailure>& failures, std::size_t max_lines) {
  const auto log = logger();
  const std::size_t shown = std::min(failures.size(), max_lines);
  for (std::size_t i = 0; i < shown; ++i) {
    const InputFailure& f = failures[i];
    if (f.frame >= 0) log->warn("{} frame {}: {}", f.path, f.frame, f.reason);
    else log->warn("{}: {}", f.path, f.reason);
  }
  if (failures.size() > shown)
    log->warn("{} more failed input{} (the report lists every one)", failures.size() - shown,
              failures.size() - shown == 1 ? "" : "s");
}

}  // namespace imgpipe::stages
