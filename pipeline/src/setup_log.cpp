#include "setup_log.hpp"

#include <fmt/format.h>
#include <spdlog/logger.h>

#include "imgpipe/log.hpp"
#include "memory/staging_ring.hpp"
#include "monitor.hpp"
#include "stages/batch_slot.hpp"

namespace imgpipe::detail {

namespace {

std::int64_t resident_now() noexcept { return static_cast<std::int64_t>(resident_bytes()); }

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

std::string signed_mib(std::int64_t bytes) { return (bytes < 0 ? "-" : "+") + mib(static_cast<double>(bytes < 0 ? -bytes : bytes)); }

double seconds(SetupLog::clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "1 of 2 slots, 9.4 MiB pageable (0.0 MiB pinned), room for 20 of 32 samples a slot[, grows to ...]"
std::string describe_staging(const RunPlan& plan, const stages::BatchResources& res) {
  const memory::StagingRing& ring = res.ring();
  int made = 0;
  std::size_t least = 0;
  for (int i = 0; i < ring.slots(); ++i) {
    const std::size_t c = ring.capacity(i);
    if (c == 0) continue;
    least = made == 0 ? c : std::min(least, c);
    ++made;
  }
  const std::size_t sample = std::max<std::size_t>(1, plan.layout.staged_sample_bytes);
  std::string s = fmt::format("{} of {} slots, {} {} ({} pinned), room for {} of {} samples a slot",
                              made, ring.slots(), mib(static_cast<double>(ring.staged_bytes())),
                              memory::to_string(ring.memory()), mib(static_cast<double>(ring.pinned_bytes())),
                              std::min<std::size_t>(least / sample, static_cast<std::size_t>(plan.layout.batch_size)),
                              plan.layout.batch_size);
  if (plan.known_samples >= 0)
    s += fmt::format(" (the inputs hold {})", plan.known_samples);
  else if (made < ring.slots() || least < ring.slot_bytes())
    s += fmt::format(", grows up to {} a slot as batches need", mib(static_cast<double>(ring.slot_bytes())));
  return s;
}

std::string describe_buffers(const RunPlan& plan, const stages::BatchResources& res) {
  if (plan.devices.front() < 0)
    return fmt::format("{} of host memory (the host backend's device buffers)",
                       mib(static_cast<double>(res.host_buffer_bytes())));
  return fmt::format("{} of device memory on {} GPU(s), streams and events", mib(static_cast<double>(res.device_bytes())),
                     plan.devices.size());
}

}  // namespace

std::string describe_devices(const std::vector<int>& devices, const std::string& host_why) {
  if (devices.empty() || devices.front() < 0)
    return host_why.empty() ? std::string("the host backend") : "the host backend (" + host_why + ")";
  std::string s = devices.size() == 1 ? "GPU" : "GPUs";
  for (std::size_t i = 0; i < devices.size(); ++i) s += fmt::format("{}{}", i ? ", " : " ", devices[i]);
  return s;
}

std::string describe_plan(const RunPlan& p) {
  std::string where = p.devices.front() < 0 ? "host backend" : "GPU";
  for (std::size_t i = 0; p.devices.front() >= 0 && i < p.devices.size(); ++i)
    where += fmt::format("{}{}", i ? ", " : " ", p.devices[i]);
  const std::string count = p.known_samples >= 0
                                ? fmt::format("{} samples known before the run", p.known_samples)
                                : std::string("the samples' count not known (staging grows as batches need)");
  return fmt::format("{}, {} threads, {} tokens, {} staging slots of up to {} samples of {} each, {}", where,
                     p.threads, p.tokens, p.slots, p.layout.batch_size, mib(static_cast<double>(p.frame_bytes)),
                     count);
}

SetupLog::SetupLog(clock::time_point start)
    : on_(imgpipe::logger()->should_log(spdlog::level::debug)), start_(start), last_(start) {
  if (on_) resident_start_ = resident_last_ = resident_now();
}

void SetupLog::say(std::string_view name, double s, std::string_view what, std::int64_t resident,
                   std::string_view note) noexcept {
  try {
    imgpipe::logger()->debug("set-up: {} {:.3f} s{}{}; resident {}{}", name, s, what.empty() ? "" : ", ", what,
                             signed_mib(resident), note);
  } catch (...) {
    // A diagnostic: a failure to format or write it changes nothing.
  }
}

void SetupLog::step(std::string_view name, std::string_view what) noexcept {
  if (!on_) return;
  const clock::time_point now = clock::now();
  const std::int64_t resident = resident_now();
  say(name, seconds(now - last_), what, resident - resident_last_);
  last_ = now;
  resident_last_ = resident;
}

void SetupLog::resources(const RunPlan& plan, const stages::BatchResources& res, bool kept) noexcept {
  if (!on_) return;
  try {
    if (kept) {
      step("staging and buffers", "kept from the last run: " + describe_staging(plan, res));
      return;
    }
    // The constructor's parts, as it timed them; the resident growth of the
    // three is said once, on the last (the staging's and buffers' bytes are
    // touched as they are allocated: their own figures say which is which).
    const stages::BatchResources::MadeIn& m = res.made_in();
    const std::string decoders = res.devices().front()->jpeg ? "the JPEG engines' decoders, made in the background"
                                                             : "none for the GPU (no GPU JPEG decode)";
    imgpipe::logger()->debug("set-up: decoders {:.3f} s, {}", m.decoders_s, decoders);
    imgpipe::logger()->debug("set-up: staging {:.3f} s, {}", m.staging_s, describe_staging(plan, res));
    const clock::time_point now = clock::now();
    const std::int64_t resident = resident_now();
    say("device buffers", m.buffers_s, describe_buffers(plan, res), resident - resident_last_,
        " (with the decoders and staging)");
    last_ = now;
    resident_last_ = resident;
  } catch (...) {
  }
}

void SetupLog::total(clock::time_point end) noexcept {
  if (!on_) return;
  const std::int64_t resident = resident_now();
  try {
    say("total", seconds(end - start_), fmt::format("the report's set-up ({} resident now)", mib(static_cast<double>(resident))),
        resident - resident_start_);
  } catch (...) {
  }
}

}  // namespace imgpipe::detail
