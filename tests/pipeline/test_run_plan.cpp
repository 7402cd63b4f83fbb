// The run plan is a pure function of the config, the devices and the host:
// every size it derives, checked without a GPU.
#include <doctest/doctest.h>

#include "pipeline/src/run_plan.hpp"
#include "stages/transform.hpp"

using imgpipe::Config;
using imgpipe::Where;
using imgpipe::detail::HostFacts;
using imgpipe::detail::RunPlan;
using Op = imgpipe::stages::GpuOps::Op;

namespace {
constexpr std::uint64_t GiB = 1ull << 30, MiB = 1ull << 20;

HostFacts facts(unsigned threads, std::uint64_t memory, std::uint64_t device_memory = 0, bool nvjpeg = false) {
  HostFacts h;
  h.hardware_threads = threads;
  h.physical_memory = memory;
  h.device_memory = device_memory;
  h.nvjpeg = nvjpeg;
  h.jpeg_why = nvjpeg ? "" : "no nvJPEG in this test";
  return h;
}
}  // namespace

TEST_CASE("run plan: where each step runs follows the config and the device") {
  Config c;
  RunPlan host = RunPlan::make(c, {-1}, facts(16, 64 * GiB));
  CHECK_FALSE(host.normalize_on_gpu);  // auto: on the CPU without a GPU
  CHECK(host.gpu_op == Op::none);
  CHECK_FALSE(host.layout.device_output);
  RunPlan gpu = RunPlan::make(c, {0}, facts(16, 64 * GiB));
  CHECK(gpu.normalize_on_gpu);
  CHECK_FALSE(gpu.resize_on_gpu);  // resize.where auto = cpu
  CHECK(gpu.gpu_op == Op::normalize);
  c.transform.resize.where = Where::gpu;
  CHECK(RunPlan::make(c, {0}, facts(16, 64 * GiB)).gpu_op == Op::resize_normalize);
  c.transform.resize.interpolation = imgpipe::Interpolation::area;  // no GPU twin: stays on the CPU
  CHECK(RunPlan::make(c, {0}, facts(16, 64 * GiB)).gpu_op == Op::normalize);
  CHECK(RunPlan::make(c, {}, facts(16, 64 * GiB)).devices == std::vector<int>{-1});
}

TEST_CASE("run plan: tokens are 2 x threads but never more than the staging ring can hold safely") {
  Config c;
  RunPlan p = RunPlan::make(c, {-1}, facts(16, 64 * GiB));
  CHECK(p.threads == 16);
  CHECK(p.wanted_tokens == 32);
  CHECK(p.tokens == 32);  // (2 - 1) x 32 + 1 = 33 allowed
  c.batch.size = 4;
  p = RunPlan::make(c, {-1}, facts(16, 64 * GiB));
  CHECK(p.tokens == 5);  // (slots - 1) x batch + 1
  c.decode.threads = 3;
  c.staging.slots = 8;
  p = RunPlan::make(c, {-1}, facts(16, 64 * GiB));
  CHECK(p.threads == 3);
  CHECK(p.tokens == 6);
}

TEST_CASE("run plan: slot and output sizes, they agree with the transform stage's frame size") {
  Config c;
  c.transform.resize.width = 640;
  c.transform.resize.height = 480;
  for (bool on_gpu : {false, true}) {
    CAPTURE(on_gpu);
    const RunPlan p = RunPlan::make(c, {on_gpu ? 0 : -1}, facts(8, 16 * GiB));
    const std::size_t u8 = 640 * 480 * 3;
    CHECK(p.layout.out_sample_bytes == u8 * 4);
    CHECK(p.frame_bytes == (on_gpu ? u8 : u8 * 4));  // the CPU normalises into the slot without a GPU
    CHECK(p.layout.staging.slot_bytes == p.frame_bytes * 32);
    CHECK(p.layout.shape == std::vector<std::int64_t>{32, 3, 480, 640});
    imgpipe::stages::Transform t(c.transform, !p.normalize_on_gpu, p.resize_on_gpu, p.frame_budget);
    CHECK(t.frame_bytes() == p.frame_bytes);
  }
}

TEST_CASE("run plan: the GPU-resize frame budget comes from the pinned budget or the host's memory") {
  Config c;
  c.transform.resize.where = Where::gpu;
  c.transform.resize.width = 64;
  c.transform.resize.height = 64;
  // No budget: 1/64 of the host's memory (at most 512 MiB) over slots x batch.
  RunPlan p = RunPlan::make(c, {0}, facts(8, 16 * GiB));
  CHECK(p.frame_budget == 256 * MiB / 64);
  p = RunPlan::make(c, {0}, facts(8, 256 * GiB));
  CHECK(p.frame_budget == 512 * MiB / 64);
  // A pinned budget decides.
  c.memory.pinned_budget_mb = 128;
  p = RunPlan::make(c, {0}, facts(8, 256 * GiB));
  CHECK(p.frame_budget == 2 * MiB);
  CHECK(p.layout.staging.slot_bytes == 64 * MiB);
  // Never below the target frame, never above max_pixels frames.
  c.transform.resize.width = 100;
  c.transform.resize.height = 100;
  c.memory.pinned_budget_mb = 1;  // 16 KiB a frame
  CHECK(RunPlan::make(c, {0}, facts(8, 256 * GiB)).frame_budget == 100 * 100 * 3);
  c.memory.pinned_budget_mb = 0;
  c.decode.max_pixels = 1000;
  CHECK(RunPlan::make(c, {0}, facts(8, 256 * GiB)).frame_budget == 100 * 100 * 3);
  c.decode.max_pixels = 100'000;
  CHECK(RunPlan::make(c, {0}, facts(8, 256 * GiB)).frame_budget == 300'000);
}

TEST_CASE("run plan: staging options follow the config, several devices share portable slots") {
  Config c;
  c.memory.pinned_budget_mb = 300;
  c.memory.fallback = false;
  c.staging.slots = 3;
  RunPlan p = RunPlan::make(c, {0, 1}, facts(8, 16 * GiB));
  CHECK(p.layout.staging.device == 0);
  CHECK(p.layout.staging.slots == 3);
  CHECK(p.layout.staging.portable);
  CHECK(p.layout.staging.budget_bytes == 300 * MiB);
  CHECK_FALSE(p.layout.staging.fallback);
  CHECK(p.layout.devices == std::vector<int>{0, 1});
  CHECK_FALSE(RunPlan::make(c, {0}, facts(8, 16 * GiB)).layout.staging.portable);
}

TEST_CASE("run plan: sizes that overflow are a ConfigError naming the key") {
  Config c;
  c.transform.resize.width = 2'147'483'647;
  c.transform.resize.height = 2'147'483'647;
  c.transform.resize.where = Where::gpu;
  try {
    RunPlan::make(c, {0}, facts(8, 16 * GiB));
    // ~2^62 pixels x 3 bytes overflows 64 bits.
    FAIL("no ConfigError");
  } catch (const imgpipe::ConfigError& e) {
    CHECK(std::string(e.what()).find("transform.resize") != std::string::npos);
  }
}

TEST_CASE("run plan: GPU decode is planned only where it can run, and says why not") {
  Config c;
  // auto with engines: the split is steered, the GPU resizes what it decodes.
  RunPlan p = RunPlan::make(c, {0}, facts(16, 64 * GiB, 140 * GiB, true));
  CHECK(p.gpu_decode);
  CHECK(p.gpu_decode_adaptive);
  CHECK(p.gpu_op == Op::resize_normalize);
  CHECK(p.layout.per_image_geometry);
  CHECK(p.layout.jpeg.bgr);
  // The device frame area, one per device: 1/64 of the device's memory over batch.size frames.
  CHECK(p.max_decoded_frame == 140 * GiB / 64 / 32);
  CHECK(p.frame_bytes == 640 * 640 * 3);  // the bitstream share: 1/8 of a decoded 1080p frame is less
  CHECK(p.layout.decode_bytes == (p.max_decoded_frame + 256) * 32);
  // One hardware thread is left to the engine calls' thread.
  CHECK(p.threads == 15);
  // More tokens, and the slots that holding them safely takes, plus the
  // batches the GPU ops stage may hold for an engine call (see below).
  CHECK(p.wanted_tokens == 270);
  CHECK(p.gpu_group_held == 6);
  CHECK(p.slots == 10 + 3 * 6);
  CHECK(p.tokens == 270);
  CHECK(p.layout.staging.slots == 28);
  // More slots leave the frame area as it is (it is not per slot).
  Config more = c;
  more.staging.slots = 16;
  const RunPlan q = RunPlan::make(more, {0}, facts(16, 64 * GiB, 140 * GiB, true));
  CHECK(q.slots == 16 + 3 * 6);
  CHECK(q.max_decoded_frame == p.max_decoded_frame);
  CHECK(q.layout.decode_bytes == p.layout.decode_bytes);
  // A small GPU: 1080p frames still fit (16 GiB / 64 / 32 = 8 MiB a frame).
  const RunPlan small = RunPlan::make(c, {0}, facts(16, 64 * GiB, 16 * GiB, true));
  CHECK(small.max_decoded_frame >= std::size_t{1920} * 1080 * 3);
  // gpu: every JPEG the engines take.
  c.decode.where = Where::gpu;
  p = RunPlan::make(c, {0}, facts(16, 64 * GiB, 140 * GiB, true));
  CHECK(p.gpu_decode);
  CHECK_FALSE(p.gpu_decode_adaptive);
  // Off, with the reason.
  c.decode.where = Where::automatic;
  CHECK(RunPlan::make(c, {-1}, facts(16, 64 * GiB)).decode_note == "no GPU in use");
  CHECK(RunPlan::make(c, {0}, facts(16, 64 * GiB, 140 * GiB, false)).decode_note == "no nvJPEG in this test");
  c.transform.normalize.where = Where::cpu;
  CHECK(RunPlan::make(c, {0}, facts(16, 64 * GiB, 140 * GiB, true)).decode_note == "normalize.where is cpu");
  c.transform.normalize.where = Where::automatic;
  c.decode.where = Where::cpu;
  p = RunPlan::make(c, {0}, facts(16, 64 * GiB, 140 * GiB, true));
  CHECK_FALSE(p.gpu_decode);
  CHECK(p.decode_note == "decode.where is cpu");
  CHECK(p.threads == 16);  // no engine thread: every hardware thread
  CHECK(p.slots == 2);
  CHECK(p.gpu_op == Op::normalize);
  // gpu where it cannot run is an error naming the key and the reason.
  c.decode.where = Where::gpu;
  try {
    RunPlan::make(c, {0}, facts(16, 64 * GiB, 140 * GiB, false));
    FAIL("no ConfigError");
  } catch (const imgpipe::ConfigError& e) {
    CHECK(std::string(e.what()).find("decode.where") != std::string::npos);
    CHECK(std::string(e.what()).find("no nvJPEG in this test") != std::string::npos);
  }
}

TEST_CASE("run plan: GPU decode with small batches keeps the device frame area and the slots bounded") {
  Config c;
  c.batch.size = 1;
  c.transform.resize.width = 96;
  c.transform.resize.height = 64;
  const RunPlan p = RunPlan::make(c, {0}, facts(16, 64 * GiB, 140 * GiB, true));
  REQUIRE(p.gpu_decode);
  // 270 tokens wanted, 64 slots for them at most, and 3 x 8 more for the
  // batches held for engine calls (at most 8 a group: calls of 8 JPEGs).
  CHECK(p.gpu_group_held == 8);
  CHECK(p.slots == 64 + 3 * 8);
  CHECK(p.tokens == 64);
  // One frame area per device, however many slots: at most 1/64 of the
  // device's memory, and decode.max_pixels a frame.
  CHECK(p.layout.decode_bytes <= 140 * GiB / 64 + 256);
  CHECK(p.max_decoded_frame == std::size_t{100'000'000} * 3);
  // A bitstream share of 1/8 of a decoded 1080p frame, however small the target.
  CHECK(p.frame_bytes == std::size_t{1920} * 1088 * 3 / 8);
  CHECK(p.layout.staging.slot_bytes == p.frame_bytes);
}

TEST_CASE("run plan: JPEGs per engine call, and the slots for the batches held to gather them") {
  Config c;  // batch 32
  const HostFacts gpu_host = facts(16, 64 * GiB, 140 * GiB, true);
  // auto: 128 JPEGs a call for listed inputs; with decode.where auto only a
  // share of each batch goes to the engines, so room for 1.5 x 4 batches a
  // group; the stage holds the group it gathers and two waiting for their
  // calls: 3 x 6 slots more.
  RunPlan p = RunPlan::make(c, {0}, gpu_host);
  CHECK(p.gpu_group == 128);
  CHECK(p.gpu_group_held == 6);
  CHECK(p.slots == 10 + 18);
  CHECK(p.layout.held_batches == 18);
  CHECK(p.tokens == 270);  // the token cap ignores the held batches' slots
  // decode.where gpu: every JPEG goes to the engines: 4 batches a group.
  c.decode.where = Where::gpu;
  p = RunPlan::make(c, {0}, gpu_host);
  CHECK(p.gpu_group == 128);
  CHECK(p.gpu_group_held == 4);
  CHECK(p.slots == 10 + 12);
  CHECK(p.tokens == 270);
  // Pushed items and batch.timeout_ms: each batch alone (latency); the GPU
  // ops stage still keeps two waiting for their calls: 2 slots more, and
  // the pull API counts them (layout.held_batches - 1).
  p = RunPlan::make(c, {0}, gpu_host, /*pushed=*/true);
  CHECK(p.gpu_group == 0);
  CHECK(p.gpu_group_held == 1);
  CHECK(p.layout.held_batches == 3);
  CHECK(p.slots == 10 + 2);
  Config timed = c;
  timed.batch.timeout_ms = 20;
  CHECK(RunPlan::make(timed, {0}, gpu_host).gpu_group == 0);
  // Set explicitly it is honoured, also there.
  timed.decode.gpu_batch = 64;
  p = RunPlan::make(timed, {0}, gpu_host, true);
  CHECK(p.gpu_group == 64);
  CHECK(p.gpu_group_held == 2);
  CHECK(p.slots == 10 + 6);
  // One batch already carries that many: nothing is gathered, two calls wait.
  c.decode.gpu_batch = 32;
  p = RunPlan::make(c, {0}, gpu_host);
  CHECK(p.gpu_group == 0);
  CHECK(p.slots == 10 + 2);
  CHECK(p.layout.held_batches == 3);
  // Rounded up to whole batches: 100 JPEGs take 4 batches of 32.
  c.decode.gpu_batch = 100;
  CHECK(RunPlan::make(c, {0}, gpu_host).gpu_group_held == 4);
  // No GPU decode: nothing is held.
  c.decode.where = Where::cpu;
  p = RunPlan::make(c, {0}, gpu_host);
  CHECK(p.gpu_group == 0);
  CHECK(p.gpu_group_held == 1);
  CHECK(p.slots == 2);
  CHECK(RunPlan::make(Config{}, {-1}, facts(16, 64 * GiB)).gpu_group == 0);
}

TEST_CASE("run plan: a run of videos alone makes no JPEG engines and, on a GPU, converts and resizes there (auto)") {
  using imgpipe::detail::InputMix;
  using imgpipe::stages::InputItem;
  Config c;
  const HostFacts h = facts(16, 64 * GiB, 80 * GiB, true);
  const InputMix videos{false, true}, images{true, false}, both{true, true};
  RunPlan p = RunPlan::make(c, {0}, h, false, videos);
  CHECK_FALSE(p.gpu_decode);
  CHECK(p.decode_note == "no images among the inputs");
  CHECK(p.layout.decode_bytes == 0);  // no device frame area
  CHECK(p.resize_on_gpu);
  CHECK(p.frame_budget >= 1920u * 1080u * 3u / 2u);  // a 1080p 4:2:0 frame as decoded fits its share
  p = RunPlan::make(c, {0}, h, false, both);
  CHECK(p.gpu_decode);
  CHECK_FALSE(p.resize_on_gpu);
  p = RunPlan::make(c, {0}, h, false, images);
  CHECK(p.gpu_decode);
  CHECK_FALSE(p.resize_on_gpu);
  // decode.where gpu with videos alone is no error: there is nothing to decode there.
  c.decode.where = Where::gpu;
  CHECK_NOTHROW(RunPlan::make(c, {0}, h, false, videos));
  // The host backend, and resize.where cpu, keep the CPU.
  CHECK_FALSE(RunPlan::make(Config{}, {-1}, h, false, videos).resize_on_gpu);
  Config cpu;
  cpu.transform.resize.where = Where::cpu;
  CHECK_FALSE(RunPlan::make(cpu, {0}, h, false, videos).resize_on_gpu);
  // input_mix: failed discovery items count as neither; pushed inputs may be anything.
  std::vector<InputItem> items{{"a.mp4", -1, {}, true}, {"gone.jpg", -1, "no such file", false}};
  const InputMix m = imgpipe::detail::input_mix(items, false);
  CHECK_FALSE(m.images);
  CHECK(m.videos);
  CHECK(imgpipe::detail::input_mix(items, true).images);
}

TEST_CASE("run plan: page-locked memory for the CPU route's video frames only where the GPU converts them from a copied staging") {
  using imgpipe::detail::InputMix;
  const HostFacts h = facts(16, 64 * GiB, 80 * GiB, true);
  const InputMix videos{false, true}, images{true, false};
  Config c;
  CHECK(c.memory.video_frames_mb == -1);  // auto, the default
  c.memory.video_frames_mb = 0;           // off
  CHECK(RunPlan::make(c, {0}, h, false, videos).video_frames_bytes == 0);
  CHECK(RunPlan::make(c, {0}, h, false, videos).video_frame_pool);  // pageable blocks, reused
  CHECK_FALSE(RunPlan::make(c, {0}, h, false, images).video_frame_pool);
  c.memory.video_frames_mb = 300;
  CHECK(RunPlan::make(c, {0}, h, false, videos).video_frames_bytes == 300 * MiB);
  CHECK(RunPlan::make(c, {0}, h, false, images).video_frames_bytes == 0);  // no videos
  c.memory.video_frames_mb = -1;  // auto: 1/8 of the host's memory, at most 8 GiB
  CHECK(RunPlan::make(c, {0}, h, false, videos).video_frames_bytes == 8 * GiB);
  CHECK(RunPlan::make(c, {0}, facts(16, 24 * GiB), false, videos).video_frames_bytes == 3 * GiB);
  CHECK(RunPlan::make(c, {0}, facts(16, 0), false, videos).video_frames_bytes == 2 * GiB);  // memory unknown
  Config cpu = c;
  cpu.transform.resize.where = Where::cpu;  // the CPU converts: nothing staged as decoded
  CHECK(RunPlan::make(cpu, {0}, h, false, videos).video_frames_bytes == 0);
  Config mapped = c;
  mapped.staging.transfer = imgpipe::TransferMode::zero_copy;  // the kernels read the slot in place
  CHECK(RunPlan::make(mapped, {0}, h, false, videos).video_frames_bytes == 0);
}

TEST_CASE("run plan: staging for what the run carries, a known count's room and slots, else a modest room that grows (host backend: whole slots)") {
  using imgpipe::detail::InputMix;
  Config c;  // float32 640x640, batches of 32, 2 slots
  for (int device : {-1, 0}) {
    CAPTURE(device);
    const auto plan = [&](std::int64_t samples) {
      return RunPlan::make(c, {device}, facts(8, 16 * GiB), false, InputMix{true, false, samples});
    };
    const RunPlan twenty = plan(20);
    const auto& s = twenty.layout.staging;
    CHECK(twenty.known_samples == 20);
    CHECK(twenty.layout.staged_sample_bytes == twenty.frame_bytes);
    CHECK(s.slot_bytes == twenty.frame_bytes * 32);      // the most a slot may grow to
    CHECK(s.initial_bytes == twenty.frame_bytes * 20);   // room for the 20 samples, made at the start
    CHECK(s.initial_slots == 1);                         // one batch: one slot
    CHECK(plan(70).layout.staging.initial_bytes == twenty.frame_bytes * 32);
    CHECK(plan(70).layout.staging.initial_slots == 2);   // 3 batches, 2 slots
    CHECK(plan(0).layout.staging.initial_slots == 0);
    // Not known (pushed items, videos): every slot, with room for what 16 MiB
    // holds; on the host backend whole slots at once (their pages fault in as
    // they are written), each batch its slot.
    for (const RunPlan& unknown : {plan(-1), RunPlan::make(c, {device}, facts(8, 16 * GiB), true)}) {
      CHECK(unknown.known_samples == -1);
      CHECK(unknown.layout.staging.initial_slots == -1);
      const std::size_t room = std::max<std::size_t>(1, RunPlan::kModestStaging / unknown.frame_bytes);
      if (device < 0) {
        CHECK(unknown.layout.staging.initial_bytes == unknown.layout.staging.slot_bytes);
      } else {
        CHECK(unknown.layout.staging.initial_bytes == unknown.frame_bytes * room);
        CHECK(unknown.layout.staging.initial_bytes < unknown.layout.staging.slot_bytes);
      }
    }
    CHECK(twenty.layout.batch_in_slot == (device < 0));  // the CPU normalises here
    Config gpu_normalised = c;
    gpu_normalised.transform.normalize.where = imgpipe::Where::gpu;
    CHECK_FALSE(RunPlan::make(gpu_normalised, {device}, facts(8, 16 * GiB), false, InputMix{true, false, 20})
                    .layout.batch_in_slot);
  }
  // The inputs' mix: image files count, failed ones do not, a video makes the count unknown.
  std::vector<imgpipe::stages::InputItem> items(5);
  items[1].error = "missing";
  CHECK(imgpipe::detail::input_mix(items, false).samples == 4);
  CHECK(imgpipe::detail::input_mix(items, true).samples == -1);
  items[2].video = true;
  CHECK(imgpipe::detail::input_mix(items, false).samples == -1);
}
