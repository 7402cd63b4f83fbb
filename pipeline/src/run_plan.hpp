// The run plan: everything a run decides before it allocates or starts a
// thread — where each step runs, how many frames are in flight, how big each
// staging slot, device buffer and output tensor is. A pure function of the
// config, the devices chosen and a few facts about the host, so it is tested
// without a GPU (tests/pipeline/test_run_plan.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/image/nvjpeg/engine_cache.hpp"
#include "core/diagnostics.hpp"
#include "imgpipe/config.hpp"
#include "stages/batch_slot.hpp"
#include "stages/gpu_ops.hpp"

namespace imgpipe::detail {

// What the plan needs to know about the machine.
struct HostFacts {
  unsigned hardware_threads = 1;
  std::uint64_t physical_memory = 0;  // bytes; 0 = unknown
  std::uint64_t device_memory = 0;    // of the first GPU in use; 0 = unknown or none
  bool nvjpeg = false;                // libnvjpeg loads (its engines are probed while the run starts)
  std::string jpeg_why;               // why it does not
  // Threads and memory of this host; the GPU facts for `device` (-1: none),
  // whether nvJPEG loads only when `jpeg`.
  static HostFacts of_this_machine(int device = -1, bool jpeg = false);
};

// What the input list holds (known before the plan: discovery runs first).
// Pushed inputs may be anything.
struct InputMix {
  bool images = true;   // image files (or pushed items)
  bool videos = false;  // video files, streams or cameras
  // The most samples the inputs give, when known before the run: image files
  // alone (one sample each); -1: not known (videos' frames, streams,
  // cameras, pushed items).
  std::int64_t samples = -1;
};

// The mix of an input list: items that failed discovery count as neither
// (nor as samples).
InputMix input_mix(const std::vector<stages::InputItem>& items, bool pushed);

// The config the stages run: with input.video.clips a batch is batch.size
// clips of clips.length frames, and the stages, which count frames, get
// batch.size x length as theirs. Otherwise `cfg` itself.
Config frames_config(const Config& cfg);
// With input.video.clips, a run's inputs must be video files: the error
// naming the first image among them (a clip batch has no place for one).
void check_clip_inputs(const Config& cfg, const std::vector<stages::InputItem>& items);

struct RunPlan {
  std::vector<int> devices{-1};  // CUDA ordinals; {-1} = the host backend
  int threads = 1;               // worker threads (read, decode, transform, pack_copy)
  int wanted_tokens = 4;         // pipeline.max_tokens, or 2 x threads (at least 4)
  int tokens = 4;                // frames in flight: wanted_tokens, capped so a slot is never reused early
  int slots = 2;                 // staging slots: staging.slots, raised for GPU decode (see plan_tokens)
  bool normalize_on_gpu = false;
  // transform.resize.where gpu; auto: a run of videos alone on a GPU (their
  // frames are staged as decoded, YUV, and the GPU converts, resizes and
  // normalises them: docs/video.md), else the CPU.
  bool resize_on_gpu = false;
  // Bytes a decoded frame may take in its slot when the GPU resizes: the
  // staging allowance (memory.pinned_budget_mb, else 1/64 of the host's
  // memory, at most 512 MiB) shared by slots x batch.size frames, at least
  // the target frame and at most decode.max_pixels frames. Larger frames are
  // resized on the CPU first.
  std::size_t frame_budget = 0;
  std::size_t frame_bytes = 0;  // one frame's share of a slot (Transform::frame_bytes())
  stages::GpuOps::Op gpu_op = stages::GpuOps::Op::none;
  // GPU JPEG decode (decode.where): on, steered by measured rates (auto) or
  // taking every JPEG the engines can (gpu); `decode_note` says why it is off.
  bool gpu_decode = false;
  bool gpu_decode_adaptive = false;
  std::string decode_note;
  std::size_t max_decoded_frame = 0;  // bytes of the largest frame the GPU decodes (w x h x 3)
  // The CPU route's video frames are decoded into a memory::FramePool (video
  // files among the inputs): page-locked, up to video_frames_bytes
  // (memory.video_frames_mb resolved), or pageable blocks when that is 0,
  // reused from file to file either way.
  bool video_frame_pool = false;
  std::size_t video_frames_bytes = 0;
  // JPEGs per engine call (decode.gpu_batch, resolved; 0: each batch alone)
  // and the batches the GPU ops stage may gather for one call (the slots
  // include GpuOps::kCallsAhead + 1 times that many more than the tokens
  // need: the group gathered and those waiting for their calls).
  int gpu_group = 0;
  int gpu_group_held = 1;
  int gpu_cycle = 0;  // decode.where auto: batches per engine call, its CPU-route JPEGs early (RouteSteering); 0: none
  int gpu_cycle_free = 0;  // of those, the last ones without CPU-route JPEGs
  kernels::ResizeBatch resize;  // the GPU resize's target, fit, interpolation, padding
  stages::BatchLayout layout;   // what BatchResources allocates
  // Staging for what the run carries (plan_staging): with the inputs' count
  // known (InputMix::samples), room for min(batch.size, count) samples in
  // as many slots as its batches (at most `slots`); else every slot starts
  // with room for the samples that kModestStaging holds (at least one) and
  // grows, as its batches need, up to a full batch (StagingRing::grow); on the
  // host backend whole slots, faulted in as they are written.
  static constexpr std::size_t kModestStaging = std::size_t{16} << 20;
  std::int64_t known_samples = -1;  // InputMix::samples
  // The diagnostics set for this run (core/diagnostics.hpp): not decided by
  // make(); the run reads them once and sets them here.
  Diagnostics diagnostics;

  // `pushed`: the application pushes the inputs (RunOptions::source).
  // Throws ConfigError for sizes that overflow or cannot be allocated, and for
  // decode.where gpu where the GPU route is impossible.
  // `mix`: what the inputs are: no JPEG engines for a run without images.
  static RunPlan make(const Config& cfg, std::vector<int> devices, const HostFacts& host, bool pushed = false,
                      InputMix mix = {});
};

// For a Pipeline's decoder cache: the decoders `cfg`'s run plan would make
// (none for decode.where cpu, the host backend, or without nvJPEG); quietly
// none without a GPU (the run says so once, after it checked the inputs).
codecs::EngineCache::Wanted wanted_decoders(const Config& cfg);

// Resolves config.devices (or --device): {-1} is the host backend. Says once
// when no GPU is found (warn_host_backend), unless `host_why` takes the
// reason. Throws ConfigError (key devices) for a GPU that does
// not exist (a usage error: nothing ran).
// `host_why`, when given, receives why an automatic selection fell back to
// the host backend (no GPU); the caller warns once the run's config has
// passed its checks (a config error is the message then, not the fallback).
std::vector<int> select_devices(const DeviceSelection& sel, std::string* host_why = nullptr);
// Warns, once a process, that the run goes on the host backend and why.
void warn_host_backend(const std::string& why);

}  // namespace imgpipe::detail
