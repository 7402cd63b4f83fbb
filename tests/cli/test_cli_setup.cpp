// What the CLI says about a run's set-up: with --log-level debug one line
// per set-up step (devices, discovery, plan, checks, decoders, staging,
// device buffers, stages, total), each with its seconds and the memory it
// took; nothing of it at the default level. Through the real binary.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"

namespace fs = std::filesystem;
using imgpipe::test::run_cli;
using imgpipe::test::TempDir;

namespace {

const std::string kConfig = (imgpipe::test::source_dir() / "configs" / "pipeline.yaml").string();

using imgpipe::test::q;

// The lines of `text` that start with "imgpipe: debug: set-up: <step> ".
std::vector<std::string> setup_lines(const std::string& text, const std::string& step) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("imgpipe: debug: set-up: " + step + " ", 0) == 0) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("cli: --log-level debug says each set-up step with its seconds and memory, staging sized to the inputs") {
  TempDir d;
  const fs::path in = d / "in";
  fs::create_directories(in);
  const auto samples = imgpipe::test::sample_images();
  for (std::size_t i = 0; i < 3; ++i) fs::copy_file(samples.at(i), in / samples[i].filename());
  // The shipped config: float32 640x640, batches of 32.
  const std::string run = "--config " + q(kConfig) + " --input " + q(in);
  std::string out;
  REQUIRE(run_cli(run + " --log-level debug", &out) == 0);
  CAPTURE(out);
  const std::regex timed(R"(set-up: [a-z ]+ [0-9]+\.[0-9]{3} s)");
  const std::regex resident(R"(resident [+-][0-9]+\.[0-9] MiB)");
  for (const char* step : {"devices", "discovery", "plan", "checks", "device buffers", "stages", "total"}) {
    CAPTURE(step);
    const std::vector<std::string> lines = setup_lines(out, step);
    REQUIRE(lines.size() == 1);
    CHECK(std::regex_search(lines[0], timed));
    CHECK(std::regex_search(lines[0], resident));
  }
  const std::vector<std::string> staging = setup_lines(out, "staging");
  REQUIRE(staging.size() == 1);
  CHECK(std::regex_search(staging[0], timed));
  // One slot of the plan's (2 on the host backend, more on a GPU for the
  // frames in flight), with room for the 3 images' samples: what the run carries.
  CHECK(std::regex_search(staging[0], std::regex(R"(, 1 of [0-9]+ slots, )")));
  CHECK(staging[0].find("room for 3 of 32 samples a slot (the inputs hold 3)") != std::string::npos);
  CHECK(std::regex_search(staging[0], std::regex(R"([0-9]+\.[0-9] MiB (pageable|write_combined|pinned))")));
  CHECK(setup_lines(out, "discovery")[0].find("3 inputs") != std::string::npos);
  CHECK(setup_lines(out, "device buffers")[0].find(" MiB of ") != std::string::npos);
  CHECK(setup_lines(out, "total")[0].find("the report's set-up") != std::string::npos);
  CHECK(setup_lines(out, "decoders").size() == 1);

  REQUIRE(run_cli(run, &out) == 0);  // the default level: none of it
  CHECK(out.find("set-up: ") == std::string::npos);
}
