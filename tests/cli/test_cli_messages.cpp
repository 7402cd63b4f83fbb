// The imgpipe command line's messages: inputs that do not exist (exit 2 before
// any work), --report checked before the run and '-' for stdout, the no-GPU
// wording, --log-level and --quiet, --help, validate FILE, parse errors.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "memory/gpu.hpp"

namespace fs = std::filesystem;
using imgpipe::test::run_cli;
using imgpipe::test::TempDir;

namespace {

using imgpipe::test::q;

using imgpipe::test::contains;

// Every line of `text` that is not empty starts with "imgpipe: ".
bool every_line_prefixed(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line.rfind("imgpipe: ", 0) != 0 && line.rfind("Run with --help", 0) != 0) return false;
  return true;
}

// run_cli with `dir` as the current directory (run_cli's env prefix is a shell prefix).
int run_cli_in(const fs::path& dir, const std::string& args, std::string* out) {
  return run_cli(args, out, "cd " + q(dir) + " &&");
}

// The CLI with stdout and stderr apart.
int run_cli_split(const std::string& args, std::string* out, std::string* err, const fs::path& err_file) {
  const std::string cmd = imgpipe::test::cli_path() + " " + args + " 2>" + q(err_file);
  FILE* f = ::popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  std::array<char, 4096> buf;
  std::size_t n;
  out->clear();
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) out->append(buf.data(), n);
  const int status = ::pclose(f);
  *err = imgpipe::test::read_text(err_file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void copy_samples(const fs::path& dir, std::size_t n) {
  const auto samples = imgpipe::test::sample_images();
  for (std::size_t i = 0; i < n; ++i) fs::copy_file(samples.at(i), dir / samples[i].filename());
}

void write_config(const fs::path& path, const std::string& extra = "") {
  std::ofstream(path) << "transform:\n  resize: {width: 64, height: 48}\nbatch:\n  size: 2\n" << extra;
}

// With devices: cpu on any machine: a warning (zero_copy cannot map pageable
// slots) and an info message (the frames in flight are limited).
const char* kChatty =
    "staging:\n  slots: 2\n  transfer: zero_copy\npipeline:\n  max_tokens: 16\ndevices: cpu\n";

}  // namespace

TEST_CASE("cli inputs: a path that does not exist is a config error (exit 2) found before any work, even with -q") {
  TempDir d;
  write_config(d / "c.yaml", "input:\n  paths: [/nonexistent/dir]\n");
  std::string out;
  for (const char* quiet : {"", "-q "}) {
    CAPTURE(quiet);
    CHECK(run_cli(std::string(quiet) + "--config " + q(d / "c.yaml"), &out) == 2);
    CAPTURE(out);
    CHECK(contains(out, "imgpipe: config key 'input.paths': '/nonexistent/dir' does not exist"));
    CHECK(contains(out, (d / "c.yaml").string()));  // the file it came from
    CHECK_FALSE(contains(out, "bottleneck"));       // no run, no table
    // Before device selection: no word about GPUs (a machine without one
    // would say "running the host backend" once a run starts).
    CHECK_FALSE(contains(out, "host backend"));
  }
  // Even an absent GPU is not looked at: the inputs come first (exit 2, not 1).
  CHECK(run_cli("-q --device 7 --config " + q(d / "c.yaml"), &out) == 2);
  CHECK(contains(out, "'/nonexistent/dir' does not exist"));
  // --input: named as the option, each bad path listed.
  copy_samples(d.path(), 1);
  const std::string pattern = (d / "nothing_*.jpg").string();
  CHECK(run_cli("--config " + q(d / "c.yaml") + " -i " + q(d.path()) + " -i /nonexistent/a.jpg -i " + q(pattern),
                &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe: --input: '/nonexistent/a.jpg' does not exist; pattern " + q(pattern) +
                          " matches nothing"));
  CHECK(every_line_prefixed(out));
}

TEST_CASE("cli inputs: the shipped config's relative samples/data, run from elsewhere, names the directory") {
  TempDir d;
  const std::string config = (imgpipe::test::source_dir() / "configs" / "pipeline.yaml").string();
  std::string out;
  CHECK(run_cli_in(d.path(), "-q --config " + q(config), &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "'samples/data' does not exist (relative to the current directory " +
                          fs::canonical(d.path()).string() + ")"));
  CHECK(run_cli_in(d.path(), "validate " + q(config), &out) == 2);
  CHECK(contains(out, "'samples/data' does not exist"));
  // From the repository root it runs.
  CHECK(run_cli_in(imgpipe::test::source_dir(), "validate " + q(config), &out) == 0);
  CHECK(contains(out, "config OK: " + config + " (20 inputs: 20 images, 0 videos)"));
}

TEST_CASE("cli inputs: an empty folder is a config error (exit 2) with the reason, no table") {
  TempDir d;
  fs::create_directories(d / "empty");
  write_config(d / "c.yaml");
  std::string out;
  CHECK(run_cli("--config " + q(d / "c.yaml") + " --input " + q(d / "empty"), &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe: --input: no inputs found: " + q(d / "empty") + " holds no file with an extension"));
  CHECK_FALSE(contains(out, "bottleneck"));
  CHECK_FALSE(contains(out, "run failed"));
}

TEST_CASE("cli validate: FILE or --config FILE, counting the inputs") {
  TempDir d;
  fs::create_directories(d / "in");
  copy_samples(d / "in", 3);
  std::ofstream(d / "in" / "clip.avi") << "not a video";  // a video by name; the run would report it
  std::ofstream(d / "list.txt") << (d / "gone.jpg").string() << "\n";
  write_config(d / "c.yaml", "input:\n  paths: [" + (d / "in").string() + "]\n  list: " +
                                 (d / "list.txt").string() + "\n");
  std::string out;
  for (const std::string form : {"validate ", "validate --config ", "validate -c "}) {
    CAPTURE(form);
    CHECK(run_cli(form + q(d / "c.yaml"), &out) == 0);
    CAPTURE(out);
    CHECK(contains(out, "config OK: " + (d / "c.yaml").string() + " (5 inputs: 3 images, 1 video, 1 that fails "
                        "already (the first: '" + (d / "gone.jpg").string() + "': no such file or directory))"));
  }
  CHECK(run_cli("validate " + q(d / "c.yaml") + " -i /nonexistent", &out) == 2);
  CHECK(contains(out, "imgpipe: --input: '/nonexistent' does not exist"));
  CHECK(run_cli("validate", &out) == 2);
  CHECK(contains(out, "imgpipe: "));
  CHECK(run_cli("validate " + q(d / "nope.yaml"), &out) == 2);
  CHECK(contains(out, "nope.yaml"));
}

TEST_CASE("cli report: an unwritable --report-html is a usage error before the run, as --report is") {
  TempDir d;
  copy_samples(d.path(), 2);
  write_config(d / "c.yaml");
  const std::string run = "--config " + q(d / "c.yaml") + " --input " + q(d.path()) + " --device cpu";
  std::string out;
  CHECK(run_cli(run + " --report-html /nonexistent/dir/r.html", &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe: --report-html: cannot write '/nonexistent/dir/r.html': No such file or directory"));
  CHECK_FALSE(contains(out, "bottleneck"));  // found before the run
  CHECK(run_cli(run + " --report-html " + q(d.path()), &out) == 2);
  CHECK(contains(out, "cannot write " + q(d.path()) + ": Is a directory"));
  // A writable path still gets the page.
  CHECK(run_cli(run + " -q --report-html " + q(d / "r.html"), &out) == 0);
  CHECK(fs::file_size(d / "r.html") > 0);
}

TEST_CASE("cli report: an unwritable --report is a usage error before the run, '-' is stdout") {
  TempDir d;
  copy_samples(d.path(), 2);
  write_config(d / "c.yaml");
  const std::string run = "--config " + q(d / "c.yaml") + " --input " + q(d.path()) + " --device cpu";
  std::string out, err;
  CHECK(run_cli(run + " --report /nonexistent/dir/r.json", &out) == 2);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe: --report: cannot write '/nonexistent/dir/r.json': No such file or directory"));
  CHECK_FALSE(contains(out, "bottleneck"));  // found before the run
  CHECK(run_cli(run + " --report " + q(d.path()), &out) == 2);
  CHECK(contains(out, "cannot write " + q(d.path()) + ": Is a directory"));
  if (::geteuid() != 0) {  // root writes anywhere: only the two cases above apply
    fs::create_directories(d / "ro");
    fs::permissions(d / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK(run_cli(run + " --report " + q(d / "ro" / "r.json"), &out) == 2);
    CHECK(contains(out, "Permission denied"));
    fs::permissions(d / "ro", fs::perms::owner_all);
  }
  // The check leaves no file behind, and an existing file is kept until the run writes it.
  CHECK_FALSE(fs::exists(d / "r.json"));
  {
    std::ofstream(d / "old.json") << "old";
  }
  CHECK(run_cli("-q --report " + q(d / "old.json") + " --config " + q(d / "c.yaml") + " -i /nonexistent", &out) == 2);
  CHECK(imgpipe::test::read_bytes(d / "old.json").size() == 3);

  // '-': the JSON on stdout, alone; the table still on stderr.
  CHECK(run_cli_split(run + " --report -", &out, &err, d / "stderr.txt") == 0);
  CAPTURE(err);
  const nlohmann::json j = nlohmann::json::parse(out);
  CHECK(j["inputs"]["delivered"] == 2);
  CHECK(contains(err, "bottleneck"));
  CHECK_FALSE(fs::exists(d / "-"));
  CHECK_FALSE(fs::exists(fs::current_path() / "-"));
}

TEST_CASE("cli: without a GPU the message says so and names the host backend, not a driver upgrade") {
  TempDir d;
  copy_samples(d.path(), 1);
  write_config(d / "c.yaml");
  std::string out;
  CHECK(run_cli("-q --log-level warn --config " + q(d / "c.yaml") + " --input " + q(d.path()), &out) == 0);
  CAPTURE(out);
  if (imgpipe::test::have_gpu()) {
    CHECK_FALSE(contains(out, "host backend"));
  } else if (imgpipe::gpu::built_with_cuda()) {
    // This machine: no NVIDIA driver, so the CUDA runtime answers cudaErrorInsufficientDriver.
    CHECK(contains(out, "imgpipe: warning: no CUDA-capable GPU"));
    CHECK(contains(out, "; running the host backend"));
    CHECK_FALSE(contains(out, "insufficient"));
  } else {
    CHECK(contains(out, "imgpipe: warning: imgpipe was built without CUDA; running the host backend"));
  }
}

TEST_CASE("cli: --log-level picks the messages, --quiet means nothing but errors unless --log-level says more") {
  TempDir d;
  copy_samples(d.path(), 2);
  write_config(d / "c.yaml", kChatty);
  const std::string run = "--config " + q(d / "c.yaml") + " --input " + q(d.path());
  const std::string warning = "imgpipe: warning: staging.transfer zero_copy";
  const std::string info = "imgpipe: info: frames in flight limited";
  std::string out;
  CHECK(run_cli(run, &out) == 0);  // default: warn
  CAPTURE(out);
  CHECK(contains(out, warning));
  CHECK_FALSE(contains(out, info));
  CHECK(contains(out, "bottleneck"));
  CHECK(run_cli("-q " + run, &out) == 0);
  CHECK(out.empty());  // no table, no warning
  CHECK(run_cli("-q --log-level warn " + run, &out) == 0);
  CHECK(contains(out, warning));
  CHECK_FALSE(contains(out, "bottleneck"));
  CHECK(run_cli("-q --log-level info " + run, &out) == 0);
  CHECK(contains(out, warning));
  CHECK(contains(out, info));
  CHECK(run_cli("-q --log-level debug " + run, &out) == 0);
  CHECK(contains(out, info));
  CHECK(run_cli("-q --log-level error " + run, &out) == 0);
  CHECK(out.empty());
  CHECK(run_cli("--log-level loud " + run, &out) == 2);
  CHECK(contains(out, "imgpipe: --log-level: loud not in {error,warn,info,debug}"));
}

TEST_CASE("cli: --help lists the device values and the exit codes, parse errors carry the prefix and exit 2") {
  std::string out;
  CHECK(run_cli("--help", &out) == 0);
  CAPTURE(out);
  for (const char* word : {"--device", "auto", "cpu", "all", "GPU ordinal", "--log-level",
                           "error | warn | info | debug", "'-': to stdout", "Exit codes: 0 success", "1 the run failed",
                           "2 usage or config error", "130 interrupted"})
    CHECK(contains(out, word));
  CHECK(run_cli("--no-such-flag", &out) == 2);
  CHECK(out.rfind("imgpipe: ", 0) == 0);
  CHECK(contains(out, "--no-such-flag"));
  CHECK(every_line_prefixed(out));
  CHECK_FALSE(contains(out, "did you mean"));  // nothing near it
  // A misspelt flag: the nearest one suggested (also a subcommand's).
  CHECK(run_cli("--reprot r.json", &out) == 2);
  CHECK(contains(out, "imgpipe: --reprot: did you mean --report?"));
  CHECK(every_line_prefixed(out));
  CHECK(run_cli("--qiuet --log-levl=debug", &out) == 2);
  CHECK(contains(out, "imgpipe: --qiuet: did you mean --quiet?"));
  CHECK(contains(out, "imgpipe: --log-levl: did you mean --log-level?"));
  CHECK(run_cli("--config", &out) == 2);
  CHECK(out.rfind("imgpipe: ", 0) == 0);
  CHECK(run_cli("--config /nonexistent.yaml", &out) == 2);
  CHECK(out.rfind("imgpipe: ", 0) == 0);
  CHECK(contains(out, "/nonexistent.yaml"));
}

TEST_CASE("cli quiet: bound to one CPU (as mpirun binds a rank), oneTBB prints no worker-limit warning") {
  if (std::system("command -v taskset >/dev/null 2>&1") != 0) {
    MESSAGE("taskset not installed: not run");
    return;
  }
  TempDir d;
  copy_samples(d.path(), 4);
  write_config(d / "c.yaml");
  for (const char* level : {"-q", "-q --log-level debug"}) {
    std::string out;
    CHECK(run_cli(std::string(level) + " --device cpu --config " + q(d / "c.yaml") + " --input " + q(d.path()), &out,
                  "taskset -c 0") == 0);
    CAPTURE(out);
    CHECK_FALSE(contains(out, "TBB Warning"));
    CHECK(every_line_prefixed(out));
  }
}

// FFmpeg's own lines ("moov atom not found" for an MP4 cut before its index)
// went straight to stderr past --quiet; they now go through imgpipe's logger
// (stages/native_logs.hpp): info lines, shown with --log-level info.
TEST_CASE("cli quiet: FFmpeg's own messages go through imgpipe's logger") {
  TempDir d;
  // An MP4 whose moov box (its index, written last) is cut off: a real clip's
  // first 4 kB (Megamind.avi re-muxed would need an encoder; ftyp + mdat
  // without moov is what a recording cut short looks like).
  std::vector<unsigned char> mp4 = {0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'i', 's', 'o', 'm', 0, 0, 2, 0,
                                    'i', 's', 'o', 'm', 'm', 'p', '4', '1', 0, 0, 0x10, 0x08, 'm', 'd', 'a', 't'};
  mp4.resize(4096, 0x5A);
  imgpipe::test::write_bytes(d / "cut.mp4", mp4);
  const std::string run = "--config " + q(imgpipe::test::source_dir() / "configs" / "pipeline.yaml") + " --input " + q(d / "cut.mp4");
  std::string out;
  CHECK(run_cli("-q " + run, &out) == 1);  // nothing delivered
  CAPTURE(out);
  CHECK_FALSE(contains(out, "moov"));
  CHECK_FALSE(contains(out, "[mov,mp4"));
  const bool said = contains(out, "nothing delivered");
  CHECK(said);
  CHECK(run_cli("--log-level info " + run, &out) == 1);
  CHECK(contains(out, "imgpipe: info: ffmpeg: moov atom not found"));
  CHECK_FALSE(contains(out, "[mov,mp4"));
}
