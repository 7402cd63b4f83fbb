// The whole pipeline, end to end: request_stop() from the callback, an
// exception from the callback, later runs of one Pipeline, and a run without
// inputs.
//
// Every test runs on each backend of test_devices(): the host backend always,
// GPU 0 as well where there is one. Helpers: pipeline_helpers.hpp.
#include <doctest/doctest.h>

#include "pipeline_helpers.hpp"

using namespace pipeline_test;

// ======================================================================== stop and exceptions

TEST_CASE("pipeline: request_stop() from the callback ends the run, interrupted, with full accounting") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 2);
    cfg.pipeline.max_tokens = 2;  // few frames in flight: the stop lands early
    cfg.decode.threads = 1;
    cfg.devices = dev;
    Pipeline p(cfg);
    int calls = 0;
    std::uint64_t seen = 0;
    const Report r = p.run([&](const DeviceBatch& b) {
      ++calls;
      seen += b.size();
      p.request_stop();
    });
    CHECK(r.interrupted);
    const auto& in = r.inputs;
    CHECK(in.discovered == 20);
    CHECK(in.delivered == seen);
    CHECK(in.delivered >= 2);
    CHECK(in.delivered < 20);
    CHECK(in.not_processed > 0);
    CHECK(in.discovered == in.delivered + in.failed + in.not_processed + in.dropped);
    CHECK(r.batches == static_cast<std::uint64_t>(calls));
    // A stop request belongs to one run: the next run goes to the end.
    const Report again = p.run();
    CHECK_FALSE(again.interrupted);
    CHECK(again.inputs.delivered == 20);
    CHECK(again.inputs.not_processed == 0);
  }
}

TEST_CASE("pipeline: request_stop() with drop_last still accounts for every input") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 3);
    cfg.pipeline.max_tokens = 2;
    cfg.decode.threads = 1;
    cfg.batch.drop_last = true;
    cfg.devices = dev;
    Pipeline p(cfg);
    const Report r = p.run([&](const DeviceBatch&) { p.request_stop(); });
    const auto& in = r.inputs;
    CHECK(r.interrupted);
    CHECK(in.delivered % 3 == 0);
    CHECK(in.discovered == in.delivered + in.failed + in.not_processed + in.dropped);
  }
}

TEST_CASE("pipeline: an exception from the callback propagates, the pipeline runs again afterwards") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 4);
    cfg.devices = dev;
    Pipeline p(cfg);
    int calls = 0;
    CHECK_THROWS_WITH_AS(p.run([&](const DeviceBatch& b) {
      ++calls;
      if (b.index == 1) throw std::runtime_error("callback failed on purpose");
    }),
                         "callback failed on purpose", std::runtime_error);
    CHECK(calls >= 2);
    // Same Pipeline object, second run: everything delivered, correct data.
    TempDir dir;
    Config dump = cfg;
    dump.sink.type = imgpipe::SinkType::dump;
    dump.sink.dir = (dir / "out").string();
    dump.sink.overwrite = true;  // the second run replaces the first one's batches
    Pipeline p2(dump);
    CHECK_THROWS_AS(p2.run([](const DeviceBatch&) { throw std::logic_error("first"); }), std::logic_error);
    const Report r = p2.run();
    CHECK(r.inputs.delivered == 20);
    CHECK(r.batches == 5);
    DumpRun d;
    d.report = r;
    for (std::uint64_t i = 0; i < r.batches; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "batch_%06llu.npy", static_cast<unsigned long long>(i));
      d.batches.push_back(read_npy(dir / "out" / name));
    }
    check_against_reference(d, dump, all_samples());
    CHECK(read_manifest(dir / "out" / "manifest.jsonl").size() == 20);  // rewritten, not appended
    // And the first pipeline too.
    const Report r1 = p.run();
    CHECK(r1.inputs.delivered == 20);
  }
}

TEST_CASE("pipeline: later runs of a Pipeline reuse its staging ring and buffers, and deliver the same batches") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config cfg = base_config(32, 24, 4);
    cfg.devices = dev;
    Pipeline p(cfg);
    std::vector<Report> runs;
    for (int i = 0; i < 3; ++i) runs.push_back(p.run());
    // Stopped at the start, and asked to stop from a callback (on a GPU all
    // 20 inputs may be handed out by then), then run again: the kept
    // resources are still good.
    p.request_stop();
    const Report stopped = p.run();
    CHECK(stopped.interrupted);
    CHECK(stopped.inputs.delivered < 20);
    int seen = 0;
    (void)p.run([&](const DeviceBatch&) {
      if (++seen == 2) p.request_stop();
    });
    runs.push_back(p.run());
    const Report& first = runs.front();
    REQUIRE(first.batch_records.size() == 5);
    CHECK(first.memory.slot_allocations > 0);  // the ring made in run 1
    for (std::size_t i = 1; i < runs.size(); ++i) {
      CAPTURE(i);
      const Report& r = runs[i];
      CHECK(r.memory.slot_allocations == 0);  // nothing allocated: the ring was kept
      CHECK(r.memory.slot_reuses == r.batches);
      CHECK(r.memory.staging_bytes == first.memory.staging_bytes);
      CHECK(r.inputs.delivered == 20);
      REQUIRE(r.batch_records.size() == first.batch_records.size());
      for (std::size_t b = 0; b < r.batch_records.size(); ++b) {
        CHECK(r.batch_records[b].samples == first.batch_records[b].samples);
        CHECK(r.batch_records[b].checksum == first.batch_records[b].checksum);
      }
    }
  }
}

TEST_CASE("pipeline: no inputs is an error naming the paths, the report names every stage") {
  TempDir empty;
  Config cfg = base_config(32, 24, 4);
  cfg.input.paths = {empty.path().string()};
  cfg.devices = DeviceSelection::parse("cpu");
  bool thrown = false;
  try {
    (void)Pipeline(cfg).run();
  } catch (const imgpipe::ConfigError& e) {
    thrown = true;
    CHECK(e.key() == "input.paths");
    CHECK(std::string(e.what()).find(empty.path().string()) != std::string::npos);
    CHECK(std::string(e.what()).find("no inputs") != std::string::npos);
  }
  CHECK(thrown);
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    Config c = base_config(32, 24, 4);
    c.devices = dev;
    const Report r = Pipeline(c).run();
    std::vector<std::string> names;
    for (const auto& s : r.stages) names.push_back(s.name);
    std::vector<std::string> expected{"source", "read", "decode", "transform", "pack", "pack_copy", "transfer",
                                      "gpu_ops", "sink"};
    if (r.decode.where != "cpu") expected.insert(expected.begin() + 2, "probe");  // GPU decode routes JPEGs
    CHECK(names == expected);
    for (const auto& s : r.stages) {
      CAPTURE(s.name);
      CHECK(s.busy_s >= 0);
      if (s.name == "source" || s.name == "read" || s.name == "decode" || s.name == "transform" || s.name == "pack" ||
          s.name == "pack_copy")
        CHECK(s.items == 20);
      if (s.name == "transfer" || s.name == "gpu_ops" || s.name == "sink") CHECK(s.items == 5);
    }
    if (dev.kind == DeviceSelection::Kind::cpu) CHECK(r.backend == "host");
    else CHECK(r.backend.rfind("cuda:0", 0) == 0);
    CHECK(r.images_per_s > 0);
    // The host backend's batches stay in their slots (the CPU normalised them).
    CHECK(r.transfer.bytes == (dev.kind == DeviceSelection::Kind::cpu ? 0u : 20u * 32u * 24u * 3u));
  }
}
