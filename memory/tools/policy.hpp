// The memory policy: which host memory kind suits a usage pattern.
//
// Without a calibration it is the rule table:
//   single_device      -> pinned          (default page-locked)
//   multi_device       -> portable        (one block usable by every GPU)
//   h2d_streaming      -> write_combined  (CPU writes it once, the GPU reads it)
//   device_access_only -> mapped          (kernels read it in place, zero-copy)
// With a calibration (calibration.hpp) the measurements decide, within a 3%
// tolerance (kPolicyTolerance), and explain() says why; e.g. write-combined
// only wins h2d_streaming when its H2D is no slower than default pinned, CPU
// writes into it are no slower, and (true for that pattern) the CPU never
// reads it. A pure function of its arguments: unit-testable with synthetic
// calibrations.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memory/tools/calibration.hpp"
#include "imgpipe/memory/resources.hpp"

namespace imgpipe::memory {

enum class UsagePattern : std::uint8_t { single_device, multi_device, h2d_streaming, device_access_only };

std::string_view to_string(UsagePattern p) noexcept;
std::optional<UsagePattern> parse_usage_pattern(std::string_view s) noexcept;

// Two figures closer than this (relative) are "the same".
inline constexpr double kPolicyTolerance = 0.03;
// device_access_only keeps mapped memory unless a kernel reading it in place
// is slower than this fraction of a pinned H2D copy.
inline constexpr double kZeroCopyMinFraction = 0.25;

struct PolicyDecision {
  UsagePattern pattern = UsagePattern::single_device;
  MemoryKind kind = MemoryKind::pinned;       // the choice
  MemoryKind rule_kind = MemoryKind::pinned;  // what the rule table says
  bool measured = false;                      // decided by calibration figures
  std::vector<std::string> reasons;           // in order, each one sentence
  // "h2d_streaming -> pinned (measured on NVIDIA H200, ...): reason; reason".
  std::string explain() const;
};

MemoryKind rule_table(UsagePattern p) noexcept;

// Pure: the same pattern and calibration give the same decision. `c` may be
// null (no calibration) or have no device (host figures only): rule table.
PolicyDecision choose_memory_kind(UsagePattern p, const Calibration* c = nullptr);
inline PolicyDecision choose_memory_kind(UsagePattern p, const std::optional<Calibration>& c) {
  return choose_memory_kind(p, c ? &*c : nullptr);
}

}  // namespace imgpipe::memory
