// Report assembly: the run's figures, read from the stages' own statistics,
// the resources and the plan once the run is over.
#pragma once

#include <chrono>

#include "imgpipe/report.hpp"
#include "stage_set.hpp"

namespace imgpipe::detail {

struct RunTimes {
  using clock = std::chrono::steady_clock;
  clock::time_point start = clock::now();  // run() entered
  clock::time_point pipeline;              // first input handed out
  clock::time_point end;                   // final synchronise done
};

// One stage's row (StageReport says what each figure means); `sample_unit`
// names what a per-sample stage counts ("images", "frames" or "samples").
StageReport make_stage_report(const stages::StageStats& s, int concurrency, double pipeline_s,
                              const std::string& sample_unit = "images");
// The stage with the highest utilization among those with a rate; empty when
// nothing was delivered or none has a rate.
std::string pick_bottleneck(const std::vector<StageReport>& stages, std::uint64_t delivered);

Report assemble_report(const Config& cfg, const RunPlan& plan, const StageSet& s,
                       const stages::BatchResources& res, const RunTimes& t, bool stop_requested);

}  // namespace imgpipe::detail
