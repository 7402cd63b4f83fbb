// What a run's set-up spends its time and memory on, for --log-level debug:
// each step (devices, discovery, plan, decoders, staging, device buffers,
// stages) said as it ends, with its wall time, what it allocated as the step
// knows it (the staging ring's room and kind, the device buffers' bytes),
// and how much the process's resident memory grew meanwhile (whatever the
// step touched: heap, staging, decoders' tables, thread stacks). The last
// line is the total, which is the report's set-up figure. Nothing is
// measured or said unless the library's logger is at debug.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "run_plan.hpp"

namespace imgpipe::detail {

class SetupLog {
 public:
  using clock = std::chrono::steady_clock;
  // The set-up began at `start` (RunTimes::start).
  explicit SetupLog(clock::time_point start);

  // Ends the step that began when the last one ended: "set-up: <name>
  // <seconds> s, <what>, resident +<MiB>". Never throws (a diagnostic).
  void step(std::string_view name, std::string_view what = {}) noexcept;
  // The run's resources: the JPEG decoders, the staging ring and the device
  // buffers as the constructor timed them (BatchResources::made_in), or one
  // line when they were kept from the last run.
  void resources(const RunPlan& plan, const stages::BatchResources& res, bool kept) noexcept;
  // The set-up's total, up to `end` (RunTimes::pipeline).
  void total(clock::time_point end) noexcept;

  bool on() const noexcept { return on_; }

 private:
  void say(std::string_view name, double seconds, std::string_view what, std::int64_t resident,
           std::string_view note = {}) noexcept;
  bool on_;
  clock::time_point start_, last_;
  std::int64_t resident_start_ = 0, resident_last_ = 0;
};

// The plan's step line: threads, tokens, slots and the staging it sizes.
std::string describe_plan(const RunPlan& plan);
// The devices' step line: the GPUs chosen, or the host backend and why.
std::string describe_devices(const std::vector<int>& devices, const std::string& host_why);

}  // namespace imgpipe::detail
