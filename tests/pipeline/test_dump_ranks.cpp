// The dump sink end to end through the CLI: a folder in use is refused
// before any work, sink.overwrite replaces an earlier run's output, and the
// ranks of a real launcher (Open MPI's mpirun) share one folder without
// losing, repeating or overwriting a sample.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "stages/dump_folder.hpp"

namespace fs = std::filesystem;
using imgpipe::test::TempDir;

namespace {

using imgpipe::test::q;

using imgpipe::test::read_text;

// Every file and folder under `dir`, relative, with the files' contents:
// what a run that is refused must leave as it was.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out[e.path().lexically_relative(dir).string()] = e.is_regular_file() ? read_text(e.path()) : "/";
  return out;
}

// mpirun from Debian's openmpi-bin, for `n` processes on this machine; a
// missing one fails the test, saying how to install it.
std::string mpirun(int n) {
  std::string path;
  if (FILE* f = ::popen("command -v mpirun", "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) path += buf;
    ::pclose(f);
  }
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  if (path.empty())
    throw std::runtime_error("mpirun not found: install Debian's openmpi-bin (apt-get install openmpi-bin; "
                             "setup.sh does) for the launcher tests");
  // CI runs as root, which Open MPI refuses unless told, on 2 cores (3 ranks oversubscribe them).
  return path + " --allow-run-as-root --oversubscribe -n " + std::to_string(n);
}

// A sample as the manifest names it ("path#frame") -> its bytes in its batch file.
using Samples = std::vector<std::pair<std::string, std::vector<unsigned char>>>;

// One process's dump folder read back, after checking that its batch files
// are exactly batch_000000.npy .. those the manifest names, each holding as
// many samples as the manifest gives it.
Samples read_folder(const fs::path& dir) {
  CAPTURE(dir);
  std::map<std::int64_t, std::vector<nlohmann::json>> lines_of;
  std::ifstream manifest(dir / "manifest.jsonl");
  REQUIRE(manifest);
  for (std::string l; std::getline(manifest, l);) {
    const auto j = nlohmann::json::parse(l);
    lines_of[j.at("batch").get<std::int64_t>()].push_back(j);
  }
  std::set<std::string> files, named;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != "manifest.jsonl") files.insert(e.path().filename().string());
  for (std::int64_t b = 0; b < static_cast<std::int64_t>(lines_of.size()); ++b)
    named.insert(fmt::format("batch_{:06d}.npy", b));
  REQUIRE(files == named);  // batches 0..n-1, each in the manifest, nothing else
  Samples out;
  for (const auto& [b, lines] : lines_of) {
    const auto npy = imgpipe::test::read_bytes(dir / fmt::format("batch_{:06d}.npy", b));
    REQUIRE(npy.size() > 10);
    const std::size_t header = 10 + (npy[8] | (static_cast<std::size_t>(npy[9]) << 8));
    const std::string h(npy.begin() + 10, npy.begin() + static_cast<std::ptrdiff_t>(header));
    const std::size_t n = std::stoul(h.substr(h.find("'shape': (") + 10));
    REQUIRE(n == lines.size());
    const std::size_t per_sample = (npy.size() - header) / n;
    REQUIRE(per_sample * n == npy.size() - header);
    for (const auto& j : lines) {
      const auto i = j.at("index").get<std::size_t>();
      REQUIRE(i < n);
      const auto first = npy.begin() + static_cast<std::ptrdiff_t>(header + i * per_sample);
      out.emplace_back(j.at("path").get<std::string>() + "#" + std::to_string(j.at("frame").get<std::int64_t>()),
                       std::vector<unsigned char>(first, first + static_cast<std::ptrdiff_t>(per_sample)));
    }
  }
  return out;
}

fs::path write_config(const fs::path& file, const fs::path& input, const fs::path& out, int batch, bool overwrite) {
  std::ofstream(file) << "input: {paths: [" << q(input) << "]}\n"
                      << "transform: {resize: {width: 32, height: 24}}\nbatch: {size: " << batch << "}\n"
                      << "devices: cpu\nsink: {type: dump, dir: " << q(out)
                      << ", overwrite: " << (overwrite ? "true" : "false") << "}\n";
  return file;
}

}  // namespace

TEST_CASE("dump: a second run into the same folder is refused before any work, sink.overwrite replaces it") {
  TempDir d;
  const fs::path out = d / "out";
  const fs::path data = imgpipe::test::sample_dir();
  const fs::path first = write_config(d / "first.yaml", data, out, 4, false);
  std::string text;
  REQUIRE(imgpipe::test::run_cli("--quiet --config " + q(first), &text) == 0);
  REQUIRE(read_folder(out).size() == 20);
  std::ofstream(out / "notes.txt") << "mine";

  // Refused: exit 2, the folder and sink.overwrite named, nothing written.
  const auto before = snapshot(out);
  CHECK(imgpipe::test::run_cli("--quiet --config " + q(first), &text) == 2);
  CAPTURE(text);
  CHECK(text.find(fmt::format("'{}' is not empty", out.string())) != std::string::npos);
  CHECK(text.find("sink.overwrite: true") != std::string::npos);
  CHECK(snapshot(out) == before);

  // Overwrite with fewer, larger batches: none of the first run's five is left behind.
  const fs::path second = write_config(d / "second.yaml", data, out, 8, true);
  REQUIRE(imgpipe::test::run_cli("--log-level info --config " + q(second), &text) == 0);
  CHECK(text.find(fmt::format("sink.overwrite: removed 6 earlier file(s) and folder(s) in '{}': batch_000000.npy, "
                              "batch_000001.npy, batch_000002.npy, batch_000003.npy, batch_000004.npy, "
                              "manifest.jsonl",
                              out.string())) != std::string::npos);
  CHECK(text.find(fmt::format("kept 1 entry in '{}' that imgpipe did not write: notes.txt", out.string())) !=
        std::string::npos);
  CHECK(read_text(out / "notes.txt") == "mine");
  fs::remove(out / "notes.txt");
  CHECK(read_folder(out).size() == 20);  // and exactly batch_000000..000002.npy
}

TEST_CASE("dump: the ranks of mpirun -n 3 share one folder: every sample exactly once, bytes as one process's") {
  TempDir d;
  const fs::path data = imgpipe::test::opencv_data_dir();  // images and videos: 1494 samples in Debian 12
  std::string text;
  // The reference: one process.
  REQUIRE(imgpipe::test::run_cli("--quiet --config " + q(write_config(d / "one.yaml", data, d / "one", 16, false)),
                                 &text) == 0);
  std::map<std::string, std::vector<unsigned char>> reference;
  for (auto& [key, bytes] : read_folder(d / "one")) REQUIRE(reference.emplace(key, std::move(bytes)).second);
  REQUIRE(reference.size() > 1000);

  const fs::path out = d / "out";
  auto check_ranks = [&](int world) {
    CAPTURE(world);
    std::set<std::string> folders, expected;
    for (const auto& e : fs::directory_iterator(out)) folders.insert(e.path().filename().string());
    for (int r = 0; r < world; ++r) expected.insert(imgpipe::stages::rank_folder_name(r, world));
    CHECK(folders == expected);
    std::map<std::string, int> seen;
    for (int r = 0; r < world; ++r) {
      for (const auto& [key, bytes] : read_folder(out / imgpipe::stages::rank_folder_name(r, world))) {
        CAPTURE(key);
        ++seen[key];
        const auto ref = reference.find(key);
        REQUIRE(ref != reference.end());
        CHECK(bytes == ref->second);
      }
    }
    CHECK(seen.size() == reference.size());
    for (const auto& [key, n] : seen) {
      CAPTURE(key);
      CHECK(n == 1);
    }
  };

  // Small batches first, then larger ones: a batch file left behind would show.
  const fs::path job = write_config(d / "job.yaml", data, out, 7, false);
  const fs::path job_overwrite = write_config(d / "job_overwrite.yaml", data, out, 16, true);
  REQUIRE(imgpipe::test::run_cli("--quiet --config " + q(job), &text, mpirun(3)) == 0);
  check_ranks(3);

  // Again without sink.overwrite: every rank refuses before writing anything.
  const auto before = snapshot(out);
  CHECK(imgpipe::test::run_cli("--quiet --config " + q(job), &text, mpirun(3)) != 0);
  CAPTURE(text);
  CHECK(text.find("sink.overwrite") != std::string::npos);
  CHECK(snapshot(out) == before);

  // With it, the ranks clear their own folders at once; none removes another's new files.
  REQUIRE(imgpipe::test::run_cli("--quiet --config " + q(job_overwrite), &text, mpirun(3)) == 0);
  check_ranks(3);

  // Two ranks next: rank 0 clears the three-rank layout, nothing of it is left behind.
  REQUIRE(imgpipe::test::run_cli("--quiet --config " + q(job_overwrite), &text, mpirun(2)) == 0);
  check_ranks(2);
}
