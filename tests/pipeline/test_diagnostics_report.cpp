// A run with a diagnostic set (core/diagnostics.hpp) says so in its report,
// text and JSON; a malformed one fails the run, naming the variable.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "imgpipe/pipeline.hpp"

using namespace imgpipe;
using imgpipe::test::ScopedEnv;

namespace {
Config small_cpu_config() {
  Config c;
  c.input.paths = {test::sample_dir().string()};
  c.devices.kind = DeviceSelection::Kind::cpu;
  c.transform.resize.width = 48;
  c.transform.resize.height = 32;
  c.batch.size = 4;
  c.decode.threads = 2;
  return c;
}

std::string text_of(const Report& r) {
  std::ostringstream os;
  r.print_table(os);
  return os.str();
}
}  // namespace

TEST_CASE("diagnostics report: a run lists each diagnostic set, a normal run none") {
  ScopedEnv trace("IMGPIPE_TRACE_CALLS", nullptr);
  {
    ScopedEnv share("IMGPIPE_GPU_SHARE", nullptr);
    const Report normal = Pipeline(small_cpu_config()).run();
    CHECK(normal.diagnostics.empty());
    CHECK(text_of(normal).find("diagnostics:") == std::string::npos);
    CHECK(nlohmann::json::parse(normal.to_json()).at("diagnostics").empty());
  }
  ScopedEnv share("IMGPIPE_GPU_SHARE", "0.9");
  const Report r = Pipeline(small_cpu_config()).run();
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics.front().first == "IMGPIPE_GPU_SHARE");
  CHECK(r.diagnostics.front().second == "0.9");
  CHECK(text_of(r).find("diagnostics: IMGPIPE_GPU_SHARE=0.9 (a measurement knob, not a normal run)\n") !=
        std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(r.to_json());
  CHECK(j.at("diagnostics") == nlohmann::json{{"IMGPIPE_GPU_SHARE", "0.9"}});
}

TEST_CASE("diagnostics report: a malformed diagnostic fails the run with an error naming the variable") {
  ScopedEnv share("IMGPIPE_GPU_SHARE", "lots");
  Pipeline p(small_cpu_config());
  try {
    (void)p.run();
    FAIL("the run did not fail");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("IMGPIPE_GPU_SHARE") != std::string::npos);
  }
}
