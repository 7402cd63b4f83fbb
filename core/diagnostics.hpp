// Diagnostics: knobs for measurements and diagnosis, not configuration
// (anything a user should tune is a config key: core/src/config_keys.cpp).
// Read from the environment once per run, when the run is planned
// (RunPlan::diagnostics), and passed from there to where each is used; a
// run with one set lists it in its report (Report::diagnostics), so that it
// never looks like a normal run.
//   IMGPIPE_GPU_SHARE=S        decode.where auto at the fixed share S (0..1) of
//                              the GPU-able JPEGs on the engines, unsteered
//                              (the steering's alternatives measured against a
//                              fixed split)
//   IMGPIPE_TRACE_CALLS=FILE   each run with GPU decode appends a JSON line to
//                              FILE: its engine calls (queued, begun, ended
//                              in us, JPEGs), the batches' arrivals at the
//                              GPU ops stage (us, JPEGs, samples) and when it
//                              was done with the end of the input (us; times
//                              from the first token it saw)
//   IMGPIPE_FAULT=STAGE:ITEM   a fault injected for tests and drills
//                              (core/fault.hpp); the CLI arms it
//   IMGPIPE_CUDA_WAIT=POLICY   how threads wait for the run's GPUs: block,
//                              yield, spin, or auto (CUDA's default), in
//                              place of imgpipe's (gpu::set_wait_policy)
//   IMGPIPE_HEAP=POLICY        the C library's heap in runs with video
//                              files: keep (imgpipe's default: freed blocks
//                              stay in the heap) or system (glibc's own
//                              thresholds; memory::keep_freed_heap)
//   IMGPIPE_HUGE_PAGES=on|off  transparent huge pages for the host's large
//                              blocks (staging slots, the host backend's
//                              buffers): off is imgpipe's default
//                              (memory::huge_pages_policy)
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace imgpipe {

struct Diagnostics {
  double gpu_share = -1;    // IMGPIPE_GPU_SHARE; < 0: steered
  std::string trace_calls;  // IMGPIPE_TRACE_CALLS; empty: no trace
  std::string fault;        // IMGPIPE_FAULT; empty: none (fault::arm checks it)
  std::string cuda_wait;    // IMGPIPE_CUDA_WAIT; empty: imgpipe's default
  std::string heap;         // IMGPIPE_HEAP; empty: imgpipe's default
  std::string huge_pages;   // IMGPIPE_HUGE_PAGES; empty: imgpipe's default (off)
  // Each variable that is set, (name, value as given), in the order above.
  std::vector<std::pair<std::string, std::string>> set;

  // From the environment, read now; a malformed value throws imgpipe::Error
  // naming the variable and what it expects.
  static Diagnostics from_environment();
};

}  // namespace imgpipe
