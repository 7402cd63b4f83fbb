// Pipeline configuration: C++ structs with the documented defaults of
// configs/pipeline.yaml, loaded from YAML with full validation.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "imgpipe/error.hpp"
#include "imgpipe/types.hpp"

namespace imgpipe {

enum class OnError : std::uint8_t { skip, fail };
enum class Where : std::uint8_t { cpu, gpu, automatic };
enum class ResizeMode : std::uint8_t { stretch, letterbox, center_crop };
enum class Interpolation : std::uint8_t { linear, nearest, area, cubic };
enum class StagingMemory : std::uint8_t { write_combined, pinned, pageable };
enum class SinkType : std::uint8_t { discard, dump };
enum class Transfer : std::uint8_t { copy, zero_copy, pageable };
enum class Dispatch : std::uint8_t { round_robin, least_loaded };

struct VideoConfig {
  std::int64_t start = 0;       // first frame index delivered from each video
  std::int64_t stride = 1;      // every stride-th frame from start
  std::int64_t max_frames = 0;  // per video; 0 = all
};

// input.shard; rank -1 = from the launcher's environment (RANK/WORLD_SIZE,
// OMPI_COMM_WORLD_*, SLURM_*), or the whole input when none is set.
struct ShardConfig {
  int rank = -1;
  int world_size = 0;
};

struct InputConfig {
  std::vector<std::string> paths;  // files, folders or glob patterns (*, ?, [..] in the last component)
  bool recursive = true;
  std::vector<std::string> extensions{".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff",
                                      ".avi", ".mp4", ".mkv", ".mov", ".webm"};
  OnError on_error = OnError::skip;
  std::string list;  // a file naming one input per line (added after paths)
  int loop = 1;      // repeat the input list this many times
  std::optional<std::uint64_t> shuffle_seed;  // input.shuffle: {seed: S}
  ShardConfig shard;
  VideoConfig video;
};

struct DecodeConfig {
  int threads = 0;  // 0 = auto: every hardware thread
  // Deliver damaged images a decoder can fill in (JPEGs without EOI or with
  // libjpeg corrupt-data warnings, PNGs without IEND) instead of reporting them.
  bool accept_truncated = false;
  // Images whose header claims more pixels are rejected before decoding.
  std::int64_t max_pixels = 100'000'000;
  // auto: decode JPEGs at 1/2, 1/4 or 1/8 scale in the DCT domain when the
  // result still covers the resize target; off: always full size.
  bool reduced = true;
  // Rotate/flip by the EXIF orientation tag (false: keep the stored pixels).
  bool exif_orientation = true;
};

struct ResizeConfig {
  int width = 640;
  int height = 640;
  ResizeMode mode = ResizeMode::stretch;
  Interpolation interpolation = Interpolation::linear;
  int pad_value = 114;  // letterbox padding, 0..255
  // cpu: resize in the transform stage; gpu: stage the decoded frames and
  // resize (fused with normalise) on the GPU; auto: cpu (measured faster on
  // the H200 machine; see configs/pipeline.yaml).
  Where where = Where::automatic;
};

struct NormalizeConfig {
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
  float scale = 1.0f / 255.0f;
  Where where = Where::automatic;
};

struct TransformConfig {
  ResizeConfig resize;
  NormalizeConfig normalize;
  Layout layout = Layout::nchw;
  DType dtype = DType::float32;
  bool swap_rb = true;  // decode gives BGR; true delivers RGB
};

struct BatchConfig {
  int size = 32;
  bool drop_last = false;
};

struct StagingConfig {
  int slots = 2;
  StagingMemory memory = StagingMemory::write_combined;
  Transfer transfer = Transfer::copy;
};

struct MemoryConfig {
  int pinned_budget_mb = 0;  // page-locked staging bytes allowed; 0 = no limit
  bool fallback = true;      // false: a failed pinned allocation is an error, not a step down the chain
  bool track = false;        // record allocation sites; report leaks at shutdown
};

// devices: auto (first GPU, or LOCAL_RANK's GPU under a launcher; else host)
// | cpu | all | N (GPU ordinal) | [N, M, ...]
struct DeviceSelection {
  enum class Kind : std::uint8_t { automatic, cpu, ordinal, all, list } kind = Kind::automatic;
  int ordinal = 0;
  std::vector<int> ordinals;  // Kind::list
  static DeviceSelection parse(const std::string& text);  // throws ConfigError(key "devices")
  std::string to_string() const;
};

struct SinkConfig {
  SinkType type = SinkType::discard;
  std::string dir = "out";
};

struct PipelineTuning {
  int max_tokens = 0;  // frames in flight; 0 = auto (2 x decode threads, at least 4)
};

struct Config {
  InputConfig input;
  DecodeConfig decode;
  TransformConfig transform;
  BatchConfig batch;
  StagingConfig staging;
  DeviceSelection devices;
  Dispatch dispatch = Dispatch::round_robin;
  MemoryConfig memory;
  SinkConfig sink;
  PipelineTuning pipeline;

  // Parse and validate. Throw ConfigError naming the key and line for
  // malformed YAML, unknown keys, wrong types and out-of-range values.
  // Relative input paths and sink.dir in a file resolve against the
  // current directory (as a user typing them expects).
  static Config from_yaml_file(const std::filesystem::path& file);
  static Config from_yaml_string(const std::string& yaml);

  // Cross-field checks (also run by the loaders). Throws ConfigError.
  void validate() const;

  // The effective config as YAML (every key), for logs and --print-config.
  std::string to_yaml() const;
};

}  // namespace imgpipe
