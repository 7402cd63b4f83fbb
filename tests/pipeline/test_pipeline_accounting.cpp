// The whole pipeline, end to end: input accounting (discovered = delivered +
// failed, every failure with path and reason), the error policies, drop_last
// and the discard sink's checksums.
//
// Every test runs on each backend of test_devices(): the host backend always,
// GPU 0 as well where there is one. Helpers: pipeline_helpers.hpp.
#include <doctest/doctest.h>

#include "pipeline_helpers.hpp"

using namespace pipeline_test;

// ======================================================================== accounting and errors

TEST_CASE("pipeline: discovered = delivered + failed, each failure with path and reason (skip mode)") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    MixedFolder m;
    make_mixed(m);
    Config cfg = base_config(32, 24, 3);
    // A missing entry of input.list is a failed item (one in input.paths is a
    // config error: test_input_errors.cpp).
    TempDir out;
    std::ofstream(out / "list.txt") << (m.dir / "missing.jpg").string() << "\n";
    cfg.input.paths = {m.dir.path().string()};
    cfg.input.list = (out / "list.txt").string();
    // Two work items: each bad file lands in a work item that held an image.
    cfg.pipeline.max_tokens = 2;
    const DumpRun r = run_dump(cfg, out / "out", dev);
    const auto& in = r.report.inputs;
    CHECK(in.discovered == m.total + 1);
    CHECK(in.delivered == m.good.size());
    CHECK(in.failed == m.bad.size() + 1);
    CHECK(in.discovered == in.delivered + in.failed);
    CHECK(in.dropped == 0);
    CHECK(in.not_processed == 0);
    CHECK_FALSE(r.report.interrupted);
    REQUIRE(in.failures.size() == m.bad.size() + 1);
    for (std::size_t i = 0; i < m.bad.size(); ++i) {
      CAPTURE(i);
      CHECK(in.failures[i].path == m.bad[i].string());
      CHECK(in.failures[i].frame == -1);
      CAPTURE(in.failures[i].reason);
      CHECK(in.failures[i].reason.find(m.bad_words[i]) != std::string::npos);
    }
    CHECK(in.failures.back().path == (m.dir / "missing.jpg").string());
    CHECK(in.failures.back().reason.find("no such file") != std::string::npos);
    // The good images are delivered, in order, with the right pixels.
    REQUIRE(r.manifest.size() == m.good.size());
    const std::vector<std::string> names{"a0.jpg", "a1.png", "c0.jpg", "e0.jpg", "g0.jpg", "g1.png"};
    for (std::size_t i = 0; i < names.size(); ++i)
      CHECK(fs::path(r.manifest[i].at("path").get<std::string>()).filename() == names[i]);
    check_against_reference(r, cfg, m.good);
  }
}

TEST_CASE("pipeline: a run in which every input fails delivers nothing and reports every failure") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    TempDir in;
    imgpipe::test::write_bytes(in / "a.jpg", {});
    imgpipe::test::write_bytes(in / "b.png", {1, 2, 3});
    Config cfg = base_config(32, 24, 4);
    cfg.input.paths = {in.path().string()};
    int calls = 0;
    TempDir out;
    const DumpRun r = run_dump(cfg, out / "out", dev, [&](const DeviceBatch&) { ++calls; });
    CHECK(calls == 0);
    CHECK(r.report.batches == 0);
    CHECK(r.manifest.empty());
    CHECK(r.report.inputs.discovered == 2);
    CHECK(r.report.inputs.delivered == 0);
    CHECK(r.report.inputs.failed == 2);
    REQUIRE(r.report.inputs.failures.size() == 2);
    CHECK(r.report.inputs.failures[0].path == (in / "a.jpg").string());
    CHECK(r.report.inputs.failures[1].path == (in / "b.png").string());
  }
}

TEST_CASE("pipeline: on_error fail throws InputError naming the first bad file") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    MixedFolder m;
    make_mixed(m);
    Config cfg = base_config(32, 24, 2);
    cfg.input.paths = {m.dir.path().string()};
    cfg.input.on_error = imgpipe::OnError::fail;
    cfg.devices = dev;
    Pipeline p(cfg);
    bool thrown = false;
    try {
      (void)p.run();
    } catch (const imgpipe::InputError& e) {
      thrown = true;
      CHECK(e.path() == m.bad.front().string());
      CHECK(e.frame() == -1);
      CHECK(e.reason().find("empty") != std::string::npos);
      CHECK(std::string(e.what()).find(m.bad.front().string()) != std::string::npos);
    }
    CHECK(thrown);
    // Without the bad files, the same pipeline succeeds.
    TempDir clean;
    for (const char* n : {"a0.jpg", "a1.png", "c0.jpg"}) fs::copy_file(m.dir / n, clean / n);
    cfg.input.paths = {clean.path().string()};
    const Report r = Pipeline(cfg).run();
    CHECK(r.inputs.delivered == 3);
    CHECK(r.inputs.failed == 0);
  }
}

TEST_CASE("pipeline: drop_last drops the partial batch and counts it") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 8);
    cfg.batch.drop_last = true;
    TempDir dir;
    const DumpRun r = run_dump(cfg, dir / "out", dev);
    CHECK(r.report.inputs.discovered == 20);
    CHECK(r.report.inputs.delivered == 16);
    CHECK(r.report.inputs.dropped == 4);
    CHECK(r.report.inputs.discovered ==
          r.report.inputs.delivered + r.report.inputs.failed + r.report.inputs.dropped);
    CHECK(r.report.batches == 2);
    CHECK(r.manifest.size() == 16);
    for (const auto& b : r.batches) CHECK(b.shape[0] == 8);
    std::vector<std::size_t> first16(16);
    for (std::size_t i = 0; i < 16; ++i) first16[i] = i;
    check_against_reference(r, cfg, first16);
    // A batch size that divides the input drops nothing.
    cfg.batch.size = 5;
    TempDir dir2;
    const DumpRun r2 = run_dump(cfg, dir2 / "out", dev);
    CHECK(r2.report.inputs.delivered == 20);
    CHECK(r2.report.inputs.dropped == 0);
    CHECK(r2.report.batches == 4);
  }
}

TEST_CASE("pipeline: discard-mode checksums equal checksum_ref of the dumped tensors") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      for (DType dtype : {DType::float32, DType::float16, DType::uint8}) {
        CAPTURE(dev_name(dev));
        CAPTURE(where == Where::cpu ? "cpu" : "gpu");
        CAPTURE(std::string(imgpipe::to_string(dtype)));
        Config cfg = base_config(64, 48, 8);
        cfg.transform.dtype = dtype;
        cfg.transform.normalize.where = where;
        TempDir dir;
        const DumpRun dumped = run_dump(cfg, dir / "out", dev);
        cfg.sink.type = imgpipe::SinkType::discard;
        cfg.devices = dev;
        const Report discarded = Pipeline(cfg).run();
        REQUIRE(discarded.batch_records.size() == dumped.batches.size());
        REQUIRE(discarded.batch_records.size() == 3);
        for (std::size_t b = 0; b < dumped.batches.size(); ++b) {
          CAPTURE(b);
          const auto& d = dumped.batches[b].data;
          CHECK(discarded.batch_records[b].index == b);
          CHECK(discarded.batch_records[b].samples == static_cast<std::uint64_t>(dumped.batches[b].shape[0]));
          CHECK(discarded.batch_records[b].checksum == imgpipe::kernels::checksum_ref(d.data(), d.size()));
          // The dump sink records the same checksums.
          CHECK(dumped.report.batch_records.at(b).checksum == discarded.batch_records[b].checksum);
        }
        // Different batches (different images) give different checksums.
        CHECK(discarded.batch_records[0].checksum != discarded.batch_records[1].checksum);
      }
    }
  }
}
