// The pull API and the staging ring under memory failures: a batch release
// that fails changes nothing (the batch stays held, its slot is not lost), a
// stream dropped while releases fail neither terminates nor hangs, a run
// whose write-combined staging CUDA refuses completes on the fallback, and
// the pull API's calls and the push API's run and destructor leave the
// caller's CUDA device and context as they were. Release failures are injected (memory/fault_injection.hpp) where the
// ring makes and records its release event, so these run on every backend.
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "imgpipe/pipeline.hpp"
#include "memory/fault_injection.hpp"
#include "memory/gpu.hpp"

using imgpipe::Batch;
using imgpipe::BatchStream;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::DeviceSelection;
using imgpipe::Pipeline;
namespace fi = imgpipe::memory::fault_injection;
namespace gpu = imgpipe::gpu;
using namespace std::chrono_literals;

namespace {

// 20 sample images in batches of `batch`, decoded on the CPU, `slots` staging slots.
Config config(const DeviceSelection& dev, int batch, int slots) {
  Config c;
  c.input.paths = {imgpipe::test::sample_dir().string()};
  c.devices = dev;
  c.batch.size = batch;
  c.staging.slots = slots;
  c.transform.resize.width = 48;
  c.transform.resize.height = 40;
  c.decode.where = imgpipe::Where::cpu;
  return c;
}

std::string label(const DeviceSelection& d) { return d.kind == DeviceSelection::Kind::cpu ? "cpu" : "gpu0"; }

// The batches left in `s`, released as they come.
int drain(BatchStream& s) {
  int n = 0;
  while (Batch b = s.next()) ++n;
  return n;
}

}  // namespace

TEST_CASE("pull API: a failing release keeps the batch and its slot, and a second release gives the slot back") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    fi::Scope faults;
    Pipeline p(config(dev, 4, 2));
    BatchStream stream = p.start();
    Batch first = stream.next();
    REQUIRE(first);
    const std::vector<unsigned char> want = imgpipe::test::batch_to_host(*first);
    fi::fail_next_release(1);
    CHECK_THROWS_AS(first.release(), imgpipe::CudaError);
    REQUIRE(first);  // still held: nothing changed hands
    CHECK(imgpipe::test::batch_to_host(*first) == want);
    CHECK_NOTHROW(first.release());
    CHECK_FALSE(first);
    // Its slot came back: holding the next batch, the one after it comes
    // through the freed slot, without moving the held one out of the ring.
    Batch second = stream.next();
    Batch third = stream.next();
    REQUIRE(second);
    REQUIRE(third);
    CHECK_FALSE(second.moved_out());
    second.release();
    third.release();
    CHECK(drain(stream) == 2);
    CHECK(stream.report().memory.held_batch_copies == 0);
  }
}

TEST_CASE("pull API: a batch dropped while its release fails still gives its slot back") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    fi::Scope faults;
    Pipeline p(config(dev, 4, 2));
    BatchStream stream = p.start();
    {
      Batch first = stream.next();
      REQUIRE(first);
      fi::fail_next_release(1);
    }  // ~Batch: the release fails; the handle is gone, the slot must not be
    CHECK(fi::pending_releases() == 0);
    Batch second = stream.next();
    Batch third = stream.next();
    REQUIRE(second);
    REQUIRE(third);
    CHECK_FALSE(second.moved_out());  // two slots: neither is lost
    second.release();
    third.release();
    CHECK(drain(stream) == 2);
    CHECK(stream.report().memory.held_batch_copies == 0);
  }
}

TEST_CASE("pull API: dropping a stream while its slot releases fail neither terminates nor hangs") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    fi::Scope faults;
    Pipeline p(config(dev, 4, 3));
    Batch held;
    {
      BatchStream stream = p.start();
      held = stream.next();
      REQUIRE(held);
      // Let the run hand over the batches of the other two slots, which the
      // stream's shut-down (noexcept) then releases: every release fails.
      std::this_thread::sleep_for(300ms);
      fi::fail_next_release(8);
    }
    fi::clear();
    REQUIRE(held);  // the held batch outlives its stream
    CHECK(held->size() == 4);
    held.release();
    // The Pipeline runs again (on the same resources when it kept them): no slot was lost.
    BatchStream again = p.start();
    CHECK(drain(again) == 5);
  }
}

TEST_CASE("staging fallback: a real cudaHostAlloc failure, and the run completes on pinned slots with decode.threads 1 (GPU)") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  fi::Scope faults;
  // The ring's write-combined slot is asked of CUDA for more than the host
  // has: cudaHostAlloc itself fails, on the thread that then runs every
  // stage (decode.threads 1), kernels included.
  fi::fail_next(imgpipe::memory::MemoryKind::write_combined, 1, fi::Failure::real_call);
  Config c = config(DeviceSelection::parse("0"), 4, 3);
  c.decode.threads = 1;
  c.staging.memory = imgpipe::StagingMemory::write_combined;
  SUBCASE("push API") {
    Pipeline p(c);
    std::size_t samples = 0;
    const imgpipe::Report r = p.run([&](const DeviceBatch& b) { samples += b.size(); });
    CHECK(samples == 20);
    CHECK(r.memory.staging_kind == "pinned");
  }
  SUBCASE("pull API") {
    Pipeline p(c);
    BatchStream s = p.start();
    CHECK(drain(s) == 5);
    CHECK(s.report().memory.staging_kind == "pinned");
  }
  CHECK(fi::fired() == 1);
}

#if IMGPIPE_HAS_CUDA
namespace {

// The calling thread's CUDA state: its current context and runtime device.
struct ThreadCuda {
  CUctx_st* context = nullptr;
  int device = -1;
  static ThreadCuda now() {
    ThreadCuda t;
    t.context = gpu::current_context();
    if (cudaGetDevice(&t.device) != cudaSuccess) t.device = -2;
    return t;
  }
  bool operator==(const ThreadCuda&) const = default;
};

// A pull-API run on this thread, whose CUDA state `prepare` sets,
// checking after every call that the state is as it was. With 2 slots and
// two batches held, the third batch moves the first out of the ring on this
// thread (a device buffer and an event made here); releases record slot
// events here; the stream's end frees resources here.
void pull_run(Pipeline& p, void (*prepare)()) {
  prepare();
  const ThreadCuda before = ThreadCuda::now();
  int checks = 0;
  auto same = [&](const char* after_what) {
    ++checks;
    const ThreadCuda t = ThreadCuda::now();
    CHECK_MESSAGE(t == before, "after ", after_what);
  };
  {
    BatchStream stream = p.start();
    same("start()");
    Batch a = stream.next();
    same("next()");
    Batch b = stream.next();
    Batch c = stream.next();
    same("next() moving a held batch out");
    CHECK(a.moved_out());
    a.release();
    same("release() of a moved-out batch");
    b.release();
    same("release()");
    c = Batch();
    same("~Batch");
    while (Batch d = stream.next()) {
    }
    same("the end");
    (void)stream.report();
  }
  same("~BatchStream");
  CHECK(checks == 8);
}

// The pull run on a fresh thread (one with no CUDA context until `prepare`).
void pull_run_keeps_thread_state(Pipeline& p, void (*prepare)()) {
  std::thread([&p, prepare] {
    try {
      pull_run(p, prepare);
    } catch (const std::exception& e) {  // a throw on this thread would end the process
      FAIL_CHECK("the pull run threw: ", e.what());
    }
  }).join();
}

}  // namespace

TEST_CASE("pull API (GPU): every call leaves the caller's thread without a context when it had none") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  // One GPU can show this much: a thread with no current context (the
  // runtime's current device is 0 and stays 0) still has none after each
  // call, although the library works on device 0 inside them.
  Pipeline p(config(DeviceSelection::parse("0"), 4, 2));
  pull_run_keeps_thread_state(p, [] { CHECK(gpu::current_context() == nullptr); });
}

TEST_CASE("pull API (GPU): every call leaves the caller's current device and context as they were") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  Pipeline p(config(DeviceSelection::parse("0"), 4, 2));
  // The caller's device: the last one (on one GPU, device 0 made current
  // here, a context the library must leave current).
  pull_run_keeps_thread_state(p, [] { gpu::set_device(gpu::device_count() - 1); });
}

namespace {

// Two push-API runs (the second takes the first's kept resources) and the
// Pipeline's end on a fresh thread whose CUDA state `prepare` sets,
// checking after each that the state is as it was.
void push_run_keeps_thread_state(void (*prepare)()) {
  std::thread([prepare] {
    try {
      prepare();
      const ThreadCuda before = ThreadCuda::now();
      {
        Pipeline p(config(DeviceSelection::parse("0"), 4, 2));
        for (int run = 0; run < 2; ++run) {
          std::size_t samples = 0;
          p.run([&](const DeviceBatch& b) { samples += b.size(); });
          CHECK(samples == 20);
          CHECK_MESSAGE(ThreadCuda::now() == before, "after run() ", run);
        }
      }
      CHECK_MESSAGE(ThreadCuda::now() == before, "after ~Pipeline");
    } catch (const std::exception& e) {  // a throw on this thread would end the process
      FAIL_CHECK("the push run threw: ", e.what());
    }
  }).join();
}

}  // namespace

TEST_CASE("push API (GPU): Pipeline::run and ~Pipeline leave the caller's thread without a context when it had none") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  push_run_keeps_thread_state([] { CHECK(gpu::current_context() == nullptr); });
}

TEST_CASE("push API (GPU): Pipeline::run and ~Pipeline leave the caller's current device and context as they were") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  // The last device (device 0 on one GPU) made current here: a context the run must leave current.
  push_run_keeps_thread_state([] {
    gpu::set_device(gpu::device_count() - 1);
    CHECK(gpu::current_context() != nullptr);
  });
}
#endif
