// How threads wait for a device (gpu::set_wait_policy, memory/gpu.hpp): a
// run's device blocks its waiting threads unless the process chose a
// scheduling policy or IMGPIPE_CUDA_WAIT names one; an unknown name is an
// error naming the variable. The flags are the device's primary context's,
// read back with cudaGetDeviceFlags (GPU part; without a GPU only the
// variable's check runs).
#include <doctest/doctest.h>

#include "common.hpp"
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
#endif
}  // namespace

TEST_CASE("gpu wait policy: a run's device blocks its waiting threads unless the process or IMGPIPE_CUDA_WAIT chose") {
  {
    const test::ScopedEnv bad("IMGPIPE_CUDA_WAIT", "sometimes");
    CHECK_THROWS_WITH_AS(gpu::set_wait_policy(0), "IMGPIPE_CUDA_WAIT is 'sometimes': one of block, yield, spin, auto",
                         Error);
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
  // The variable decides over both.
  {
    const test::ScopedEnv spin("IMGPIPE_CUDA_WAIT", "spin");
    CHECK(gpu::set_wait_policy(0) == "spin (IMGPIPE_CUDA_WAIT)");
    CHECK(schedule() == cudaDeviceScheduleSpin);
  }
  {
    const test::ScopedEnv keep("IMGPIPE_CUDA_WAIT", "auto");
    CHECK(gpu::set_wait_policy(0) == "auto (IMGPIPE_CUDA_WAIT)");
    CHECK(schedule() == cudaDeviceScheduleAuto);
  }
  // A run sets it for its device.
  Config c;
  c.input.paths = {test::sample_dir().string()};
  c.devices = DeviceSelection::parse("0");
  c.transform.resize.width = 48;
  c.transform.resize.height = 32;
  c.batch.size = 4;
  const Report r = Pipeline(c).run();
  CHECK(r.inputs.delivered > 0);
  CHECK(schedule() == cudaDeviceScheduleBlockingSync);
#endif
}
