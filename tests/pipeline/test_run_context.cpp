// The report's run context (Report::context, docs/report.md, "The run report"): the
// host, the GPUs, the CUDA/OpenCV/oneTBB versions and the effective config,
// as the Pipeline found them; the CLI adds the command line
// (tests/cli/test_report_cli.cpp).
#include <doctest/doctest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <oneapi/tbb/version.h>
#include <opencv2/core/version.hpp>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "memory/gpu.hpp"

using namespace imgpipe;

namespace {
Config small_config(DeviceSelection::Kind devices) {
  Config c;
  c.input.paths = {test::sample_dir().string()};
  c.devices.kind = devices;
  c.transform.resize.width = 48;
  c.transform.resize.height = 32;
  c.batch.size = 3;
  c.decode.threads = 2;
  return c;
}

// "12.4" -> 12040, as the CUDA API counts.
int cuda_number(const std::string& v) {
  const auto dot = v.find('.');
  REQUIRE(dot != std::string::npos);
  return std::stoi(v.substr(0, dot)) * 1000 + std::stoi(v.substr(dot + 1)) * 10;
}
}  // namespace

TEST_CASE("run context: host, versions and the effective config of a host run") {
  const Report r = Pipeline(small_config(DeviceSelection::Kind::cpu)).run();
  const RunContext& c = r.context;
  CHECK(c.command_line.empty());  // a library run: only the CLI knows one
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  CHECK(c.hostname == host);
  utsname u{};
  REQUIRE(::uname(&u) == 0);
  CHECK(c.os == std::string(u.sysname) + " " + u.release + " " + u.machine);
  CHECK(c.cpu_count == std::thread::hardware_concurrency());
  CHECK(c.gpus.empty());
  CHECK(c.opencv == CV_VERSION);
  CHECK(c.onetbb == TBB_runtime_version());
  // The effective config reads back as the run's.
  const Config back = Config::from_yaml_string(c.config);
  CHECK(back.batch.size == 3);
  CHECK(back.transform.resize.width == 48);
  const gpu::CudaVersions v = gpu::cuda_versions();
  CHECK(c.cuda_driver == v.driver);
  CHECK(c.cuda_runtime == v.runtime);
  if (!gpu::built_with_cuda()) {
    CHECK(v.driver == "none");
    CHECK(v.runtime == "none");
  }
  // The JSON report's "context" has the same.
  const auto j = nlohmann::json::parse(r.to_json());
  CHECK(j["context"]["hostname"] == c.hostname);
  CHECK(j["context"]["onetbb"] == c.onetbb);
  CHECK(j["context"]["config"] == c.config);
}

TEST_CASE("run context: GPUs and driver versions") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no GPU");
  const Report r = Pipeline(small_config(DeviceSelection::Kind::automatic)).run();
  const RunContext& c = r.context;
  REQUIRE_FALSE(c.gpus.empty());
  CHECK(c.gpus.size() == r.devices.size());
  CHECK(c.gpus[0].rfind("cuda:", 0) == 0);
  CHECK(c.gpus[0].find(gpu::device_description(0)) != std::string::npos);
  REQUIRE(c.cuda_driver != "none");
  REQUIRE(c.cuda_runtime != "none");
  // The driver runs this runtime, so it supports at least its CUDA version.
  CHECK(cuda_number(c.cuda_driver) >= cuda_number(c.cuda_runtime));
  const std::string page = r.to_html();
  CHECK(page.find("<dd>driver " + c.cuda_driver + ", runtime " + c.cuda_runtime + "</dd>") != std::string::npos);
  CHECK(page.find(c.gpus[0]) != std::string::npos);
}
