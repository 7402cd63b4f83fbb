// The batch-side stages on their own, without Pipeline::run: Pack, PackCopy,
// Transfer, GpuOps and Sink over resources made from a run plan, on the host
// backend and, where one exists, on GPU 0.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common.hpp"
#include "kernels/checksum.hpp"
#include "kernels/normalize.hpp"
#include "pipeline/src/run_plan.hpp"
#include "stages/gpu_ops.hpp"
#include "stages/pack.hpp"
#include "stages/sink.hpp"
#include "stages/transfer.hpp"
#include "stages/transform.hpp"

namespace fs = std::filesystem;
using imgpipe::BatchConfig;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::Dispatch;
using imgpipe::OnError;
using imgpipe::stages::BatchResources;
using imgpipe::stages::GpuOps;
using imgpipe::stages::InputItem;
using imgpipe::stages::Pack;
using imgpipe::stages::PackCopy;
using imgpipe::stages::Sink;
using imgpipe::stages::Transfer;
using imgpipe::stages::Work;

namespace {

constexpr int kW = 4, kH = 2, kBatch = 3;
constexpr std::size_t kFrame = kW * kH * 3;  // u8 HWC at the target size

Config rig_config() {
  Config c;
  c.transform.resize.width = kW;
  c.transform.resize.height = kH;
  c.transform.normalize.where = imgpipe::Where::gpu;  // GpuOps normalises (its CPU twin on the host backend)
  c.batch.size = kBatch;
  return c;
}

imgpipe::detail::HostFacts host_facts() {
  imgpipe::detail::HostFacts h;
  h.hardware_threads = 2;
  h.physical_memory = 1ull << 30;
  return h;
}

int ordinal(const imgpipe::DeviceSelection& d) { return d.kind == imgpipe::DeviceSelection::Kind::cpu ? -1 : d.ordinal; }

// A run plan's resources and a supply of tokens carrying distinct frames.
struct Rig {
  explicit Rig(std::vector<int> devices, Config c = rig_config())
      : cfg(c),
        plan(imgpipe::detail::RunPlan::make(cfg, std::move(devices), host_facts())),
        res(plan.layout) {
    for (int i = 0; i < 16; ++i) inputs.push_back({"img" + std::to_string(i) + ".png", -1, {}, false});
  }
  // Token for input `seq` whose frame is filled with bytes seq*16 + i.
  Work& token(std::uint64_t seq) {
    auto w = std::make_unique<Work>();
    w->reset_for(Work::Kind::image, seq, &inputs.at(seq));
    auto& f = frames.emplace_back(std::make_unique<std::vector<unsigned char>>(kFrame));
    for (std::size_t i = 0; i < kFrame; ++i) (*f)[i] = static_cast<unsigned char>(seq * 16 + i);
    w->pixels.out = {f->data(), kFrame, kW, kH};
    works.push_back(std::move(w));
    return *works.back();
  }
  Work& failed(std::uint64_t seq, const std::string& why) {
    Work& w = token(seq);
    w.sample.error = why;
    return w;
  }
  Work& flush() {
    works.push_back(std::make_unique<Work>());
    works.back()->reset_for(Work::Kind::flush, 99, nullptr);
    return *works.back();
  }
  Config cfg;
  imgpipe::detail::RunPlan plan;
  BatchResources res;
  std::vector<InputItem> inputs;
  std::vector<std::unique_ptr<std::vector<unsigned char>>> frames;
  std::vector<std::unique_ptr<Work>> works;
};

// Staged data (a device address the host cannot read) back to the host, by a copy.
std::vector<unsigned char> device_bytes(imgpipe::gpu::DeviceAddress p, std::size_t n, int device) {
  std::vector<unsigned char> h(n);
  const imgpipe::gpu::Stream s(device);
  imgpipe::gpu::copy_d2h_async(h.data(), p, n, s);
  s.synchronize();
  return h;
}

}  // namespace

TEST_CASE("pack: consecutive offsets in one slot, a batch per batch.size, failures in order, flush emits the rest") {
  Rig rig({-1});
  Pack pack(rig.res, Dispatch::round_robin, rig.cfg.batch, OnError::skip);
  std::vector<Work*> done;
  for (std::uint64_t i = 0; i < 5; ++i) done.push_back(pack(i == 1 ? &rig.failed(1, "corrupt") : &rig.token(i)));
  // Items 0, 2, 3 fill batch 0 (item 1 failed); item 4 opens batch 1.
  CHECK(done[0]->batch == nullptr);
  CHECK_FALSE(done[1]->dest.writer.has_value());
  REQUIRE(done[3]->batch != nullptr);
  const auto& b0 = *done[3]->batch;
  CHECK(b0.index == 0);
  CHECK(b0.count == 3);
  CHECK(b0.staged_bytes == 3 * kFrame);
  CHECK(done[0]->dest.offset == 0);
  CHECK(done[2]->dest.offset == kFrame);
  CHECK(done[3]->dest.offset == 2 * kFrame);
  CHECK(b0.samples[1].path == "img2.png");
  CHECK(b0.samples[1].input_index == 2);
  CHECK(done[4]->batch == nullptr);
  CHECK(done[4]->dest.writer->slot() != done[0]->dest.writer->slot());
  Work& f = rig.flush();
  pack(&f);
  REQUIRE(f.batch != nullptr);
  CHECK(f.batch->index == 1);
  CHECK(f.batch->count == 1);
  REQUIRE(pack.failures().size() == 1);
  CHECK(pack.failures()[0].path == "img1.png");
  CHECK(pack.failures()[0].reason == "corrupt");
  CHECK(pack.packed() == 4);
  CHECK(pack.stats().items == 4);  // packed frames only
}

TEST_CASE("pack: drop_last drops the partial batch and releases its slot, on_error fail throws at the bad input") {
  Config c = rig_config();
  c.batch.drop_last = true;
  Rig rig({-1}, c);
  Pack pack(rig.res, Dispatch::round_robin, rig.cfg.batch, OnError::skip);
  for (std::uint64_t i = 0; i < 4; ++i) pack(&rig.token(i));
  Work& f = rig.flush();
  pack(&f);
  CHECK(f.batch == nullptr);
  CHECK(pack.dropped() == 1);
  CHECK(rig.res.devices()[0]->in_flight == 1);  // batch 0 still out; the dropped one came back

  Rig rig2({-1});
  Pack strict(rig2.res, Dispatch::round_robin, rig2.cfg.batch, OnError::fail);
  strict(&rig2.token(0));
  try {
    strict(&rig2.failed(1, "truncated"));
    FAIL("no InputError");
  } catch (const imgpipe::InputError& e) {
    CHECK(std::string(e.what()).find("img1.png") != std::string::npos);
    CHECK(std::string(e.what()).find("truncated") != std::string::npos);
  }
}

TEST_CASE("pack: a frame larger than its slot share is a logic error, not an overrun") {
  Rig rig({-1});
  Pack pack(rig.res, Dispatch::round_robin, rig.cfg.batch, OnError::skip);
  std::vector<unsigned char> huge(rig.res.ring().slot_bytes() + 1);
  Work& w = rig.token(0);
  w.pixels.out = {huge.data(), huge.size(), kW, kH};
  CHECK_THROWS_AS(pack(&w), std::logic_error);
}

TEST_CASE("pack: round robin alternates devices, least loaded picks the device with fewer batches in flight") {
  for (Dispatch d : {Dispatch::round_robin, Dispatch::least_loaded}) {
    CAPTURE(static_cast<int>(d));
    Config c = rig_config();
    c.batch.size = 1;
    c.staging.slots = 4;
    Rig rig({-1, -1}, c);  // two host-backend contexts stand in for two GPUs
    Pack pack(rig.res, d, rig.cfg.batch, OnError::skip);
    auto& devs = rig.res.devices();
    std::vector<const void*> chosen;
    for (std::uint64_t i = 0; i < 3; ++i) {
      Work& w = rig.token(i);
      pack(&w);
      REQUIRE(w.batch);
      chosen.push_back(w.batch->dev);
      if (i == 1) --w.batch->dev->in_flight;  // device 1 finished batch 1 at once
    }
    CHECK(chosen[0] == devs[0].get());
    CHECK(chosen[1] == devs[1].get());
    // Round robin goes back to device 0; least loaded picks device 1 (0 in flight against 1).
    CHECK(chosen[2] == (d == Dispatch::round_robin ? devs[0].get() : devs[1].get()));
  }
}

TEST_CASE("pack_copy, transfer, gpu_ops, sink: a batch from tokens to a checked tensor on every device") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev.to_string());
    const int d = ordinal(dev);
    Rig rig({d});
    Pack pack(rig.res, Dispatch::round_robin, rig.cfg.batch, OnError::skip);
    PackCopy copy;
    Transfer transfer(rig.res);
    GpuOps gpu(imgpipe::stages::Transform(rig.cfg.transform, false).normalize_params(), rig.plan.resize,
               GpuOps::Op::normalize);
    std::vector<const DeviceBatch*> seen;
    std::vector<unsigned char> tensor;
    imgpipe::BatchCallback cb = [&](const DeviceBatch& b) {
      seen.push_back(&b);
      tensor = imgpipe::test::batch_to_host(b);
    };
    Sink sink(rig.cfg.sink, {}, rig.res.ring(), cb);

    std::vector<Work*> ws;
    for (std::uint64_t i = 0; i < kBatch; ++i) ws.push_back(copy(pack(&rig.token(i))));
    CHECK(copy.stats().items == kBatch);
    CHECK(copy.stats().bytes == kBatch * kFrame);
    Work* last = ws.back();
    REQUIRE(last->batch);
    transfer(last);
    CHECK(transfer.stats().bytes == kBatch * kFrame);
    // What reached the device is what the tokens carried, in order.
    last->batch->dev->upload.synchronize();  // the staging copy's stream
    const auto staged = device_bytes(last->batch->staged, kBatch * kFrame, d);
    std::vector<unsigned char> expect;
    for (std::uint64_t i = 0; i < kBatch; ++i) expect.insert(expect.end(), rig.frames[i]->begin(), rig.frames[i]->end());
    CHECK(staged == expect);
    gpu(last);
    CHECK(gpu.stats().items == 1);
    sink(last);
    REQUIRE(seen.size() == 1);
    CHECK(sink.delivered() == kBatch);
    REQUIRE(sink.records().size() == 1);
    // The tensor equals the normalise kernel's CPU twin over the same frames.
    imgpipe::kernels::NormalizeParams p = imgpipe::stages::Transform(rig.cfg.transform, false).normalize_params();
    std::vector<unsigned char> ref(kBatch * rig.plan.layout.out_sample_bytes);
    p.batch = kBatch;
    p.src = expect.data();
    p.dst = ref.data();
    imgpipe::kernels::normalize_ref(p, false);
    CHECK(tensor == ref);
    CHECK(sink.records()[0].checksum == imgpipe::kernels::checksum_ref(ref.data(), ref.size()));
    CHECK(rig.res.devices()[0]->in_flight == 0);
    rig.res.finish();
    transfer.finish();
    CHECK(rig.res.devices()[0]->transfer.batches == 1);
    CHECK(rig.res.devices()[0]->transfer.bytes == kBatch * kFrame);
  }
}

TEST_CASE("transfer, sink: zero-copy with a tensor the CPU made hands out device memory, never the mapped slot (host backend: the plain slot itself)") {
  Config c = rig_config();
  c.staging.transfer = imgpipe::TransferMode::zero_copy;
  c.transform.normalize.where = imgpipe::Where::cpu;  // the CPU makes the tensor: no kernel reads the slot
  c.transform.resize.where = imgpipe::Where::cpu;
  c.transform.dtype = imgpipe::DType::uint8;  // the tokens' frames are the tensor's samples
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev.to_string());
    const int d = ordinal(dev);
    Rig rig({d}, c);
    REQUIRE_FALSE(rig.plan.layout.device_output);
    REQUIRE(rig.plan.layout.out_sample_bytes == kFrame);
    const bool mapped = rig.res.ring().zero_copy();
    CHECK(mapped == (d >= 0));  // the host backend has no mapped memory: it copies
    // On the GPU every slot has a device buffer for the tensor, counted.
    const std::size_t per_slot = kBatch * kFrame + sizeof(std::uint64_t);  // + the checksum's
    const auto slots = static_cast<std::size_t>(rig.res.ring().slots());
    CHECK(rig.res.device_bytes() == (d >= 0 ? slots * per_slot : std::size_t{0}));
    Pack pack(rig.res, Dispatch::round_robin, rig.cfg.batch, OnError::skip);
    PackCopy copy;
    Transfer transfer(rig.res);
    GpuOps gpu(imgpipe::stages::Transform(rig.cfg.transform, false).normalize_params(), rig.plan.resize,
               GpuOps::Op::none);
    std::vector<unsigned char> tensor;
    const void* data = nullptr;
    imgpipe::BatchCallback cb = [&](const DeviceBatch& b) {
      data = b.data;
      tensor = imgpipe::test::batch_to_host(b);
    };
    Sink sink(rig.cfg.sink, {}, rig.res.ring(), cb);
    Work* w = nullptr;
    for (std::uint64_t i = 0; i < kBatch; ++i) w = copy(pack(&rig.token(i)));
    REQUIRE(w->batch);
    imgpipe::stages::BatchSlot& b = *w->batch;
    const imgpipe::stages::DeviceBuffers& buf = b.buffers();
    transfer(w);
    // The host backend: the batch stays in its slot (plain memory, one block).
    const unsigned char* block = rig.res.ring().host_block(b.slot);
    CHECK(rig.plan.layout.batch_in_slot == (d < 0));
    CHECK((block != nullptr) == (d < 0));
    CHECK(b.staged == (mapped ? rig.res.ring().device_pointer(b.slot) : imgpipe::gpu::DeviceAddress(block)));
    CHECK(transfer.stats().bytes == (mapped ? kBatch * kFrame : 0));  // the GPU's copy of the slot; none
    sink(gpu(w));
    REQUIRE(data != nullptr);
    // The batch's data is a device buffer of the batch, never the mapped slot.
    CHECK(data == (mapped ? buf.d_output.get() : static_cast<const void*>(block)));
    if (mapped) CHECK(imgpipe::gpu::DeviceAddress(data) != rig.res.ring().device_pointer(b.slot));
    std::vector<unsigned char> expect;
    for (std::uint64_t i = 0; i < kBatch; ++i) expect.insert(expect.end(), rig.frames[i]->begin(), rig.frames[i]->end());
    CHECK(tensor == expect);
    CHECK(sink.records().at(0).checksum == imgpipe::kernels::checksum_ref(expect.data(), expect.size()));
    rig.res.finish();
    transfer.finish();
    CHECK(rig.res.devices()[0]->transfer.batches == 1);
    if (d >= 0) CHECK(rig.res.devices()[0]->transfer.bytes == kBatch * kFrame);
  }
}

TEST_CASE("sink: a callback that throws still releases the slot, the next batches reuse it") {
  Rig rig({-1});
  Pack pack(rig.res, Dispatch::round_robin, rig.cfg.batch, OnError::skip);
  PackCopy copy;
  Transfer transfer(rig.res);
  GpuOps gpu(imgpipe::stages::Transform(rig.cfg.transform, false).normalize_params(), rig.plan.resize,
             GpuOps::Op::normalize);
  int calls = 0;
  imgpipe::BatchCallback cb = [&](const DeviceBatch&) {
    if (++calls == 1) throw std::runtime_error("consumer failed");
  };
  Sink sink(rig.cfg.sink, {}, rig.res.ring(), cb);
  std::uint64_t seq = 0;
  auto one_batch = [&] {
    Work* w = nullptr;
    for (int i = 0; i < kBatch; ++i) w = copy(pack(&rig.token(seq++)));
    return gpu(transfer(w));
  };
  CHECK_THROWS_WITH(sink(one_batch()), "consumer failed");
  CHECK(rig.res.devices()[0]->in_flight == 0);
  // Three more batches over two slots: each acquire finds its slot released.
  for (int k = 0; k < 3; ++k) sink(one_batch());
  CHECK(calls == 4);
  CHECK(sink.delivered() == 3 * kBatch);
}

TEST_CASE("sink: dump writes each batch as .npy and one manifest line per sample") {
  imgpipe::test::TempDir dir;
  Config c = rig_config();
  c.sink.type = imgpipe::SinkType::dump;
  c.sink.dir = (dir / "out").string();
  Rig rig({-1}, c);
  Pack pack(rig.res, Dispatch::round_robin, rig.cfg.batch, OnError::skip);
  PackCopy copy;
  Transfer transfer(rig.res);
  GpuOps gpu(imgpipe::stages::Transform(rig.cfg.transform, false).normalize_params(), rig.plan.resize,
             GpuOps::Op::normalize);
  Sink sink(rig.cfg.sink, {}, rig.res.ring(), {});
  Work* w = nullptr;
  for (int i = 0; i < kBatch; ++i) w = copy(pack(&rig.token(i)));
  sink(gpu(transfer(w)));
  const auto npy = imgpipe::test::read_bytes(dir / "out" / "batch_000000.npy");
  REQUIRE(npy.size() > 128);
  CHECK(std::memcmp(npy.data(), "\x93NUMPY", 6) == 0);
  const std::string header(npy.begin() + 10, npy.begin() + 10 + (npy[8] | (npy[9] << 8)));
  CHECK(header.find("'shape': (3, 3, 2, 4)") != std::string::npos);
  CHECK(npy.size() == 10 + header.size() + kBatch * rig.plan.layout.out_sample_bytes);
  std::ifstream manifest(dir / "out" / "manifest.jsonl");
  std::vector<std::string> lines;
  for (std::string l; std::getline(manifest, l);) lines.push_back(l);
  REQUIRE(lines.size() == kBatch);
  CHECK(lines[2].find("\"path\":\"img2.png\"") != std::string::npos);
}
