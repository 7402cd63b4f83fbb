// FrameRing: where each GPU decode call's frames go in a device's frame area,
// and which earlier uses must be finished before the engines write there.
// Byte-level model: every placed range is painted with its use's number in a
// shadow of the area; a range may only be placed over bytes whose use was
// waited for.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "stages/frame_ring.hpp"

using imgpipe::stages::FrameRing;

TEST_CASE("frame ring: calls follow one another, wrap at the end, and wait only for what they overlap") {
  FrameRing<int> ring(100);
  std::vector<int> waited;
  auto wait = [&](int& id) { waited.push_back(id); };
  CHECK(ring.place(40, 1, wait) == 0);
  CHECK(ring.place(40, 2, wait) == 40);
  CHECK(waited.empty());
  // 20 bytes are left at the end: a 30-byte range goes to the start, over use 1.
  CHECK(ring.place(30, 3, wait) == 0);
  CHECK(waited == std::vector<int>{1});
  // 30..70 overlaps use 2 (40..80), not use 3's 0..30.
  CHECK(ring.place(40, 4, wait) == 30);
  CHECK(waited == std::vector<int>{1, 2});
  CHECK(ring.uses() == 2);
  CHECK(ring.newest() == 4);
  // The whole area: every use before.
  CHECK(ring.place(100, 5, wait) == 0);
  CHECK(waited == std::vector<int>{1, 2, 3, 4});
  CHECK(ring.uses() == 1);
  // Cleared: from the start, nothing to wait for.
  std::vector<int> dropped;
  ring.clear([&](int& id) { dropped.push_back(id); });
  CHECK(dropped == std::vector<int>{5});
  CHECK(ring.place(10, 6, wait) == 0);
  CHECK(waited.size() == 4);
  // Nothing, or more than the area, is a caller's error.
  CHECK_THROWS_AS(ring.place(0, 7, wait), std::invalid_argument);
  CHECK_THROWS_AS(ring.place(101, 7, wait), std::invalid_argument);
}

TEST_CASE("frame ring: no range is ever placed over bytes of a use not waited for (random calls)") {
  for (const std::size_t capacity : {std::size_t{64}, std::size_t{1000}, std::size_t{4096}}) {
    CAPTURE(capacity);
    std::mt19937 rng(static_cast<std::uint32_t>(capacity));
    FrameRing<int> ring(capacity);
    std::vector<int> owner(capacity, 0);  // the use that last wrote each byte; 0: none
    std::vector<bool> finished(2001, false);  // by use; 0 (no writer) counts as finished
    finished[0] = true;
    int shared = 0;  // calls placed beside outstanding uses without waiting for any
    for (int id = 1; id <= 2000; ++id) {
      std::uniform_int_distribution<std::size_t> size(1, capacity);
      const std::size_t bytes = id % 7 == 0 ? capacity : size(rng) / (1 + id % 4);
      const std::size_t before = ring.uses();
      int waits = 0;
      const std::size_t at = ring.place(std::max<std::size_t>(bytes, 1), id, [&](int& use) {
        finished[static_cast<std::size_t>(use)] = true;
        ++waits;
      });
      if (before > 0 && waits == 0) ++shared;
      const std::size_t n = std::max<std::size_t>(bytes, 1);
      REQUIRE(at + n <= capacity);
      std::size_t unfinished = capacity;  // the first byte whose writer was not waited for
      for (std::size_t i = at; i < at + n; ++i) {
        if (!finished[static_cast<std::size_t>(owner[i])] && unfinished == capacity) unfinished = i;
        owner[i] = id;
      }
      CAPTURE(unfinished);
      REQUIRE(unfinished == capacity);  // every byte's writer was waited for (or there was none)
      // The uses still outstanding are the newest, and fewer than the area has bytes.
      REQUIRE(ring.uses() <= capacity);
      REQUIRE(ring.newest() == id);
    }
    // Small ranges share the area: many calls waited for nothing.
    CHECK(shared > 100);
  }
}
