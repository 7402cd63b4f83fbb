#include "memory/errors.hpp"

#include <utility>

#include <fmt/format.h>

namespace imgpipe::memory {

std::string human_bytes(std::size_t b) {
  if (b >= (std::size_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(1 << 30));
  if (b >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  if (b >= (std::size_t{1} << 10)) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

BudgetError::BudgetError(std::size_t limit, std::size_t held, std::size_t requested)
    : Error(fmt::format("budget of {} bytes ({}) exceeded: {} bytes ({}) held, {} bytes ({}) more requested", limit,
                        human_bytes(limit), held, human_bytes(held), requested, human_bytes(requested))),
      limit_(limit),
      held_(held),
      requested_(requested) {}

AllocationError::AllocationError(const std::string& resource, MemoryKind kind, std::size_t bytes, std::string reason,
                                 bool fallback)
    : Error(fmt::format("{}: cannot allocate {} bytes ({}) of {} host memory: {}{}", resource, bytes,
                        human_bytes(bytes), to_string(kind), reason,
                        fallback ? "" : "; fallback is off (memory fallback disabled), so this is an error")),
      kind_(kind),
      bytes_(bytes),
      reason_(std::move(reason)) {}

}  // namespace imgpipe::memory
