// The config keys, described once. A key's row gives its dotted name, kind,
// range, documentation and the Config member it lives in; parsing, to_yaml,
// validate()'s per-key checks and docs/config.md are all made from these rows.
// Defaults are not repeated here: they are the member initialisers of
// imgpipe/config.hpp, read through the same accessors.
//
// Adding a key: add the member (with its default) to config.hpp, a row here,
// the key to configs/pipeline.yaml, then refresh docs/config.md
// (IMGPIPE_UPDATE_DOCS=1, see tests/config/test_config_table.cpp).
#include <algorithm>

#include "core/src/config_codec.hpp"

namespace imgpipe::detail {

namespace {

// Booleans that the YAML spells with two words.
constexpr EnumName<bool> reduced_names[] = {{true, "auto"}, {false, "off"}};
constexpr EnumName<bool> color_names[] = {{true, "rgb"}, {false, "bgr"}};

// ---- decode.threads: auto | N (0 in the struct means auto)

void read_threads(const YAML::Node& n, const KeySpec& k, Config& c) {
  if (n.IsScalar() && n.Scalar() == "auto") {
    c.decode.threads = 0;
    return;
  }
  const long long v = to_integer(n, std::string(k.key));
  if (!k.range.contains(static_cast<double>(v)))
    throw ConfigError(std::string(k.key), line_of(n),
                      "must be auto or " + number_text(k.range.min) + ".." + number_text(k.range.max) + ", got " +
                          std::to_string(v));
  c.decode.threads = static_cast<int>(v);
}
void write_threads(YAML::Emitter& e, const Config& c) {
  if (c.decode.threads == 0) e << "auto";
  else e << c.decode.threads;
}
void check_threads(const KeySpec& k, const Config& c) {
  if (c.decode.threads != 0 && !k.range.contains(c.decode.threads))
    throw ConfigError(std::string(k.key), 0,
                      "must be 0 (auto) or " + range_text(k.range) + ", got " + std::to_string(c.decode.threads));
}

// ---- devices: auto | cpu | all | N | [N, M, ...]

void check_ordinal(const KeySpec& k, long long v, const std::vector<int>& earlier, const std::string& key, int line) {
  if (!k.range.contains(static_cast<double>(v)))
    throw ConfigError(key, line,
                      "a GPU ordinal must be " + number_text(k.range.min) + ".." + number_text(k.range.max) +
                          ", got " + std::to_string(v));
  if (std::find(earlier.begin(), earlier.end(), v) != earlier.end())
    throw ConfigError(key, line, "GPU " + std::to_string(v) + " is listed twice");
}

void read_devices(const YAML::Node& n, const KeySpec& k, Config& c) {
  const std::string key(k.key);
  if (n.IsSequence()) {
    DeviceSelection d;
    d.kind = DeviceSelection::Kind::list;
    if (n.size() == 0) throw ConfigError(key, line_of(n), "the list of GPU ordinals is empty");
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string element = key + "[" + std::to_string(i) + "]";
      const long long v = to_integer(n[i], element);
      check_ordinal(k, v, d.ordinals, element, line_of(n[i]));
      d.ordinals.push_back(static_cast<int>(v));
    }
    c.devices = d;
    return;
  }
  if (!n.IsScalar())
    throw ConfigError(key, line_of(n), "expected auto, cpu, all, a GPU ordinal or a list of ordinals");
  try {
    c.devices = DeviceSelection::parse(n.Scalar());
  } catch (const ConfigError& e) {
    throw ConfigError(key, line_of(n), e.reason());
  }
  if (c.devices.kind == DeviceSelection::Kind::ordinal) check_ordinal(k, c.devices.ordinal, {}, key, line_of(n));
}
void write_devices(YAML::Emitter& e, const Config& c) {
  if (c.devices.kind != DeviceSelection::Kind::list) {
    e << c.devices.to_string();
    return;
  }
  e << YAML::Flow << YAML::BeginSeq;
  for (int o : c.devices.ordinals) e << o;
  e << YAML::EndSeq;
}
void check_devices(const KeySpec& k, const Config& c) {
  const std::string key(k.key);
  const DeviceSelection& d = c.devices;
  if (d.kind == DeviceSelection::Kind::ordinal) check_ordinal(k, d.ordinal, {}, key, 0);
  if (d.kind != DeviceSelection::Kind::list) return;
  if (d.ordinals.empty()) throw ConfigError(key, 0, "the list of GPU ordinals is empty");
  for (std::size_t i = 0; i < d.ordinals.size(); ++i)
    check_ordinal(k, d.ordinals[i], std::vector<int>(d.ordinals.begin(), d.ordinals.begin() + i),
                  key + "[" + std::to_string(i) + "]", 0);
}

// ---- input.shuffle: {seed: S, every_epoch: B} (no seed: discovery order)

void read_shuffle(const YAML::Node& n, const KeySpec& k, Config& c) {
  const std::string key(k.key);
  expect_mapping(n, key);
  for (const auto& kv : n) {
    const std::string name = kv.first.Scalar();
    if (name == "every_epoch") {
      c.input.shuffle_every_epoch = to_bool(kv.second, key + ".every_epoch");
      continue;
    }
    if (name != "seed") unknown_key(key + "." + name, line_of(kv.first), {"seed", "every_epoch"});
    if (!kv.second.IsNull()) c.input.shuffle_seed = to_unsigned(kv.second, key + ".seed");
  }
}
void write_shuffle(YAML::Emitter& e, const Config& c) {
  e << YAML::Flow << YAML::BeginMap;
  if (c.input.shuffle_seed) e << YAML::Key << "seed" << YAML::Value << *c.input.shuffle_seed;
  if (!c.input.shuffle_every_epoch) e << YAML::Key << "every_epoch" << YAML::Value << false;
  e << YAML::EndMap;
}
void no_check(const KeySpec&, const Config&) {}

// ---- transform.resize.scale / ratio: [lo, hi] (random_crop's ranges)

template <std::array<float, 2> ResizeConfig::*M>
void read_pair(const YAML::Node& n, const KeySpec& k, Config& c) {
  const std::string key(k.key);
  if (!n.IsSequence() || n.size() != 2)
    throw ConfigError(key, line_of(n), "expected a list of 2 numbers [low, high]");
  std::array<float, 2> v{};
  for (std::size_t i = 0; i < 2; ++i) {
    v[i] = to_float(n[i], key + "[" + std::to_string(i) + "]");
    check_range(k.range, v[i], key + "[" + std::to_string(i) + "]", line_of(n));
  }
  if (v[0] > v[1]) throw ConfigError(key, line_of(n), "the first value is larger than the second");
  c.transform.resize.*M = v;
}
template <std::array<float, 2> ResizeConfig::*M>
void write_pair(YAML::Emitter& e, const Config& c) {
  const std::array<float, 2>& v = c.transform.resize.*M;
  e << YAML::Flow << YAML::BeginSeq << float_text(v[0]) << float_text(v[1]) << YAML::EndSeq;
}
template <std::array<float, 2> ResizeConfig::*M>
void check_pair(const KeySpec& k, const Config& c) {
  const std::array<float, 2>& v = c.transform.resize.*M;
  const std::string key(k.key);
  for (std::size_t i = 0; i < 2; ++i) check_range(k.range, v[i], key + "[" + std::to_string(i) + "]", 0);
  if (v[0] > v[1]) throw ConfigError(key, 0, "the first value is larger than the second");
}

// ---- input.shard: {rank: R, world_size: W}, both or neither (-1/0: unset)

void check_shard_pair(const KeySpec& k, const ShardConfig& s, int line, int rank_line) {
  const std::string key(k.key);
  if ((s.rank >= 0) != (s.world_size > 0)) throw ConfigError(key, line, "give both rank and world_size (or neither)");
  if (s.rank < 0) return;
  check_range(k.range, s.world_size, key + ".world_size", line);
  if (s.rank >= s.world_size)
    throw ConfigError(key + ".rank", rank_line, "must be < world_size (" + std::to_string(s.world_size) + ")");
}

void read_shard(const YAML::Node& n, const KeySpec& k, Config& c) {
  const std::string key(k.key);
  expect_mapping(n, key);
  ShardConfig s = c.input.shard;
  int rank_line = line_of(n);
  for (const auto& kv : n) {
    const std::string name = kv.first.Scalar();
    const std::string sub = key + "." + name;
    if (name != "rank" && name != "world_size") unknown_key(sub, line_of(kv.first), {"rank", "world_size"});
    if (kv.second.IsNull()) continue;
    const long long v = to_integer(kv.second, sub);
    // A rank is below world_size, so it shares world_size's upper bound.
    check_range(name == "rank" ? between(0, k.range.max) : k.range, static_cast<double>(v), sub, line_of(kv.second));
    (name == "rank" ? s.rank : s.world_size) = static_cast<int>(v);
    if (name == "rank") rank_line = line_of(kv.second);
  }
  check_shard_pair(k, s, line_of(n), rank_line);
  c.input.shard = s;
}
void write_shard(YAML::Emitter& e, const Config& c) {
  e << YAML::Flow << YAML::BeginMap;
  if (c.input.shard.rank >= 0)
    e << YAML::Key << "rank" << YAML::Value << c.input.shard.rank << YAML::Key << "world_size" << YAML::Value
      << c.input.shard.world_size;
  e << YAML::EndMap;
}
void check_shard(const KeySpec& k, const Config& c) { check_shard_pair(k, c.input.shard, 0, 0); }

using C = Config;
using In = InputConfig;
using Vid = VideoConfig;
using Clip = ClipConfig;
using Dec = DecodeConfig;
using Tr = TransformConfig;
using Rs = ResizeConfig;
using Nm = NormalizeConfig;

// clang-format off
constexpr KeySpec kKeys[] = {
  field<&C::input, &In::paths>("input.paths", any_value(),
      "Files, folders or glob patterns (`*`, `?`, `[...]`; `**` as a whole component matches any "
      "number of folders, zero included: `imgs/**/*.jpg`); one path may be written "
      "as a plain string. Relative paths resolve against the current directory. A path that does not exist, "
      "a pattern that matches nothing or no input at all is an error before the run starts. Also stream URLs "
      "(a scheme and `://`: rtsp, rtsps, http, https, rtmp, udp, tcp, file, ..., opened by OpenCV's FFmpeg "
      "backend) and cameras (`camera:N`, V4L2 device N; a bare number is a file name): each is one video, "
      "neither checked ahead nor globbed; one that cannot be opened is one failure naming it. Overridden by "
      "--input on the command line."),
  field<&C::input, &In::recursive>("input.recursive", any_value(),
      "Descend into sub-folders of the folders in paths (directory symlinks are not followed)."),
  field<&C::input, &In::extensions>("input.extensions", any_value(),
      "Extensions taken from folders and globs (case-insensitive; each starts with a dot). Files named "
      "explicitly in paths are always taken. Video files (.avi .mp4 .mkv .mov .webm ...) deliver their "
      "frames, in order, each named by file and frame."),
  choice<on_error_names, &C::input, &In::on_error>("input.on_error",
      "A bad input (unreadable, corrupt, truncated, too large): skip reports it and goes on (exit 0); fail "
      "stops at the first one, in input order (exit 1)."),
  field<&C::input, &In::list>("input.list", any_value(),
      "A file naming one input per line (# comments and blank lines ignored; relative paths resolve against "
      "the list's folder), added after paths. Empty: no list."),
  field<&C::input, &In::loop>("input.loop", between(1, 1000000),
      "Repeat the whole input list this many times (benchmarks, soak runs)."),
  special("input.shuffle", Kind::shuffle, any_value(), {&read_shuffle, &write_shuffle, &no_check, nullptr},
      "Shuffle the (looped) list with this seed, e.g. {seed: 42}; {} keeps the discovery order. Each epoch "
      "(run of a kept Pipeline; Pipeline::set_epoch, Python Loader.set_epoch) draws its own permutation from "
      "(seed, epoch), the same on every rank, epoch 0's being the seed's alone; every_epoch: false keeps the "
      "seed's one order for every epoch, e.g. {seed: 42, every_epoch: false}."),
  special("input.shard", Kind::shard, between(1, 1 << 20), {&read_shard, &write_shard, &check_shard, nullptr},
      "This process's part of the input: items i with i % world_size == rank, e.g. {rank: 0, world_size: 4}. "
      "{} takes it from the launcher's environment (RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, "
      "SLURM_PROCID/SLURM_NTASKS), or the whole input when none is set."),
  choice<shard_remainder_names, &C::input, &In::shard_remainder>("input.shard_remainder",
      "The items of an epoch beyond a multiple of the ranks (world_size > 1). uneven: every item once, the "
      "first ranks one more; pad: as torchvision's DistributedSampler, items from the start of the epoch's "
      "order repeated until every rank has as many; drop: as DALI, the last ones left out. The report's "
      "inputs say how many were padded or dropped."),
  field<&C::input, &In::video, &Vid::start>("input.video.start", at_least(0),
      "First frame index delivered from each video. Videos decode on their own threads (several upcoming "
      "files at once); a video that cannot be opened or breaks off is one failure naming the frame where it "
      "stopped, after the frames it delivered."),
  field<&C::input, &In::video, &Vid::stride>("input.video.stride", at_least(1),
      "Deliver every stride-th frame from start."),
  field<&C::input, &In::video, &Vid::max_frames>("input.video.max_frames", at_least(0),
      "Frames delivered per video; 0 = all."),
  field<&C::input, &In::video, &Vid::open_timeout_s>("input.video.open_timeout_s", above(0),
      "Stream URLs: seconds FFmpeg may take to open one (connect, answer, stream header); a stream not open "
      "by then is one failure naming the URL. Files and cameras ignore it."),
  field<&C::input, &In::video, &Vid::read_timeout_s>("input.video.read_timeout_s", above(0),
      "Stream URLs: seconds a read may wait for data; a stream that stops sending for that long ends as a "
      "failure at that frame, after the frames it delivered. Files and cameras ignore it."),
  field<&C::input, &In::video, &Vid::interleave>("input.video.interleave", between(0, 1024),
      "Consecutive video files that decode at once, each on its own thread, their frames taken as "
      "input.video.order says; when one ends, the next video in the list takes its place. 0 = auto (the "
      "decode threads); 1 = each video's frames one after another, then the next video."),
  choice<video_order_names, &C::input, &In::video, &Vid::order>("input.video.order",
      "How the frames of the videos decoding at once (interleave) are taken. ready: the next frame of any "
      "of them that has one decoded, scanning from the video after the last one taken (none starves), so "
      "that no video waits for the slowest: the most frames a second, in an order that depends on timing. "
      "turns: one frame of each in turn, in input order: an order that does not depend on timing (a run is "
      "reproducible). Either way each video's frames come in their order; a live input is taken alone."),
  field<&C::input, &In::video, &Vid::threads>("input.video.threads", between(0, 256),
      "FFmpeg's decoding threads per video file; 0 = auto: the decode threads shared among the videos "
      "decoding at once (one long video gets them all, a folder one each)."),
  field<&C::input, &In::video, &Vid::orientation>("input.video.orientation", any_value(),
      "Apply the container's display rotation (and mirroring), as phone videos carry it; false delivers "
      "the frames as stored."),
  choice<where_names, &C::input, &In::video, &Vid::where>("input.video.where",
      "Where video files are decoded. auto: on every engine present: each file goes to the GPU's NVDEC "
      "engines or to the CPU (libavcodec), whichever would finish it first at the rates both reach during "
      "the run; gpu: every file the engines take goes to them; cpu: libavcodec only. The engines take what "
      "the GPU's capability table lists (on an H200: H.264 8-bit 4:2:0, HEVC and VP9 8/10/12-bit 4:2:0 and "
      "4:4:4, VP8, MPEG-1/2/4; not AV1 or H.264 4:4:4/10-bit), at even sizes; NVDEC frames go from device "
      "memory to the fused kernel, so they need the GPU to resize, and rotated videos (with "
      "input.video.orientation) stay on the CPU. The report counts the files each route took and why a file "
      "went to the CPU. Stream URLs and cameras are read by OpenCV."),
  field<&C::input, &In::video, &Vid::clips, &Clip::length>("input.video.clips.length", between(0, 1024),
      "Frames per clip (T). With T > 0 a video file's samples are clips: T frames taken every stride-th "
      "frame, by their index in presentation order (never time x nominal fps: variable frame rates, "
      "B-frames, open GOPs and edit lists keep their places), decoded from the keyframe before each clip's "
      "first frame; a batch is batch.size clips (shape [N, C, T, H, W] for layout cthw). The clips are "
      "taken from the frames input.video.start, stride and max_frames select (by default all), counted "
      "in that selection: start 30 leaves the first 30 frames out of every clip. 0: every selected frame "
      "is a sample. Stream URLs and cameras are not clipped (each is a failure)."),
  field<&C::input, &In::video, &Vid::clips, &Clip::stride>("input.video.clips.stride", between(1, 1 << 20),
      "Frames between a clip's frames (a clip spans (length - 1) x stride + 1 frames)."),
  field<&C::input, &In::video, &Vid::clips, &Clip::per_video>("input.video.clips.per_video", between(0, 1 << 20),
      "Clips per video and epoch (random, uniform; at least 1); every: at most this many, 0 = all."),
  choice<clip_place_names, &C::input, &In::video, &Vid::clips, &Clip::place>("input.video.clips.place",
      "Where a video's clips start. random: each start drawn uniformly from the starts that fit, anew every "
      "epoch, from (transform.seed, epoch, the video's place in the looped input list): the same on every "
      "route, thread and rank, reproducible with the seed; uniform: per_video starts spread evenly from "
      "the first frame to the last start that fits (one clip: the centre one); every: from frame 0, a clip "
      "every step frames while it fits. A clip's frames share their random crop and flip."),
  field<&C::input, &In::video, &Vid::clips, &Clip::step>("input.video.clips.step", between(0, 1 << 30),
      "place every: frames between the starts of consecutive clips; 0 = the clip's span (clips that do not "
      "overlap)."),
  choice<clip_short_names, &C::input, &In::video, &Vid::clips, &Clip::shorter>("input.video.clips.short",
      "A video with fewer frames than a clip spans. skip: no clip, reported as a failure naming the video "
      "and its frame count; pad: one clip from frame 0, its frames past the end repeat the last frame; "
      "loop: one clip from frame 0, its frames past the end start again from frame 0. The report counts "
      "each."),
  choice<clip_layout_names, &C::input, &In::video, &Vid::clips, &Clip::layout>("input.video.clips.layout",
      "One clip's tensor. cthw: C x T x H x W (torchvision's video models, X3D, SlowFast, VideoMAE); "
      "tchw: T x C x H x W (torchcodec's clips); both need transform.layout nchw. thwc: T x H x W x C, with "
      "transform.layout nhwc."),
  choice<labels_names, &C::input, &In::labels>("input.labels",
      "none: samples carry no label (-1). folders: as torchvision's ImageFolder, every folder named in paths "
      "(directly, by a glob or in input.list) is a root whose first-level sub-folders are the classes; the "
      "class names of all roots together, sorted (byte order), are numbered 0..K-1 (the report's classes), "
      "and each sample found under root/NAME/... gets the index of NAME (the same name under two roots is "
      "one class; a sub-folder reached through a symbolic link is none, as discovery does not follow it; an "
      "empty sub-folder is still a class). Files directly in a root and files named explicitly (in paths or "
      "input.list) get -1. A file reached twice keeps the label of the first. The class folders are always "
      "listed; recursive false leaves out their sub-folders."),

  special("decode.threads", Kind::threads, between(1, 1024), {&read_threads, &write_threads, &check_threads, nullptr},
      "Worker threads for read/decode/transform; auto = every hardware thread, one fewer when the GPU decodes "
      "JPEGs (its engine calls run on a thread of their own)."),
  field<&C::decode, &Dec::accept_truncated>("decode.accept_truncated", any_value(),
      "Deliver damaged images that a decoder can still fill in: JPEGs without their end-of-image marker or "
      "on which libjpeg warns (they decode to a partly grey or smeared image), PNGs without IEND. false "
      "reports them as corrupt."),
  field<&C::decode, &Dec::max_pixels>("decode.max_pixels", at_least(1),
      "Reject images whose header claims more pixels than this, before decoding."),
  choice<reduced_names, &C::decode, &Dec::reduced>("decode.reduced",
      "auto: decode JPEGs at 1/2, 1/4 or 1/8 size in the DCT domain when that still covers the resize "
      "target (much faster); off: always decode full size."),
  field<&C::decode, &Dec::region>("decode.region", any_value(),
      "Under transform.resize.mode random_crop: decode only the part of each JPEG its box covers on the CPU "
      "route (libjpeg-turbo's crop and skip: the same pixels as a whole decode cut at the box, the same "
      "verdict on damage, the whole file still read). The GPU's JPEG engines decode whole and the kernel "
      "reads the box (nvJPEG takes an ROI, but its hardware backend is no faster with one: "
      "docs/benchmarks.md#region-decode). false: decode whole, then cut."),
  field<&C::decode, &Dec::exif_orientation>("decode.exif_orientation", any_value(),
      "Apply the EXIF orientation tag (rotate/flip) when decoding; false keeps the stored pixels."),
  choice<where_names, &C::decode, &Dec::where>("decode.where",
      "Where JPEGs are decoded. auto: on every engine present: with a GPU whose JPEG engines nvJPEG can "
      "drive (libnvjpeg is loaded at run time), the JPEGs the engines take are split between them and the "
      "CPUs, the share steered by the rates both routes reach during the run; otherwise on the CPU. gpu: "
      "every JPEG the engines take goes to them (needs such a GPU). cpu: libjpeg only, bit-exact with "
      "cv::imread. The engines take baseline 8-bit JPEGs with 1 or 3 components (not 4:1:1); progressive, "
      "CMYK, 12-bit, arithmetic-coded, EXIF-rotated and truncated JPEGs, other formats and video frames "
      "stay on the CPU. Damaged entropy-coded data, which libjpeg reports as corrupt, reaches the CPU route's "
      "verdict on the GPU route only with decode.verify full. Needs normalize.where gpu or auto, linear or nearest "
      "interpolation and staging.transfer copy."),
  choice<verify_names, &C::decode, &Dec::verify>("decode.verify",
      "What a JPEG must pass before it goes to the GPU's JPEG engines (decode.where auto or gpu). full: the "
      "marker checks and the entropy check, a walk over every Huffman code as libjpeg reads them (no pixels "
      "decoded); a JPEG whose entropy-coded data libjpeg would call corrupt, or that the check cannot vouch "
      "for, takes the CPU route, which reports it: every route gives the CPU route's verdict. It costs about "
      "half a CPU decode per JPEG sent to the engines (docs/benchmarks.md#entropy-check). markers: the "
      "marker checks alone (tables, segments, colour transform, markers inside the scan); a JPEG with damaged "
      "entropy-coded data may be delivered by the engines as a smeared image, and the report counts the JPEGs "
      "decoded there without the entropy check."),
  field<&C::decode, &Dec::gpu_batch>("decode.gpu_batch", between(0, 4096),
      "JPEGs per call of the GPU's JPEG engines (decode.where auto or gpu), which decode large calls faster "
      "(docs/benchmarks.md#engine-call-size): output batches are gathered until they carry that "
      "many between them (at most 8 batches, and as many as fit memory.gpu_frames_mb), decoded in one call on "
      "an engine thread while the pipeline goes on, then passed on together, in order. The staging ring gets "
      "3 x that many batches' slots more (the group gathered and two waiting for their calls). The end of the "
      "input passes on what is held. 0 = auto: 128 for inputs listed up front; each batch alone for pushed "
      "items and with batch.timeout_ms, whose latency holding would add to."),

  field<&C::transform, &Tr::resize, &Rs::width>("transform.resize.width", between(1, 16384),
      "Output width in pixels."),
  field<&C::transform, &Tr::resize, &Rs::height>("transform.resize.height", between(1, 16384),
      "Output height in pixels."),
  choice<resize_mode_names, &C::transform, &Tr::resize, &Rs::mode>("transform.resize.mode",
      "stretch: to width x height ignoring the aspect ratio; letterbox: keep the aspect ratio, pad with "
      "pad_value, centred; center_crop: cover the target keeping the aspect ratio, cut the centre (as "
      "cv::dnn::blobFromImage with crop=true); random_crop: torchvision's RandomResizedCrop, a box drawn per "
      "sample and epoch (scale, ratio) stretched to width x height (images; JPEGs then decode at full size)."),
  special("transform.resize.scale", Kind::float_pair, Range{0, 1, true},
          {&read_pair<&ResizeConfig::scale>, &write_pair<&ResizeConfig::scale>, &check_pair<&ResizeConfig::scale>,
           nullptr},
      "random_crop: the box's share of the image's area, drawn uniformly in [low, high]."),
  special("transform.resize.ratio", Kind::float_pair, Range{0, 100, true},
          {&read_pair<&ResizeConfig::ratio>, &write_pair<&ResizeConfig::ratio>, &check_pair<&ResizeConfig::ratio>,
           nullptr},
      "random_crop: the box's aspect ratio (width / height), its log drawn uniformly in [log low, log high]. "
      "After 10 draws that do not fit the image, the largest central box whose ratio is within the range."),
  field<&C::transform, &Tr::resize, &Rs::short_side>("transform.resize.short_side", between(0, 65535),
      "center_crop only: torchvision's evaluation recipe, Resize(short_side) then CenterCrop(height, width) "
      "(e.g. 256 with a 224 x 224 target): the image is scaled so that its short side is short_side and the "
      "centre width x height is cut, done as the box of the original that this window covers, stretched to "
      "the target (a JPEG's box alone is decoded: decode.region). At least max(width, height). 0: cover the "
      "target (the cut is as large as the aspect ratio allows)."),
  choice<interpolation_names, &C::transform, &Tr::resize, &Rs::interpolation>("transform.resize.interpolation",
      "OpenCV's INTER_LINEAR, INTER_NEAREST, INTER_AREA or INTER_CUBIC. The GPU resize does linear and "
      "nearest only."),
  field<&C::transform, &Tr::resize, &Rs::pad_value>("transform.resize.pad_value", between(0, 255),
      "Letterbox padding value, for every channel."),
  choice<where_names, &C::transform, &Tr::resize, &Rs::where>("transform.resize.where",
      "cpu: resize in the transform stage; gpu: stage the decoded frames (each up to its share of the "
      "staging allowance: memory.pinned_budget_mb, else 1/64 of the host's memory up to 512 MiB, over "
      "slots x batch.size; larger ones are resized on the CPU) and resize fused with normalisation on the "
      "GPU (linear or nearest; needs normalize.where gpu or auto); auto: cpu, because staging whole frames "
      "costs the decode threads more memory bandwidth than the resize saves "
      "(docs/benchmarks.md#resize-on-the-cpu-by-default)."),
  field<&C::transform, &Tr::normalize, &Nm::mean>("transform.normalize.mean", any_value(),
      "out = (pixel * scale - mean[c]) / std[c], per output channel (R, G, B when color is rgb). Ignored "
      "for dtype uint8."),
  field<&C::transform, &Tr::normalize, &Nm::std>("transform.normalize.std", above(0),
      "The divisor of each output channel (see mean)."),
  field<&C::transform, &Tr::normalize, &Nm::scale>("transform.normalize.scale", above(0),
      "Factor applied to each pixel before mean and std; 1/255 maps 0..255 to 0..1."),
  choice<where_names, &C::transform, &Tr::normalize, &Nm::where>("transform.normalize.where",
      "cpu: normalise in the transform stage (parallel, cached memory) and transfer the final tensor; gpu: "
      "transfer u8 pixels (a quarter of the bytes for float32) and normalise with a CUDA kernel; auto: gpu "
      "when a CUDA device is in use, else cpu."),
  choice<layout_names, &C::transform, &Tr::layout>("transform.layout",
      "Tensor layout of a batch: nchw (channel planes) or nhwc (interleaved channels)."),
  choice<dtype_names, &C::transform, &Tr::dtype>("transform.dtype",
      "Element type of a batch."),
  choice<color_names, &C::transform, &Tr::swap_rb>("transform.color",
      "Channel order of the output: rgb (the decoder's BGR swapped) or bgr (as decoded)."),
  field<&C::transform, &Tr::flip, &FlipConfig::horizontal>("transform.flip.horizontal", between(0, 1),
      "Probability that a sample is mirrored left to right (after the resize), drawn per sample and epoch "
      "(torchvision's RandomHorizontalFlip(p)); 0: never."),
  field<&C::transform, &Tr::flip, &FlipConfig::vertical>("transform.flip.vertical", between(0, 1),
      "Probability that a sample is mirrored top to bottom, drawn per sample and epoch; 0: never."),
  field<&C::transform, &Tr::seed>("transform.seed", at_least(0),
      "Seed of the random augmentations (resize.mode random_crop, flip): each sample's draws come from "
      "(seed, epoch, its place in the looped input list before input.shuffle), the same on every route, "
      "thread, batch and rank; a new epoch draws new ones."),

  field<&C::batch, &BatchConfig::size>("batch.size", between(1, 65535),
      "Samples per batch."),
  field<&C::batch, &BatchConfig::drop_last>("batch.drop_last", any_value(),
      "true: a last, partial batch is dropped (and counted)."),
  field<&C::batch, &BatchConfig::timeout_ms>("batch.timeout_ms", between(0, 3'600'000),
      "A live source (pushed inputs, a stream URL or camera, any video): a batch not full this many "
      "milliseconds after its first sample, while the source waits for more, is emitted partial "
      "(batch.drop_last does not drop it), so a source that stalls does not hold frames back; 0: batches "
      "always fill."),

  field<&C::staging, &StagingConfig::slots>("staging.slots", between(2, 64),
      "Host staging slots; at least 2, so that the packer fills one while another transfers."),
  choice<staging_memory_names, &C::staging, &StagingConfig::memory>("staging.memory",
      "Host memory of the staging slots: write_combined (CPU writes stream to the bus; the CPU never reads "
      "it), pinned, or pageable (plain memory, a baseline; the only way to ask for pageable staging). Falls "
      "back write_combined -> pinned -> pageable if pinned memory cannot be allocated (reported)."),
  choice<transfer_mode_names, &C::staging, &StagingConfig::transfer>("staging.transfer",
      "copy: cudaMemcpyAsync from the slot to device memory; zero_copy: mapped staging, kernels read the "
      "slot in place (events order host writes and kernel reads)."),

  field<&C::memory, &MemoryConfig::pinned_budget_mb>("memory.pinned_budget_mb", between(0, 1 << 24),
      "Page-locked bytes the staging may hold (MiB); 0 = no limit. Past it the fallback chain applies."),
  field<&C::memory, &MemoryConfig::fallback>("memory.fallback", any_value(),
      "When pinned allocation fails or the budget is hit: true walks write_combined -> pinned -> "
      "host_registered -> pageable (each step counted, logged once and reported); false makes it an error."),
  field<&C::memory, &MemoryConfig::track>("memory.track", any_value(),
      "Record where each pinned block was allocated; report leaks at shutdown."),
  field<&C::memory, &MemoryConfig::gpu_frames_mb>("memory.gpu_frames_mb", between(0, 1 << 24),
      "GPU decode: device memory for the decoded frames, per device (MiB); 0 = 1/64 of the device's memory. "
      "A batch's frames share it (a JPEG whose frame exceeds its share, the area over batch.size, takes the "
      "CPU route), and an engine call's frames must fit it with the frames the kernels still read."),
  field<&C::memory, &MemoryConfig::nvdec_frames_mb>("memory.nvdec_frames_mb", between(0, 1 << 24),
      "Video files decoded on NVDEC: device memory for their decoded frames, per device (MiB), those in "
      "flight and those pooled for reuse; 0 = 1/8 of the device's memory. A file whose next frame finds no "
      "room goes on on the CPU route from that frame, and the report's video line counts the reason."),
  field<&C::memory, &MemoryConfig::video_frames_mb>("memory.video_frames_mb", between(-1, 1 << 24),
      "Video files decoded on the CPU when the GPU converts their frames (transform.resize.where gpu): "
      "page-locked memory (MiB) libavcodec decodes the frames into, from which the transfer copies them "
      "to the device (no CPU copy into the staging); frames past it are decoded into ordinary memory and "
      "copied into the staging. 0 = off (every frame copied into the staging by the CPU); -1 = auto: 1/8 of "
      "the host's memory, at most 8192 (docs/video.md). Unused "
      "with staging.transfer zero_copy."),

  special("devices", Kind::devices, between(0, 1024), {&read_devices, &write_devices, &check_devices, nullptr},
      "auto: the first CUDA GPU (LOCAL_RANK's GPU under a launcher), or the host backend when there is none; "
      "cpu: force the host backend; all: every GPU; N: GPU ordinal N; [N, M]: these GPUs (an error if one "
      "is absent)."),
  choice<dispatch_names, &C::dispatch>("dispatch",
      "With several GPUs: round_robin (batch k to GPU k mod n) or least_loaded."),

  choice<sink_type_names, &C::sink, &SinkConfig::type>("sink.type",
      "discard: keep statistics and a checksum per batch; dump: write each batch as dir/batch_NNNNNN.npy "
      "plus dir/manifest.jsonl (one line per sample). A process that is one of several ranks (input.shard, "
      "or the launcher's environment as for input.shard) writes into its own sub-folder "
      "dir/rank_R_of_W, laid out the same way."),
  field<&C::sink, &SinkConfig::dir>("sink.dir", any_value(),
      "Folder the dump sink writes to (relative: against the current directory); not empty with type dump. "
      "It must be empty or absent when the run starts (a rank's: its own sub-folder empty and nothing "
      "but other ranks' sub-folders beside it), unless overwrite is true."),
  field<&C::sink, &SinkConfig::overwrite>("sink.overwrite", any_value(),
      "Dump into a folder that holds an earlier run's output: before the run, remove the batch_NNNNNN.npy "
      "files and manifest.jsonl files that imgpipe writes there (a rank: in its own sub-folder; rank 0 also "
      "those of earlier runs with another number of ranks, or without ranks), logging what it removed. "
      "Other files are kept. false: such a folder is a config error."),

  field<&C::pipeline, &PipelineTuning::max_tokens>("pipeline.max_tokens", between(0, 4096),
      "Frames in flight (bounds host memory); 0 = 2 x decode threads, at least 4."),
};

constexpr RetiredSpelling kRetired[] = {
  {"staging.transfer", "pageable", "staging.memory: pageable",
   "pageable staging is a kind of host memory, not a transfer mode; staging.transfer takes copy | zero_copy"},
};
// clang-format on

}  // namespace

std::span<const KeySpec> config_keys() { return kKeys; }

std::span<const RetiredSpelling> retired_spellings() { return kRetired; }

const KeySpec* find_key(std::string_view dotted) {
  for (const KeySpec& k : kKeys)
    if (k.key == dotted) return &k;
  return nullptr;
}

}  // namespace imgpipe::detail
