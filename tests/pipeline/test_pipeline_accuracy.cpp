// The whole pipeline, end to end, on the sample images (the tests split from
// test_pipeline.cpp by section: accuracy, callback, accounting, stop): the
// dumped tensors against an independent computation with
// cv::dnn::blobFromImage (float32, float16, uint8; both normalize.where, both
// layouts; ImageNet mean/std; colour order and center_crop).
//
// Every test runs on each backend of test_devices(): the host backend always,
// GPU 0 as well where there is one. Helpers: pipeline_helpers.hpp.
#include <doctest/doctest.h>

#include "pipeline_helpers.hpp"

using namespace pipeline_test;

// ======================================================================== accuracy

TEST_CASE("pipeline: float32 tensors equal cv::dnn::blobFromImage (cpu|gpu normalise, nchw|nhwc)") {
  check_grid(DType::float32, {0.25f, 0.25f, 0.25f});
}

TEST_CASE("pipeline: float16 tensors equal cv::dnn::blobFromImage within one half ulp (cpu|gpu, nchw|nhwc)") {
  check_grid(DType::float16, {0.25f, 0.25f, 0.25f});
}

TEST_CASE("pipeline: uint8 tensors equal cv::dnn::blobFromImage(ddepth=CV_8U) exactly (cpu|gpu, nchw|nhwc)") {
  check_grid(DType::uint8, {0.25f, 0.25f, 0.25f});
}

TEST_CASE("pipeline: ImageNet mean/std at 640x640 (the W1 transform) equal blobFromImage / std") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      CAPTURE(dev_name(dev));
      CAPTURE(where == Where::cpu ? "cpu" : "gpu");
      Config cfg = base_config(640, 640, 8);  // default mean/std/scale: ImageNet
      cfg.transform.normalize.where = where;
      TempDir dir;
      const DumpRun r = run_dump(cfg, dir / "out", dev);
      CHECK(r.report.inputs.delivered == 20);
      check_against_reference(r, cfg, all_samples());
    }
  }
}

TEST_CASE("pipeline: color bgr (no channel swap) and center_crop match blobFromImage") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      CAPTURE(dev_name(dev));
      CAPTURE(where == Where::cpu ? "cpu" : "gpu");
      Config cfg = base_config(48, 64, 6);
      cfg.transform.swap_rb = false;
      cfg.transform.resize.mode = imgpipe::ResizeMode::center_crop;
      cfg.transform.normalize.where = where;
      cfg.transform.normalize.mean = {0.1f, 0.5f, 0.9f};  // distinct, so a swap would show
      cfg.transform.normalize.std = {0.5f, 0.25f, 0.125f};
      TempDir dir;
      const DumpRun r = run_dump(cfg, dir / "out", dev);
      CHECK(r.report.batches == 4);  // 6 + 6 + 6 + 2
      check_against_reference(r, cfg, all_samples());
    }
  }
}
