// Config loading: documented defaults, every kind of error (with key and
// line), and to_yaml() round trips.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "imgpipe/config.hpp"
#include "imgpipe/pipeline.hpp"

using imgpipe::Config;
using imgpipe::ConfigError;

namespace {

const std::string kDefaultYaml = (imgpipe::test::source_dir() / "configs" / "pipeline.yaml").string();

// Field-by-field equality, one CHECK per field so a failure names the field.
void check_same(const Config& a, const Config& b, bool compare_paths) {
  if (compare_paths) CHECK(a.input.paths == b.input.paths);
  CHECK(a.input.recursive == b.input.recursive);
  CHECK(a.input.extensions == b.input.extensions);
  CHECK(a.input.on_error == b.input.on_error);
  CHECK(a.decode.threads == b.decode.threads);
  CHECK(a.decode.accept_truncated == b.decode.accept_truncated);
  CHECK(a.decode.max_pixels == b.decode.max_pixels);
  CHECK(a.decode.gpu_batch == b.decode.gpu_batch);
  CHECK(a.transform.resize.width == b.transform.resize.width);
  CHECK(a.transform.resize.height == b.transform.resize.height);
  CHECK(a.transform.resize.mode == b.transform.resize.mode);
  CHECK(a.transform.resize.interpolation == b.transform.resize.interpolation);
  CHECK(a.transform.resize.pad_value == b.transform.resize.pad_value);
  for (int c = 0; c < 3; ++c) {
    CAPTURE(c);
    CHECK(a.transform.normalize.mean[c] == b.transform.normalize.mean[c]);
    CHECK(a.transform.normalize.std[c] == b.transform.normalize.std[c]);
  }
  CHECK(a.transform.normalize.scale == b.transform.normalize.scale);
  CHECK(a.transform.normalize.where == b.transform.normalize.where);
  CHECK(a.transform.layout == b.transform.layout);
  CHECK(a.transform.dtype == b.transform.dtype);
  CHECK(a.transform.swap_rb == b.transform.swap_rb);
  CHECK(a.batch.size == b.batch.size);
  CHECK(a.batch.drop_last == b.batch.drop_last);
  CHECK(a.staging.slots == b.staging.slots);
  CHECK(a.staging.memory == b.staging.memory);
  CHECK(a.devices.kind == b.devices.kind);
  if (a.devices.kind == imgpipe::DeviceSelection::Kind::ordinal) CHECK(a.devices.ordinal == b.devices.ordinal);
  CHECK(a.sink.type == b.sink.type);
  CHECK(a.sink.dir == b.sink.dir);
  CHECK(a.sink.overwrite == b.sink.overwrite);
  CHECK(a.pipeline.max_tokens == b.pipeline.max_tokens);
}

// Loads `yaml`, expects a ConfigError for `key` at `line` whose message
// contains every string in `words`.
void expect_error(const std::string& yaml, const std::string& key, int line,
                  const std::vector<std::string>& words = {}) {
  CAPTURE(yaml);
  bool thrown = false;
  try {
    (void)Config::from_yaml_string(yaml);
  } catch (const ConfigError& e) {
    thrown = true;
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(e.key() == key);
    CHECK(e.line() == line);
    if (!key.empty()) CHECK(what.find(key) != std::string::npos);
    if (line > 0) CHECK(what.find("line " + std::to_string(line)) != std::string::npos);
    for (const auto& w : words) {
      CAPTURE(w);
      CHECK(what.find(w) != std::string::npos);
    }
  }
  CHECK_MESSAGE(thrown, "expected a ConfigError");
}

}  // namespace

TEST_CASE("config: the shipped pipeline.yaml states exactly the built-in defaults") {
  const Config file = Config::from_yaml_file(kDefaultYaml);
  const Config def;
  check_same(file, def, /*compare_paths=*/false);
  // The one documented difference: the file names the sample data.
  CHECK(def.input.paths.empty());
  REQUIRE(file.input.paths.size() == 1);
  CHECK(file.input.paths[0] == "samples/data");
  // Spot checks against the documentation, so that a change of both the
  // struct and the file to a wrong value is still caught.
  CHECK(def.batch.size == 32);
  CHECK(def.transform.resize.width == 640);
  CHECK(def.transform.resize.height == 640);
  CHECK(def.transform.resize.pad_value == 114);
  CHECK(def.transform.normalize.scale == doctest::Approx(1.0 / 255.0).epsilon(1e-7));
  CHECK(def.transform.normalize.mean[0] == 0.485f);
  CHECK(def.transform.normalize.std[2] == 0.225f);
  CHECK(def.staging.slots == 2);
  CHECK(def.staging.memory == imgpipe::StagingMemory::write_combined);
  CHECK(def.decode.max_pixels == 100'000'000);
  CHECK(def.input.extensions == std::vector<std::string>{".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff",
                                                         ".avi", ".mp4", ".mkv", ".mov", ".webm", ".ts", ".m2ts",
                                                         ".mts"});
  CHECK(def.decode.reduced);
  CHECK(def.decode.exif_orientation);
  CHECK(def.input.loop == 1);
  CHECK_FALSE(def.input.shuffle_seed.has_value());
  CHECK(def.input.shard.rank == -1);
  CHECK(def.input.video.stride == 1);
}

TEST_CASE("config: an empty document gives the defaults, values override them") {
  check_same(Config::from_yaml_string(""), Config{}, true);
  const Config c = Config::from_yaml_string(
      "input:\n"
      "  paths: [a, 'b c', \"d/*.jpg\"]\n"
      "  recursive: false\n"
      "  extensions: [.JPG]\n"
      "  on_error: fail\n"
      "decode:\n"
      "  threads: 3\n"
      "  accept_truncated: true\n"
      "  max_pixels: 5000\n"
      "transform:\n"
      "  resize: {width: 64, height: 48, mode: letterbox, interpolation: area, pad_value: 0}\n"
      "  normalize: {mean: [1, 2, 3], std: [4, 5, 6], scale: 0.5, where: gpu}\n"
      "  layout: nhwc\n"
      "  dtype: float16\n"
      "  color: bgr\n"
      "batch: {size: 7, drop_last: true}\n"
      "staging: {slots: 3, memory: pageable}\n"
      "devices: 2\n"
      "sink: {type: dump, dir: /tmp/x, overwrite: true}\n"
      "pipeline: {max_tokens: 9}\n");
  CHECK(c.input.paths == std::vector<std::string>{"a", "b c", "d/*.jpg"});
  CHECK_FALSE(c.input.recursive);
  CHECK(c.input.extensions == std::vector<std::string>{".JPG"});
  CHECK(c.input.on_error == imgpipe::OnError::fail);
  CHECK(c.decode.threads == 3);
  CHECK(c.decode.accept_truncated);
  CHECK(c.decode.max_pixels == 5000);
  CHECK(c.transform.resize.width == 64);
  CHECK(c.transform.resize.height == 48);
  CHECK(c.transform.resize.mode == imgpipe::ResizeMode::letterbox);
  CHECK(c.transform.resize.interpolation == imgpipe::Interpolation::area);
  CHECK(c.transform.resize.pad_value == 0);
  CHECK(c.transform.normalize.mean == std::array<float, 3>{1, 2, 3});
  CHECK(c.transform.normalize.std == std::array<float, 3>{4, 5, 6});
  CHECK(c.transform.normalize.scale == 0.5f);
  CHECK(c.transform.normalize.where == imgpipe::Where::gpu);
  CHECK(c.transform.layout == imgpipe::Layout::nhwc);
  CHECK(c.transform.dtype == imgpipe::DType::float16);
  CHECK_FALSE(c.transform.swap_rb);
  CHECK(c.batch.size == 7);
  CHECK(c.batch.drop_last);
  CHECK(c.staging.slots == 3);
  CHECK(c.staging.memory == imgpipe::StagingMemory::pageable);
  CHECK(c.devices.kind == imgpipe::DeviceSelection::Kind::ordinal);
  CHECK(c.devices.ordinal == 2);
  CHECK(c.sink.type == imgpipe::SinkType::dump);
  CHECK(c.sink.dir == "/tmp/x");
  CHECK(c.sink.overwrite);
  CHECK(c.pipeline.max_tokens == 9);
  // A single path may be written as a scalar.
  CHECK(Config::from_yaml_string("input:\n  paths: one.jpg\n").input.paths == std::vector<std::string>{"one.jpg"});
}

TEST_CASE("config: malformed YAML is reported with its line") {
  // Bad indentation on line 3.
  expect_error("batch:\n  size: 8\n drop_last: true\n", "", 3, {"malformed YAML"});
  // A tab where indentation is expected, line 2.
  expect_error("batch:\n\tsize: 8\n", "", 2, {"malformed YAML"});
  // Unclosed flow sequence opened on line 2 (the parser notices on line 3).
  expect_error("input:\n  paths: [a, b\nbatch:\n  size: 3\n", "", 3, {"malformed YAML"});
  // Not a mapping of sections.
  expect_error("- 1\n- 2\n", "", 1, {"mapping"});
  // A section that is not a mapping.
  expect_error("batch: 3\n", "batch", 1, {"mapping"});
  expect_error("transform:\n  resize: 640\n", "transform.resize", 2, {"mapping"});
}

TEST_CASE("config: unknown keys are named with their dotted path and line") {
  expect_error("batch:\n  size: 8\nbogus: 1\n", "bogus", 3, {"unknown key"});
  expect_error("transform:\n  resize:\n    width: 64\n    widht: 3\n", "transform.resize.widht", 4,
               {"unknown key", "width"});
  expect_error("decode:\n  thread: 2\n", "decode.thread", 2, {"threads"});
  expect_error("sink:\n  type: dump\n  directory: x\n", "sink.directory", 3);
}

TEST_CASE("config: a key given twice is an error, not silently ignored") {
  expect_error("batch:\n  size: 8\nbatch:\n  size: 9\n", "batch", 3, {"duplicate"});
  expect_error("batch:\n  size: 8\n  size: 9\n", "batch.size", 3, {"duplicate"});
}

TEST_CASE("config: wrong types name the key and line") {
  // String for an int.
  expect_error("batch:\n  size: abc\n", "batch.size", 2, {"integer", "abc"});
  expect_error("batch:\n  size: 3.5\n", "batch.size", 2, {"integer"});
  expect_error("transform:\n  resize:\n    width: wide\n", "transform.resize.width", 3, {"integer"});
  // A list where a scalar belongs.
  expect_error("batch:\n  size: [1, 2]\n", "batch.size", 2, {"integer"});
  expect_error("input:\n  recursive: [true]\n", "input.recursive", 2, {"true or false"});
  expect_error("input:\n  recursive: 1\n", "input.recursive", 2, {"true or false"});
  expect_error("transform:\n  normalize:\n    scale: [1]\n", "transform.normalize.scale", 3, {"number"});
  expect_error("sink:\n  dir: [a, b]\n", "sink.dir", 2, {"string"});
  // A mapping where a list belongs.
  expect_error("input:\n  paths: {a: 1}\n", "input.paths", 2, {"list"});
  expect_error("input:\n  extensions: {jpg: 1}\n", "input.extensions", 2, {"list"});
  // A scalar or wrong element where a list of three numbers belongs.
  expect_error("transform:\n  normalize:\n    mean: 0.5\n", "transform.normalize.mean", 3, {"list"});
  expect_error("transform:\n  normalize:\n    mean: [1, x, 2]\n", "transform.normalize.mean[1]", 3, {"x"});
  expect_error("transform:\n  normalize:\n    scale: nan\n", "transform.normalize.scale", 3, {"finite"});
  expect_error("decode:\n  max_pixels: lots\n", "decode.max_pixels", 2, {"integer"});
}

TEST_CASE("config: out-of-range values name the key and line") {
  expect_error("batch:\n  size: 0\n", "batch.size", 2, {"range"});
  expect_error("batch:\n  size: -3\n", "batch.size", 2, {"range"});
  expect_error("batch:\n  size: 99999999999999999999\n", "batch.size", 2);
  expect_error("transform:\n  resize:\n    width: 0\n", "transform.resize.width", 3, {"range"});
  expect_error("transform:\n  resize:\n    height: 16385\n", "transform.resize.height", 3, {"range"});
  expect_error("staging:\n  slots: 1\n", "staging.slots", 2, {"range"});
  expect_error("transform:\n  resize:\n    pad_value: 256\n", "transform.resize.pad_value", 3, {"range"});
  expect_error("transform:\n  resize:\n    pad_value: -1\n", "transform.resize.pad_value", 3, {"range"});
  expect_error("transform:\n  normalize:\n    std: [0, 1, 1]\n", "transform.normalize.std[0]", 3, {"> 0"});
  expect_error("transform:\n  normalize:\n    std: [0.1, -1, 0.2]\n", "transform.normalize.std[1]", 3, {"> 0"});
  expect_error("transform:\n  normalize:\n    mean: [1, 2]\n", "transform.normalize.mean", 3, {"3 values", "got 2"});
  expect_error("transform:\n  normalize:\n    std: [1, 2, 3, 4]\n", "transform.normalize.std", 3, {"got 4"});
  expect_error("transform:\n  normalize:\n    scale: 0\n", "transform.normalize.scale", 3, {"> 0"});
  expect_error("transform:\n  normalize:\n    scale: -0.5\n", "transform.normalize.scale", 3, {"> 0"});
  expect_error("decode:\n  max_pixels: 0\n", "decode.max_pixels", 2, {">= 1"});
  expect_error("decode:\n  gpu_batch: -1\n", "decode.gpu_batch", 2, {"range"});
  expect_error("decode:\n  gpu_batch: 5000\n", "decode.gpu_batch", 2, {"range"});
  expect_error("pipeline:\n  max_tokens: -1\n", "pipeline.max_tokens", 2, {"range"});
  // Cross-field checks (no single line to blame).
  expect_error("input:\n  extensions: [jpg]\n", "input.extensions[0]", 0, {"dot"});
  expect_error("sink:\n  type: dump\n  dir: ''\n", "sink.dir", 0, {"empty"});
  expect_error("batch:\n  size: 65535\ntransform:\n  resize: {width: 16384, height: 16384}\n", "batch.size", 0,
               {"16 GiB"});
}

TEST_CASE("config: bad enum values name the allowed values") {
  expect_error("transform:\n  layout: chw\n", "transform.layout", 2, {"'chw'", "nchw", "nhwc"});
  expect_error("transform:\n  dtype: int8\n", "transform.dtype", 2, {"float32", "float16", "uint8"});
  expect_error("transform:\n  color: rbg\n", "transform.color", 2, {"rgb", "bgr"});
  expect_error("transform:\n  resize:\n    mode: fill\n", "transform.resize.mode", 3,
               {"stretch", "letterbox", "center_crop"});
  expect_error("transform:\n  resize:\n    interpolation: lanczos\n", "transform.resize.interpolation", 3,
               {"linear", "nearest", "area", "cubic"});
  expect_error("transform:\n  normalize:\n    where: tpu\n", "transform.normalize.where", 3, {"cpu", "gpu", "auto"});
  expect_error("input:\n  on_error: ignore\n", "input.on_error", 2, {"skip", "fail"});
  expect_error("staging:\n  memory: mapped\n", "staging.memory", 2, {"write_combined", "pinned", "pageable"});
  expect_error("sink:\n  type: file\n", "sink.type", 2, {"discard", "dump"});
}

TEST_CASE("config: devices accepts auto, cpu, all, ordinals and lists, 'gpu' is not one of them") {
  using Kind = imgpipe::DeviceSelection::Kind;
  CHECK(Config::from_yaml_string("devices: auto\n").devices.kind == Kind::automatic);
  CHECK(Config::from_yaml_string("devices: cpu\n").devices.kind == Kind::cpu);
  const Config c = Config::from_yaml_string("devices: 3\n");
  CHECK(c.devices.kind == Kind::ordinal);
  CHECK(c.devices.ordinal == 3);
  expect_error("batch:\n  size: 2\ndevices: gpu\n", "devices", 3, {"'gpu'", "auto", "cpu"});
  expect_error("devices: -1\n", "devices", 1);
  // Several GPUs: all, or a list of distinct ordinals.
  CHECK(Config::from_yaml_string("devices: all\n").devices.kind == imgpipe::DeviceSelection::Kind::all);
  const Config two = Config::from_yaml_string("devices: [0, 1]\n");
  CHECK(two.devices.kind == imgpipe::DeviceSelection::Kind::list);
  CHECK(two.devices.ordinals == std::vector<int>{0, 1});
  expect_error("devices: [0, 0]\n", "devices[1]", 1, {"twice"});
  expect_error("devices: []\n", "devices", 1, {"empty"});
  expect_error("devices: {a: 1}\n", "devices", 1);
  // The parser used by --device.
  CHECK_THROWS_AS(imgpipe::DeviceSelection::parse("gpu"), ConfigError);
  CHECK_THROWS_AS(imgpipe::DeviceSelection::parse("0x1"), ConfigError);
  CHECK(imgpipe::DeviceSelection::parse("0").ordinal == 0);
  CHECK(imgpipe::DeviceSelection::parse("7").to_string() == "7");
}

TEST_CASE("config: decode.threads takes auto or 1..1024, not 0") {
  CHECK(Config::from_yaml_string("decode:\n  threads: auto\n").decode.threads == 0);
  CHECK(Config::from_yaml_string("decode:\n  threads: 1\n").decode.threads == 1);
  CHECK(Config::from_yaml_string("decode:\n  threads: 1024\n").decode.threads == 1024);
  expect_error("decode:\n  threads: 0\n", "decode.threads", 2, {"auto"});
  expect_error("decode:\n  threads: 1025\n", "decode.threads", 2, {"auto"});
  expect_error("decode:\n  threads: many\n", "decode.threads", 2, {"integer"});
}

TEST_CASE("config: validate() checks structs built in code") {
  auto expect_key = [](Config c, const std::string& key) {
    CAPTURE(key);
    try {
      c.validate();
      FAIL("validate() accepted an invalid config");
    } catch (const ConfigError& e) {
      CHECK(e.key() == key);
      CHECK(e.line() == 0);
    }
  };
  Config ok;
  CHECK_NOTHROW(ok.validate());
  Config c;
  c.batch.size = 0;
  expect_key(c, "batch.size");
  c = Config{};
  c.staging.slots = 1;
  expect_key(c, "staging.slots");
  c = Config{};
  c.transform.resize.width = 0;
  expect_key(c, "transform.resize.width");
  c = Config{};
  c.transform.normalize.std[2] = -1;
  expect_key(c, "transform.normalize.std[2]");
  c = Config{};
  c.transform.normalize.scale = 0;
  expect_key(c, "transform.normalize.scale");
  // The Pipeline constructor validates too.
  c = Config{};
  c.batch.size = 0;
  CHECK_THROWS_AS(imgpipe::Pipeline{c}, ConfigError);
}

TEST_CASE("config: from_yaml_file names the file, a missing file is a ConfigError") {
  imgpipe::test::TempDir dir;
  const auto path = dir / "bad.yaml";
  {
    std::ofstream(path) << "batch:\n  size: 0\n";
  }
  try {
    (void)Config::from_yaml_file(path);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "batch.size");
    CHECK(e.line() == 2);
    CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
  }
  CHECK_THROWS_AS(Config::from_yaml_file(dir / "missing.yaml"), ConfigError);
}

TEST_CASE("config: every problem of a file is in one ConfigError, in file order, each with its key and line") {
  imgpipe::test::TempDir dir;
  const auto path = dir / "bad.yaml";
  std::ofstream(path) << "batch:\n  sise: 4\n  drop_last: maybe\ntransform:\n  resize:\n    width: 0\n"
                         "staging:\n  slots: 2\nbogus: 1\n";
  try {
    (void)Config::from_yaml_file(path);
    FAIL("no error");
  } catch (const ConfigError& e) {
    REQUIRE(e.issues().size() == 4);
    CHECK(e.issues()[0].key == "batch.sise");
    CHECK(e.issues()[0].line == 2);
    CHECK(e.issues()[1].key == "batch.drop_last");
    CHECK(e.issues()[1].line == 3);
    CHECK(e.issues()[2].key == "transform.resize.width");
    CHECK(e.issues()[2].line == 6);
    CHECK(e.issues()[3].key == "bogus");
    CHECK(e.key() == "batch.sise");  // the first's, as before
    const std::string what = e.what();
    CAPTURE(what);
    for (const auto& i : e.issues()) {
      CHECK(what.find(ConfigError::message(i)) != std::string::npos);
      CHECK(i.reason.find("[in " + path.string() + "]") != std::string::npos);
    }
  }
  // One problem: one issue, the message as it always was.
  try {
    (void)Config::from_yaml_string("batch:\n  size: 0\n");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.issues().size() == 1);
    CHECK(std::string(e.what()).rfind("config key 'batch.size' (line 2): ", 0) == 0);
  }
}

TEST_CASE("config: to_yaml() round-trips") {
  SUBCASE("defaults") {
    const Config c;
    check_same(Config::from_yaml_string(c.to_yaml()), c, true);
  }
  SUBCASE("the shipped file") {
    const Config c = Config::from_yaml_file(kDefaultYaml);
    check_same(Config::from_yaml_string(c.to_yaml()), c, true);
  }
  SUBCASE("every field changed, awkward strings and floats") {
    Config c;
    c.input.paths = {"a b/c.jpg", "x: y", "#hash", "[brackets]", "it's \"quoted\"", "*.png", "-dash", "yes"};
    c.input.recursive = false;
    c.input.extensions = {".JPG", ".Png"};
    c.input.on_error = imgpipe::OnError::fail;
    c.decode.threads = 5;
    c.decode.accept_truncated = true;
    c.decode.max_pixels = 123456789012;
    c.decode.gpu_batch = 256;
    c.transform.resize = {33, 17, imgpipe::ResizeMode::center_crop, imgpipe::Interpolation::cubic, 7};
    c.transform.normalize.mean = {0.1f, -0.2f, 1e-7f};
    c.transform.normalize.std = {0.3f, 1.0f / 3.0f, 12345.678f};
    c.transform.normalize.scale = 1.0f / 255.0f;
    c.transform.normalize.where = imgpipe::Where::cpu;
    c.transform.layout = imgpipe::Layout::nhwc;
    c.transform.dtype = imgpipe::DType::uint8;
    c.transform.swap_rb = false;
    c.batch = {9, true};
    c.staging = {4, imgpipe::StagingMemory::pinned};
    c.devices = imgpipe::DeviceSelection::parse("1");
    c.sink = {imgpipe::SinkType::dump, "out dir/x"};
    c.pipeline.max_tokens = 12;
    const std::string y = c.to_yaml();
    CAPTURE(y);
    check_same(Config::from_yaml_string(y), c, true);
    // And to_yaml of the reloaded config is the same text.
    CHECK(Config::from_yaml_string(y).to_yaml() == y);
  }
  SUBCASE("devices cpu") {
    Config c;
    c.devices = imgpipe::DeviceSelection::parse("cpu");
    check_same(Config::from_yaml_string(c.to_yaml()), c, true);
  }
}

TEST_CASE("config: decode.where gpu needs what the GPU route needs, each refusal names the key") {
  auto error_of = [](const std::string& yaml) -> std::string {
    try {
      imgpipe::Config::from_yaml_string(yaml);
    } catch (const imgpipe::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(imgpipe::Config::from_yaml_string("decode: {where: gpu}").decode.where == imgpipe::Where::gpu);
  CHECK(imgpipe::Config::from_yaml_string("decode: {where: cpu}").decode.where == imgpipe::Where::cpu);
  CHECK(imgpipe::Config{}.decode.where == imgpipe::Where::automatic);
  const std::string e1 = error_of("decode: {where: gpu}\ntransform: {normalize: {where: cpu}}");
  CHECK(e1.find("decode.where") != std::string::npos);
  CHECK(e1.find("normalize.where") != std::string::npos);
  CHECK(error_of("decode: {where: gpu}\ntransform: {resize: {interpolation: area}}").find("linear or nearest") !=
        std::string::npos);
  CHECK(error_of("decode: {where: gpu}\nstaging: {transfer: zero_copy}").find("staging.transfer copy") !=
        std::string::npos);
  CHECK(error_of("decode: {where: gpu}\ndevices: cpu").find("needs a GPU") != std::string::npos);
  CHECK(error_of("decode: {where: fpga}").find("decode.where") != std::string::npos);
}

TEST_CASE("config: transform.resize.short_side is center_crop's, at least the target's larger side, each refusal names the key") {
  const Config ok = Config::from_yaml_string(
      "transform: {resize: {width: 224, height: 224, mode: center_crop, short_side: 256}}");
  CHECK(ok.transform.resize.short_side == 256);
  CHECK(ok.transform.resize.boxed());
  CHECK_FALSE(Config{}.transform.resize.boxed());
  expect_error("transform: {resize: {width: 224, height: 224, mode: stretch, short_side: 256}}",
               "transform.resize.short_side", 0, {"center_crop only", "got stretch"});
  expect_error("transform: {resize: {width: 224, height: 160, mode: center_crop, short_side: 200}}",
               "transform.resize.short_side", 0, {"at least the target's larger side (224)"});
  expect_error("transform: {resize: {short_side: -1}}", "transform.resize.short_side", 1);
}
