// Pipeline configuration: C++ structs with the documented defaults of
// configs/pipeline.yaml, loaded from YAML with full validation. Every key is
// described once, in core/src/config_keys.cpp (type, range, doc, member);
// docs/config.md is generated from it.
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
// random_crop: torchvision's RandomResizedCrop (a box drawn per sample and
// epoch, stretched to the target; imgpipe/augment.hpp).
enum class ResizeMode : std::uint8_t { stretch, letterbox, center_crop, random_crop };
enum class Interpolation : std::uint8_t { linear, nearest, area, cubic };
// Pageable staging is a memory kind, not a transfer mode: one way to ask for it.
enum class StagingMemory : std::uint8_t { write_combined, pinned, pageable };
enum class SinkType : std::uint8_t { discard, dump };
// staging.transfer (named apart from stages::Transfer, the stage that does it).
enum class TransferMode : std::uint8_t { copy, zero_copy };
enum class Dispatch : std::uint8_t { round_robin, least_loaded };
enum class Labels : std::uint8_t { none, folders };
// input.video.order: how the source takes the frames of the videos decoding at once.
enum class VideoOrder : std::uint8_t { ready, turns };
// decode.verify: what is checked before a JPEG goes to the GPU's engines.
enum class Verify : std::uint8_t { markers, full };
// input.shard_remainder: what happens to the items of an epoch that do not
// divide evenly among the ranks.
enum class ShardRemainder : std::uint8_t { uneven, pad, drop };

// The names config files use for each enum's values (the only list of them).
inline constexpr EnumName<OnError> on_error_names[] = {{OnError::skip, "skip"}, {OnError::fail, "fail"}};
inline constexpr EnumName<Verify> verify_names[] = {{Verify::markers, "markers"}, {Verify::full, "full"}};
inline constexpr EnumName<ShardRemainder> shard_remainder_names[] = {
    {ShardRemainder::uneven, "uneven"}, {ShardRemainder::pad, "pad"}, {ShardRemainder::drop, "drop"}};
inline constexpr EnumName<Where> where_names[] = {{Where::cpu, "cpu"}, {Where::gpu, "gpu"}, {Where::automatic, "auto"}};
inline constexpr EnumName<ResizeMode> resize_mode_names[] = {
    {ResizeMode::stretch, "stretch"},
    {ResizeMode::letterbox, "letterbox"},
    {ResizeMode::center_crop, "center_crop"},
    {ResizeMode::random_crop, "random_crop"}};
inline constexpr EnumName<Interpolation> interpolation_names[] = {{Interpolation::linear, "linear"},
                                                                  {Interpolation::nearest, "nearest"},
                                                                  {Interpolation::area, "area"},
                                                                  {Interpolation::cubic, "cubic"}};
inline constexpr EnumName<StagingMemory> staging_memory_names[] = {{StagingMemory::write_combined, "write_combined"},
                                                                   {StagingMemory::pinned, "pinned"},
                                                                   {StagingMemory::pageable, "pageable"}};
inline constexpr EnumName<SinkType> sink_type_names[] = {{SinkType::discard, "discard"}, {SinkType::dump, "dump"}};
inline constexpr EnumName<TransferMode> transfer_mode_names[] = {{TransferMode::copy, "copy"},
                                                                 {TransferMode::zero_copy, "zero_copy"}};
inline constexpr EnumName<Dispatch> dispatch_names[] = {{Dispatch::round_robin, "round_robin"},
                                                        {Dispatch::least_loaded, "least_loaded"}};
inline constexpr EnumName<Labels> labels_names[] = {{Labels::none, "none"}, {Labels::folders, "folders"}};
inline constexpr EnumName<VideoOrder> video_order_names[] = {{VideoOrder::ready, "ready"},
                                                             {VideoOrder::turns, "turns"}};
// input.video.clips.place: where a video's clips start (imgpipe/clips.hpp).
enum class ClipPlace : std::uint8_t { random, uniform, every };
// input.video.clips.short: a video with fewer frames than a clip spans.
enum class ClipShort : std::uint8_t { skip, pad, loop };
inline constexpr EnumName<ClipPlace> clip_place_names[] = {
    {ClipPlace::random, "random"}, {ClipPlace::uniform, "uniform"}, {ClipPlace::every, "every"}};
inline constexpr EnumName<ClipShort> clip_short_names[] = {
    {ClipShort::skip, "skip"}, {ClipShort::pad, "pad"}, {ClipShort::loop, "loop"}};

// input.video.clips: with length > 0 a video file's sample is a clip of
// `length` frames taken every `stride`-th frame (indices in presentation
// order), `per_video` of them per video and epoch, placed as `place` says
// (imgpipe/clips.hpp has the rules and draws).
struct ClipConfig {
  int length = 0;     // T; 0 = off (each frame is a sample)
  int stride = 1;     // frames between a clip's frames
  int per_video = 1;  // random, uniform: clips per video; every: at most this many (0 = all)
  ClipPlace place = ClipPlace::random;
  int step = 0;       // every: frames between clip starts; 0 = the clip's span
  ClipShort shorter = ClipShort::skip;  // the key `short`
  ClipLayout layout = ClipLayout::cthw;
  bool on() const noexcept { return length > 0; }
  // Frames from a clip's first to its last: (length - 1) * stride + 1.
  std::int64_t span() const noexcept { return length > 0 ? std::int64_t{length - 1} * stride + 1 : 0; }
  bool operator==(const ClipConfig&) const = default;
};

struct VideoConfig {
  std::int64_t start = 0;       // first frame index delivered from each video
  std::int64_t stride = 1;      // every stride-th frame from start
  std::int64_t max_frames = 0;  // per video; 0 = all
  // Stream URLs only: seconds FFmpeg may take to open one, and to get data on each read.
  float open_timeout_s = 10;
  float read_timeout_s = 10;
  // Videos decoding at once, whose frames the source takes (so that they all
  // decode at once); 0 = auto (the decode threads). 1 = one video after another.
  int interleave = 0;
  // ready: the next frame of any of them that has one queued (throughput);
  // turns: one frame of each in a fixed order (it does not depend on timing).
  VideoOrder order = VideoOrder::ready;
  // libavcodec's threads per video file; 0 = auto (the decode threads shared
  // among the videos decoding at once).
  int threads = 0;
  // Apply the container's display rotation (phone videos).
  bool orientation = true;
  // Which decoder takes each video file: the GPU's NVDEC engines, the CPU
  // (libavcodec), or auto (both kept busy: codecs/route/video_route.hpp).
  Where where = Where::automatic;
  ClipConfig clips{};
  bool operator==(const VideoConfig&) const = default;
};

// input.shard; rank -1 = from the launcher's environment (RANK/WORLD_SIZE,
// OMPI_COMM_WORLD_*, SLURM_*), or the whole input when none is set.
struct ShardConfig {
  int rank = -1;
  int world_size = 0;
  bool operator==(const ShardConfig&) const = default;
};

struct InputConfig {
  // Files, folders or glob patterns (*, ?, [..] in the last component), stream
  // URLs (rtsp://, http://, file://, ...) and cameras (camera:N).
  std::vector<std::string> paths;
  bool recursive = true;
  std::vector<std::string> extensions{".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".avi",
                                      ".mp4", ".mkv", ".mov", ".webm", ".ts", ".m2ts", ".mts"};
  OnError on_error = OnError::skip;
  std::string list;  // a file naming one input per line (added after paths)
  int loop = 1;      // repeat the input list this many times
  std::optional<std::uint64_t> shuffle_seed;  // input.shuffle: {seed: S}
  // input.shuffle: {every_epoch}: each epoch (run of a kept Pipeline) its own
  // permutation, drawn from (seed, epoch), the same on every rank; epoch 0's
  // is the seed's alone. false: the seed's one order every epoch.
  bool shuffle_every_epoch = true;
  ShardConfig shard;
  // The items of an epoch beyond a multiple of the ranks: uneven (each item
  // once; the first ranks get one more), pad (torchvision's
  // DistributedSampler: items from the start of the epoch's order repeated
  // until every rank has as many), drop (DALI: the last ones left out, every
  // rank has as many). Applies to the looped, shuffled list.
  ShardRemainder shard_remainder = ShardRemainder::uneven;
  VideoConfig video;
  // folders: each sample's label is the index of its class, the first-level
  // sub-folder of the input.paths folder it was found in (torchvision's
  // ImageFolder; see Report::classes and SampleId::label).
  Labels labels = Labels::none;
  bool operator==(const InputConfig&) const = default;
};

struct DecodeConfig {
  int threads = 0;  // 0 = auto: every hardware thread (one fewer with GPU decode)
  // Deliver damaged images a decoder can fill in (JPEGs without EOI or with
  // libjpeg corrupt-data warnings, PNGs without IEND) instead of reporting them.
  bool accept_truncated = false;
  // Images whose header claims more pixels are rejected before decoding.
  std::int64_t max_pixels = 100'000'000;
  // auto: decode JPEGs at 1/2, 1/4 or 1/8 scale in the DCT domain when the
  // result still covers the resize target; off: always full size.
  bool reduced = true;
  // Under transform.resize.mode random_crop, decode only each JPEG's box on
  // the CPU route (libjpeg's crop and skip; the same pixels as a whole
  // decode, the same verdict on damage); false: decode whole, then cut.
  bool region = true;
  // Rotate/flip by the EXIF orientation tag (false: keep the stored pixels).
  bool exif_orientation = true;
  // Where JPEGs are decoded: auto = every engine present (the GPU's JPEG
  // engines and the CPUs, split by measured rates), gpu = the engines take
  // every JPEG they can, cpu = libjpeg only.
  Where where = Where::automatic;
  // full: every JPEG sent to the engines first passes the entropy check
  // (codecs/parse/jpeg_entropy.hpp), so every route gives libjpeg's verdict;
  // markers: the marker-level checks alone (the default: the entropy check
  // costs more than 10% of W1's throughput, docs/benchmarks.md#entropy-check).
  Verify verify = Verify::markers;
  // JPEGs per call of the GPU's JPEG engines: batches are held until they
  // carry that many between them, then decoded in one call and passed on
  // together. 0 = auto: 128 for inputs listed up front, each batch alone
  // for pushed items and batch.timeout_ms (their latency).
  int gpu_batch = 0;
  bool operator==(const DecodeConfig&) const = default;
};

struct ResizeConfig {
  int width = 640;
  int height = 640;
  ResizeMode mode = ResizeMode::stretch;
  Interpolation interpolation = Interpolation::linear;
  int pad_value = 114;  // letterbox padding, 0..255
  // cpu: resize in the transform stage; gpu: stage the decoded frames and
  // resize (fused with normalise) on the GPU; auto: cpu, because staging whole
  // frames costs the decode threads more memory bandwidth than the resize
  // saves (docs/benchmarks.md#resize-on-the-cpu-by-default).
  Where where = Where::automatic;
  // random_crop: the box's area as a share of the image's, drawn uniformly
  // in [scale[0], scale[1]], and the log of its aspect ratio (width /
  // height) uniformly in [log ratio[0], log ratio[1]] (torchvision's rule).
  std::array<float, 2> scale{0.08f, 1.0f};
  std::array<float, 2> ratio{3.0f / 4.0f, 4.0f / 3.0f};
  // center_crop with short_side S > 0: torchvision's evaluation recipe,
  // Resize(S) then CenterCrop(height, width): the image is scaled so that
  // its short side is S and the centre width x height is cut. Done as a box
  // of the original (its centre, width x height scaled by short side / S)
  // stretched to the target, as random_crop's boxes are. 0: the cover scale
  // (the target's own size). S >= max(width, height).
  int short_side = 0;
  // Whether the resize starts from a box of the original (random_crop, or
  // center_crop with short_side), which is then stretched to the target.
  bool boxed() const noexcept { return mode == ResizeMode::random_crop || (mode == ResizeMode::center_crop && short_side > 0); }
  bool operator==(const ResizeConfig&) const = default;
};

// Random flips (after the resize), each with its probability per sample and
// epoch (imgpipe/augment.hpp).
struct FlipConfig {
  float horizontal = 0.0f;
  float vertical = 0.0f;
  bool operator==(const FlipConfig&) const = default;
};

struct NormalizeConfig {
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
  float scale = 1.0f / 255.0f;
  Where where = Where::automatic;
  bool operator==(const NormalizeConfig&) const = default;
};

struct TransformConfig {
  ResizeConfig resize;
  NormalizeConfig normalize;
  Layout layout = Layout::nchw;
  DType dtype = DType::float32;
  bool swap_rb = true;  // decode gives BGR; true delivers RGB
  FlipConfig flip;
  // The random augmentations' seed: each sample's draws come from (seed,
  // epoch, the sample's place in the looped input list before the shuffle),
  // whatever route, thread, batch or rank handles it.
  std::int64_t seed = 0;
  bool operator==(const TransformConfig&) const = default;
};

struct BatchConfig {
  int size = 32;
  bool drop_last = false;
  int timeout_ms = 0;  // a live source's partial batch is emitted this long after its first sample (0: off)
  bool operator==(const BatchConfig&) const = default;
};

struct StagingConfig {
  int slots = 2;
  StagingMemory memory = StagingMemory::write_combined;
  TransferMode transfer = TransferMode::copy;
  bool operator==(const StagingConfig&) const = default;
};

struct MemoryConfig {
  int pinned_budget_mb = 0;  // page-locked staging bytes allowed; 0 = no limit
  bool fallback = true;      // false: a failed pinned allocation is an error, not a step down the chain
  bool track = false;        // record allocation sites; report leaks at shutdown
  // GPU decode: the device memory for decoded frames, per device (MiB);
  // 0 = 1/64 of the device's memory.
  int gpu_frames_mb = 0;
  // The CPU route's decoded video frames when the GPU converts them: page-
  // locked memory (MiB) they are decoded into, copied to the device from
  // there; 0 = off (copied into the staging by the CPU); -1 = auto (1/8 of
  // the host's memory, at most 8 GiB), the default.
  int video_frames_mb = -1;
  // Video files decoded on NVDEC: device memory (MiB) their decoded frames
  // may hold per device, in flight and pooled; 0 = auto (1/8 of the
  // device's memory). A file whose next frame finds no room goes on on the
  // CPU route.
  int nvdec_frames_mb = 0;
  bool operator==(const MemoryConfig&) const = default;
};

// devices: auto (first GPU, or LOCAL_RANK's GPU under a launcher; else host)
// | cpu | all | N (GPU ordinal) | [N, M, ...]
struct DeviceSelection {
  enum class Kind : std::uint8_t { automatic, cpu, ordinal, all, list } kind = Kind::automatic;
  int ordinal = 0;
  std::vector<int> ordinals;  // Kind::list
  static DeviceSelection parse(const std::string& text);  // throws ConfigError(key "devices")
  std::string to_string() const;
  bool operator==(const DeviceSelection&) const = default;
};

struct SinkConfig {
  SinkType type = SinkType::discard;
  std::string dir = "out";
  bool overwrite = false;  // replace an earlier run's batch files and manifests in dir
  bool operator==(const SinkConfig&) const = default;
};

struct PipelineTuning {
  int max_tokens = 0;  // frames in flight; 0 = auto (2 x decode threads, at least 4)
  bool operator==(const PipelineTuning&) const = default;
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
  // malformed YAML, unknown keys (suggesting the nearest), keys given twice,
  // wrong types, text that is not UTF-8, out-of-range values and retired
  // spellings (the message names the key to write instead).
  // Relative input paths and sink.dir in a file resolve against the
  // current directory (as a user typing them expects).
  static Config from_yaml_file(const std::filesystem::path& file);
  static Config from_yaml_string(const std::string& yaml);

  // Each key's range and allowed values (as the loaders check them), then the
  // cross-field checks; also run by the loaders. Throws ConfigError (line 0).
  void validate() const;

  // The effective config as YAML (every key), for logs and --print-config;
  // from_yaml_string(c.to_yaml()) == c for a config that validates.
  std::string to_yaml() const;

  // Member-wise (floats compared exactly).
  bool operator==(const Config&) const = default;
};

}  // namespace imgpipe
