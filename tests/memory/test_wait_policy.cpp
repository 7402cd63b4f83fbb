// How threads wait for a device (gpu::set_wait_policy, memory/gpu.hpp): a
// run's device blocks its waiting threads unless the process chose a
// scheduling policy or the IMGPIPE_CUDA_WAIT diagnostic names one, which
// the report then lists; an unknown name is an error naming the variable.
// The flags are the device's primary context's, read back with
// cudaGetDeviceFlags (GPU part; without a GPU the names' checks run).
#include <doctest/doctest.h>

#include <algorithm>

#include "common.hpp"
#include "core/diagnostics.hpp"
#include "imgpipe/error.hpp"
#include "imgpipe/pipeline.hpp"
#include "memory/gpu.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace imgpipe;

namespace {
#if IMGPIPE_HAS_CUDA
// Device 0's scheduling flag, on a thread that leaves its current device alone.
unsigned schedule() {
  const gpu::CurrentDeviceGuard on(0);
  unsigned flags = 0;
  REQUIRE(cudaGetDeviceFlags(&flags) == cudaSuccess);
  return flags & cudaDeviceScheduleMask;
}

void set_schedule(unsigned flag) {
  const gpu::CurrentDeviceGuard on(0);
  unsigned flags = 0;
  REQUIRE(cudaGetDeviceFlags(&flags) == cudaSuccess);
  REQUIRE(cudaSetDeviceFlags((flags & ~(cudaDeviceScheduleMask | cudaDeviceMapHost)) | flag) == cudaSuccess);
  REQUIRE(schedule() == flag);
}

Config small_gpu_run() {
  Config c;
  c.input.paths = {test::sample_dir().string()};
  c.devices = DeviceSelection::parse("0");
  c.transform.resize.width = 48;
  c.transform.resize.height = 32;
  c.batch.size = 4;
  return c;
}
#endif
}  // namespace

TEST_CASE("gpu wait policy: a run's device blocks its waiting threads unless the process or IMGPIPE_CUDA_WAIT chose") {
  CHECK_THROWS_WITH_AS(gpu::set_wait_policy(0, "sometimes"), "wait policy 'sometimes': one of block, yield, spin, auto",
                       Error);
  {
    const test::ScopedEnv bad("IMGPIPE_CUDA_WAIT", "sometimes");
    CHECK_THROWS_WITH_AS(Diagnostics::from_environment(),
                         "IMGPIPE_CUDA_WAIT='sometimes': expected block, yield, spin or auto", Error);
  }
  {
    const test::ScopedEnv spin("IMGPIPE_CUDA_WAIT", "spin");
    const Diagnostics d = Diagnostics::from_environment();
    CHECK(d.cuda_wait == "spin");
    CHECK(std::count(d.set.begin(), d.set.end(), std::make_pair(std::string("IMGPIPE_CUDA_WAIT"), std::string("spin"))) ==
          1);
  }
#if IMGPIPE_HAS_CUDA
  if (!test::have_gpu()) return;
  const test::ScopedEnv none("IMGPIPE_CUDA_WAIT", nullptr);
  // CUDA's default (earlier cases of this process may have set another).
  set_schedule(cudaDeviceScheduleAuto);
  CHECK(gpu::set_wait_policy(0) == "block (imgpipe's default)");
  CHECK(schedule() == cudaDeviceScheduleBlockingSync);
  CHECK(gpu::set_wait_policy(0) == "block (the process's choice)");  // set already: kept
  // A policy the process chose stays.
  set_schedule(cudaDeviceScheduleYield);
  CHECK(gpu::set_wait_policy(0) == "yield (the process's choice)");
  CHECK(schedule() == cudaDeviceScheduleYield);
  // A policy asked for decides over both.
  CHECK(gpu::set_wait_policy(0, "spin") == "spin (asked)");
  CHECK(schedule() == cudaDeviceScheduleSpin);
  CHECK(gpu::set_wait_policy(0, "auto") == "auto (asked)");
  CHECK(schedule() == cudaDeviceScheduleAuto);
  // A run sets its device's; under IMGPIPE_CUDA_WAIT the report lists it.
  const Report r = Pipeline(small_gpu_run()).run();
  CHECK(r.inputs.delivered > 0);
  CHECK(schedule() == cudaDeviceScheduleBlockingSync);
  CHECK(r.diagnostics.empty());
  {
    const test::ScopedEnv yield("IMGPIPE_CUDA_WAIT", "yield");
    const Report y = Pipeline(small_gpu_run()).run();
    CHECK(schedule() == cudaDeviceScheduleYield);
    CHECK(y.diagnostics.size() == 1);
  }
  set_schedule(cudaDeviceScheduleBlockingSync);  // as runs leave it
#endif
}
