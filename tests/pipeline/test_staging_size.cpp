// Staging sized to what a run carries (issue 44, point 6): a run whose
// inputs' count is known gets room for that many samples (fewer than a
// batch) in as many slots as its batches; a run of unknown length (pushed
// items) starts with a modest room and grows its slots as batches need,
// while the caller holds earlier batches through the pull API, and delivers
// what a folder run delivers. The report's memory figures say what was made.
// On every backend of test_devices().
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "imgpipe/push_source.hpp"

using imgpipe::Batch;
using imgpipe::BatchStream;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::DeviceSelection;
using imgpipe::Pipeline;
using imgpipe::PushSource;
using imgpipe::Report;
using imgpipe::RunOptions;

namespace {

bool on_gpu(const DeviceSelection& d) { return d.kind != DeviceSelection::Kind::cpu; }

Config sized(const DeviceSelection& dev, int batch, int slots, int width, int height, imgpipe::DType dtype) {
  Config c;
  c.input.paths = {imgpipe::test::sample_dir().string()};
  c.devices = dev;
  c.batch.size = batch;
  c.staging.slots = slots;
  c.transform.resize.width = width;
  c.transform.resize.height = height;
  c.transform.dtype = dtype;
  c.decode.reduced = false;
  c.decode.where = imgpipe::Where::cpu;  // one route: tensors comparable byte for byte
  return c;
}

// Bytes one sample takes in a slot: the resized u8 frame where the GPU
// normalises, the output tensor's sample where the CPU does (host backend).
std::size_t staged_sample(const Config& c, const DeviceSelection& dev) {
  const std::size_t u8 = static_cast<std::size_t>(c.transform.resize.width) * c.transform.resize.height * 3;
  return on_gpu(dev) ? u8 : u8 * imgpipe::dtype_size(c.transform.dtype);
}

// Every sample's bytes by its path (or pushed id: the file's path).
using BySample = std::map<std::string, std::vector<unsigned char>>;

void add_samples(BySample& out, const DeviceBatch& b) {
  const std::vector<unsigned char> bytes = imgpipe::test::batch_to_host(b);
  const std::size_t each = bytes.size() / b.samples.size();
  for (std::size_t i = 0; i < b.samples.size(); ++i)
    out[b.samples[i].path].assign(bytes.begin() + static_cast<std::ptrdiff_t>(i * each),
                                  bytes.begin() + static_cast<std::ptrdiff_t>((i + 1) * each));
}

}  // namespace

TEST_CASE("staging size: 20 images with batch 32 reserve room for 20 samples in one slot, not two slots of 32") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(on_gpu(dev));
    const Config c = sized(dev, 32, 2, 64, 48, imgpipe::DType::float32);
    const std::size_t sample = staged_sample(c, dev);
    Pipeline p(c);
    const Report r = p.run();
    REQUIRE(r.inputs.delivered == 20);
    CHECK(r.batches == 1);
    CHECK(r.memory.slots == 1);                    // the one batch's slot; the other is never made
    CHECK(r.memory.staging_bytes == 20 * sample);  // room for the 20 samples
    CHECK(r.memory.slot_allocations == 1);         // made once, never grown
    if (on_gpu(dev))  // the copy's destination and the kernels' output, for 20 samples
      CHECK(r.memory.device_bytes == 20 * sample + 20 * sample * 4 + 2 * sizeof(std::uint64_t));
  }
}

TEST_CASE("staging size: a known count over several batches makes full slots, as many as its batches") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(on_gpu(dev));
    for (const int slots : {2, 4}) {
      CAPTURE(slots);
      const Config c = sized(dev, 8, slots, 64, 48, imgpipe::DType::float32);
      const std::size_t sample = staged_sample(c, dev);
      const Report r = Pipeline(c).run();
      REQUIRE(r.inputs.delivered == 20);
      CHECK(r.batches == 3);  // 8, 8, 4
      const int made = std::min(slots, 3);
      CHECK(r.memory.slots == made);
      CHECK(r.memory.staging_bytes == static_cast<std::uint64_t>(made) * 8 * sample);
      CHECK(r.memory.slot_allocations == static_cast<std::uint64_t>(made));
    }
  }
}

TEST_CASE("staging size: a pushed run grows its slots while earlier batches are held, every sample as the folder run's") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(on_gpu(dev));
    // 1024x1024 u8 samples (3 MiB): the modest first room holds 5 of a
    // batch of 8 (RunPlan::kModestStaging), so the slots of the two full
    // batches grow once each; the last batch of 4 fits. (On a GPU: the host
    // backend makes whole slots.)
    const Config c = sized(dev, 8, 3, 1024, 1024, imgpipe::DType::uint8);
    const std::size_t sample = staged_sample(c, dev);
    REQUIRE(sample == 3u << 20);
    BySample want;
    Pipeline folder(c);
    const Report known = folder.run([&](const DeviceBatch& b) { add_samples(want, b); });
    REQUIRE(want.size() == 20);
    CHECK(known.memory.slot_allocations == 3);  // 8, 8, 4 known: full from the start

    Config pc = c;
    pc.input.paths.clear();
    Pipeline p(pc);
    for (int run = 0; run < 2; ++run) {
      CAPTURE(run);
      auto src = std::make_shared<PushSource>(32);
      for (const auto& f : imgpipe::test::sample_images())
        REQUIRE(src->push_encoded(imgpipe::test::read_bytes(f), f.string()) == PushSource::Result::ok);
      src->close();
      RunOptions opt;
      opt.source = src;
      BatchStream stream = p.start(opt);
      std::vector<Batch> held;  // every batch, until the end: later slots grow meanwhile
      while (Batch b = stream.next()) held.push_back(std::move(b));
      BySample got;
      for (const Batch& b : held) add_samples(got, *b);
      REQUIRE(got.size() == want.size());
      for (const auto& [path, bytes] : want) {
        CAPTURE(path);
        REQUIRE(got.count(path) == 1);
        CHECK(got[path] == bytes);
      }
      held.clear();
      const Report& r = stream.report();
      CHECK(r.inputs.delivered == 20);
      CHECK(r.memory.slots == 3);
      if (run == 0) {
        // Three modest slots, two of them grown; the host backend's are whole
        // from the start (their pages fault in as they are written).
        CHECK(r.memory.slot_allocations == (on_gpu(dev) ? 3 + 2 : 3));
      } else {
        CHECK(r.memory.slot_allocations == 0);  // the kept ring, grown already
      }
      CHECK(r.memory.staging_bytes == (on_gpu(dev) ? 8 + 8 + 5 : 8 + 8 + 8) * sample);
    }
  }
}
