// The imgpipe command line: exit codes, messages and the JSON report.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "memory/gpu.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using imgpipe::test::run_cli;
using imgpipe::test::TempDir;

namespace {

const std::string kConfig = (imgpipe::test::source_dir() / "configs" / "pipeline.yaml").string();

using imgpipe::test::q;

using imgpipe::test::contains;

// A folder with the first `n` sample images.
void copy_samples(const fs::path& dir, std::size_t n) {
  const auto samples = imgpipe::test::sample_images();
  for (std::size_t i = 0; i < n; ++i) fs::copy_file(samples.at(i), dir / samples[i].filename());
}

// A small, fast config (every other key at its default) written to `path`.
void write_config(const fs::path& path, const std::string& extra = "") {
  std::ofstream(path) << "transform:\n  resize: {width: 64, height: 48}\nbatch:\n  size: 2\n" << extra;
}

}  // namespace

TEST_CASE("cli: --version and --help exit 0") {
  std::string out;
  CHECK(run_cli("--version", &out) == 0);
  CHECK(contains(out, std::string("imgpipe ") + imgpipe::version()));
  CHECK(run_cli("--help", &out) == 0);
  CHECK(contains(out, "--config"));
  CHECK(contains(out, "--input"));
  CHECK(contains(out, "--report"));
  CHECK(contains(out, "--device"));
  CHECK(contains(out, "validate"));
}

TEST_CASE("cli: validate accepts the shipped config (from the repository root: its samples/data is relative)") {
  std::string out;
  CHECK(run_cli("validate --config " + q(kConfig), &out, "cd " + q(imgpipe::test::source_dir()) + " &&") == 0);
  CHECK(contains(out, "config OK"));
}

TEST_CASE("cli: validate rejects a bad config with exit 2, naming the key and the line") {
  TempDir d;
  {
    std::ofstream(d / "bad.yaml") << "batch:\n  size: 4\ntransform:\n  resize:\n    widht: 3\n";
  }
  std::string out;
  CHECK(run_cli("validate --config " + q(d / "bad.yaml"), &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "transform.resize.widht"));
  CHECK(contains(out, "line 5"));
  CHECK(contains(out, "unknown key"));
  // Out of range, same treatment.
  {
    std::ofstream(d / "range.yaml") << "staging:\n  slots: 1\n";
  }
  CHECK(run_cli("validate --config " + q(d / "range.yaml"), &out) == 2);
  CHECK(contains(out, "staging.slots"));
  CHECK(contains(out, "line 2"));
  // A run with a bad config does not start either.
  CHECK(run_cli("--config " + q(d / "bad.yaml"), &out) == 2);
  CHECK(contains(out, "transform.resize.widht"));
  // A config file that does not exist.
  CHECK(run_cli("validate --config " + q(d / "nope.yaml"), &out) == 2);
}

TEST_CASE("cli: every config error of a file is shown, one line each, exit 2") {
  TempDir d;
  std::ofstream(d / "bad.yaml") << "batch:\n  sise: 4\ntransform:\n  resize:\n    width: 0\nbogus: 1\n";
  for (const std::string& args : {"validate " + q(d / "bad.yaml"), "--config " + q(d / "bad.yaml")}) {
    std::string out;
    CHECK(run_cli(args + " --input " + q(d.path()), &out) == 2);
    CAPTURE(out);
    const std::string in = " [in " + (d / "bad.yaml").string() + "]\n";
    CHECK(contains(out, "imgpipe: config key 'batch.sise' (line 2): unknown key"));
    CHECK(contains(out, "imgpipe: config key 'transform.resize.width' (line 5): "));
    CHECK(contains(out, "imgpipe: config key 'bogus' (line 6): unknown key"));
    CHECK(std::count(out.begin(), out.end(), '\n') == 3);
    CHECK(contains(out, in));
  }
}

TEST_CASE("cli: usage errors exit 2") {
  TempDir d;
  copy_samples(d.path(), 1);
  std::string out;
  CHECK(run_cli("", &out) == 2);
  CHECK(contains(out, "nothing to run: give --input PATH"));
  CHECK(run_cli("--config " + q(kConfig) + " --no-such-flag", &out) == 2);
  CHECK(run_cli("validate", &out) == 2);  // validate needs a config
  CHECK(contains(out, "imgpipe: validate: name the config"));
}

TEST_CASE("cli: what a new user types: the defaults with --input alone, validate after --config, misspelt commands and flags, --set, --overwrite") {
  TempDir d;
  const fs::path in = d / "in";
  fs::create_directories(in);
  copy_samples(in, 3);
  std::string out;
  // No --config: the defaults (docs/config.md) on the --input paths.
  const fs::path report = d / "r.json";
  REQUIRE(run_cli("--input " + q(in) + " --report " + q(report) + " --set batch.size=2 --device cpu", &out) == 0);
  {
    std::ifstream f(report);
    const nlohmann::json j = nlohmann::json::parse(f);
    CHECK(j["batches"] == 2);  // 3 images in batches of 2 (--set)
    CHECK(j["inputs"]["delivered"] == 3);
  }
  // --config before validate, as before a run; validate takes --device and --set too.
  CHECK(run_cli("--config " + q(kConfig) + " validate --input " + q(in), &out) == 0);
  CHECK(contains(out, "config OK"));
  CHECK(run_cli("validate " + q(kConfig) + " --input " + q(in) + " --device 3 --set batch.size=4", &out) == 0);
  CHECK_FALSE(contains(out, "did you mean"));
  CHECK(run_cli("validate " + q(kConfig) + " --input " + q(in) + " --device fpga", &out) == 2);
  CHECK(contains(out, "--device"));
  // A misspelt subcommand or flag: the suggestion first, not CLI11's list.
  CHECK(run_cli("valdate " + q(kConfig), &out) == 2);
  CHECK(out.rfind("imgpipe: valdate: did you mean validate?", 0) == 0);
  CHECK(run_cli("--confg " + q(kConfig), &out) == 2);
  CHECK(out.rfind("imgpipe: --confg: did you mean --config?", 0) == 0);
  CHECK_FALSE(contains(out, "not expected"));
  // --set: the file's checks and messages, naming the --set.
  CHECK(run_cli("--input " + q(in) + " --set batch.size=0", &out) == 2);
  CHECK(contains(out, "config key 'batch.size'"));
  CHECK(contains(out, "[in --set batch.size=0]"));
  CHECK(run_cli("--input " + q(in) + " --set input.bogus=1", &out) == 2);
  CHECK(contains(out, "unknown key"));
  CHECK(run_cli("--input " + q(in) + " --set batch.size", &out) == 2);
  CHECK(contains(out, "--set batch.size: expected KEY=VALUE"));
  CHECK(run_cli("--config " + q(kConfig) + " --input " + q(in) + " --set 'transform.resize={width: 32, height: 24}' "
                "--set transform.dtype=uint8 --device cpu",
                &out) == 0);
  // --overwrite: a second dump into the same folder.
  const std::string dump = "--input " + q(in) + " --device cpu --set sink.type=dump --set sink.dir=" + q(d / "dump") +
                           " --set batch.size=2 --set transform.resize.width=16 --set transform.resize.height=16";
  REQUIRE(run_cli(dump, &out) == 0);
  CHECK(run_cli(dump, &out) == 2);
  CHECK(contains(out, "sink"));
  CHECK(run_cli(dump + " --overwrite", &out) == 0);
}

TEST_CASE("cli: a config error that stops the run is the message, not the host-backend fallback before it") {
  IMGPIPE_SKIP_UNLESS(!imgpipe::test::have_gpu(), "a GPU is present: no host-backend fallback to warn about");
  TempDir d;
  copy_samples(d.path(), 1);
  std::string out;
  CHECK(run_cli("--input " + q(d.path()) + " --set decode.where=gpu", &out) == 2);
  CHECK(contains(out, "decode.where"));
  CHECK_FALSE(contains(out, "running the host backend"));
  // A run that goes on says it.
  CHECK(run_cli("--input " + q(d.path()) + " --set batch.size=1", &out) == 0);
  CHECK(contains(out, "running the host backend"));
}

TEST_CASE("cli: a run writes the JSON report") {
  TempDir d;
  const fs::path in = d / "in";
  fs::create_directories(in);
  copy_samples(in, 3);
  const fs::path report = d / "r.json";
  std::string out;
  // The shipped config: 640x640, ImageNet normalisation, batches of 32.
  const int rc = run_cli("--config " + q(kConfig) + " --input " + q(in) + " --report " + q(report), &out);
  CAPTURE(out);
  REQUIRE(rc == 0);
  CHECK(contains(out, "bottleneck"));  // the table on stderr
  REQUIRE(fs::exists(report));
  std::ifstream f(report);
  const nlohmann::json j = nlohmann::json::parse(f);
  CAPTURE(j.dump(2));

  REQUIRE(j.contains("backend"));
  const std::string backend = j["backend"].get<std::string>();
  if (imgpipe::test::have_gpu()) CHECK(backend.rfind("cuda:0", 0) == 0);
  else CHECK(backend == "host");
  CHECK(j["version"] == imgpipe::version());
  CHECK(j["interrupted"] == false);
  CHECK(j["images_per_s"].get<double>() > 0);
  CHECK(j["cpu_s"].get<double>() > 0);  // decoding took CPU time

  REQUIRE(j["stages"].is_array());
  std::set<std::string> names;
  for (const auto& s : j["stages"]) {
    CAPTURE(s.dump());
    REQUIRE(s.contains("name"));
    names.insert(s["name"].get<std::string>());
    CHECK(s["items"].is_number_unsigned());
    CHECK(s["busy_s"].get<double>() >= 0);
    // null: too little work to rate (imgpipe::rateable)
    CHECK((s["items_per_s"].is_null() || s["items_per_s"].get<double>() > 0));
    CHECK((s["mb_per_s"].is_null() || s["mb_per_s"].get<double>() >= 0));
  }
  // With GPU decode (decode.where auto on a GPU with JPEG engines) the probe
  // stage routes JPEGs; the engines decode some of them.
  const bool gpu_decode = j["decode"]["where"] != "cpu";
  std::set<std::string> expected{"source", "read", "decode", "transform", "pack", "pack_copy", "transfer", "gpu_ops", "sink"};
  if (gpu_decode) expected.insert("probe");
  CHECK(names == expected);
  for (const auto& s : j["stages"]) {
    const std::string n = s["name"];
    if (n == "read" || n == "pack") CHECK(s["items"] == 3);
    if (n == "decode") CHECK(s["items"].get<int>() + j["decode"]["gpu"].get<int>() == 3);
    if (n == "sink") CHECK(s["items"] == 1);  // one batch of 3
  }
  CHECK(names.count(j["bottleneck"].get<std::string>()) == 1);

  const auto& inputs = j["inputs"];
  CHECK(inputs["discovered"] == 3);
  CHECK(inputs["delivered"] == 3);
  CHECK(inputs["failed"] == 0);
  REQUIRE(inputs["failures"].is_array());
  CHECK(inputs["failures"].empty());

  REQUIRE(j["memory"].is_object());
  // staging.slots 2 (raised for GPU decode), of which the run makes the one
  // its single batch needs, with room for its 3 samples, not 32 (the
  // memory figures count the slots made).
  CHECK(j["memory"]["slots"].get<std::uint64_t>() == 1u);
  CHECK(j["memory"]["staging_kind"].is_string());
  CHECK(j["memory"]["staging_bytes"].get<std::uint64_t>() == 3u * 640 * 640 * 3 * (imgpipe::test::have_gpu() ? 1 : 4));

  const auto& t = j["transfer"];
  REQUIRE(t.is_object());
  // Three 640x640x3 frames: u8 to the GPU (normalised there); on the host
  // backend the float32 batch stays in its slot (no copy).
  // (A JPEG the engines decode travels as its bitstream instead.)
  if (!imgpipe::test::have_gpu())
    CHECK(t["bytes"].get<std::uint64_t>() == 0u);
  else if (!gpu_decode || j["decode"]["gpu"] == 0)
    CHECK(t["bytes"].get<std::uint64_t>() == 3ull * 640 * 640 * 3);
  else
    CHECK(t["bytes"].get<std::uint64_t>() < 3ull * 640 * 640 * 3);
  CHECK(t["gb_per_s"].get<double>() >= 0);
  CHECK(t["mode"].is_string());
  CHECK_FALSE(t["mode"].get<std::string>().empty());
}

TEST_CASE("cli: a bad input is skipped (exit 0) under on_error: skip and fails the run (exit 1) under fail") {
  TempDir d;
  const fs::path in = d / "in";
  fs::create_directories(in);
  copy_samples(in, 2);
  {
    std::ofstream(in / "broken.jpg") << "not a JPEG at all";
  }
  const std::string bad = (in / "broken.jpg").string();
  write_config(d / "skip.yaml");
  write_config(d / "fail.yaml", "input:\n  on_error: fail\n");
  const fs::path report = d / "r.json";
  std::string out;
  CHECK(run_cli("--config " + q(d / "skip.yaml") + " --input " + q(in) + " --report " + q(report), &out) == 0);
  CAPTURE(out);
  CHECK(contains(out, bad));
  std::ifstream f(report);
  const nlohmann::json j = nlohmann::json::parse(f);
  CHECK(j["inputs"]["discovered"] == 3);
  CHECK(j["inputs"]["delivered"] == 2);
  CHECK(j["inputs"]["failed"] == 1);
  REQUIRE(j["inputs"]["failures"].size() == 1);
  CHECK(j["inputs"]["failures"][0]["path"] == bad);
  CHECK_FALSE(j["inputs"]["failures"][0]["reason"].get<std::string>().empty());

  CHECK(run_cli("-q --config " + q(d / "fail.yaml") + " --input " + q(in), &out) == 1);
  CHECK(contains(out, bad));
  CHECK(contains(out, "run failed"));
}

TEST_CASE("cli: inputs given and none delivered exit 1, each failed input is a warning line, the first 20, then a count") {
  TempDir d;
  const fs::path in = d / "in";
  fs::create_directories(in);
  for (int i = 0; i < 23; ++i) std::ofstream(in / ("broken" + std::to_string(100 + i) + ".jpg")) << "not a JPEG";
  std::ofstream(d / "notes.txt") << "plain text";  // named on its own: a folder lists only images and videos
  const std::string inputs = " --input " + q(in) + " --input " + q(d / "notes.txt");
  write_config(d / "c.yaml");
  std::string out;
  // Default log level: one warning per failed input, then how many more.
  CHECK(run_cli("--config " + q(d / "c.yaml") + inputs, &out) == 1);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe: nothing delivered: 24 inputs, 24 failed"));
  std::size_t warnings = 0;
  for (std::size_t at = 0; (at = out.find("imgpipe: warning: " + d.path().string(), at)) != std::string::npos; ++at)
    ++warnings;
  CHECK(warnings == 20);
  CHECK(contains(out, "imgpipe: warning: 4 more failed inputs"));
  // The same run with one good image delivers it: exit 0, the failures still warned about.
  copy_samples(in, 1);
  CHECK(run_cli("-q --log-level warn --config " + q(d / "c.yaml") + inputs, &out) == 0);
  CHECK(contains(out, "imgpipe: warning: " + (in / "broken100.jpg").string() + ": "));
  CHECK_FALSE(contains(out, "nothing delivered"));
}

TEST_CASE("cli: a dump folder that cannot be made is a config error naming sink.dir (exit 2), nothing ran") {
  TempDir d;
  copy_samples(d.path(), 1);
  std::ofstream(d / "file") << "x";
  write_config(d / "c.yaml", "sink: {type: dump, dir: " + (d / "file" / "out").string() + "}\n");
  std::string out;
  CHECK(run_cli("--config " + q(d / "c.yaml") + " --input " + q(d / (imgpipe::test::sample_images().at(0).filename().string())), &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe: config key 'sink.dir': cannot "));
  CHECK(contains(out, (d / "file" / "out").string()));
  CHECK_FALSE(contains(out, "run failed"));
  CHECK_FALSE(contains(out, "delivered"));  // no report table: nothing ran
}

TEST_CASE("cli: --device picks the backend, an absent GPU or a malformed value is a usage error (exit 2), nothing ran") {
  TempDir d;
  copy_samples(d.path(), 1);
  write_config(d / "c.yaml");
  std::string out;
  // An ordinal this machine does not have (7 unless it has 8 or more GPUs).
  const int absent = std::max(7, imgpipe::gpu::device_count());
  CHECK(run_cli("-q --device " + std::to_string(absent) + " --config " + q(d / "c.yaml") + " --input " + q(d.path()),
                &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe: --device: GPU " + std::to_string(absent) + " requested"));
  CHECK_FALSE(contains(out, "run failed"));
  if (!imgpipe::test::have_gpu()) CHECK(contains(out, "no CUDA device"));
  // In the config file: the key named, with the file.
  write_config(d / "dev.yaml", "devices: [" + std::to_string(absent) + "]\n");
  CHECK(run_cli("-q --config " + q(d / "dev.yaml") + " --input " + q(d.path()), &out) == 2);
  CHECK(contains(out, "imgpipe: config key 'devices': GPU " + std::to_string(absent) + " requested"));
  CHECK(contains(out, "[in " + (d / "dev.yaml").string() + "]"));
  CHECK(run_cli("-q --device bogus --config " + q(d / "c.yaml") + " --input " + q(d.path()), &out) == 2);
  CHECK(contains(out, "--device"));
  CHECK(contains(out, "bogus"));
  CHECK(run_cli("-q --device -1 --config " + q(d / "c.yaml") + " --input " + q(d.path()), &out) == 2);
  // cpu always works.
  const fs::path report = d / "r.json";
  CHECK(run_cli("-q --device cpu --config " + q(d / "c.yaml") + " --input " + q(d.path()) + " --report " + q(report),
                &out) == 0);
  std::ifstream f(report);
  CHECK(nlohmann::json::parse(f)["backend"] == "host");
}

TEST_CASE("cli: --epoch runs that epoch of a training config (its order and crops), exit 2 on a bad value") {
  TempDir d;
  const fs::path in = d / "in";
  fs::create_directories(in);
  copy_samples(in, 4);
  const fs::path cfg = d / "train.yaml";
  {
    std::ofstream f(cfg);
    f << "input: {shuffle: {seed: 1}}\n"
         "transform: {resize: {width: 32, height: 32, mode: random_crop}, flip: {horizontal: 0.5}}\n"
         "batch: {size: 2}\ndevices: cpu\n";
  }
  std::string out;
  for (const int e : {0, 3}) {
    CAPTURE(e);
    const fs::path report = d / ("r" + std::to_string(e) + ".json");
    const std::string args = "--config " + q(cfg) + " --input " + q(in) + " --report " + q(report) +
                             (e ? " --epoch " + std::to_string(e) : std::string());
    REQUIRE(run_cli(args, &out) == 0);
    std::ifstream f(report);
    const nlohmann::json j = nlohmann::json::parse(f);
    CHECK(j["epoch"] == e);
  }
  CHECK(run_cli("--config " + q(cfg) + " --input " + q(in) + " --epoch -1", &out) == 2);
  CHECK(run_cli("--config " + q(cfg) + " --input " + q(in) + " --epoch x", &out) == 2);
  CHECK(contains(out, "--epoch"));
}

TEST_CASE("cli: past 20 failed inputs the table says where the rest are: the JSON report written, or how to get one") {
  TempDir d;
  const fs::path in = d / "in";
  fs::create_directories(in);
  copy_samples(in, 1);
  for (int i = 0; i < 22; ++i) {
    std::ofstream f(in / ("broken_" + std::to_string(i) + ".jpg"));
    f << "not a jpeg " << i;
  }
  std::string out;
  const std::string run = "--input " + q(in) + " --device cpu --set batch.size=1";
  CHECK(run_cli(run, &out) == 0);
  CAPTURE(out);
  CHECK(contains(out, "... and 2 more (the JSON report lists every one: --report FILE"));
  const fs::path report = d / "r.json";
  CHECK(run_cli(run + " --report " + q(report), &out) == 0);
  CHECK(contains(out, "... and 2 more (the JSON report " + report.string() + " lists every one)"));
  // The warnings: the first 20 as they happen, then the count of the rest.
  CHECK(contains(out, "warning: 2 more failed inputs (the report lists every one)"));
}
