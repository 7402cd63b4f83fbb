// What the NVDEC backend keeps between videos (codecs/video/nvdec/nvdec_cache.hpp):
// the idle decoders are destroyed without a throw from the destructor paths
// that give them back, and the decoded frames' pools keep to their device's
// budget. The decoder itself: tests/pipeline/test_nvdec.cpp.
#include <doctest/doctest.h>

#include "common.hpp"

#if IMGPIPE_HAS_CUDA

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "codecs/video/demuxer.hpp"
#include "codecs/video/nvdec/nvdec_cache.hpp"
#include "codecs/video/nvdec/nvdec_decoder.hpp"
#include "codecs/video/video_devices.hpp"
#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"

using namespace imgpipe;
using codecs::nvdec::Engine;

namespace {

// A decoder that cannot be destroyed: its device does not exist, so making
// its context current fails (as cudaSetDevice fails during static
// destruction); its handle is never given to nvcuvid. compute-sanitizer
// reports each such call as an API error, so the case is named outside the
// GPU suite's "nvdec*" memcheck set.
std::unique_ptr<Engine> undestroyable() {
  auto e = std::make_unique<Engine>();
  e->device = 9999;
  e->dec = reinterpret_cast<CUvideodecoder>(static_cast<std::uintptr_t>(0x1));
  return e;
}

}  // namespace

TEST_CASE("decoder cache (NVDEC): idle decoders that cannot be destroyed do not throw from release() or the hold's deleter") {
  codecs::nvdec::Cache& cache = codecs::nvdec::cache();
  const int idle_before = cache.figures().idle;
  // The last holder lets go inside a destructor (the shared_ptr's deleter):
  // a throw there would end the process through std::terminate.
  {
    std::shared_ptr<void> hold = codecs::hold_nvdec_decoders();
    for (int i = 0; i < 3; ++i) cache.give(undestroyable());
    CHECK(cache.figures().idle == idle_before + 3);
  }
  CHECK(cache.figures().idle == idle_before);  // all three let go, none left behind
  // Given back while nothing holds the cache (~NvdecDecoder's path): destroyed at once.
  CHECK_NOTHROW(cache.give(undestroyable()));
  // Directly, and during unwinding.
  Engine e = *undestroyable();
  CHECK_NOTHROW(codecs::nvdec::Cache::destroy(e));
  try {
    struct GivesBack {
      ~GivesBack() { codecs::nvdec::cache().give(undestroyable()); }
    } during_unwinding;
    throw std::runtime_error("unwinding");
  } catch (const std::runtime_error& err) {
    CHECK(std::string(err.what()) == "unwinding");
  }
}

TEST_CASE("nvdec decoder: a codec NVDEC does not know is refused with the reason before any CUDA work, nothing leaked") {
  // The constructor throws after allocating its packet: LeakSanitizer (CI's
  // step 2) finds the packet if the throw leaks it.
  test::TempDir d;
  test::ffmpeg("-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 2 -c:v libx264 " + (d / "a.mp4").string());
  codecs::Demuxer dm((d / "a.mp4").string());
  codecs::VideoInfo info = dm.info();
  info.codec = "theora";
  CHECK_THROWS_WITH_AS(codecs::make_nvdec_decoder(dm.stream(), info, 0), "NVDEC cannot decode theora", Error);
}

TEST_CASE("nvdec frame pool (GPU): a device's pools keep to its budget, idle buffers of other sizes go first, "
          "and running out says so") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  codecs::set_nvdec_frame_budget(0, 3 * kMiB);
  {
    auto small = codecs::nvdec::FramePool::of(0, kMiB);
    auto large = codecs::nvdec::FramePool::of(0, 2 * kMiB);
    std::vector<std::shared_ptr<const void>> held;
    held.push_back(small->get());
    held.push_back(small->get());
    held.push_back(small->get());  // 3 MiB: the budget
    try {
      (void)small->get();
      FAIL("a buffer past the budget was given");
    } catch (const codecs::nvdec::FrameMemoryFull& e) {
      const std::string why = e.what();
      CHECK(why.find("GPU 0") != std::string::npos);
      CHECK(why.find("memory.nvdec_frames_mb = 3 MiB") != std::string::npos);
    }
    // Unbudgeted (a cross-device copy for a batch already formed): taken,
    // and counted.
    std::shared_ptr<const void> over = small->get(/*budgeted=*/false);
    CHECK(over.get() != nullptr);
    over.reset();
    held.clear();  // four 1 MiB buffers idle in the small pool (over the budget: idle ones stay until trimmed)
    // A 2 MiB buffer: the small pool's idle buffers are freed to make room.
    std::shared_ptr<const void> big = large->get();
    CHECK(big.get() != nullptr);
    CHECK_NOTHROW(held.push_back(small->get()));  // 2 + 1 MiB
    CHECK_THROWS_AS((void)small->get(), codecs::nvdec::FrameMemoryFull);
  }
  codecs::set_nvdec_frame_budget(0, 0);
  CHECK(cudaPeekAtLastError() == cudaSuccess);
}

#else
TEST_CASE("decoder cache (NVDEC): idle decoders that cannot be destroyed do not throw from release() or the hold's deleter") {
  IMGPIPE_SKIP_UNLESS(false, "built without CUDA");
}
#endif
