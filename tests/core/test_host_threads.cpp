// The host-thread knobs (core/host_threads.hpp): their parsing and the CPU
// sets they make.
#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <set>
#include <thread>

#include "common.hpp"
#include "core/host_threads.hpp"
#include "imgpipe/error.hpp"

using imgpipe::test::ScopedEnv;
namespace host = imgpipe::host;

TEST_CASE("host threads: the knobs from the environment") {
  {
    ScopedEnv a("IMGPIPE_WORKER_NICE", nullptr), b("IMGPIPE_ENGINE_CPU", nullptr), c("IMGPIPE_CUDA_SCHEDULE", nullptr),
        d("IMGPIPE_GPU_SHARE", nullptr);
    const host::ThreadTuning t = host::read_thread_tuning();
    CHECK(t.worker_nice == 0);
    CHECK_FALSE(t.reserve_engine_cpu);
    CHECK(t.cuda_schedule == -1);
    CHECK(t.fixed_share < 0);
  }
  {
    ScopedEnv a("IMGPIPE_WORKER_NICE", "7"), b("IMGPIPE_ENGINE_CPU", "reserve"), c("IMGPIPE_CUDA_SCHEDULE", "blocking"),
        d("IMGPIPE_GPU_SHARE", "0.9");
    const host::ThreadTuning t = host::read_thread_tuning();
    CHECK(t.worker_nice == 7);
    CHECK(t.reserve_engine_cpu);
    CHECK(t.cuda_schedule == 4);
    CHECK(t.fixed_share == doctest::Approx(0.9));
  }
  for (const auto& [name, value] : std::vector<std::pair<const char*, const char*>>{{"IMGPIPE_WORKER_NICE", "20"},
                                                                                   {"IMGPIPE_WORKER_NICE", "x"},
                                                                                   {"IMGPIPE_ENGINE_CPU", "all"},
                                                                                   {"IMGPIPE_CUDA_SCHEDULE", "fast"},
                                                                                   {"IMGPIPE_GPU_SHARE", "1.5"},
                                                                                   {"IMGPIPE_GPU_SHARE", "0.5x"}}) {
    CAPTURE(name);
    CAPTURE(value);
    ScopedEnv e(name, value);
    try {
      (void)host::read_thread_tuning();
      FAIL("accepted");
    } catch (const imgpipe::Error& err) {
      CHECK(std::string(err.what()).find(name) != std::string::npos);
    }
  }
}

TEST_CASE("host threads: an engine's core and the workers' CPUs split the allowed ones") {
  const std::vector<int> allowed = host::allowed_cpus();
  REQUIRE_FALSE(allowed.empty());
  for (int c : allowed) {
    const std::vector<int> core = host::core_of(c);
    CHECK(std::find(core.begin(), core.end(), c) != core.end());
  }
  const std::vector<int> mine = host::engine_cpus(0);
  const std::vector<int> workers = host::worker_cpus(1);
  if (mine.empty()) {  // too few cores to give one away (this 2-CPU machine)
    CHECK(workers == allowed);
  } else {
    CHECK(workers.size() >= 2);
    std::set<int> both(mine.begin(), mine.end());
    for (int c : workers) CHECK(both.insert(c).second);  // disjoint
    CHECK(both == std::set<int>(allowed.begin(), allowed.end()));
    CHECK(mine == host::core_of(mine.front()));
  }
  // A thread bound to the workers' CPUs runs only there.
  std::thread t([&] {
    REQUIRE(host::bind_current_thread(workers));
    CHECK(host::allowed_cpus() == workers);
  });
  t.join();
}
