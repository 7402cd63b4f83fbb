// The engine scheduler (codecs/image/nvjpeg/engine_scheduler.hpp) on its own.
// Without a GPU, through an EngineWork of the test's: one thread per device,
// one call at a time per device in the order submitted, devices side by
// side, done() never blocking, a call's exception carried back in the call,
// the meter and the trace written, queued calls dropped and the call in
// progress finished at destruction. With a GPU and nvJPEG, a real engine
// call decodes JPEGs as OpenCV does (it skips elsewhere).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "codecs/image/nvjpeg/engine_scheduler.hpp"
#include "common.hpp"
#include "nvjpeg_test_util.hpp"

namespace codecs = imgpipe::codecs;
using namespace std::chrono_literals;

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A call of `images` stand-in bitstreams for `device` (no decoder: the
// test's EngineWork makes it).
std::unique_ptr<codecs::EngineCall> call_for(int device, int images) {
  auto c = std::make_unique<codecs::EngineCall>();
  c->device = device;
  c->data.assign(static_cast<std::size_t>(images), nullptr);
  c->sizes.assign(static_cast<std::size_t>(images), 0);
  c->status.assign(static_cast<std::size_t>(images), 0);
  return c;
}

// What the test's work saw: the calls in the order they ran, on which thread,
// and how many ran at once.
struct Record {
  std::mutex m;
  std::vector<const codecs::EngineCall*> order;
  std::vector<std::thread::id> threads;
  std::atomic<int> running{0}, most{0};
  void enter(const codecs::EngineCall& c) {
    const int now = ++running;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::lock_guard lk(m);
    order.push_back(&c);
    threads.push_back(std::this_thread::get_id());
  }
};

// A latch the work waits on, opened by the test.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  bool entered = false;
  void pass() {
    std::unique_lock lk(m);
    entered = true;
    cv.notify_all();
    cv.wait(lk, [&] { return open; });
  }
  bool wait_entered(std::chrono::milliseconds limit) {
    std::unique_lock lk(m);
    return cv.wait_for(lk, limit, [&] { return entered; });
  }
  void release() {
    std::lock_guard lk(m);
    open = true;
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("engine scheduler: one device's calls run one at a time, in the order submitted, on its own thread") {
  codecs::GpuDecodeMeter meter;
  codecs::CallTrace trace;
  Record rec;
  const auto work = [&](codecs::EngineCall& c) {
    rec.enter(c);
    std::this_thread::sleep_for(2ms);
    --rec.running;
    return static_cast<int>(c.data.size());
  };
  codecs::EngineScheduler sched(meter, &trace, work);
  std::vector<std::unique_ptr<codecs::EngineCall>> calls;
  for (int i = 0; i < 6; ++i) calls.push_back(call_for(0, i + 1));
  const std::int64_t t0 = now_ns();
  for (auto& c : calls) sched.submit(*c);
  for (auto& c : calls) sched.wait(*c);
  for (auto& c : calls) {
    CHECK(sched.done(*c));
    CHECK_FALSE(c->error);
    CHECK(c->queued_ns >= t0);
  }
  REQUIRE(rec.order.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(rec.order[i] == calls[i].get());
  CHECK(rec.most.load() == 1);
  for (const auto& t : rec.threads) {
    CHECK(t == rec.threads.front());
    CHECK(t != std::this_thread::get_id());
  }
  // The meter: every call's images and time, none in progress now.
  CHECK(sched.calls() == 6);
  CHECK(meter.images.load() == 1 + 2 + 3 + 4 + 5 + 6);
  CHECK(meter.ns.load() >= 6 * 2'000'000);
  CHECK(meter.first_begin_ns() >= t0);
  CHECK(meter.busy_s(now_ns() + 1'000'000'000) == doctest::Approx(meter.ns.load() * 1e-9));
  // The trace: each call's times in order and its JPEGs.
  REQUIRE(trace.calls.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    const auto& c = trace.calls[i];
    CHECK(c[0] <= c[1]);
    CHECK(c[1] < c[2]);
    CHECK(c[3] == static_cast<std::int64_t>(i + 1));
    if (i > 0) CHECK(trace.calls[i - 1][2] <= c[1]);  // one after the other
  }
  imgpipe::test::TempDir dir;
  trace.append_to((dir / "trace.jsonl").string());
  const nlohmann::json j = nlohmann::json::parse(imgpipe::test::read_text(dir / "trace.jsonl"));
  CHECK(j["calls"].size() == 6);
  CHECK(j["calls"][5][3] == 6);
}

TEST_CASE("engine scheduler: each device has its own thread, and devices' calls run side by side") {
  codecs::GpuDecodeMeter meter;
  Record rec;
  // The first call of each device waits for the other's to begin: only a
  // thread each lets both be in progress at once.
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<bool> overlapped{true};
  const auto work = [&](codecs::EngineCall& c) {
    rec.enter(c);
    {
      std::unique_lock lk(m);
      ++arrived;
      cv.notify_all();
      if (!cv.wait_for(lk, 5s, [&] { return arrived >= 2; })) overlapped = false;
    }
    --rec.running;
    return 1;
  };
  codecs::EngineScheduler sched(meter, nullptr, work);
  auto a = call_for(0, 1), b = call_for(1, 1), c = call_for(0, 1);
  sched.submit(*a);
  sched.submit(*b);
  sched.submit(*c);
  sched.wait(*a);
  sched.wait(*b);
  sched.wait(*c);
  CHECK(overlapped.load());
  REQUIRE(rec.threads.size() == 3);
  CHECK(rec.most.load() == 2);
  std::thread::id device0, device1;
  for (std::size_t i = 0; i < 3; ++i) (rec.order[i]->device == 0 ? device0 : device1) = rec.threads[i];
  CHECK(device0 != device1);
  for (std::size_t i = 0; i < 3; ++i) CHECK(rec.threads[i] == (rec.order[i]->device == 0 ? device0 : device1));
  // Device 0's calls still in their order.
  CHECK(std::find(rec.order.begin(), rec.order.end(), a.get()) < std::find(rec.order.begin(), rec.order.end(), c.get()));
  CHECK(meter.images.load() == 3);
  CHECK(sched.calls() == 3);
}

TEST_CASE("engine scheduler: a call's exception comes back in the call, and the thread goes on") {
  codecs::GpuDecodeMeter meter;
  const auto work = [&](codecs::EngineCall& c) -> int {
    if (c.data.size() == 2) throw std::runtime_error("the engines refused the call");
    return static_cast<int>(c.data.size());
  };
  codecs::EngineScheduler sched(meter, nullptr, work);
  auto good = call_for(0, 1), bad = call_for(0, 2), after = call_for(0, 3);
  sched.submit(*good);
  sched.submit(*bad);
  sched.submit(*after);
  sched.wait(*after);
  REQUIRE(sched.done(*bad));
  CHECK_FALSE(good->error);
  CHECK_FALSE(after->error);
  REQUIRE(bad->error);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(bad->error), "the engines refused the call", std::runtime_error);
  // The failed call counts its time but neither a call nor images.
  CHECK(sched.calls() == 2);
  CHECK(meter.images.load() == 4);
  CHECK(meter.busy_s(now_ns() + 1'000'000'000) == doctest::Approx(meter.ns.load() * 1e-9));
}

TEST_CASE("engine scheduler: a call without a decoder fails in the call, not the process") {
  codecs::GpuDecodeMeter meter;
  codecs::EngineScheduler sched(meter);  // the default work: nvJPEG's batched decode
  auto c = call_for(0, 1);
  sched.submit(*c);
  sched.wait(*c);
  REQUIRE(c->error);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(c->error), "engine call without a decoder", std::invalid_argument);
  CHECK(sched.calls() == 0);
  CHECK(meter.images.load() == 0);
}

TEST_CASE("engine scheduler: destruction finishes the call in progress and drops the queued ones") {
  codecs::GpuDecodeMeter meter;
  Gate gate;
  const auto work = [&](codecs::EngineCall& c) {
    gate.pass();
    return static_cast<int>(c.data.size());
  };
  auto first = call_for(0, 1), second = call_for(0, 1);
  std::thread opener;
  {
    codecs::EngineScheduler sched(meter, nullptr, work);
    sched.submit(*first);
    sched.submit(*second);
    REQUIRE(gate.wait_entered(5s));
    // done() never blocks, even while the call is held.
    const auto t = std::chrono::steady_clock::now();
    CHECK_FALSE(sched.done(*first));
    CHECK_FALSE(sched.done(*second));
    CHECK(std::chrono::steady_clock::now() - t < 1s);
    // The gate opens once the destructor below has asked the threads to stop.
    opener = std::thread([&] {
      std::this_thread::sleep_for(200ms);
      gate.release();
    });
  }
  opener.join();
  CHECK(first->done);
  CHECK_FALSE(first->error);
  CHECK_FALSE(second->done);
  CHECK(meter.images.load() == 1);
}

TEST_CASE("engine scheduler: a real engine call decodes its JPEGs as OpenCV does") {
  const std::string no_gpu = nvjpeg_test::no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
#if IMGPIPE_HAS_CUDA
  using namespace nvjpeg_test;
  codecs::GpuJpegOptions options;
  if (!codecs::GpuJpegDecoder::probe(0).has_value()) options.backend = codecs::JpegBackend::gpu_hybrid;
  codecs::GpuJpegDecoder decoder(0, options);
  const std::vector<Sample> samples = baseline_samples();
  std::vector<const Sample*> chosen{&samples[0], &samples[1], &samples[5]};
  std::vector<const std::vector<std::uint8_t>*> streams;
  for (const Sample* s : chosen) streams.push_back(&s->jpeg);
  const Inputs in = inputs_for(decoder, streams);
  codecs::EngineCall call;
  std::vector<DeviceMem> outputs = alloc_outputs(chosen, &call.frames);
  const imgpipe::gpu::Stream stream(0);
  call.device = 0;
  call.decoder = &decoder;
  call.stream = &stream;
  call.data = in.ptrs;
  call.sizes = in.sizes;
  call.status.assign(chosen.size(), -1);
  call.decoded = imgpipe::gpu::Event(0, false);
  for (const Sample* s : chosen) {
    call.max_w = std::max(call.max_w, s->width);
    call.max_h = std::max(call.max_h, s->height);
  }
  codecs::GpuDecodeMeter meter;
  codecs::EngineScheduler sched(meter);
  sched.submit(call);
  sched.wait(call);
  if (call.error) std::rethrow_exception(call.error);
  for (const int s : call.status) CHECK(s == 0);
  CHECK(call.decoded.recorded());
  call.decoded.synchronize();
  for (std::size_t i = 0; i < chosen.size(); ++i)
    check_against_opencv(*chosen[i], call.frames[i], stream.get(), std::string(codecs::to_string(decoder.backend())));
  CHECK(sched.calls() == 1);
  CHECK(meter.images.load() == chosen.size());
  CHECK(meter.initializations.load() >= 1);
  decoder.release_stream();
#endif
}
