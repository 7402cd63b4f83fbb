// The probe's structural checks (codecs/parse/jpeg_checks.hpp) timed over a folder:
// each JPEG read once into memory, then checked `--runs` times on one thread;
// prints core-seconds per 1,000 JPEGs (median run) and the reasons found.
//   imgpipe_bench_probe DIR [--runs 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "codecs/parse/jpeg_checks.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: imgpipe_bench_probe DIR [--runs N]\n";
    return 2;
  }
  int runs = 5;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
  std::vector<std::vector<unsigned char>> files;
  std::size_t bytes = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(argv[1], ec)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!e.is_regular_file() || (ext != ".jpg" && ext != ".jpeg")) continue;
    std::ifstream in(e.path(), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    bytes += files.back().size();
  }
  if (ec || files.empty()) {
    std::cerr << "imgpipe_bench_probe: no JPEGs under " << argv[1] << (ec ? ": " + ec.message() : "") << "\n";
    return 1;
  }
  // Enough passes per run for a measurable time.
  const int passes = static_cast<int>(std::max<std::size_t>(1, 20000 / files.size()));
  std::map<std::string, int> reasons;
  for (const auto& f : files) ++reasons[std::string(imgpipe::codecs::jpeg_refusal_name(imgpipe::codecs::check_jpeg(f)))];
  std::vector<double> per_1000;
  unsigned sink = 0;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int p = 0; p < passes; ++p)
      for (const auto& f : files) {
        imgpipe::codecs::JpegStructure s;
        sink += static_cast<unsigned>(imgpipe::codecs::check_jpeg(f, s)) + static_cast<unsigned>(s.scan_size);
      }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    per_1000.push_back(s / (static_cast<double>(passes) * static_cast<double>(files.size())) * 1000.0);
  }
  std::sort(per_1000.begin(), per_1000.end());
  std::printf("%zu JPEGs, %.1f kB average, %d runs x %d passes: %.4f core-seconds per 1000 JPEGs (median; min %.4f)"
              " = %.1f MB/s  [%u]\n",
              files.size(), static_cast<double>(bytes) / static_cast<double>(files.size()) / 1000.0, runs, passes,
              per_1000[per_1000.size() / 2], per_1000.front(),
              static_cast<double>(bytes) / static_cast<double>(files.size()) * 1000.0 / per_1000[per_1000.size() / 2] /
                  1e6,
              sink & 1u);
  for (const auto& [reason, n] : reasons) std::printf("  %s: %d\n", reason.c_str(), n);
  return 0;
}
