// `imgpipe bench-memory`: every host memory kind measured on this machine
// (calibration.hpp) printed as a table, the policy's choices with their
// reasons, and optionally three workloads comparing the policy's kind with
// plain default pinned memory.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe {

struct BenchMemoryOptions {
  std::string json_path;           // non-empty: write the results (calibration object + workloads) here
  bool workloads = false;          // also run the three workloads
  std::vector<std::size_t> sizes;  // copy sizes; empty: 1, 4, 16, 64, 256 MiB
  int iterations = 10;             // per figure (medians)
  int device = 0;                  // the device measured (all devices for the multi-GPU figures)
  std::string cache_path;          // non-empty: also store the calibration in this cache file
};

// "1M,16M,256MiB,4096B,1G": K/M/G (with or without "iB"/"B") are binary
// units, B is bytes, a bare number is MiB. Throws std::invalid_argument naming
// the bad item.
std::vector<std::size_t> parse_byte_sizes(std::string_view list);

// Runs the benchmark and prints to `out`. Without a GPU it prints the
// host-side figures (pageable memory) and says there is no device. Returns
// the exit code: 0, or 1 when measuring or writing the JSON failed (the
// reason printed to `out`).
int run_bench_memory(const BenchMemoryOptions& options, std::ostream& out);

}  // namespace imgpipe
