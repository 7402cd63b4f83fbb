// Knobs for benchmarks and diagnosis, not configuration: read once from the
// environment.
//   IMGPIPE_GPU_SHARE=S        decode.where auto at the fixed share S (0..1) of
//                              the GPU-able JPEGs on the engines, unsteered
//   IMGPIPE_ROUTE=early[:N]    decode.where auto: the CPU route's JPEGs go to
//                              the first batches of each engine call, none to
//                              its last N (default 2); the default
//   IMGPIPE_ROUTE=spread       ... spread evenly over every batch instead
//   IMGPIPE_CPU_UTIL=U         decode.where auto: the steering's target for the
//                              CPU threads' load (0.3..1; 1: the balance where
//                              both routes run out together)
//   IMGPIPE_STEER=W[,W]        decode.where auto, the steering's ways, W of:
//                              memory: each run of a Pipeline starts where the
//                              last run's balance ended, not at share 1;
//                              slowed: engines slowed by the CPU route get a
//                              hold of every JPEG for a while, as starving
//                              ones do; unslowed: they do not (the default).
//                              Memory ran slower on the H200 (RESULTS.md,
//                              eleventh session), slowed too (thirteenth,
//                              one call: 5935-5938 img/s against 6043-6290
//                              unslowed)
//   IMGPIPE_TRACE_CALLS=FILE   each run with GPU decode appends a JSON line to
//                              FILE: its engine calls (queued, begun, ended
//                              in us, JPEGs), the batches' arrivals at the
//                              GPU ops stage (us, JPEGs, samples) and when it
//                              was done with the end of the input (us; times
//                              from the first token it saw)
#pragma once

#include <string>

namespace imgpipe::tuning {

struct Knobs {
  double fixed_share = -1;  // < 0: steered
  int free_batches = 2;     // 0: spread; else early routing with this many batches free of CPU-route JPEGs
  double cpu_util = -1;     // < 0: the steering's default
  bool steer_memory = false;     // IMGPIPE_STEER with memory
  bool hold_when_slowed = false;  // IMGPIPE_STEER with slowed
  std::string trace_calls;  // empty: no trace
};

// From the environment, read now; a malformed value throws imgpipe::Error
// naming the variable.
Knobs read_knobs();
// read_knobs() on the first call (a throw is repeated on each call).
const Knobs& knobs();

}  // namespace imgpipe::tuning
