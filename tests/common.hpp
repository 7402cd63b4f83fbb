// Helpers shared by the test suites.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "imgpipe/batch.hpp"
#include "imgpipe/config.hpp"

namespace imgpipe::test {

// Built under AddressSanitizer or ThreadSanitizer (CI's steps 2 and 3). A few
// grids of pixel variants run a part of their grid there: their threads are
// the same in every variant, and the whole grid runs in the release build
// (step 1) and on the GPU machine.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// The source tree (IMGPIPE_SOURCE_DIR in the environment, else the tree the
// tests were built from) and the imgpipe CLI (IMGPIPE_CLI, else the built one):
// the environment lets a bundled test binary run on another machine.
std::filesystem::path source_dir();
std::string cli_path();

// The shipped sample images (samples/data), sorted.
std::filesystem::path sample_dir();
std::vector<std::filesystem::path> sample_images();

// A fresh, empty temporary directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Backends to test: "cpu" always, plus "0" when a CUDA device is present.
std::vector<DeviceSelection> test_devices();
bool have_gpu();

// A case that cannot run here (a GPU-only case without a CUDA device, no
// libnvjpeg or JPEG engines, no Chromium, NVTX compiled out) skips visibly:
// skip_unless(false, reason) prints the line
//   IMGPIPE-SKIPPED: <test case>: <reason>
// to stdout (CTest's SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt reports
// the case as skipped, not passed; samples/bench/gpu_suite.sh counts the
// lines of a plain doctest run) and returns true: the case then returns.
// A case that also checks a host path keeps running it and does not skip.
// IMGPIPE_SKIP_UNLESS(cond, reason) is the usual spelling; `reason` (a
// std::string) is evaluated only when `cond` is false.
bool skip_unless(bool cond, const std::string& reason);
#define IMGPIPE_SKIP_UNLESS(cond, reason)                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      (void)::imgpipe::test::skip_unless(false, std::string(reason));      \
      return;                                                              \
    }                                                                      \
  } while (0)
// The test case running now (set by a listener in tests/main.cpp).
std::string current_test_case();
void set_current_test_case(const std::string& name);

// Copies a delivered batch to the host (synchronising with its stream).
std::vector<unsigned char> batch_to_host(const DeviceBatch& b);

// The largest difference between two NCHW RGB float tensors normalised with
// ImageNet's std (the default config), in pixel levels: |diff| x std[c] x 255.
double max_level_diff(const std::vector<float>& a, const std::vector<float>& b);

// Reads a whole file / writes bytes to a file.
std::vector<unsigned char> read_bytes(const std::filesystem::path& p);
void write_bytes(const std::filesystem::path& p, const std::vector<unsigned char>& b);
// Where a JPEG's first scan's entropy-coded data starts (after its SOS
// segment); 0 when it has no SOS.
std::size_t first_scan_data(const std::vector<unsigned char>& jpeg);
// A whole file as text ("" when it cannot be read).
std::string read_text(const std::filesystem::path& p);

// Starts `/bin/sh -c cmd` in the background: its pid, or -1 when it cannot
// start. Write `exec` before a program that a signal must reach directly.
pid_t spawn_shell(const std::string& cmd);
// Waits up to `limit` for the child `pid` to end: its waitpid() status, or
// nullopt after killing (SIGKILL) and reaping a child that did not end in time.
std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds limit);
// Checks that an imgpipe CLI run stopped by SIGINT or SIGTERM ended as the CLI
// promises: it exited (was not killed by the signal) with 130, and its output
// `text` says INTERRUPTED.
void check_interrupted_exit(int status, const std::string& text);

// Runs the imgpipe CLI with arguments through the shell; returns its exit
// code, output in *out (stdout+stderr). `env` is prefixed to the command line
// ("RANK=1 WORLD_SIZE=3", or a launcher: "mpirun -n 3").
int run_cli(const std::string& args, std::string* out = nullptr, const std::string& env = "");
// `p` in single quotes, for the command lines run_cli runs.
std::string q(const std::filesystem::path& p);
// Whether `text` holds `part` (a CLI's output, a report, a message).
bool contains(const std::string& text, const std::string& part);

// Real images and videos from Debian's opencv-doc package
// (/usr/share/doc/opencv-doc/examples/data: vtest.avi, Megamind.avi,
// basketball1.png, cards.png, ...). Throws std::runtime_error saying how to
// install it when the folder is missing: the tests that use it fail, they do
// not skip.
std::filesystem::path opencv_data_dir();

// Runs Debian's ffmpeg CLI quietly (`args` after "ffmpeg -nostdin -v error
// -y"); a failure fails the test (it is a requirement of the test suite,
// setup.sh test installs it, not a reason to skip).
void ffmpeg(const std::string& args);

// The launchers' rank variables (RANK, WORLD_SIZE, OMPI_COMM_WORLD_*,
// SLURM_*, PMI_*, LOCAL_RANK, ...): tests/main.cpp clears them so that a suite
// started under srun or torchrun still sees the whole input.
const std::vector<std::string>& launcher_variables();

// Sets (value) or unsets (nullptr) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Captures the warnings (and worse) of imgpipe's logger (imgpipe::logger())
// while alive: its sinks are replaced, then restored.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() const { return text_.str(); }
  int count(const std::string& needle) const;

 private:
  std::shared_ptr<spdlog::logger> logger_;
  std::vector<std::shared_ptr<spdlog::sinks::sink>> old_sinks_;
  int old_level_ = 0;
  std::ostringstream text_;
};

}  // namespace imgpipe::test
