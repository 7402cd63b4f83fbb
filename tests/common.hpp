// Helpers shared by the test suites.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "imgpipe/config.hpp"

namespace imgpipe::test {

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

// Reads a whole file / writes bytes to a file.
std::vector<unsigned char> read_bytes(const std::filesystem::path& p);
void write_bytes(const std::filesystem::path& p, const std::vector<unsigned char>& b);

// Runs the imgpipe CLI with arguments; returns its exit code, output in *out (stdout+stderr).
int run_cli(const std::string& args, std::string* out = nullptr);

}  // namespace imgpipe::test
