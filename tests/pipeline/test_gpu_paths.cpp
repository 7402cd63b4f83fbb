// The pipeline's GPU-side variants against its reference path, on every
// backend (the host backend runs the kernels' CPU twins): GPU resize (the
// fused kernel), the three transfer modes over 1000+ consecutive batches,
// several devices, and the staging fallback chain by fault injection.
// Batches are compared by the checksum the discard sink computes on the
// device (kernels::checksum; equal checksums over identical configs mean
// identical bytes; test_pipeline_accuracy.cpp ties the reference path to OpenCV).
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <utility>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "memory/gpu.hpp"
#include "memory/fault_injection.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using namespace imgpipe;

namespace {

std::vector<std::uint64_t> checksums(const Report& r) {
  std::vector<std::uint64_t> v;
  for (const auto& b : r.batch_records) v.push_back(b.checksum);
  return v;
}

Config small_config(const fs::path& input, int w, int h, int batch) {
  Config c;
  c.input.paths = {input.string()};
  c.transform.resize.width = w;
  c.transform.resize.height = h;
  c.batch.size = batch;
  c.decode.threads = 2;
  c.decode.reduced = false;  // full-size decodes: the big frame must exceed its staging share
  c.decode.where = Where::cpu;  // the resize and transfer paths under test, not the decoders (test_gpu_decode.cpp)
  return c;
}

Report run(Config c, const DeviceSelection& dev) {
  c.devices = dev;
  Pipeline p(c);
  return p.run();
}

// `c` run with the GPU normalising, once resizing on the CPU and once on the
// GPU: both say where they resized, and their batches are the same bytes.
std::pair<Report, Report> resized_both_ways(Config c, const DeviceSelection& dev) {
  c.transform.normalize.where = Where::gpu;
  c.transform.resize.where = Where::cpu;
  Report cpu = run(c, dev);
  c.transform.resize.where = Where::gpu;
  Report gpu = run(c, dev);
  CHECK(cpu.resize_where == "cpu");
  CHECK(gpu.resize_where == "gpu");
  REQUIRE(cpu.batch_records.size() == gpu.batch_records.size());
  CHECK(checksums(cpu) == checksums(gpu));
  return {std::move(cpu), std::move(gpu)};
}

}  // namespace

TEST_CASE("pipeline: GPU resize equals the CPU resize path bit for bit (every fit, linear and nearest)") {
  test::TempDir dir;
  // The samples plus one frame larger than a staging share (2000x1200), which
  // is resized on the CPU before staging even when the GPU resizes: a pinned
  // budget of 96 MiB over 2 slots x 8 frames gives each frame 6 MiB
  // (RunPlan::frame_budget), less than its 6.9 MiB.
  for (const auto& p : test::sample_images()) fs::copy_file(p, dir / p.filename().string());
  cv::Mat big;
  cv::resize(cv::imread(test::sample_images().front().string()), big, cv::Size(2000, 1200));
  REQUIRE(cv::imwrite((dir / "zz_big.jpg").string(), big));
  const std::size_t n = test::sample_images().size() + 1;

  for (const DeviceSelection& dev : test::test_devices()) {
    int pair = 0;  // (fit, interpolation) pairs so far
    for (ResizeMode mode : {ResizeMode::stretch, ResizeMode::letterbox, ResizeMode::center_crop}) {
      for (Interpolation interp : {Interpolation::linear, Interpolation::nearest}) {
        ++pair;
        for (DType dtype : {DType::float32, DType::uint8}) {
          // Under a sanitizer, every fit and interpolation with one dtype
          // each, the dtypes alternating (test::kSanitized): the whole grid
          // took 59 s of TSan's time.
          if (test::kSanitized && (dtype == DType::uint8) != (pair % 2 == 0)) continue;
          CAPTURE(dev.to_string());
          CAPTURE(static_cast<int>(mode));
          CAPTURE(static_cast<int>(interp));
          CAPTURE(to_string(dtype));
          Config c = small_config(dir.path(), 97, 61, 8);
          c.transform.resize.mode = mode;
          c.transform.resize.interpolation = interp;
          c.transform.dtype = dtype;
          c.memory.pinned_budget_mb = 96;
          const auto [cpu, gpu] = resized_both_ways(c, dev);
          CHECK(gpu.inputs.delivered == n);
          CHECK(gpu.inputs.cpu_resized == 1);
          CHECK(cpu.inputs.cpu_resized == 0);
        }
      }
    }
  }
}

TEST_CASE("pipeline: video frames staged as YUV and converted by the GPU (or its twin) equal the CPU route's, bit for bit") {
  // vtest.avi (MPEG-4, 4:2:0) and tree.avi: the CPU converts (kernels/yuv.hpp)
  // and resizes (cv::resize); with resize.where gpu the frames are staged
  // as decoded and the fused kernel converts and resizes them. The YUV
  // frames reach the device straight out of the decoders' page-locked
  // buffers (memory.video_frames_mb), or copied into the staging (0), or
  // some each way in one batch (a budget of 1 MiB holds one 768x576 frame: on a GPU the
  // others are ordinary memory; on the host backend every block is direct).
  test::TempDir dir;
  fs::copy_file(test::opencv_data_dir() / "vtest.avi", dir / "a.avi");
  fs::copy_file(test::opencv_data_dir() / "tree.avi", dir / "b.avi");
  for (const DeviceSelection& dev : test::test_devices()) {
    // Each fit once, both interpolations among them (every pair: the image
    // case above; this one is kept short for the sanitizer steps: the frames
    // copied into the staging, and the mix, with the first fit only).
    bool first = true;
    for (const auto& [mode, interp] : {std::pair{ResizeMode::stretch, Interpolation::linear},
                                       std::pair{ResizeMode::letterbox, Interpolation::nearest},
                                       std::pair{ResizeMode::center_crop, Interpolation::linear}}) {
      CAPTURE(dev.to_string());
      CAPTURE(static_cast<int>(mode));
      CAPTURE(static_cast<int>(interp));
      Config c = small_config(dir.path(), 97, 61, 8);
      c.input.video.max_frames = 12;  // 24 frames a run
      c.input.video.order = VideoOrder::turns;  // the two runs' batches hold the same frames
      c.input.video.where = Where::cpu;  // the frames staged as YUV (NVDEC: tests/pipeline/test_nvdec.cpp)
      c.transform.resize.mode = mode;
      c.transform.resize.interpolation = interp;
      c.memory.video_frames_mb = -1;  // auto
      const auto [cpu, gpu] = resized_both_ways(c, dev);
      CHECK(gpu.inputs.delivered == 24);
      CHECK(gpu.inputs.failed == 0);
      CHECK(gpu.inputs.cpu_resized == 0);
      CHECK(cpu.video.direct_frames == 0);  // the CPU converts: nothing to copy as decoded
      CHECK(gpu.video.direct_frames == 12);  // vtest.avi's; tree.avi is Cinepak RGB, converted by the CPU
      CHECK(gpu.video.frame_blocks_pageable == 0);
      if (!std::exchange(first, false)) continue;
      c.transform.normalize.where = Where::gpu;
      c.transform.resize.where = Where::gpu;
      c.memory.video_frames_mb = 0;
      const Report copied = run(c, dev);
      CHECK(copied.video.direct_frames == 0);
      CHECK(checksums(copied) == checksums(cpu));
      c.memory.video_frames_mb = 1;
      const Report mixed = run(c, dev);
      CHECK(checksums(mixed) == checksums(cpu));
      if (dev.kind == DeviceSelection::Kind::cpu) {
        CHECK(mixed.video.direct_frames == 12);
      } else {
        CHECK(mixed.video.direct_frames >= 1);
        CHECK(mixed.video.direct_frames < 12);
        CHECK(mixed.video.frame_blocks_pageable >= 1);
      }
    }
  }
}

TEST_CASE("pipeline: resize.where gpu with area interpolation or cpu normalisation is a config error") {
  Config c = small_config(test::sample_dir(), 32, 32, 4);
  c.transform.resize.where = Where::gpu;
  c.transform.resize.interpolation = Interpolation::area;
  CHECK_THROWS_AS(c.validate(), ConfigError);
  c.transform.resize.interpolation = Interpolation::linear;
  c.transform.normalize.where = Where::cpu;
  CHECK_THROWS_AS(c.validate(), ConfigError);
  // auto with area interpolation resizes on the CPU.
  c.transform.resize.where = Where::automatic;
  c.transform.normalize.where = Where::automatic;
  c.transform.resize.interpolation = Interpolation::area;
  for (const DeviceSelection& dev : test::test_devices()) CHECK(run(c, dev).resize_where == "cpu");
}

TEST_CASE("pipeline: copy, zero_copy and pageable transfers deliver identical batches over 1000+ batches") {
  // 1040 distinct small images, one per batch: every batch's bytes are checked
  // on the device (the sink's checksum kernel reads every element) against
  // the copy mode's, so a host write racing a kernel read in zero-copy mode,
  // or a slot reused too early, shows as a mismatch.
  test::TempDir dir;
  std::mt19937 rng(5);
  for (int i = 0; i < 1040; ++i) {
    cv::Mat m(12, 16, CV_8UC3);
    cv::randu(m, cv::Scalar::all(0), cv::Scalar::all(256));
    char name[32];
    std::snprintf(name, sizeof name, "i%05d.png", i);
    REQUIRE(cv::imwrite((dir / name).string(), m));
  }
  for (const DeviceSelection& dev : test::test_devices()) {
    CAPTURE(dev.to_string());
    Config c = small_config(dir.path(), 16, 12, 1);
    c.staging.slots = 3;
    std::vector<std::uint64_t> reference;
    for (int t = 0; t < 3; ++t) {  // copy, zero_copy, pageable staging (staging.memory)
      for (Where w : {Where::gpu, Where::cpu}) {
        CAPTURE(static_cast<int>(t));
        CAPTURE(static_cast<int>(w));
        c.staging.transfer = t == 1 ? TransferMode::zero_copy : TransferMode::copy;
        c.staging.memory = t == 2 ? StagingMemory::pageable : StagingMemory::write_combined;
        c.transform.normalize.where = w;
        c.transform.resize.where = w == Where::cpu ? Where::cpu : Where::automatic;
        const Report r = run(c, dev);
        CHECK(r.inputs.delivered == 1040);
        CHECK(r.batches == 1040);
        if (dev.kind == DeviceSelection::Kind::cpu) {
          // A tensor the CPU made stays in its slot (no copy); the kernels' twins read a copy.
          CHECK((r.transfer.mode == "in place" || r.transfer.mode == "host memcpy"));
          CHECK((r.transfer.mode == "in place") == (r.transfer.bytes == 0));
          if (w == Where::cpu) CHECK(r.transfer.mode == "in place");
        } else {
          CHECK(r.transfer.mode == (t == 0 ? "copy" : t == 1 ? "zero_copy" : "pageable"));
          CHECK(r.memory.staging_kind == (t == 2 ? "pageable" : "write_combined"));
        }
        if (reference.empty()) reference = checksums(r);
        else CHECK(checksums(r) == reference);
      }
    }
  }
}

TEST_CASE("pipeline: several devices share the batches and deliver what one device delivers") {
  Config c = small_config(test::sample_dir(), 64, 48, 2);
  c.staging.slots = 4;
  if (!test::have_gpu()) {
    c.devices = DeviceSelection::parse("all");
    Pipeline p(c);
    try {
      p.run();
      FAIL("devices: all ran without a GPU");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("no CUDA device") != std::string::npos);
    }
    return;
  }
  const Report one = run(c, DeviceSelection::parse("0"));
  const int n = gpu::device_count();
  for (Dispatch d : {Dispatch::round_robin, Dispatch::least_loaded}) {
    CAPTURE(static_cast<int>(d));
    c.dispatch = d;
    const Report all = run(c, DeviceSelection::parse("all"));
    REQUIRE(all.devices.size() == static_cast<std::size_t>(n));
    std::uint64_t batches = 0;
    for (const auto& dev : all.devices) {
      batches += dev.batches;
      if (n > 1) CHECK(dev.batches > 0);
      CHECK(dev.gb_per_s > 0);
    }
    CHECK(batches == all.batches);
    if (d == Dispatch::round_robin)
      for (const auto& dev : all.devices) CHECK(dev.batches == (all.batches + n - 1 - dev.device) / n);
    CHECK(checksums(all) == checksums(one));
    CHECK(all.inputs.delivered == one.inputs.delivered);
  }
}

TEST_CASE("pipeline: staging falls back when pinned allocation fails, or fails clearly with fallback off") {
  Config c = small_config(test::sample_dir(), 32, 24, 4);
  for (const DeviceSelection& dev : test::test_devices()) {
    CAPTURE(dev.to_string());
    memory::fault_injection::Scope scope;
    const Report clean = run(c, dev);
    if (dev.kind == DeviceSelection::Kind::cpu) {
      CHECK(clean.memory.staging_kind == "pageable");
      CHECK(clean.memory.pinned_bytes == 0);
      continue;
    }
    CHECK(clean.memory.staging_kind == "write_combined");
    CHECK(clean.memory.fallbacks == 0);
    CHECK(clean.memory.pinned_bytes >= clean.memory.staging_bytes);

    memory::fault_injection::fail_next(memory::MemoryKind::write_combined, 100);
    const Report fell = run(c, dev);
    CHECK(fell.memory.staging_kind == "pinned");
    CHECK(fell.memory.fallbacks > 0);
    CHECK(fell.memory.fallback_reason.find("write_combined") != std::string::npos);
    CHECK(checksums(fell) == checksums(clean));

    memory::fault_injection::fail_next(memory::MemoryKind::write_combined, 100);
    memory::fault_injection::fail_next(memory::MemoryKind::pinned, 100);
    memory::fault_injection::fail_next(memory::MemoryKind::host_registered, 100);
    const Report last = run(c, dev);
    CHECK(last.memory.staging_kind == "pageable");
    CHECK(checksums(last) == checksums(clean));

    memory::fault_injection::clear();
    memory::fault_injection::fail_next(memory::MemoryKind::write_combined, 100);
    c.memory.fallback = false;
    try {
      run(c, dev);
      FAIL("a failed write-combined allocation with fallback off did not fail");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("write_combined") != std::string::npos);
    }
    c.memory.fallback = true;
  }
}
