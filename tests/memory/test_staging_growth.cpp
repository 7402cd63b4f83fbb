// The staging ring's slots made with less room than a full batch
// (StagingOptions::initial_bytes, initial_slots) and grown by their holder
// (StagingRing::grow): what was written stays and is copied whole, writes and
// copies span the chunks, only a held slot grows, zero-copy slots are made
// whole, and the memory figures count what was made. On the host backend
// always and on GPU 0 when there is one.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "memory_helpers.hpp"
#include "memory/gpu.hpp"
#include "memory/staging_ring.hpp"

using imgpipe::StagingMemory;
using imgpipe::memory::SlotWriter;
using imgpipe::memory::StagingOptions;
using imgpipe::memory::StagingRing;
namespace gpu = imgpipe::gpu;
using imgpipe::test::read_back;
using imgpipe::test::ring_devices;
using imgpipe::test::ring_pattern;

namespace {

StagingOptions growing(int dev, std::size_t initial, std::size_t most, int slots = 3, int made = 1) {
  StagingOptions o;
  o.device = dev;
  o.slots = slots;
  o.slot_bytes = most;
  o.initial_bytes = initial;
  o.initial_slots = made;
  return o;
}

}  // namespace

TEST_CASE("staging growth: a slot made small grows for its holder, keeps what was written, copies whole") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    gpu::Stream stream(dev);
    constexpr std::size_t initial = 4096, most = 40000;
    StagingRing ring(growing(dev, initial, most));
    CHECK(ring.slot_bytes() == most);
    CHECK(ring.capacity(0) == initial);
    CHECK(ring.capacity(1) == 0);  // not made: one slot of three asked for
    CHECK(ring.staged_bytes() == initial);
    CHECK(ring.stats().misses == 1);

    const auto a = ring_pattern(most, 1);
    SlotWriter w = ring.acquire();
    REQUIRE(w.slot() == 0);
    CHECK(w.capacity() == initial);
    w.write(0, a.data(), 3000);
    CHECK_THROWS_AS(w.write(3000, a.data() + 3000, 2000), std::out_of_range);  // past the room it has
    // Twice the room, or what is asked when that is more; at most slot_bytes.
    SlotWriter bigger = ring.grow(0, 5000);
    CHECK(bigger.capacity() == 2 * initial);
    CHECK(ring.grow(0, 20000).capacity() == 20000);
    bigger = ring.grow(0, 30000);
    CHECK(bigger.capacity() == most);  // 20000 doubled
    CHECK(ring.capacity(0) == most);
    CHECK(ring.grow(0, 100).capacity() == most);  // room enough: nothing made
    // The older writer still writes its own range; the new one spans every
    // chunk in one write (4096, 8192, 20000 and 40000 are chunk edges).
    w.write(3000, a.data() + 3000, initial - 3000);
    bigger.write(initial, a.data() + initial, most - initial);
    bigger.write(4000, a.data() + 4000, 6500);  // the same bytes again, over three chunks

    gpu::DeviceBuffer d(dev, most);
    ring.copy_to_device(0, d.get(), most, stream);
    gpu::DeviceBuffer part(dev, 9000);
    ring.copy_to_device(0, 3000, part.get(), 9000, stream);  // a run over three chunks
    ring.release(0, stream);
    const auto whole = read_back(d, most, stream);
    CHECK(std::equal(a.begin(), a.end(), whole.begin()));
    const auto run = read_back(part, 9000, stream);
    CHECK(std::equal(a.begin() + 3000, a.begin() + 12000, run.begin()));
    CHECK_THROWS_AS(ring.copy_to_device(0, 1, d.get(), most, stream), std::out_of_range);

    const imgpipe::memory::StagingStats s = ring.stats();
    CHECK(s.misses == 1 + 3);  // the first chunk, and three grown
    CHECK(s.grown == 3);
    CHECK(s.staged_bytes == most);
    CHECK(ring.staged_bytes() == most);
    ring.drain();
  }
}

TEST_CASE("staging growth: a slot not made gets its first room when its holder grows it, and only a held slot grows") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    gpu::Stream stream(dev);
    StagingRing ring(growing(dev, 8192, 65536, 2, 1));
    CHECK_THROWS_AS(ring.grow(1, 100), std::logic_error);  // not acquired
    SlotWriter w0 = ring.acquire();
    SlotWriter w1 = ring.acquire();
    REQUIRE(w1.slot() == 1);
    CHECK(w1.capacity() == 0);
    CHECK_THROWS_AS(w1.write(0, "x", 1), std::out_of_range);
    CHECK(ring.grow(1, 100).capacity() == 8192);  // the initial room, at least
    CHECK_THROWS_AS(ring.grow(1, 65537), std::out_of_range);
    CHECK(ring.capacity(1) == 8192);
    ring.release(0, stream);
    ring.release(1, stream);
    CHECK_THROWS_AS(ring.grow(0, 10000), std::logic_error);  // released: its holder is gone
    CHECK(ring.staged_bytes() == 2 * 8192);
    // A kept ring's next run starts from slot 0 again.
    (void)ring.acquire();
    ring.rewind();
    ring.release(0, stream);
    CHECK(ring.acquire().slot() == 0);
    ring.release(0, stream);
    ring.drain();
  }
}

TEST_CASE("staging growth: zero-copy slots are made whole, every one, whatever the initial room asked") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    StagingOptions o = growing(dev, 4096, 32768, 3, 1);
    o.transfer = imgpipe::TransferMode::zero_copy;
    imgpipe::test::LogCapture log;  // the host backend warns that it copies instead
    StagingRing ring(o);
    for (int i = 0; i < 3; ++i) CHECK(ring.capacity(i) == 32768);
    CHECK(ring.staged_bytes() == 3 * 32768);
    CHECK(ring.stats().misses == 3);
    SlotWriter w = ring.acquire();
    CHECK(w.capacity() == 32768);
    CHECK(ring.grow(w.slot(), 32768).capacity() == 32768);
    CHECK(ring.stats().grown == 0);
  }
}

TEST_CASE("staging growth: track lists the grown chunks with their site, and every chunk comes back") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    imgpipe::test::LogCapture log;
    {
      StagingOptions o = growing(dev, 4096, 20000, 2, 2);
      o.track = true;
      StagingRing ring(o);
      SlotWriter w = ring.acquire();
      (void)ring.grow(w.slot(), 12000);
      const std::string report = ring.tracking_report();
      CAPTURE(report);
      CHECK(report.find("staging: 2 block(s)") != std::string::npos);
      CHECK(report.find("staging (grown): 1 block(s)") != std::string::npos);
      CHECK(report.find("staging_ring.cpp:") != std::string::npos);
      ring.release(w.slot(), gpu::Stream(dev));
    }
    CHECK(log.count("still allocated") == 0);
  }
}

TEST_CASE("staging growth: plain_span is the slot's own memory for a range inside one plain chunk, else null, and host_block a one-chunk slot") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    gpu::Stream stream(dev);
    constexpr std::size_t initial = 4096, most = 40000;
    StagingRing ring(growing(dev, initial, most, 2, 2));
    const bool plain = ring.kind(0) == imgpipe::memory::MemoryKind::pageable;  // the host backend's; a GPU's is page-locked
    CHECK(plain == (dev < 0));
    SlotWriter w = ring.acquire();
    CHECK((ring.host_block(w.slot()) != nullptr) == plain);  // one chunk
    unsigned char* span = w.plain_span(100, 200);
    CHECK((span != nullptr) == plain);
    if (span) {  // written in place, read back through the ring's copy
      std::fill(span, span + 200, std::uint8_t{0x5A});
      gpu::DeviceBuffer d(dev, 200);
      ring.copy_to_device(w.slot(), 100, d.get(), 200, stream);
      const auto back = read_back(d, 200, stream);
      CHECK(std::all_of(back.begin(), back.end(), [](std::uint8_t b) { return b == 0x5A; }));
    }
    SlotWriter grown = ring.grow(w.slot(), 10000);
    CHECK(ring.host_block(w.slot()) == nullptr);  // two chunks now
    CHECK((grown.plain_span(initial, 1000) != nullptr) == plain);  // inside the second chunk
    CHECK(grown.plain_span(initial - 10, 20) == nullptr);  // over the chunks' edge: write() a copy
    CHECK_THROWS_AS(grown.plain_span(grown.capacity() - 10, 20), std::out_of_range);
    ring.release(w.slot(), stream);
    ring.drain();
  }
}

TEST_CASE("staging ring (host): prefer_written hands a slot out again before a fresh one, waiting briefly for it") {
  gpu::Stream stream(-1);
  StagingOptions o = growing(-1, 4096, 4096, 3, -1);
  o.prefer_written = true;
  StagingRing ring(o);
  // Given back before the next acquire: the same slot again, not the next in ring order.
  SlotWriter w = ring.acquire();
  REQUIRE(w.slot() == 0);
  ring.release(0, stream);
  CHECK(ring.acquire().slot() == 0);
  // Slot 0 held: the acquire waits for it, and takes it when it comes back in time.
  std::thread giver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ring.release(0, stream);
  });
  const auto t0 = std::chrono::steady_clock::now();
  const int again = ring.acquire().slot();
  giver.join();
  CHECK(again == 0);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(15));
  // Held past the wait: a fresh slot, then that one counts as written too.
  const int fresh = ring.acquire().slot();
  CHECK(fresh == 1);
  ring.release(fresh, stream);
  const int next = ring.acquire().slot();
  CHECK(next == 1);  // written before: no wait, not slot 2
  ring.release(0, stream);
  ring.release(next, stream);
  // Without the option the ring hands slots out in ring order.
  StagingRing plain(growing(-1, 4096, 4096, 3, -1));
  CHECK(plain.acquire().slot() == 0);
  plain.release(0, stream);
  CHECK(plain.acquire().slot() == 1);
  plain.release(1, stream);
}
