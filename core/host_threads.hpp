// Where the pipeline's host threads run, relative to the GPU engine threads
// (stages/gpu_ops.cpp): a GPU's JPEG-engine calls are made by one thread of
// their own, and the CPU route's decoding around it can slow that thread's
// nvJPEG calls (H200, W1: 6-9% slower with 6-8% of the JPEGs on the CPU,
// samples/bench/RESULTS.md). These knobs measure the remedies; they are read
// once from the environment (benchmarks and tuning, not configuration):
//   IMGPIPE_WORKER_NICE=N        the pipeline's worker threads at nice N
//                                (raised while they work in the pipeline's
//                                arena, put back after where the OS lets)
//   IMGPIPE_ENGINE_CPU=reserve   each engine thread on a core of its own (its
//                                hyperthread siblings too), the workers off it
//   IMGPIPE_CUDA_SCHEDULE=auto|spin|yield|blocking
//                                how CUDA waits for the device (cudaSetDeviceFlags)
//   IMGPIPE_GPU_SHARE=S          decode.where auto at the fixed share S (0..1)
//   IMGPIPE_TRACE_CALLS=FILE     each run appends a JSON line to FILE: its
//                                engine calls (queued, begun, ended, JPEGs) and
//                                batch arrivals at the GPU ops stage (time, JPEGs)
//   IMGPIPE_ROUTE=early[:N]      decode.where auto: the CPU route's JPEGs
//                                early in each engine call's batches, none in
//                                its last N (default 2) (RunPlan)
//   IMGPIPE_CALLS_AHEAD=K        engine calls queued ahead of the group being
//                                gathered (GpuOps; 1..8)
#pragma once

#include <string>
#include <vector>

namespace imgpipe::host {

struct ThreadTuning {
  int worker_nice = 0;        // 0: left alone
  bool reserve_engine_cpu = false;
  int cuda_schedule = -1;     // -1: left alone, else cudaDeviceSchedule* (0 auto, 1 spin, 2 yield, 4 blocking)
  double fixed_share = -1;    // < 0: steered
  int calls_ahead = 0;        // 0: GpuOps' default
  int early_route = 0;        // > 0: early routing, this many batches free of CPU-route JPEGs at each call's end
  std::string trace_calls;    // empty: no trace
};

// From the environment, read now; a malformed value throws imgpipe::Error
// naming the variable.
ThreadTuning read_thread_tuning();
// read_thread_tuning() on the first call (a throw is repeated on each call).
const ThreadTuning& thread_tuning();

// The CPUs (logical, as sched_getaffinity numbers them) this process may use.
std::vector<int> allowed_cpus();
// A core's logical CPUs (`cpu` and its hyperthread siblings, from sysfs; just
// `cpu` when sysfs does not say).
std::vector<int> core_of(int cpu);
// The CPUs reserved for engine thread `k` (0-based) when reserve_engine_cpu
// is set: the k-th core from the end of allowed_cpus(); empty when fewer than
// two cores would be left to the workers.
std::vector<int> engine_cpus(int k);
// allowed_cpus() less the first `engines` engine threads' CPUs.
std::vector<int> worker_cpus(int engines);
// Binds the calling thread to `cpus` (nothing when empty). False when the OS
// refused.
bool bind_current_thread(const std::vector<int>& cpus);

}  // namespace imgpipe::host
