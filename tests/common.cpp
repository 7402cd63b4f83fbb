#include "common.hpp"

#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>

#include <doctest/doctest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "imgpipe/log.hpp"
#include "memory/gpu.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fs = std::filesystem;

namespace imgpipe::test {

fs::path source_dir() {
  const char* e = std::getenv("IMGPIPE_SOURCE_DIR");
  return e && *e ? fs::path(e) : fs::path(IMGPIPE_SOURCE_DIR);
}

std::string cli_path() {
  const char* e = std::getenv("IMGPIPE_CLI");
  return e && *e ? std::string(e) : std::string(IMGPIPE_CLI);
}

fs::path sample_dir() { return source_dir() / "samples" / "data"; }

std::vector<fs::path> sample_images() {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(sample_dir())) {
    const auto ext = e.path().extension();
    if (ext == ".jpg" || ext == ".png") v.push_back(e.path());
  }
  std::sort(v.begin(), v.end());
  return v;
}

TempDir::TempDir() {
  std::random_device rd;
  path_ = fs::temp_directory_path() / ("imgpipe_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
  fs::create_directories(path_);
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

double max_level_diff(const std::vector<float>& a, const std::vector<float>& b) {
  constexpr double kStd[3] = {0.229, 0.224, 0.225};
  const std::size_t plane = std::max<std::size_t>(1, a.size() / 3);
  double most = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    most = std::max(most, std::abs(static_cast<double>(a[i]) - b[i]) * kStd[std::min<std::size_t>(i / plane, 2)] * 255.0);
  return most;
}

std::vector<unsigned char> batch_to_host(const DeviceBatch& b) {
  std::vector<unsigned char> h(b.bytes);
  if (b.device < 0) {
    std::memcpy(h.data(), b.data, b.bytes);
    return h;
  }
#if IMGPIPE_HAS_CUDA
  if (cudaMemcpyAsync(h.data(), b.data, b.bytes, cudaMemcpyDeviceToHost, b.stream) != cudaSuccess ||
      cudaStreamSynchronize(b.stream) != cudaSuccess)
    throw std::runtime_error("batch_to_host: copying the batch from the device failed");
#else
  throw std::runtime_error("batch_to_host: a device batch in a build without CUDA");
#endif
  return h;
}

bool have_gpu() { return gpu::device_count() > 0; }

namespace {
std::mutex g_case_mutex;
std::string g_case;
}  // namespace

void set_current_test_case(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_case_mutex);
  g_case = name;
}

std::string current_test_case() {
  std::lock_guard<std::mutex> lock(g_case_mutex);
  return g_case.empty() ? std::string("<unknown test case>") : g_case;
}

bool skip_unless(bool cond, const std::string& reason) {
  if (cond) return false;
  // One line, flushed at once: stdout is what CTest matches and what the GPU
  // suite counts, whatever doctest's own output options are.
  std::cout << "IMGPIPE-SKIPPED: " << current_test_case() << ": " << reason << std::endl;
  return true;
}

std::vector<DeviceSelection> test_devices() {
  std::vector<DeviceSelection> v{DeviceSelection::parse("cpu")};
  if (have_gpu()) v.push_back(DeviceSelection::parse("0"));
  return v;
}

namespace {
// The whole file in one read (the suite is compiled at -O0, where a
// character-by-character copy of a 40 MB batch file takes seconds).
template <class Buffer>
bool read_whole(const fs::path& p, Buffer& out) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) return false;
  out.resize(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size())));
}
}  // namespace

std::vector<unsigned char> read_bytes(const fs::path& p) {
  std::vector<unsigned char> v;
  if (!read_whole(p, v)) throw std::runtime_error("cannot read " + p.string());
  return v;
}

std::string read_text(const fs::path& p) {
  std::string s;
  if (!read_whole(p, s)) s.clear();  // a missing file reads as ""
  return s;
}

pid_t spawn_shell(const std::string& cmd) {
  pid_t pid = 0;
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  return posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ) == 0 ? pid : -1;
}

std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds limit) {
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 >= limit) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

void check_interrupted_exit(int status, const std::string& text) {
  CAPTURE(text);
  const int killed_by = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  CAPTURE(killed_by);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(text.find("INTERRUPTED") != std::string::npos);
}

void write_bytes(const fs::path& p, const std::vector<unsigned char>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int run_cli(const std::string& args, std::string* out, const std::string& env) {
  const std::string cmd = (env.empty() ? "" : env + " ") + cli_path() + " " + args + " 2>&1";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) throw std::runtime_error("popen failed");
  std::string text;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) text.append(buf.data(), n);
  const int status = ::pclose(f);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::size_t first_scan_data(const std::vector<unsigned char>& jpeg) {
  for (std::size_t i = 2; i + 3 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) return i + 2 + ((jpeg[i + 2] << 8) | jpeg[i + 3]);
  return 0;
}

fs::path opencv_data_dir() {
  const fs::path d = "/usr/share/doc/opencv-doc/examples/data";
  if (!fs::is_regular_file(d / "vtest.avi"))
    throw std::runtime_error(d.string() +
                             "/vtest.avi not found: install Debian's opencv-doc package "
                             "(apt-get install opencv-doc; setup.sh does) for the video and image tests");
  return d;
}

const std::vector<std::string>& launcher_variables() {
  static const std::vector<std::string> v{"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
                                          "SLURM_NTASKS", "SLURM_LOCALID", "PMI_RANK", "PMI_SIZE",
                                          "MPI_LOCALRANKID"};
  return v;
}

LogCapture::LogCapture() : logger_(imgpipe::logger()) {
  old_sinks_ = logger_->sinks();
  old_level_ = static_cast<int>(logger_->level());
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
  sink->set_pattern("%l: %v");
  logger_->sinks() = {sink};
  logger_->set_level(spdlog::level::warn);
}

LogCapture::~LogCapture() {
  logger_->sinks() = old_sinks_;
  logger_->set_level(static_cast<spdlog::level::level_enum>(old_level_));
}

int LogCapture::count(const std::string& needle) const {
  const std::string t = text();
  int n = 0;
  for (auto pos = t.find(needle); pos != std::string::npos; pos = t.find(needle, pos + 1)) ++n;
  return n;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = std::string(old);
  if (value != nullptr)
    ::setenv(name, value, 1);
  else
    ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (old_)
    ::setenv(name_.c_str(), old_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

void ffmpeg(const std::string& args) {
  const std::string cmd = "ffmpeg -nostdin -v error -y " + args + " > /dev/null 2>&1";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "ffmpeg failed (setup.sh test installs it): " << cmd);
}

}  // namespace imgpipe::test
