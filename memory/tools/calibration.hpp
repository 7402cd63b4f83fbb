// Calibration: what each host memory kind does on the machine in hand —
// H2D and D2H GB/s (CUDA events, medians, per size), CPU write and read GB/s,
// allocation time, and for mapped memory a kernel reading it in place — so
// that the policy (policy.hpp) decides from measurements, not folklore.
//
// Results are cached in a small JSON file (default_calibration_path()), one
// entry per key (GPU name, driver version, hostname): a different GPU, driver
// or host means a new measurement. `imgpipe bench-memory --json FILE` writes
// the same object (plus its workloads).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "imgpipe/memory/resources.hpp"

namespace imgpipe::memory {

struct CalibrationKey {
  std::string gpu_name;        // "NVIDIA H200"; "none" without a device
  std::string driver_version;  // "13.0" (cudaDriverGetVersion); "none" without a device
  std::string hostname;
  bool operator==(const CalibrationKey&) const = default;
  std::string to_string() const;  // "NVIDIA H200, driver 13.0, host gpu-17"
};

// This machine's key for `device` (-1 or no device: gpu and driver "none").
// Never throws.
CalibrationKey current_calibration_key(int device = 0) noexcept;

// One kind's figures. A figure of 0 was not measured (not available, or no
// device for the copy figures).
struct KindMeasurement {
  MemoryKind kind = MemoryKind::pageable;
  bool available = false;
  std::string error;              // why not, when !available
  std::size_t alloc_bytes = 0;    // the block timed below (the largest size)
  double alloc_ms = 0;            // allocate() of alloc_bytes (pageable: lazy, pages fault on first touch)
  double free_ms = 0;             // deallocate() of it
  std::size_t cpu_bytes = 0;      // bytes per CPU measurement
  double cpu_write_gbps = 0;      // memcpy from cached memory into this kind, one thread
  double cpu_read_gbps = 0;       // memcpy from this kind into cached memory, one thread
  std::vector<double> h2d_gbps_by_size;  // parallel to Calibration::sizes
  std::vector<double> d2h_gbps_by_size;
  double h2d_gbps = 0;            // at the largest size
  double d2h_gbps = 0;
  double kernel_read_gbps = 0;    // mapped: a kernel reading the host block directly
  bool has_copies() const noexcept { return available && h2d_gbps > 0; }
};

// With two or more GPUs: one host block of `kind` copied to each device in
// turn, and to all at once.
struct DeviceCopyMeasurement {
  MemoryKind kind = MemoryKind::pinned;
  std::size_t bytes = 0;
  std::vector<double> per_device_gbps;  // index = device ordinal
  double concurrent_gbps = 0;           // bytes x devices / wall time, all copies in flight at once
};

struct Calibration {
  CalibrationKey key;
  int device = -1;                 // the device measured; -1: none
  std::string device_description;  // "NVIDIA H200 (sm_90, 139 GiB)" or "no CUDA device: ..."
  int device_count = 0;
  std::string measured_at;         // ISO 8601, UTC
  int iterations = 0;
  std::vector<std::size_t> sizes;  // copy sizes, ascending
  std::vector<KindMeasurement> kinds;
  std::vector<DeviceCopyMeasurement> multi_device;

  bool has_device() const noexcept { return device >= 0; }
  // The measurement of `k`, or nullptr.
  const KindMeasurement* find(MemoryKind k) const noexcept;

  nlohmann::json to_json() const;
  // Throws imgpipe::Error naming what is missing or malformed.
  static Calibration from_json(const nlohmann::json& j);
};

struct CalibrationOptions {
  int device = 0;  // -1: host-side figures only
  std::vector<std::size_t> sizes = {std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{16} << 20,
                                    std::size_t{64} << 20, std::size_t{256} << 20};
  int iterations = 10;  // per figure; the median is kept
  std::vector<MemoryKind> kinds{all_memory_kinds.begin(), all_memory_kinds.end()};
  std::size_t cpu_bytes_max = std::size_t{64} << 20;  // CPU figures use min(largest size, this)
  bool multi_device = true;                           // the per-device copies when >= 2 GPUs
};

// Measures now. Never asks a kind the process cannot have: without a device,
// only pageable memory's CPU figures. A kind that fails is recorded as not
// available with the error. Throws std::invalid_argument for empty sizes or
// iterations < 1; CudaError for device failures outside one kind's figures.
Calibration measure_calibration(const CalibrationOptions& options = {});

// $XDG_CACHE_HOME/imgpipe/calibration.json, else ~/.cache/imgpipe/calibration.json,
// else ./imgpipe-calibration.json.
std::filesystem::path default_calibration_path();

// The cached entry for `key`, or nullopt when the file is missing, unreadable
// (logged) or has no entry for this key.
std::optional<Calibration> load_calibration(const std::filesystem::path& path, const CalibrationKey& key);
// Writes `c` into the cache file, replacing an entry with the same key and
// keeping the others; creates the directory. Throws imgpipe::Error.
void save_calibration(const std::filesystem::path& path, const Calibration& c);
// The cached entry for this machine, or a new measurement (then saved; a
// failure to save is logged, not thrown). *measured tells which.
Calibration load_or_measure_calibration(const std::filesystem::path& path, const CalibrationOptions& options,
                                        bool* measured = nullptr);

}  // namespace imgpipe::memory
