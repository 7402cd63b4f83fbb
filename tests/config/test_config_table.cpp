// The key table (core/src/config_keys.cpp) against everything made from it:
// docs/config.md, configs/*.yaml, to_yaml round trips, retired spellings and
// validate()'s per-key checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "core/src/config_keys.hpp"
#include "imgpipe/config.hpp"

using imgpipe::Config;
using imgpipe::ConfigError;
namespace detail = imgpipe::detail;

namespace {

std::vector<std::string> table_keys() {
  std::vector<std::string> keys;
  for (const auto& k : detail::config_keys()) keys.emplace_back(k.key);
  return keys;
}

using imgpipe::test::read_text;

// The ConfigError that loading `yaml` throws (key "<none>" when none is thrown).
ConfigError error_of(const std::string& yaml) {
  try {
    (void)Config::from_yaml_string(yaml);
  } catch (const ConfigError& e) {
    return e;
  }
  return ConfigError("<none>", 0, "no error");
}

// Every key set to a value that is not its default; strings that YAML could
// misread unless quoted.
Config every_key_changed() {
  using namespace imgpipe;
  Config c;
  c.input.paths = {"a b/c.jpg", "x: y", "#hash", "[brackets]", "it's \"quoted\"", "*.png", "-dash", "yes",
                   "~",         "null", " lead", "trail ",     "line\nbreak",      "caf\xc3\xa9", "123"};
  c.input.recursive = false;
  c.input.extensions = {".JPG", ".Png"};
  c.input.on_error = OnError::fail;
  c.input.list = "lists/train.txt";
  c.input.loop = 3;
  c.input.shuffle_seed = UINT64_MAX;
  c.input.shard = {2, 5};
  c.input.shuffle_every_epoch = false;
  c.input.shard_remainder = ShardRemainder::pad;
  c.input.video = {10, 3, 100, 2.5f, 0.25f, 6, VideoOrder::turns, 3, false, Where::cpu,
                   {8, 2, 0, imgpipe::ClipPlace::every, 5, imgpipe::ClipShort::loop, imgpipe::ClipLayout::thwc}};
  c.input.labels = Labels::folders;
  c.decode.threads = 5;
  c.decode.accept_truncated = true;
  c.decode.max_pixels = 123456789012;
  c.decode.reduced = false;
  c.decode.region = false;
  c.decode.exif_orientation = false;
  c.decode.where = Where::cpu;
  c.decode.verify = Verify::full;
  c.decode.gpu_batch = 77;
  c.transform.resize = {33, 17, ResizeMode::center_crop, Interpolation::nearest, 7, Where::gpu};
  c.transform.resize.short_side = 40;
  c.transform.normalize = {{0.1f, -0.2f, 1e-7f}, {0.3f, 1.0f / 3.0f, 12345.678f}, 0.5f, Where::gpu};
  c.transform.layout = Layout::nhwc;
  c.transform.dtype = DType::uint8;
  c.transform.swap_rb = false;
  c.transform.resize.scale = {0.25f, 0.75f};
  c.transform.resize.ratio = {0.5f, 2.0f};
  c.transform.flip = {0.5f, 0.125f};
  c.transform.seed = 99;
  c.batch = {9, true, 50};
  c.staging = {4, StagingMemory::pinned, TransferMode::zero_copy};
  c.memory = {256, false, true, 300, 512, 2048};
  c.devices.kind = DeviceSelection::Kind::list;
  c.devices.ordinals = {1, 0};
  c.dispatch = Dispatch::least_loaded;
  c.sink = {SinkType::dump, "out dir/x", true};
  c.pipeline.max_tokens = 12;
  return c;
}

}  // namespace

TEST_CASE("config: docs/config.md is generated from the key table") {
  const auto path = imgpipe::test::source_dir() / "docs" / "config.md";
  const std::string expected = detail::config_reference_markdown();
  if (std::getenv("IMGPIPE_UPDATE_DOCS") != nullptr) {
    std::ofstream(path, std::ios::binary) << expected;
    MESSAGE("rewrote " << path.string());
  }
  const std::string committed = read_text(path);
  if (committed == expected) return;
  // Point at the first line that differs rather than printing both files.
  std::istringstream a(committed), b(expected);
  std::string line_a, line_b;
  int line = 1;
  for (;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, line_a));
    const bool more_b = static_cast<bool>(std::getline(b, line_b));
    if (!more_a) line_a = "(end of file)";
    if (!more_b) line_b = "(end of file)";
    if (!more_a || !more_b || line_a != line_b) break;
  }
  FAIL(path.string() << " is not what the key table (core/src/config_keys.cpp) gives; first difference on line "
                     << line << ":\n  committed: " << line_a << "\n  generated: " << line_b
                     << "\nRefresh it with\n  IMGPIPE_UPDATE_DOCS=1 build/tests/imgpipe_tests "
                        "-tc=\"config: docs/config.md*\"\nand commit the result.");
}

TEST_CASE("config: the key table is well formed") {
  std::set<std::string> seen;
  std::map<std::string, std::vector<std::size_t>> rows_of_section;
  std::size_t row = 0;
  for (const auto& k : detail::config_keys()) {
    const std::string key(k.key);
    CAPTURE(key);
    CHECK(seen.insert(key).second);
    CHECK_FALSE(k.doc.empty());
    CHECK(k.doc.find('\n') == std::string_view::npos);
    CHECK(bool(k.codec.read));
    CHECK(bool(k.codec.write));
    CHECK(bool(k.codec.check));
    CHECK(bool(k.codec.names) == (k.kind == detail::Kind::enumeration));
    for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      rows_of_section[key.substr(0, dot)].push_back(row);
    ++row;
    if (k.kind == detail::Kind::integer) {
      CHECK(k.range.min >= INT32_MIN);
      CHECK(k.range.max <= INT32_MAX);
    }
    if (k.kind == detail::Kind::enumeration) {
      const auto names = k.codec.names();
      CHECK(names.size() >= 2);
      CHECK(std::set<std::string_view>(names.begin(), names.end()).size() == names.size());
    }
  }
  // A section's keys are contiguous: to_yaml opens each section once.
  for (const auto& [section, rows] : rows_of_section)
    CHECK_MESSAGE(rows.back() - rows.front() + 1 == rows.size(), "the keys of " << section << " are not together");
  // No key is also a section ("a.b" and "a.b.c" cannot both be keys).
  for (const auto& a : seen)
    for (const auto& b : seen) CHECK_MESSAGE(b.rfind(a + ".", 0) != 0, a << " is a key and a section of " << b);
  for (const auto& r : detail::retired_spellings()) {
    CHECK_FALSE(r.instead.empty());
    CHECK_FALSE(r.why.empty());
  }
}

TEST_CASE("config: configs/pipeline.yaml gives every key of the table, with the defaults") {
  const auto path = imgpipe::test::source_dir() / "configs" / "pipeline.yaml";
  const std::vector<std::string> given = detail::keys_given(read_text(path));
  for (const std::string& key : table_keys()) {
    CAPTURE(key);
    CHECK(std::count(given.begin(), given.end(), key) == 1);
  }
  CHECK(given == table_keys());  // and in the table's order
  Config file = Config::from_yaml_file(path);
  // The one difference from the built-in defaults: the file names the samples
  // so that it runs out of the box.
  CHECK(file.input.paths == std::vector<std::string>{"samples/data"});
  CHECK(Config{}.input.paths.empty());
  file.input.paths.clear();
  CHECK(file == Config{});
  for (const auto& k : detail::config_keys()) {
    CAPTURE(k.key);
    CHECK(detail::value_text(k, file) == detail::value_text(k, Config{}));
  }
}

TEST_CASE("config: every key in every configs/*.yaml is in the table") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(imgpipe::test::source_dir() / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    CAPTURE(entry.path().string());
    std::vector<std::string> given;
    CHECK_NOTHROW(given = detail::keys_given(read_text(entry.path())));
    for (const auto& key : given) CHECK(detail::find_key(key) != nullptr);
    CHECK_NOTHROW((void)Config::from_yaml_file(entry.path()));
  }
  CHECK(files >= 4);
}

TEST_CASE("config: to_yaml() writes every key and round-trips") {
  SUBCASE("defaults") {
    const Config c;
    const std::string y = c.to_yaml();
    CAPTURE(y);
    CHECK(detail::keys_given(y) == table_keys());
    CHECK(Config::from_yaml_string(y) == c);
  }
  SUBCASE("every key set to a value that is not its default") {
    const Config c = every_key_changed();
    // A key added to the table but not to every_key_changed() fails here.
    for (const auto& k : detail::config_keys()) {
      CAPTURE(k.key);
      CHECK(detail::value_text(k, c) != detail::value_text(k, Config{}));
    }
    const std::string y = c.to_yaml();
    CAPTURE(y);
    CHECK(detail::keys_given(y) == table_keys());
    const Config back = Config::from_yaml_string(y);
    CHECK(back == c);
    CHECK(back.to_yaml() == y);
  }
  SUBCASE("devices as one ordinal, cpu, all") {
    for (const char* d : {"3", "cpu", "all"}) {
      Config c;
      c.devices = imgpipe::DeviceSelection::parse(d);
      CHECK(Config::from_yaml_string(c.to_yaml()) == c);
    }
  }
}

TEST_CASE("config: staging.transfer takes copy | zero_copy, pageable staging is staging.memory: pageable") {
  CHECK(Config::from_yaml_string("staging: {transfer: copy}\n").staging.transfer == imgpipe::TransferMode::copy);
  CHECK(Config::from_yaml_string("staging: {transfer: zero_copy}\n").staging.transfer ==
        imgpipe::TransferMode::zero_copy);
  CHECK(Config::from_yaml_string("staging: {memory: pageable}\n").staging.memory == imgpipe::StagingMemory::pageable);
  const ConfigError e = error_of("batch:\n  size: 4\nstaging:\n  transfer: pageable\n");
  const std::string what = e.what();
  CAPTURE(what);
  CHECK(e.key() == "staging.transfer");
  CHECK(e.line() == 4);
  CHECK(what.find("staging.memory: pageable") != std::string::npos);
  const ConfigError bad = error_of("staging:\n  transfer: mapped\n");
  CHECK(bad.key() == "staging.transfer");
  CHECK(std::string(bad.what()).find("copy | zero_copy)") != std::string::npos);
}

TEST_CASE("config: input.video.order takes ready | turns, ready by default") {
  CHECK(Config{}.input.video.order == imgpipe::VideoOrder::ready);
  CHECK(Config::from_yaml_string("input:\n  video: {order: turns}\n").input.video.order ==
        imgpipe::VideoOrder::turns);
  CHECK(Config::from_yaml_string("input:\n  video: {order: ready}\n").input.video.order ==
        imgpipe::VideoOrder::ready);
  const ConfigError e = error_of("input:\n  video:\n    interleave: 2\n    order: fastest\n");
  const std::string what = e.what();
  CAPTURE(what);
  CHECK(e.key() == "input.video.order");
  CHECK(e.line() == 4);
  CHECK(what.find("ready | turns") != std::string::npos);
}

TEST_CASE("config: unknown keys suggest the nearest known key") {
  CHECK(std::string(error_of("transform:\n  resize:\n    widht: 3\n").what()).find("did you mean 'width'") !=
        std::string::npos);
  CHECK(std::string(error_of("decode:\n  thread: 2\n").what()).find("did you mean 'threads'") != std::string::npos);
  CHECK(std::string(error_of("tranform:\n  layout: nchw\n").what()).find("did you mean 'transform'") !=
        std::string::npos);
  const ConfigError far = error_of("bogus: 1\n");
  CHECK(far.key() == "bogus");
  CHECK(std::string(far.what()).find("did you mean") == std::string::npos);
  const ConfigError seed = error_of("input:\n  shuffle: {sed: 1}\n");
  CHECK(seed.key() == "input.shuffle.sed");
  CHECK(std::string(seed.what()).find("did you mean 'seed'") != std::string::npos);
  CHECK(error_of("input:\n  shard: {rank: 0, size: 2}\n").key() == "input.shard.size");
}

TEST_CASE("config: strings must be UTF-8 (what to_yaml writes must read back the same)") {
  CHECK(Config::from_yaml_string("input:\n  paths: [caf\xc3\xa9]\n").input.paths[0] == "caf\xc3\xa9");
  const ConfigError e = error_of("input:\n  paths: [a, \"b\xff\"]\n");
  CHECK(e.key() == "input.paths[1]");
  CHECK(std::string(e.what()).find("UTF-8") != std::string::npos);
  CHECK(error_of("input:\n  paths: \"\xc0\xafx\"\n").key() == "input.paths");  // overlong '/'
  CHECK(error_of("sink:\n  dir: \"\xed\xa0\x80\"\n").key() == "sink.dir");     // a surrogate
}

TEST_CASE("config: input.shuffle and input.shard") {
  const Config c = Config::from_yaml_string("input:\n  shuffle: {seed: 42}\n  shard: {rank: 1, world_size: 4}\n");
  CHECK(c.input.shuffle_seed == std::optional<std::uint64_t>(42));
  CHECK(c.input.shard.rank == 1);
  CHECK(c.input.shard.world_size == 4);
  CHECK_FALSE(Config::from_yaml_string("input:\n  shuffle: {}\n").input.shuffle_seed.has_value());
  CHECK(error_of("input:\n  shuffle: {seed: -1}\n").key() == "input.shuffle.seed");
  CHECK(error_of("input:\n  shuffle: 42\n").key() == "input.shuffle");
  const ConfigError half = error_of("input:\n  shard: {rank: 1}\n");
  CHECK(half.key() == "input.shard");
  CHECK(half.line() == 2);
  const ConfigError rank = error_of("input:\n  shard:\n    world_size: 2\n    rank: 2\n");
  CHECK(rank.key() == "input.shard.rank");
  CHECK(rank.line() == 4);
  CHECK(error_of("input:\n  shard: {rank: 0, world_size: 0}\n").key() == "input.shard.world_size");
}

TEST_CASE("config: validate() applies the table's ranges to structs built in code") {
  auto key_of = [](const Config& c) {
    try {
      c.validate();
    } catch (const ConfigError& e) {
      CHECK(e.line() == 0);
      return e.key();
    }
    return std::string("<none>");
  };
  Config c;
  c.batch.size = 65536;
  CHECK(key_of(c) == "batch.size");
  c = Config{};
  c.input.video.stride = 0;
  CHECK(key_of(c) == "input.video.stride");
  c = Config{};
  c.decode.threads = -1;
  CHECK(key_of(c) == "decode.threads");
  c = Config{};
  c.transform.resize.where = static_cast<imgpipe::Where>(9);
  CHECK(key_of(c) == "transform.resize.where");
  c = Config{};
  c.devices.kind = imgpipe::DeviceSelection::Kind::list;
  c.devices.ordinals = {0, 0};
  CHECK(key_of(c) == "devices[1]");
  c = Config{};
  c.input.shard.rank = 0;
  CHECK(key_of(c) == "input.shard");
  c = Config{};
  c.transform.normalize.mean[1] = std::numeric_limits<float>::quiet_NaN();
  CHECK(key_of(c) == "transform.normalize.mean[1]");
}
