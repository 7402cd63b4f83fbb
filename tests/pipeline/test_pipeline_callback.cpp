// The whole pipeline, end to end: the manifest names every sample in input
// order; the callback gets each DeviceBatch with its shape, dtype, layout and
// samples, and a batch's data stays valid until its callback returns.
//
// Every test runs on each backend of test_devices(): the host backend always,
// GPU 0 as well where there is one. Helpers: pipeline_helpers.hpp.
#include <doctest/doctest.h>

#include "pipeline_helpers.hpp"

using namespace pipeline_test;

// ======================================================================== manifest, callback

TEST_CASE("pipeline: manifest.jsonl names every sample in input order") {
  const auto samples = imgpipe::test::sample_images();
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev_name(dev));
    TempDir dir;
    const DumpRun r = run_dump(base_config(32, 24, 8), dir / "out", dev);
    REQUIRE(r.manifest.size() == samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      CAPTURE(i);
      const auto& m = r.manifest[i];
      CHECK(fs::equivalent(m.at("path").get<std::string>(), samples[i]));
      CHECK(fs::path(m.at("path").get<std::string>()).filename() == samples[i].filename());
      CHECK(m.at("frame").get<std::int64_t>() == -1);
      CHECK(m.at("input_index").get<std::uint64_t>() == i);
      CHECK(m.at("batch").get<std::uint64_t>() == i / 8);
      CHECK(m.at("index").get<std::uint64_t>() == i % 8);
    }
  }
}

TEST_CASE("pipeline: the callback receives each DeviceBatch with its shape, dtype, layout and samples") {
  const auto samples = imgpipe::test::sample_images();
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (DType dtype : {DType::float32, DType::float16, DType::uint8}) {
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        CAPTURE(dev_name(dev));
        CAPTURE(std::string(imgpipe::to_string(dtype)));
        CAPTURE(std::string(imgpipe::to_string(layout)));
        Config cfg = base_config(40, 30, 7);
        cfg.transform.dtype = dtype;
        cfg.transform.layout = layout;
        std::vector<std::vector<unsigned char>> seen;
        std::vector<std::uint64_t> indices;
        std::vector<std::uint64_t> input_indices;
        bool fields_ok = true;
        const int want_device = dev.kind == DeviceSelection::Kind::cpu ? -1 : dev.ordinal;
        auto cb = [&](const DeviceBatch& b) {
          const auto n = static_cast<std::int64_t>(b.size());
          const std::vector<std::int64_t> shape =
              layout == Layout::nchw ? std::vector<std::int64_t>{n, 3, 30, 40} : std::vector<std::int64_t>{n, 30, 40, 3};
          CHECK(b.shape == shape);
          CHECK(b.dtype == dtype);
          CHECK(b.layout == layout);
          CHECK(b.device == want_device);
          CHECK(b.data != nullptr);
          CHECK(b.bytes == static_cast<std::size_t>(n) * 30 * 40 * 3 * imgpipe::dtype_size(dtype));
          if (want_device >= 0) {
            CHECK(b.stream != nullptr);
            CHECK(b.ready != nullptr);
          }
          fields_ok = fields_ok && b.samples.size() == static_cast<std::size_t>(n);
          indices.push_back(b.index);
          for (const auto& s : b.samples) {
            CHECK(s.frame == -1);
            CHECK(fs::equivalent(s.path, samples.at(s.input_index)));
            input_indices.push_back(s.input_index);
          }
          seen.push_back(imgpipe::test::batch_to_host(b));
        };
        TempDir dir;
        const DumpRun r = run_dump(cfg, dir / "out", dev, cb);
        CHECK(fields_ok);
        CHECK(indices == std::vector<std::uint64_t>{0, 1, 2});  // 7 + 7 + 6, in order
        std::vector<std::uint64_t> want(20);
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = i;
        CHECK(input_indices == want);
        // The callback sees the same bytes as the dump sink.
        REQUIRE(seen.size() == r.batches.size());
        for (std::size_t b = 0; b < seen.size(); ++b) CHECK(seen[b] == r.batches[b].data);
      }
    }
  }
}

TEST_CASE("pipeline: a batch's data stays valid until its callback returns, however far decode runs ahead") {
  // Many frames in flight, tiny batches, a slow consumer: the packer must not
  // reuse a slot (its device buffers and metadata) that the sink or the
  // callback still holds.
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (Where where : {Where::cpu, Where::gpu}) {
      for (int batch : {1, 2}) {
        CAPTURE(dev_name(dev));
        CAPTURE(where == Where::cpu ? "cpu" : "gpu");
        CAPTURE(batch);
        Config cfg = base_config(32, 24, batch);
        cfg.staging.slots = 2;
        cfg.pipeline.max_tokens = 12;
        cfg.decode.threads = 2;
        cfg.transform.normalize.where = where;
        cfg.devices = dev;
        struct Seen {
          std::uint64_t index;
          std::vector<std::uint64_t> inputs;
          std::vector<unsigned char> data;
        };
        std::vector<Seen> seen;
        bool stable = true;
        Pipeline p(cfg);
        const Report r = p.run([&](const DeviceBatch& b) {
          Seen s{b.index, {}, imgpipe::test::batch_to_host(b)};
          for (const auto& id : b.samples) s.inputs.push_back(id.input_index);
          if (b.index < 2) {
            // Give the upstream stages time to run ahead, then look again.
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            stable = stable && imgpipe::test::batch_to_host(b) == s.data && b.size() == s.inputs.size();
            for (std::size_t i = 0; i < b.samples.size() && i < s.inputs.size(); ++i)
              stable = stable && b.samples[i].input_index == s.inputs[i];
          }
          seen.push_back(std::move(s));
        });
        CHECK(stable);
        CHECK(r.inputs.delivered == 20);
        REQUIRE(seen.size() == static_cast<std::size_t>(20 / batch));
        std::size_t next = 0;
        for (std::size_t k = 0; k < seen.size(); ++k) {
          CAPTURE(k);
          CHECK(seen[k].index == k);
          REQUIRE(seen[k].inputs.size() == static_cast<std::size_t>(batch));
          Npy n;
          n.shape = {batch, 3, 24, 32};
          n.data = seen[k].data;
          for (std::size_t i = 0; i < seen[k].inputs.size(); ++i, ++next) {
            CHECK(seen[k].inputs[i] == next);
            std::string first;
            CHECK(compare_sample(n, i, reference_nchw(sample_mats()[next], cfg.transform), cfg.transform, &first) == 0);
          }
        }
      }
    }
  }
}
