// Faults: an exception in any stage drains the pipeline, frees every pooled
// buffer and pinned block, and reaches the caller with the reason; the same
// Pipeline then runs again and delivers everything. Through the CLI, an
// injected fault exits 1 naming it, and a sticky CUDA error (a trapping
// kernel) ends the run with a clear message, never a hang.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common.hpp"
#include "core/fault.hpp"
#include "imgpipe/pipeline.hpp"

using namespace imgpipe;

namespace {
Config fault_config() {
  Config c;
  c.input.paths = {test::sample_dir().string()};
  c.transform.resize.width = 48;
  c.transform.resize.height = 32;
  c.batch.size = 4;
  c.decode.threads = 3;
  c.memory.track = true;  // a pinned block still live at shutdown is reported with its site
  return c;
}

// The CLI's arguments for a run of the default config over the first 6
// sample images (copied into `dir`): enough for a fault at item 4, and a
// third of the sample folder's run (each run is a whole pipeline, 10 s under
// ThreadSanitizer for the 20 images).
std::string cli_base(const test::TempDir& dir) {
  const auto images = test::sample_images();
  for (std::size_t i = 0; i < 6 && i < images.size(); ++i)
    std::filesystem::copy_file(images[i], dir / images[i].filename().string());
  return "--config " + (test::source_dir() / "configs" / "pipeline.yaml").string() + " --input " +
         dir.path().string() + " --quiet";
}
}  // namespace

TEST_CASE("faults: an exception in any stage reaches the caller, nothing leaks, the pipeline runs again") {
  const std::size_t n = test::sample_images().size();
  for (const DeviceSelection& dev : test::test_devices()) {
    Config c = fault_config();
    c.devices = dev;
    Pipeline p(c);
    for (const char* stage : {"source", "read", "decode", "transform", "pack", "pack_copy", "transfer", "gpu_ops",
                              "sink"}) {
      CAPTURE(dev.to_string());
      CAPTURE(stage);
      const bool per_batch = std::string(stage) == "transfer" || std::string(stage) == "gpu_ops" ||
                             std::string(stage) == "sink";
      const std::uint64_t k = per_batch ? 2 : 9;
      test::LogCapture log;
      fault::inject(stage, k);
      const auto t0 = std::chrono::steady_clock::now();
      std::string what = "no fault";
      try {
        p.run();
      } catch (const Error& e) {
        what = e.what();
      }
      fault::clear();  // before any check: a failed one must not leave the fault armed for later tests
      CHECK(what == "injected fault in " + std::string(stage) + " at item " + std::to_string(k));
      CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
      CHECK(log.count("still allocated") == 0);  // the pinned pool was whole at shutdown
      const Report r = p.run();
      CHECK(r.inputs.delivered == n);
      CHECK(r.inputs.failed == 0);
    }
  }
}

TEST_CASE("faults: a batch stage's fault surfaces on the last, partial batch too (the end-of-input token carries it)") {
  const std::size_t n = test::sample_images().size();
  REQUIRE(n >= 3);
  for (const DeviceSelection& dev : test::test_devices()) {
    Config c = fault_config();
    c.devices = dev;
    c.batch.size = static_cast<int>(n) - 1;  // batch 0 full, batch 1 one image, packed at the end of the input
    Pipeline p(c);
    for (const char* stage : {"transfer", "gpu_ops", "sink"}) {
      CAPTURE(dev.to_string());
      CAPTURE(stage);
      fault::inject(stage, 1);
      std::string what = "no fault";
      try {
        p.run();
      } catch (const Error& e) {
        what = e.what();
      }
      fault::clear();
      CHECK(what == "injected fault in " + std::string(stage) + " at item 1");
    }
    const Report r = p.run();
    CHECK(r.inputs.delivered == n);
    CHECK(r.batches == 2);
  }
}

TEST_CASE("faults: unknown stage names are rejected, IMGPIPE_FAULT is parsed by the CLI") {
  CHECK_THROWS_AS(fault::inject("decoder", 1), std::invalid_argument);
  std::string out;
  const test::TempDir dir;
  const std::string base = cli_base(dir);
  CHECK(test::run_cli("", &out) != 0);  // sanity: the helper runs the CLI
  CHECK(test::run_cli(base, &out) == 0);
  const int bad = std::system(("IMGPIPE_FAULT=decoder:1 " + test::cli_path() + " " + base + " >/dev/null 2>&1").c_str());
  CHECK(WEXITSTATUS(bad) == 2);
  // read: every image passes it, whichever route decodes it.
  const std::string cmd = "IMGPIPE_FAULT=read:4 " + test::cli_path() + " " + base + " 2>&1";
  FILE* f = ::popen(cmd.c_str(), "r");
  REQUIRE(f);
  char buf[4096];
  std::string text;
  for (std::size_t m; (m = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, m);
  const int status = ::pclose(f);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(text.find("injected fault in read at item 4") != std::string::npos);
}

TEST_CASE("faults: a sticky CUDA error ends the run with a clear message and exit 1, never a hang") {
  // In a child process (the CLI): a sticky error poisons the whole CUDA context.
  const test::TempDir dir;
  const std::string base = cli_base(dir);
  for (const DeviceSelection& dev : test::test_devices()) {
    CAPTURE(dev.to_string());
    const std::string cmd = "IMGPIPE_FAULT=gpu_trap:0 timeout 60 " + test::cli_path() + " " + base + " --device " +
                            dev.to_string() + " 2>&1";
    FILE* f = ::popen(cmd.c_str(), "r");
    REQUIRE(f);
    char buf[4096];
    std::string text;
    for (std::size_t m; (m = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, m);
    const int status = ::pclose(f);
    CAPTURE(text);
    if (dev.kind == DeviceSelection::Kind::cpu) {
      CHECK(WEXITSTATUS(status) == 0);  // no GPU, no trap: the host backend has nothing to poison
    } else {
      CHECK(WEXITSTATUS(status) == 1);  // 124 would be timeout's: a hang
      CHECK(text.find("run failed") != std::string::npos);
      CHECK(text.find("cudaError") != std::string::npos);
    }
  }
}

TEST_CASE("faults: a stop requested before run() applies to that run only") {
  Config c = fault_config();
  c.devices = DeviceSelection::parse("cpu");
  Pipeline p(c);
  p.request_stop();  // e.g. a signal while inputs are still being discovered
  const Report stopped = p.run();
  CHECK(stopped.interrupted);
  CHECK(stopped.inputs.delivered == 0);
  CHECK(stopped.inputs.not_processed == test::sample_images().size());
  const Report next = p.run();
  CHECK_FALSE(next.interrupted);
  CHECK(next.inputs.delivered == test::sample_images().size());
}
