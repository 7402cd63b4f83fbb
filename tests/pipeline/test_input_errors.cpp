// Pipeline::run() checks the inputs before any work (before it picks or
// touches a GPU): a missing path, a pattern without a match or no input at all
// is a ConfigError; count_inputs() counts what a run would take.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::ConfigError;
using imgpipe::DeviceSelection;
using imgpipe::Pipeline;
using imgpipe::test::TempDir;

namespace {

using imgpipe::test::contains;

// 'text' (built without operator+ on a literal: GCC 12 warns there, -Wrestrict, PR 105651).
std::string q(const std::string& text) {
  std::string s(1, '\'');
  s += text;
  s += '\'';
  return s;
}

Config small_config() {
  Config c;
  c.input.paths = {imgpipe::test::sample_dir().string()};
  c.transform.resize.width = 32;
  c.transform.resize.height = 24;
  c.batch.size = 4;
  return c;
}

}  // namespace

TEST_CASE("pipeline inputs: a path that does not exist ends run() with a ConfigError naming each such path") {
  TempDir d;
  Config c = small_config();
  const std::string missing = (d / "nonexistent" / "dir").string();
  const std::string pattern = (d / "*.png").string();
  c.input.paths = {imgpipe::test::sample_dir().string(), missing, pattern};
  // GPU 7 (absent here; on a machine with 8 GPUs any ordinal works the same):
  // device selection would fail with an imgpipe::Error, so a ConfigError shows
  // that the inputs were checked before any GPU was looked at.
  for (const char* device : {"cpu", "7"}) {
    CAPTURE(device);
    c.devices = DeviceSelection::parse(device);
    Pipeline p(c);  // the constructor checks the config's values, not the file system
    bool thrown = false;
    try {
      (void)p.run();
    } catch (const ConfigError& e) {
      thrown = true;
      CAPTURE(e.what());
      CHECK(e.key() == "input.paths");
      CHECK(contains(e.what(), q(missing) + " does not exist"));
      CHECK(contains(e.what(), "pattern " + q(pattern) + " matches nothing"));
      CHECK_FALSE(contains(e.what(), q(imgpipe::test::sample_dir().string())));
    }
    CHECK(thrown);
  }
}

TEST_CASE("pipeline inputs: a folder with no input is a ConfigError, then the same Pipeline runs once it has one") {
  TempDir d;
  Config c = small_config();
  c.devices = DeviceSelection::parse("cpu");
  c.input.paths = {d.path().string()};
  Pipeline p(c);
  CHECK_THROWS_AS((void)p.run(), ConfigError);
  fs::copy_file(imgpipe::test::sample_images().front(), d / "a.jpg");
  const imgpipe::Report r = p.run();
  CHECK(r.inputs.discovered == 1);
  CHECK(r.inputs.delivered == 1);
}

TEST_CASE("pipeline inputs: count_inputs counts images, videos and entries that already fail") {
  TempDir d;
  const auto samples = imgpipe::test::sample_images();
  for (std::size_t i = 0; i < 3; ++i) fs::copy_file(samples[i], d / samples[i].filename());
  {
    std::ofstream(d / "clip.mp4") << "not really a video";  // counted by its extension; the run decodes it
    std::ofstream(d / "notes.txt") << "not an input";
    std::ofstream(d / "list.txt") << "missing.jpg\n" << samples[3].string() << "\n";
  }
  imgpipe::InputConfig in = small_config().input;
  in.paths = {d.path().string()};
  in.list = (d / "list.txt").string();
  const imgpipe::InputCounts n = imgpipe::count_inputs(in);
  CHECK(n.images == 4);
  CHECK(n.videos == 1);
  REQUIRE(n.failures.size() == 1);
  CHECK(n.failures[0].path == (d / "missing.jpg").string());
  CHECK(contains(n.failures[0].reason, "no such file"));
  CHECK(n.total() == 6);
  // The same checks as run().
  in.paths.push_back((d / "absent").string());
  CHECK_THROWS_AS((void)imgpipe::count_inputs(in), ConfigError);
}

TEST_CASE("pipeline inputs: a shard left without inputs says so (the inputs themselves passed the check)") {
  TempDir d;
  fs::copy_file(imgpipe::test::sample_images().front(), d / "a.jpg");
  Config c = small_config();
  c.devices = DeviceSelection::parse("cpu");
  c.input.paths = {d.path().string()};
  c.input.shard.rank = 1;
  c.input.shard.world_size = 2;  // one input: rank 0 takes it, rank 1 has none
  bool thrown = false;
  try {
    (void)Pipeline(c).run();
  } catch (const ConfigError&) {
    FAIL("the config is fine: only this shard is empty");
  } catch (const imgpipe::Error& e) {
    thrown = true;
    CHECK(contains(e.what(), "no inputs for shard rank 1 of 2 (config): fewer inputs than processes"));
  }
  CHECK(thrown);
  c.input.shard.rank = 0;
  CHECK(Pipeline(c).run().inputs.delivered == 1);
}
