// A short soak in the suite (the long one, with RSS figures, is
// samples/bench_soak.cpp): one pipeline run again and again over a looped
// folder with ~1% bad inputs. Every run accounts for every input, the staging
// pool holds the same pinned bytes, and the heap in use does not grow from
// run to run (glibc's count of bytes handed out and not freed, which is
// independent of what the allocator caches; under ASan, LeakSanitizer checks
// leaks instead and this count is not kept).
#include <doctest/doctest.h>

#include <malloc.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IMGPIPE_TEST_OWN_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IMGPIPE_TEST_OWN_MALLOC 0
#endif
#endif
#ifndef IMGPIPE_TEST_OWN_MALLOC
#define IMGPIPE_TEST_OWN_MALLOC 1
#endif

TEST_CASE("soak: repeated looped runs with 1% bad inputs account for every input, pinned bytes and heap stay flat") {
  imgpipe::test::TempDir dir;
  const auto samples = imgpipe::test::sample_images();
  int good = 0;
  for (int c = 0; c < 5; ++c)
    for (const auto& p : samples) {
      fs::copy_file(p, dir / fmt::format("{}_{}", c, p.filename().string()));
      ++good;
    }
  imgpipe::test::write_bytes(dir / "2_zz_bad.jpg", {0xFF, 0xD8, 0xFF, 0xE0, 0x00});  // 1 bad per 100 good
  REQUIRE(good == 100);
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev.to_string());
    imgpipe::Config cfg;
    cfg.input.paths = {dir.path().string()};
    cfg.input.loop = 3;
    cfg.transform.resize.width = 64;
    cfg.transform.resize.height = 48;
    cfg.batch.size = 16;
    cfg.devices = dev;
    cfg.memory.track = true;
    imgpipe::Pipeline p(cfg);
    std::vector<std::uint64_t> pinned;
    std::vector<double> heap;
    for (int run = 0; run < 8; ++run) {
      CAPTURE(run);
      const imgpipe::Report r = p.run([](const imgpipe::DeviceBatch&) {});
      CHECK(r.inputs.delivered == 300);
      CHECK(r.inputs.failed == 3);
      CHECK(r.inputs.discovered == 303);
      REQUIRE(r.inputs.failures.size() == 3);
      for (const auto& f : r.inputs.failures) CHECK(f.path == (dir / "2_zz_bad.jpg").string());
      pinned.push_back(r.memory.pinned_bytes);
      const struct mallinfo2 m = ::mallinfo2();
      heap.push_back(static_cast<double>(m.uordblks + m.hblkhd) / (1 << 20));
    }
    for (const auto b : pinned) CHECK(b == pinned.front());
#if IMGPIPE_TEST_OWN_MALLOC
    // From the end of run 2 (caches filled) to the end of run 8.
    CAPTURE(heap[1]);
    CAPTURE(heap.back());
    CHECK(heap.back() - heap[1] < 1.0);
#endif
  }
}
