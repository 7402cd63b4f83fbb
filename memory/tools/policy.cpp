#include "memory/tools/policy.hpp"

#include <fmt/format.h>

namespace imgpipe::memory {
namespace {

std::string pct(double ratio) { return fmt::format("{:+.1f}%", (ratio - 1.0) * 100.0); }

bool same(double a, double b) { return a >= b * (1 - kPolicyTolerance) && a <= b * (1 + kPolicyTolerance); }
bool slower(double a, double b) { return a < b * (1 - kPolicyTolerance); }
bool faster(double a, double b) { return a > b * (1 + kPolicyTolerance); }

void decide_single(const Calibration& c, PolicyDecision& d) {
  const KindMeasurement* pinned = c.find(MemoryKind::pinned);
  const KindMeasurement* pageable = c.find(MemoryKind::pageable);
  const KindMeasurement* reg = c.find(MemoryKind::host_registered);
  if (!pinned || !pinned->available) {
    d.measured = true;
    d.reasons.push_back(fmt::format("default pinned memory was not available at calibration ({})",
                                    pinned ? pinned->error : "not measured"));
    if (reg && reg->has_copies()) {
      d.kind = MemoryKind::host_registered;
      d.reasons.push_back(fmt::format("cudaHostRegister of ordinary memory was: {:.1f} GB/s H2D", reg->h2d_gbps));
    } else {
      d.kind = MemoryKind::pageable;
      d.reasons.push_back("neither was registered memory: pageable");
    }
    return;
  }
  if (!pinned->has_copies() || !pageable || !pageable->has_copies()) {
    d.reasons.push_back("no copy figures for pinned and pageable memory: rule table");
    return;
  }
  d.measured = true;
  const bool h2d = faster(pinned->h2d_gbps, pageable->h2d_gbps), d2h = faster(pinned->d2h_gbps, pageable->d2h_gbps);
  if (h2d || d2h) {
    d.kind = MemoryKind::pinned;
    d.reasons.push_back(fmt::format("pinned copies {:.1f} GB/s H2D / {:.1f} GB/s D2H against pageable {:.1f} / {:.1f}",
                                    pinned->h2d_gbps, pinned->d2h_gbps, pageable->h2d_gbps, pageable->d2h_gbps));
  } else {
    d.kind = MemoryKind::pageable;
    d.reasons.push_back(fmt::format("pinned copies ({:.1f} GB/s H2D / {:.1f} D2H) are no faster than pageable "
                                    "({:.1f} / {:.1f}, within {:.0f}%): page-locking buys nothing here",
                                    pinned->h2d_gbps, pinned->d2h_gbps, pageable->h2d_gbps, pageable->d2h_gbps,
                                    kPolicyTolerance * 100));
  }
}

void decide_multi(const Calibration& c, PolicyDecision& d) {
  const KindMeasurement* portable = c.find(MemoryKind::portable);
  const KindMeasurement* pinned = c.find(MemoryKind::pinned);
  if (portable && portable->available) {
    d.kind = MemoryKind::portable;
    d.measured = true;
    d.reasons.push_back("portable memory is page-locked for every GPU of the host, whichever device was current");
    if (portable->has_copies() && pinned && pinned->has_copies()) {
      d.reasons.push_back(fmt::format("it copies at {:.1f} GB/s H2D against {:.1f} for default pinned ({})",
                                      portable->h2d_gbps, pinned->h2d_gbps, pct(portable->h2d_gbps / pinned->h2d_gbps)));
    }
    for (const DeviceCopyMeasurement& m : c.multi_device) {
      if (m.kind != MemoryKind::portable) continue;
      std::string per;
      for (std::size_t i = 0; i < m.per_device_gbps.size(); ++i)
        per += fmt::format("{}GPU {} {:.1f}", i ? ", " : "", i, m.per_device_gbps[i]);
      d.reasons.push_back(fmt::format("one portable block to each device: {} GB/s; all at once {:.1f} GB/s", per,
                                      m.concurrent_gbps));
    }
    if (c.device_count < 2)
      d.reasons.push_back(fmt::format("calibrated with {} GPU: the multi-device figures are not measured", c.device_count));
    return;
  }
  if (portable) {
    d.measured = true;
    d.kind = (pinned && pinned->available) ? MemoryKind::pinned : MemoryKind::pageable;
    d.reasons.push_back(fmt::format("portable memory was not available at calibration ({}); using {} (with unified "
                                    "addressing default pinned memory is shared by every device)",
                                    portable->error, to_string(d.kind)));
    return;
  }
  d.reasons.push_back("portable memory was not measured: rule table");
}

void decide_streaming(const Calibration& c, PolicyDecision& d) {
  const KindMeasurement* wc = c.find(MemoryKind::write_combined);
  const KindMeasurement* pinned = c.find(MemoryKind::pinned);
  if (!wc || !pinned || !pinned->has_copies() || pinned->cpu_write_gbps <= 0) {
    d.reasons.push_back("write-combined and pinned memory were not both measured: rule table");
    return;
  }
  d.measured = true;
  if (!wc->has_copies() || wc->cpu_write_gbps <= 0) {
    d.kind = MemoryKind::pinned;
    d.reasons.push_back(fmt::format("write-combined memory was not available at calibration ({})",
                                    wc->error.empty() ? "no figures" : wc->error));
    return;
  }
  const double h2d = wc->h2d_gbps / pinned->h2d_gbps;
  const double wr = wc->cpu_write_gbps / pinned->cpu_write_gbps;
  if (slower(wc->h2d_gbps, pinned->h2d_gbps)) {
    d.kind = MemoryKind::pinned;
    d.reasons.push_back(fmt::format("write-combined H2D {:.1f} GB/s is slower than default pinned {:.1f} ({})",
                                    wc->h2d_gbps, pinned->h2d_gbps, pct(h2d)));
    return;
  }
  if (same(wc->h2d_gbps, pinned->h2d_gbps))
    d.reasons.push_back(fmt::format("write-combined H2D {:.1f} GB/s is no faster than default pinned {:.1f} (within "
                                    "{:.0f}%): deciding by the CPU side",
                                    wc->h2d_gbps, pinned->h2d_gbps, kPolicyTolerance * 100));
  else
    d.reasons.push_back(fmt::format("write-combined H2D {:.1f} GB/s is faster than default pinned {:.1f} ({})",
                                    wc->h2d_gbps, pinned->h2d_gbps, pct(h2d)));
  if (slower(wc->cpu_write_gbps, pinned->cpu_write_gbps)) {
    d.kind = MemoryKind::pinned;
    d.reasons.push_back(fmt::format("CPU writes into write-combined memory are slower ({:.1f} GB/s against {:.1f}, {})",
                                    wc->cpu_write_gbps, pinned->cpu_write_gbps, pct(wr)));
    return;
  }
  d.kind = MemoryKind::write_combined;
  d.reasons.push_back(fmt::format("CPU writes into it are no slower ({:.1f} GB/s against {:.1f}) and in this pattern "
                                  "the CPU never reads the buffer; the DMA does not snoop the CPU caches",
                                  wc->cpu_write_gbps, pinned->cpu_write_gbps));
  if (wc->cpu_read_gbps > 0 && pinned->cpu_read_gbps > 0) {
    if (slower(wc->cpu_read_gbps, pinned->cpu_read_gbps))
      d.reasons.push_back(fmt::format("CPU reads from it are {:.1f} GB/s against {:.1f}: never read it",
                                      wc->cpu_read_gbps, pinned->cpu_read_gbps));
    else
      d.reasons.push_back(fmt::format("CPU reads from it measured no slower here ({:.1f} GB/s against {:.1f}): the "
                                      "write-combined attribute looks ignored (a hypervisor?), on bare metal such "
                                      "reads are very slow, so the API still forbids them",
                                      wc->cpu_read_gbps, pinned->cpu_read_gbps));
  }
}

void decide_device_access(const Calibration& c, PolicyDecision& d) {
  const KindMeasurement* mapped = c.find(MemoryKind::mapped);
  const KindMeasurement* pinned = c.find(MemoryKind::pinned);
  if (!mapped) {
    d.reasons.push_back("mapped memory was not measured: rule table");
    return;
  }
  d.measured = true;
  if (!mapped->available || mapped->kernel_read_gbps <= 0) {
    d.kind = (pinned && pinned->available) ? MemoryKind::pinned : MemoryKind::pageable;
    d.reasons.push_back(fmt::format("mapped memory was not usable at calibration ({}): copy from {} memory first",
                                    mapped->error.empty() ? "no kernel-read figure" : mapped->error,
                                    to_string(d.kind)));
    return;
  }
  if (pinned && pinned->has_copies() && mapped->kernel_read_gbps < kZeroCopyMinFraction * pinned->h2d_gbps) {
    d.kind = MemoryKind::pinned;
    d.reasons.push_back(fmt::format("a kernel reads mapped memory at only {:.1f} GB/s against a {:.1f} GB/s pinned "
                                    "copy (under {:.0f}%): copying first wins unless kernels touch very little",
                                    mapped->kernel_read_gbps, pinned->h2d_gbps, kZeroCopyMinFraction * 100));
    return;
  }
  d.kind = MemoryKind::mapped;
  if (pinned && pinned->has_copies())
    d.reasons.push_back(fmt::format("a kernel reads mapped memory in place at {:.1f} GB/s against {:.1f} GB/s for a "
                                    "pinned copy: zero-copy moves only the bytes kernels touch",
                                    mapped->kernel_read_gbps, pinned->h2d_gbps));
  else
    d.reasons.push_back(fmt::format("a kernel reads mapped memory in place at {:.1f} GB/s", mapped->kernel_read_gbps));
  d.reasons.push_back("host writes must be ordered before kernel reads by events (no implicit synchronisation)");
}

}  // namespace

std::string_view to_string(UsagePattern p) noexcept {
  switch (p) {
    case UsagePattern::single_device: return "single_device";
    case UsagePattern::multi_device: return "multi_device";
    case UsagePattern::h2d_streaming: return "h2d_streaming";
    case UsagePattern::device_access_only: return "device_access_only";
  }
  return "unknown";
}

std::optional<UsagePattern> parse_usage_pattern(std::string_view s) noexcept {
  for (UsagePattern p : {UsagePattern::single_device, UsagePattern::multi_device, UsagePattern::h2d_streaming,
                         UsagePattern::device_access_only})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

MemoryKind rule_table(UsagePattern p) noexcept {
  switch (p) {
    case UsagePattern::single_device: return MemoryKind::pinned;
    case UsagePattern::multi_device: return MemoryKind::portable;
    case UsagePattern::h2d_streaming: return MemoryKind::write_combined;
    case UsagePattern::device_access_only: return MemoryKind::mapped;
  }
  return MemoryKind::pinned;
}

PolicyDecision choose_memory_kind(UsagePattern p, const Calibration* c) {
  PolicyDecision d;
  d.pattern = p;
  d.rule_kind = rule_table(p);
  d.kind = d.rule_kind;
  if (!c) {
    d.reasons.push_back("no calibration: rule table");
    return d;
  }
  if (!c->has_device()) {
    d.reasons.push_back("the calibration has no device figures: rule table");
    return d;
  }
  switch (p) {
    case UsagePattern::single_device: decide_single(*c, d); break;
    case UsagePattern::multi_device: decide_multi(*c, d); break;
    case UsagePattern::h2d_streaming: decide_streaming(*c, d); break;
    case UsagePattern::device_access_only: decide_device_access(*c, d); break;
  }
  return d;
}

std::string PolicyDecision::explain() const {
  std::string s = fmt::format("{} -> {} ({}", to_string(pattern), to_string(kind),
                              measured ? "measured" : "rule table");
  if (kind != rule_kind) s += fmt::format("; the rule table says {}", to_string(rule_kind));
  s += ")";
  for (std::size_t i = 0; i < reasons.size(); ++i) s += (i ? "; " : ": ") + reasons[i];
  return s;
}

}  // namespace imgpipe::memory
