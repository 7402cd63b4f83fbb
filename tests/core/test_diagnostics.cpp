// The diagnostics (core/diagnostics.hpp): what each value means, and the
// errors that name the variable.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "core/diagnostics.hpp"
#include "imgpipe/error.hpp"

using imgpipe::Diagnostics;
using imgpipe::test::ScopedEnv;

TEST_CASE("diagnostics: read from the environment, each one set listed") {
  SUBCASE("none set: a normal run") {
    ScopedEnv a("IMGPIPE_GPU_SHARE", nullptr), b("IMGPIPE_TRACE_CALLS", nullptr), c("IMGPIPE_FAULT", nullptr);
    const Diagnostics d = Diagnostics::from_environment();
    CHECK(d.gpu_share < 0);
    CHECK(d.trace_calls.empty());
    CHECK(d.set.empty());
  }
  SUBCASE("both set") {
    ScopedEnv a("IMGPIPE_GPU_SHARE", "0.9"), b("IMGPIPE_TRACE_CALLS", "/tmp/t.jsonl"), c("IMGPIPE_FAULT", "read:4");
    const Diagnostics d = Diagnostics::from_environment();
    CHECK(d.gpu_share == doctest::Approx(0.9));
    CHECK(d.trace_calls == "/tmp/t.jsonl");
    CHECK(d.fault == "read:4");
    using Set = std::vector<std::pair<std::string, std::string>>;
    CHECK(d.set == Set{{"IMGPIPE_GPU_SHARE", "0.9"}, {"IMGPIPE_TRACE_CALLS", "/tmp/t.jsonl"}, {"IMGPIPE_FAULT", "read:4"}});
  }
  SUBCASE("empty counts as unset") {
    ScopedEnv a("IMGPIPE_GPU_SHARE", ""), b("IMGPIPE_TRACE_CALLS", "");
    CHECK(Diagnostics::from_environment().set.empty());
  }
}

TEST_CASE("diagnostics: a malformed value is an error naming the variable") {
  for (const char* value : {"1.5", "-0.1", "0.5x", "x"}) {
    CAPTURE(value);
    ScopedEnv a("IMGPIPE_GPU_SHARE", value);
    try {
      (void)Diagnostics::from_environment();
      FAIL("no error for IMGPIPE_GPU_SHARE=" << value);
    } catch (const imgpipe::Error& e) {
      const std::string what = e.what();
      CHECK(what.find("IMGPIPE_GPU_SHARE") != std::string::npos);
      CHECK(what.find(value) != std::string::npos);
    }
  }
}
