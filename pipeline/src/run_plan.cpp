#include "run_plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <mutex>

#include <spdlog/logger.h>
#include <tbb/info.h>

#include "imgpipe/log.hpp"
#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "memory/gpu.hpp"
#include "stages/geometry.hpp"
#include "stages/source.hpp"

namespace imgpipe::detail {

HostFacts HostFacts::of_this_machine(int device, bool jpeg) {
  HostFacts h;
  // The threads this process may run on (its CPU affinity, as oneTBB counts
  // them), not the machine's: a rank that mpirun binds to one core asking
  // for more made oneTBB print "TBB Warning: The number of workers is
  // currently limited to 0" past --quiet (issue 29).
  h.hardware_threads = static_cast<unsigned>(std::max(1, tbb::info::default_concurrency()));
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) h.physical_memory = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  if (device < 0) {
    h.jpeg_why = "no GPU in use";
    return h;
  }
  h.device_memory = gpu::device_memory(device);
  if (!jpeg) {
    h.jpeg_why = "not asked for";
    return h;
  }
  h.nvjpeg = codecs::nvjpeg_available(&h.jpeg_why);
  return h;
}

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::size_t checked_mul(std::size_t a, std::size_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a)
    throw ConfigError(what, 0, "the sizes it implies overflow");
  return a * b;
}

// See RunPlan::frame_budget.
std::size_t frame_budget(const Config& cfg, const HostFacts& host, std::size_t target_frame) {
  std::size_t allowance = static_cast<std::size_t>(cfg.memory.pinned_budget_mb) * kMiB;
  if (allowance == 0) allowance = host.physical_memory ? std::min<std::size_t>(host.physical_memory / 64, 512 * kMiB)
                                                       : 512 * kMiB;
  const std::size_t share = allowance / (static_cast<std::size_t>(cfg.staging.slots) * cfg.batch.size);
  const std::size_t most = checked_mul(static_cast<std::size_t>(cfg.decode.max_pixels), 3, "decode.max_pixels");
  return std::max(target_frame, std::min(share, most));
}

void plan_steps(RunPlan& p, const Config& cfg, InputMix mix) {
  const bool on_gpu = p.devices.front() >= 0;
  const Where norm = cfg.transform.normalize.where;
  p.normalize_on_gpu = norm == Where::gpu || (norm == Where::automatic && on_gpu);
  // resize.where auto resizes on the CPU: staging whole decoded frames costs
  // the decode threads more memory bandwidth than the resize saves
  // (docs/benchmarks.md#resize-on-the-cpu-by-default).
  const Interpolation interp = cfg.transform.resize.interpolation;
  const bool gpu_interp = interp == Interpolation::linear || interp == Interpolation::nearest;
  // Video frames are staged as decoded (YUV, half the bytes of BGR for
  // 4:2:0) and converted on the GPU, which the decode threads then leave to
  // it: auto takes that for a run of videos alone.
  const Where where = cfg.transform.resize.where;
  const bool videos_alone = mix.videos && !mix.images && on_gpu;
  // A boxed resize's box is cut from BGR frames: a run with videos (whose
  // frames the GPU would convert from YUV) resizes on the CPU.
  const bool boxed_videos = cfg.transform.resize.boxed() && mix.videos;
  p.resize_on_gpu = p.normalize_on_gpu && gpu_interp && !boxed_videos &&
                    (where == Where::gpu || (where == Where::automatic && videos_alone));
  using Op = stages::GpuOps::Op;
  p.gpu_op = p.resize_on_gpu ? Op::resize_normalize : p.normalize_on_gpu ? Op::normalize : Op::none;
}

void plan_tokens(RunPlan& p, const Config& cfg, const HostFacts& host, int& slots) {
  // decode.threads auto: every hardware thread, but one left to the engine
  // threads when the GPU decodes (the engine calls run on a thread of their
  // own, codecs/image/nvjpeg/engine_scheduler.hpp, which gets too little of a saturated
  // host; docs/benchmarks.md#where-the-engine-threads-time-goes).
  const unsigned hw = std::max(1u, host.hardware_threads);
  p.threads = cfg.decode.threads > 0 ? cfg.decode.threads : static_cast<int>(p.gpu_decode && hw > 2 ? hw - 1 : hw);
  // With GPU decode most tokens wait at the in-order pack stage for the few
  // CPU-route images decoding ahead of them: keep 9x as many in flight, so
  // that neither the CPU threads nor the engines wait, and as many slots as
  // that takes (fewer tokens starved them: docs/benchmarks.md#tokens-with-gpu-decode).
  const int per_thread = p.gpu_decode ? 18 : 2;
  p.wanted_tokens = cfg.pipeline.max_tokens > 0 ? cfg.pipeline.max_tokens : std::max(4, per_thread * p.threads);
  slots = cfg.staging.slots;
  if (p.gpu_decode && cfg.pipeline.max_tokens == 0)
    slots = std::max(slots, std::min(64, (p.wanted_tokens - 1 + cfg.batch.size - 1) / cfg.batch.size + 1));
  // The packer reuses a staging slot, with its BatchSlot, `slots` batches
  // later, and StagingRing::acquire() only waits for the slot's release
  // event, which the sink records once the batch and its callback are done.
  // The token that completes batch k stays in flight until then, so with at
  // most (slots - 1) x batch.size + 1 tokens the packer cannot start batch
  // k + slots before the sink has released batch k.
  const std::int64_t safe = static_cast<std::int64_t>(slots - 1) * cfg.batch.size + 1;
  p.tokens = static_cast<int>(std::min<std::int64_t>(p.wanted_tokens, safe));
}

// JPEGs per engine call: the engines decode larger calls faster
// (docs/benchmarks.md#engine-call-size), so batches are
// held to gather decode.gpu_batch JPEGs, unless pushed items or
// batch.timeout_ms ask for latency. Held batches keep their staging slots:
// the ring gets as many more as the GPU ops stage may hold (the group it
// gathers and GpuOps::kCallsAhead groups waiting for their engine calls),
// so the packer never waits for a held one (the token cap above is computed
// without them).
void plan_group(RunPlan& p, const Config& cfg, bool pushed) {
  if (!p.gpu_decode) return;
  constexpr int kAutoGroup = 128;
  const int g = cfg.decode.gpu_batch > 0 ? cfg.decode.gpu_batch : (pushed || cfg.batch.timeout_ms > 0) ? 0 : kAutoGroup;
  if (g <= cfg.batch.size) {
    // A batch alone reaches it: each batch is a call of its own. The GPU ops
    // stage still keeps up to kCallsAhead of them waiting for their calls,
    // and passes a finished one on only when a later token comes by: those
    // need slots too. Without them a pull-API caller that keeps one batch
    // (a training loop's variable) left the packer none; it waited for a
    // slot, no token came, the finished calls were never passed on (W3
    // through imgpipe.torch.Loader, batches of 256, stopped).
    p.slots += stages::GpuOps::kCallsAhead;
    return;
  }
  // With decode.where auto only a share of each batch goes to the engines
  // (most of it): room for 1.5 times the batches a full share needs,
  // at most 8 (small batches make smaller calls rather than dozens more
  // slots: each is pinned and device memory made at start-up).
  constexpr int kMostHeld = 8;
  const int full = (g + cfg.batch.size - 1) / cfg.batch.size;
  p.gpu_group = g;
  p.gpu_group_held = std::min(kMostHeld, p.gpu_decode_adaptive ? full + (full + 1) / 2 : full);
  // decode.where auto: each engine call takes the JPEGs of a cycle of
  // full + 1 batches, and the CPU route's JPEGs go to the cycle's first
  // batches, none to its last kFreeBatches: a call waits for its last batch
  // anyway, so the CPU decodes ahead of it delay no call. Spread over every
  // batch they made the engines starve, as a batch waits, in order, for its
  // slowest image (docs/benchmarks.md#cpu-route-jpegs-early-in-each-engine-call).
  constexpr int kFreeBatches = 2;
  if (p.gpu_decode_adaptive) {
    p.gpu_cycle = std::min(kMostHeld, full + 1);
    p.gpu_cycle_free = kFreeBatches;
    p.gpu_group_held = std::max(p.gpu_group_held, p.gpu_cycle);
  }
  // The group being gathered and those waiting for their engine calls.
  p.slots += (stages::GpuOps::kCallsAhead + 1) * p.gpu_group_held;
}

// GPU JPEG decode: where it can run, and the device frame area it needs.
void plan_decode(RunPlan& p, const Config& cfg, const HostFacts& host, InputMix mix) {
  const Where where = cfg.decode.where;
  const Interpolation interp = cfg.transform.resize.interpolation;
  std::string why;
  if (!mix.images) {  // nothing for the JPEG engines: none is made, no frame area reserved
    p.decode_note = "no images among the inputs";
    return;
  }
  if (where == Where::cpu) why = "decode.where is cpu";
  else if (p.devices.front() < 0) why = "no GPU in use";
  else if (!host.nvjpeg) why = host.jpeg_why.empty() ? "nvJPEG not found" : host.jpeg_why;
  else if (!p.normalize_on_gpu) why = "normalize.where is cpu";
  else if (interp != Interpolation::linear && interp != Interpolation::nearest) why = "interpolation is area or cubic";
  else if (cfg.staging.transfer == TransferMode::zero_copy) why = "staging.transfer is zero_copy";
  if (!why.empty()) {
    if (where == Where::gpu) throw ConfigError("decode.where", 0, "gpu decode is not possible here: " + why);
    p.decode_note = why;
    return;
  }
  p.gpu_decode = true;
  p.gpu_decode_adaptive = where == Where::automatic;
  p.gpu_op = stages::GpuOps::Op::resize_normalize;  // the GPU resizes what it decodes
}

// Decoded frames live on the device, in one frame area per device (the GPU
// ops stage uses it as a ring of engine calls): memory.gpu_frames_mb, else
// 1/64 of the device's memory, shared by batch.size frames of at least a
// target frame each, at most decode.max_pixels each; larger JPEGs take the
// CPU route. However many slots there are.
void plan_decoded_frame(RunPlan& p, const Config& cfg, const HostFacts& host) {
  const std::size_t target = static_cast<std::size_t>(cfg.transform.resize.width) * cfg.transform.resize.height * 3;
  const std::size_t area = cfg.memory.gpu_frames_mb > 0 ? static_cast<std::size_t>(cfg.memory.gpu_frames_mb) * kMiB
                                                         : host.device_memory / 64;
  const std::size_t share = area / static_cast<std::size_t>(cfg.batch.size);
  const std::size_t most = checked_mul(static_cast<std::size_t>(cfg.decode.max_pixels), 3, "decode.max_pixels");
  p.max_decoded_frame = std::max(target, std::min(share, most));
}

void plan_layout(RunPlan& p, const Config& cfg, const HostFacts& host) {
  const TransformConfig& t = cfg.transform;
  const std::size_t pixels = checked_mul(static_cast<std::size_t>(t.resize.width), t.resize.height,
                                         "transform.resize");
  const std::size_t target_u8 = checked_mul(pixels, 3, "transform.resize");
  const std::size_t out_sample = checked_mul(target_u8, dtype_size(t.dtype), "transform.resize");
  p.frame_budget = p.resize_on_gpu ? frame_budget(cfg, host, target_u8) : target_u8;
  if (p.gpu_decode) plan_decoded_frame(p, cfg, host);
  p.frame_bytes = p.resize_on_gpu ? p.frame_budget : p.normalize_on_gpu ? target_u8 : out_sample;
  // A GPU-route JPEG's bitstream takes a frame's place in the slot: room for
  // one of an eighth of a decoded 1080p frame (q90 photos compress 10-25x),
  // however small the target; larger bitstreams take the CPU route.
  constexpr std::size_t k1080p = std::size_t{1920} * 1088 * 3;
  if (p.gpu_decode) p.frame_bytes = std::max(p.frame_bytes, std::min(p.max_decoded_frame, k1080p) / 8);
  p.resize = stages::resize_batch_of(t.resize);

  stages::BatchLayout& l = p.layout;
  l.devices = p.devices;
  l.batch_size = cfg.batch.size;
  l.out_sample_bytes = out_sample;
  l.device_output = p.normalize_on_gpu;  // else the staged tensor is the output
  l.per_image_geometry = p.resize_on_gpu || p.gpu_decode;
  // What the GPU ops stage may hold: the group it gathers and the calls
  // ahead; without a group, the calls ahead only.
  l.held_batches = p.gpu_group > 0 ? (stages::GpuOps::kCallsAhead + 1) * p.gpu_group_held
                   : p.gpu_decode  ? stages::GpuOps::kCallsAhead + 1
                                   : 1;
  if (p.gpu_decode) {
    l.decode_bytes = checked_mul(p.max_decoded_frame + 256, static_cast<std::size_t>(cfg.batch.size), "batch.size");
    l.jpeg.backend = codecs::JpegBackend::hardware_device;
    l.jpeg.allow_host_input_fallback = false;  // the bitstreams are in device memory
    l.jpeg.bgr = true;                         // as the CPU route's frames
    // The engines pipelined decode faster (docs/benchmarks.md#pipelined-engine-calls); failures
    // inside a batch are reported alike (tests/codecs/test_nvjpeg_batch.cpp, both
    // settings).
    l.jpeg.hw_no_pipeline = false;
  }
  const std::int64_t H = t.resize.height, W = t.resize.width;
  l.shape = t.layout == Layout::nchw ? std::vector<std::int64_t>{cfg.batch.size, 3, H, W}
                                     : std::vector<std::int64_t>{cfg.batch.size, H, W, 3};
  if (const ClipConfig& c = cfg.input.video.clips; c.on()) {  // cfg is frames_config's: N x T frames a batch
    const std::int64_t T = c.length, N = cfg.batch.size / T;
    l.clip_length = c.length;
    l.clip_layout = c.layout;
    l.shape = c.layout == ClipLayout::cthw   ? std::vector<std::int64_t>{N, 3, T, H, W}
              : c.layout == ClipLayout::tchw ? std::vector<std::int64_t>{N, T, 3, H, W}
                                             : std::vector<std::int64_t>{N, T, H, W, 3};
  }
  l.dtype = t.dtype;
  l.layout = t.layout;
}

// See RunPlan::kModestStaging. A zero-copy ring makes its slots whole
// whatever the initial room (kernels read each as one mapped block).
void plan_staging(RunPlan& p, const Config& cfg, InputMix mix) {
  stages::BatchLayout& l = p.layout;
  l.staged_sample_bytes = p.frame_bytes;
  memory::StagingOptions& so = l.staging;
  so.device = p.devices.front();
  so.slots = p.slots;
  const auto batch = static_cast<std::size_t>(cfg.batch.size);
  so.slot_bytes = checked_mul(p.frame_bytes, batch, "batch.size");
  p.known_samples = mix.samples;
  if (mix.samples >= 0) {
    const auto n = static_cast<std::size_t>(mix.samples);
    so.initial_bytes = p.frame_bytes * std::clamp<std::size_t>(n, 1, batch);
    so.initial_slots = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(p.slots), (n + batch - 1) / batch));
  } else if (so.device < 0) {
    // The host backend: whole slots, each one block, whose pages fault in as
    // they are written (StagingRing::add_chunk): a short run touches only
    // what it carries, and the batch is the slot itself (batch_in_slot).
    so.initial_bytes = so.slot_bytes;
    so.initial_slots = -1;
  } else {
    so.initial_bytes = p.frame_bytes * std::clamp<std::size_t>(RunPlan::kModestStaging / p.frame_bytes, 1, batch);
    so.initial_slots = -1;
  }
  // The host backend's batches stay in their slots when the CPU made the
  // tensor (no device buffers, no copy: docs/benchmarks.md#host-video).
  l.batch_in_slot = so.device < 0 && !l.device_output;
  // Its slots' pages fault in as they are written: a batch taken back
  // quickly leaves the next in the same slot (StagingOptions::prefer_written).
  so.prefer_written = so.device < 0;
  so.memory = cfg.staging.memory;
  so.transfer = cfg.staging.transfer;
  so.portable = p.devices.size() > 1;
  so.budget_bytes = static_cast<std::size_t>(cfg.memory.pinned_budget_mb) * kMiB;
  so.fallback = cfg.memory.fallback;
  so.track = cfg.memory.track;
}

// The CPU route's video frames are decoded into a pool of blocks reused from
// file to file; page-locked ones when the GPU converts the frames and the
// staging is copied (not read in place).
void plan_video_frames(RunPlan& p, const Config& cfg, const HostFacts& host, InputMix mix) {
  p.video_frame_pool = mix.videos;
  const int mb = cfg.memory.video_frames_mb;  // 0: off, -1: auto
  if (!mix.videos || !p.resize_on_gpu || mb == 0 || cfg.staging.transfer == TransferMode::zero_copy) return;
  constexpr std::size_t most = std::size_t{8192} * kMiB;
  p.video_frames_bytes = mb > 0                 ? static_cast<std::size_t>(mb) * kMiB
                         : host.physical_memory ? std::min<std::size_t>(host.physical_memory / 8, most)
                                                : std::size_t{2048} * kMiB;
}

}  // namespace

InputMix input_mix(const std::vector<stages::InputItem>& items, bool pushed) {
  if (pushed) return {};
  InputMix m{false, false, 0};
  for (const stages::InputItem& i : items) {
    if (!i.error.empty()) continue;
    (i.video ? m.videos : m.images) = true;
    ++m.samples;
  }
  if (m.videos) m.samples = -1;  // frames are counted by decoding them
  return m;
}

RunPlan RunPlan::make(const Config& cfg, std::vector<int> devices, const HostFacts& host, bool pushed,
                      InputMix mix) {
  RunPlan p;
  if (devices.empty()) devices = {-1};
  p.devices = std::move(devices);
  if (pushed) mix = {};
  plan_steps(p, cfg, mix);
  plan_decode(p, cfg, host, mix);
  plan_tokens(p, cfg, host, p.slots);
  plan_group(p, cfg, pushed);
  plan_layout(p, cfg, host);
  plan_staging(p, cfg, mix);
  plan_video_frames(p, cfg, host, mix);
  return p;
}

codecs::EngineCache::Wanted wanted_decoders(const Config& cfg) {
  if (cfg.decode.where == Where::cpu || cfg.devices.kind == DeviceSelection::Kind::cpu) return {};
  return [cfg]() -> std::vector<std::pair<int, codecs::GpuJpegOptions>> {
    if (gpu::device_count() == 0) return {};
    std::string host;  // the run warns, after its checks
    const std::vector<int> devices = select_devices(cfg.devices, &host);
    if (devices.front() < 0) return {};
    // A configured input of videos alone makes no JPEG engines (an input
    // that cannot be listed yet, or none for pushed items, keeps them).
    InputMix mix;
    try {
      const std::vector<stages::InputItem> items = stages::discover_all_inputs(cfg.input);
      if (!items.empty()) mix = input_mix(items, false);
    } catch (const std::exception&) {
    }
    if (!mix.images && mix.videos) return {};
    const RunPlan plan = RunPlan::make(cfg, devices, HostFacts::of_this_machine(devices.front(), true));
    if (plan.layout.decode_bytes == 0) return {};
    std::vector<std::pair<int, codecs::GpuJpegOptions>> wanted;
    for (int d : plan.devices) wanted.emplace_back(d, plan.layout.jpeg);
    return wanted;
  };
}

void warn_host_backend(const std::string& why) {
  static std::once_flag once;
  std::call_once(once, [&] { imgpipe::logger()->warn("{}; running the host backend", why); });
}

std::vector<int> select_devices(const DeviceSelection& sel, std::string* host_why) {
  using K = DeviceSelection::Kind;
  if (sel.kind == K::cpu) return {-1};
  std::string why;
  const int n = gpu::device_count(&why);
  auto need = [&](int ordinal) {
    if (ordinal >= n)
      throw ConfigError("devices", 0, fmt::format("GPU {} requested but {} ({})", ordinal,
                              n == 0 ? "no CUDA device is available" : fmt::format("only {} found", n),
                              n == 0 ? why : "ordinals start at 0"));
    return ordinal;
  };
  switch (sel.kind) {
    case K::ordinal: return {need(sel.ordinal)};
    case K::list: {
      std::vector<int> v;
      for (int o : sel.ordinals) v.push_back(need(o));
      return v;
    }
    case K::all: {
      if (n == 0) throw ConfigError("devices", 0, "all GPUs requested but no CUDA device is available (" + why + ")");
      std::vector<int> v(n);
      for (int i = 0; i < n; ++i) v[i] = i;
      return v;
    }
    default: break;
  }
  if (n == 0) {
    if (host_why) *host_why = why;
    else warn_host_backend(why);
    return {-1};
  }
  // Under a launcher (torchrun, mpirun, srun) each local rank takes its own GPU.
  if (const auto local = stages::local_rank_from_environment()) return {*local % n};
  return {0};
}

Config frames_config(const Config& cfg) {
  if (!cfg.input.video.clips.on()) return cfg;
  Config c = cfg;
  c.batch.size = cfg.batch.size * cfg.input.video.clips.length;
  return c;
}

void check_clip_inputs(const Config& cfg, const std::vector<stages::InputItem>& items) {
  if (!cfg.input.video.clips.on()) return;
  for (const stages::InputItem& i : items)
    if (!i.video && i.error.empty())
      throw ConfigError("input.video.clips.length", 0,
                        "the inputs hold images ('" + i.path +
                            "' first), and a batch of clips has no place for one: give video files only, or "
                            "run the images apart (input.extensions can leave them out)");
}

}  // namespace imgpipe::detail
