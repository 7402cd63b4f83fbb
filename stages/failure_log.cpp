#include "failure_log.hpp"

#include <algorithm>

#include <spdlog/logger.h>

#include "imgpipe/log.hpp"

namespace imgpipe::stages {

namespace {
void log_one(const InputFailure& f) {
  if (f.frame >= 0) logger()->warn("{} frame {}: {}", f.path, f.frame, f.reason);
  else logger()->warn("{}: {}", f.path, f.reason);
}
void log_rest(std::size_t n) {
  if (n > 0) logger()->warn("{} more failed input{} (the report lists every one)", n, n == 1 ? "" : "s");
}
}  // namespace

void FailureLog::failed(const InputFailure& f) {
  if (logged_.fetch_add(1, std::memory_order_relaxed) < max_) log_one(f);
}

void FailureLog::finish(std::size_t total) const {
  const std::size_t shown = std::min(total, std::min(logged_.load(std::memory_order_relaxed), max_));
  log_rest(total - shown);
}

void log_failures(const std::vector<InputFailure>& failures, std::size_t max_lines) {
  const std::size_t shown = std::min(failures.size(), max_lines);
  for (std::size_t i = 0; i < shown; ++i) log_one(failures[i]);
  log_rest(failures.size() - shown);
}

}  // namespace imgpipe::stages
