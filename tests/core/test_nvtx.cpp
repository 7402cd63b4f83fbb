// NVTX ranges (core/nvtx.hpp) in this build's mode: with the CUDA backend a
// tool attached (tests/nvtx/probe_tool.cpp, loaded as Nsight Systems' is)
// sees every stage's calls and each batch's copy and kernels nested in
// theirs; tests/core/test_nvtx_off.cpp checks the host-only variant.
#include <cstdlib>
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "core/nvtx.hpp"

namespace fs = std::filesystem;
using imgpipe::test::TempDir;

TEST_CASE("nvtx: the wrapper is compiled in this build's mode") {
  CHECK(imgpipe::nvtx::enabled == (IMGPIPE_WITH_NVTX != 0));
  // The NVTX variant pops in its destructor; the no-op one has none.
  CHECK(std::is_trivially_destructible_v<imgpipe::nvtx::Range> == !imgpipe::nvtx::enabled);
  // Nested ranges, with and without a payload, without a tool attached.
  const imgpipe::nvtx::Range outer("test outer");
  { const imgpipe::nvtx::Range inner("test inner", 42); }
}

TEST_CASE("nvtx: a tool sees every stage's calls, and each batch's copy and kernels inside them") {
#ifndef IMGPIPE_NVTX_PROBE_TOOL
  // The host-only build compiles the ranges out (test_nvtx_off.cpp checks that variant).
  IMGPIPE_SKIP_UNLESS(false, "NVTX is compiled out in this build (no CUDA)");
#else
  TempDir d;
  const auto samples = imgpipe::test::sample_images();
  for (std::size_t i = 0; i < 6; ++i) fs::copy_file(samples.at(i), d / samples[i].filename().string());
  std::ofstream(d / "c.yaml") << "transform:\n  resize: {width: 64, height: 48}\nbatch:\n  size: 2\n";
  const fs::path out = d / "ranges.txt";
  // The tool library as built, or where IMGPIPE_NVTX_PROBE_TOOL says (a
  // bundle for another machine carries it elsewhere).
  const char* env_tool = std::getenv("IMGPIPE_NVTX_PROBE_TOOL");
  const std::string tool = env_tool && *env_tool ? env_tool : IMGPIPE_NVTX_PROBE_TOOL;
  INFO("probe tool: " << tool);
  REQUIRE(fs::exists(tool));
  std::string log;
  const int rc = imgpipe::test::run_cli(
      "-q --device cpu --config '" + (d / "c.yaml").string() + "' --input '" + d.path().string() + "' --report '" +
          (d / "r.json").string() + "'",
      &log, "NVTX_INJECTION64_PATH='" + tool + "' IMGPIPE_NVTX_PROBE_OUT='" +
                out.string() + "'");
  CAPTURE(log);
  REQUIRE(rc == 0);
  REQUIRE(fs::exists(out));
  std::map<std::string, long> ranges;  // "parent/name" -> count
  std::set<std::string> domains;
  long open = -1, bad_pops = -1;
  std::ifstream in(out);
  for (std::string kind; in >> kind;) {
    std::string name;
    long n = 0;
    if (kind == "domain") in >> name, domains.insert(name);
    else if (kind == "range") in >> name >> n, ranges[name] = n;
    else if (kind == "open") in >> open;
    else if (kind == "bad_pops") in >> bad_pops;
  }
  std::ostringstream all;
  for (const auto& [k, n] : ranges) all << k << " " << n << "\n";
  CAPTURE(all.str());
  CHECK(domains.count("imgpipe") == 1);
  CHECK(open == 0);
  CHECK(bad_pops == 0);
  // Top-level ranges for every stage, one per call that did work.
  const nlohmann::json report = nlohmann::json::parse(std::ifstream(d / "r.json"));
  for (const auto& s : report["stages"]) {
    const std::string name = s["name"];
    CAPTURE(name);
    if (name == "source") CHECK(ranges["-/source"] >= 6);  // one call per input plus the end
    else if (name == "pack") CHECK(ranges["-/pack"] >= 6);  // every token, the flush one too
    else if (name == "gpu_ops") CHECK(ranges["-/gpu_ops"] == s["items"].get<long>() + 1);  // and the end-of-input token
    else CHECK(ranges["-/" + name] == s["items"].get<long>());
  }
  // Inside the batch stages: each batch's copy and its kernels (3 batches of 2).
  CHECK(ranges["transfer/copy"] == 0);  // --device cpu, GPU or not: the host backend's batches stay in their slots
  CHECK(ranges["gpu_ops/kernels"] == 3);
#endif
}
