// The benchmark knobs (core/tuning.hpp): what each value means, and the
// errors that name the variable.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common.hpp"
#include "core/tuning.hpp"
#include "imgpipe/error.hpp"

using imgpipe::test::ScopedEnv;

TEST_CASE("tuning: the knobs from the environment") {
  {
    ScopedEnv a("IMGPIPE_GPU_SHARE", nullptr), b("IMGPIPE_ROUTE", nullptr), c("IMGPIPE_TRACE_CALLS", nullptr),
        d("IMGPIPE_CPU_UTIL", nullptr), e("IMGPIPE_STEER", nullptr);
    const imgpipe::tuning::Knobs k = imgpipe::tuning::read_knobs();
    CHECK(k.fixed_share < 0);
    CHECK_FALSE(k.steer_memory);
    CHECK_FALSE(k.hold_when_slowed);  // unslowed by default
    CHECK(k.cpu_util < 0);
    CHECK(k.free_batches == 2);  // early routing by default
    CHECK(k.trace_calls.empty());
  }
  {
    ScopedEnv a("IMGPIPE_GPU_SHARE", "0.9"), b("IMGPIPE_ROUTE", "early:3"), c("IMGPIPE_TRACE_CALLS", "/tmp/t.jsonl"),
        d("IMGPIPE_CPU_UTIL", "0.75");
    const imgpipe::tuning::Knobs k = imgpipe::tuning::read_knobs();
    CHECK(k.fixed_share == doctest::Approx(0.9));
    CHECK(k.cpu_util == doctest::Approx(0.75));
    CHECK(k.free_batches == 3);
    CHECK(k.trace_calls == "/tmp/t.jsonl");
  }
  {
    ScopedEnv b("IMGPIPE_ROUTE", "spread");
    CHECK(imgpipe::tuning::read_knobs().free_batches == 0);
  }
  for (const auto& [value, memory, slowed] : std::vector<std::tuple<const char*, bool, bool>>{
           {"memory", true, false}, {"unslowed", false, false}, {"unslowed,memory", true, false},
           {"slowed", false, true}, {"memory,slowed", true, true}}) {
    CAPTURE(value);
    ScopedEnv e("IMGPIPE_STEER", value);
    const imgpipe::tuning::Knobs k = imgpipe::tuning::read_knobs();
    CHECK(k.steer_memory == memory);
    CHECK(k.hold_when_slowed == slowed);
  }
  for (const auto& [name, value] : std::vector<std::pair<const char*, const char*>>{{"IMGPIPE_GPU_SHARE", "1.5"},
                                                                                   {"IMGPIPE_GPU_SHARE", "0.5x"},
                                                                                   {"IMGPIPE_ROUTE", "late"},
                                                                                   {"IMGPIPE_ROUTE", "early:0"},
                                                                                   {"IMGPIPE_ROUTE", "early:2x"},
                                                                                   {"IMGPIPE_CPU_UTIL", "0.2"},
                                                                                   {"IMGPIPE_CPU_UTIL", "1.1"},
                                                                                   {"IMGPIPE_CPU_UTIL", "x"},
                                                                                   {"IMGPIPE_STEER", "stale"},
                                                                                   {"IMGPIPE_STEER", "memory,"},
                                                                                   {"IMGPIPE_STEER", "memory;unslowed"}}) {
    CAPTURE(name);
    CAPTURE(value);
    ScopedEnv e(name, value);
    try {
      (void)imgpipe::tuning::read_knobs();
      FAIL("accepted");
    } catch (const imgpipe::Error& err) {
      CHECK(std::string(err.what()).find(name) != std::string::npos);
    }
  }
}
