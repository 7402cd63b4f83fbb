// The run monitor: one thread that wakes every tick while the run lasts
// (RunOptions::timeline_interval_s, 100 ms by default), reads the stages'
// counters, the staging ring's occupancy and the process's resident memory
// (relaxed atomic loads and one read of /proc/self/statm) into the timeline,
// and prints the progress line when it is due. It never touches the stages
// otherwise, so its cost is one wake-up per tick.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "imgpipe/pipeline.hpp"
#include "imgpipe/report.hpp"
#include "progress.hpp"
#include "stage_set.hpp"

namespace imgpipe::detail {

class RunMonitor {
 public:
  using clock = std::chrono::steady_clock;
  // Starts the thread when the options ask for a timeline or progress. `t0`:
  // the first input; `inputs`: the input items (the progress total, unknown
  // with videos).
  RunMonitor(const StageSet& s, const memory::StagingRing& ring, std::size_t inputs, const RunOptions& options,
             clock::time_point t0);
  // Stops the thread; the progress line is cleared but not completed (the run failed).
  ~RunMonitor();
  RunMonitor(const RunMonitor&) = delete;
  RunMonitor& operator=(const RunMonitor&) = delete;

  // The run is over: stops the thread, takes the last tick, prints the last
  // progress line, and returns the timeline (empty when not sampled).
  Timeline finish();

 private:
  void loop();
  void stop();
  Timeline::Tick sample(double t_s) const;
  // The lanes of the rows the report leaves out (StageSet::reported_stats) go.
  void drop_unreported_lanes();
  ProgressFigures progress(double t_s) const;

  const StageSet& s_;
  const memory::StagingRing& ring_;
  std::vector<const stages::StageStats*> stats_;
  std::uint64_t total_;
  clock::time_point t0_;
  double tick_s_;
  bool sampling_;
  std::unique_ptr<ProgressPrinter> printer_;  // null without progress
  Timeline timeline_;
  std::uint64_t stride_ = 1;  // record every stride-th tick (grows as the timeline is thinned)
  std::thread thread_;
  std::mutex m_;
  std::condition_variable cv_;
  bool quit_ = false;
};

// Drops every other tick (keeping the later of each pair, with the larger
// ring occupancy of the two) and doubles the interval: the counters are
// cumulative, so the rates between the ticks left stay exact.
void thin(Timeline& t);

// The process's resident memory in bytes (/proc/self/statm); 0 where unknown.
std::uint64_t resident_bytes() noexcept;

}  // namespace imgpipe::detail
