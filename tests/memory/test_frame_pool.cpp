// FramePool: blocks for decoded video frames, reused by size, page-locked
// within the budget (direct) and pageable past it; idle blocks of another
// size make room before the budget turns a block pageable. On the host
// backend every block is pageable and direct. The pinned half runs on a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common.hpp"
#include "memory/frame_pool.hpp"

using namespace imgpipe::memory;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;

// A host-backend pool of pageable blocks that frees idle blocks of another
// size once more than `idle` bytes are idle.
FramePoolOptions pageable(std::size_t idle) {
  FramePoolOptions o;
  o.device = -1;
  o.page_locked = false;
  o.idle_bytes = idle;
  return o;
}

// Four blocks of 1 MiB taken from `pool`.
std::vector<FramePool::Block> four_small(FramePool& pool) {
  std::vector<FramePool::Block> small;
  for (int i = 0; i < 4; ++i) small.push_back(pool.allocate(MiB));
  return small;
}
}  // namespace

TEST_CASE("frame pool: released blocks are reused by size, and only blocks in use answer direct()") {
  FramePool pool({-1, false, 0});  // the host backend
  const FramePool::Block a = pool.allocate(3 * MiB + 5);
  CHECK(a.bytes == 3 * MiB + 4096);  // whole pages
  CHECK(reinterpret_cast<std::uintptr_t>(a.data) % 4096 == 0);
  CHECK(a.direct);  // host backend: the copies are memcpy
  std::memset(a.data, 7, a.bytes);
  CHECK(pool.direct(a.data));
  CHECK_FALSE(pool.direct(static_cast<char*>(a.data) + 64));  // not a block's start
  const FramePool::Block b = pool.allocate(MiB);
  CHECK(b.data != a.data);
  pool.release(a.data);
  CHECK_FALSE(pool.direct(a.data));  // idle
  pool.release(a.data);              // twice: ignored
  int other = 0;
  pool.release(&other);  // not the pool's: ignored
  const FramePool::Block c = pool.allocate(3 * MiB + 100);  // the same page count: a's block again
  CHECK(c.data == a.data);
  const FramePool::Block d = pool.allocate(3 * MiB + 100);  // none idle: a new one
  CHECK(d.data != a.data);
  const FramePool::Figures f = pool.figures();
  CHECK(f.blocks_made == 3);
  CHECK(f.reused == 1);
  CHECK(f.pageable_blocks == 0);  // the host backend's blocks are direct
  CHECK(f.page_locked_bytes == 0);
  CHECK_THROWS_AS(pool.allocate(0), std::invalid_argument);
  for (const auto& blk : {b, c, d}) pool.release(blk.data);
}

TEST_CASE("frame pool: blocks taken and released from many threads") {
  FramePool pool({-1, false, 0});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 200; ++i) {
        const FramePool::Block b = pool.allocate(static_cast<std::size_t>(1 + (i + t) % 3) * 4096);
        static_cast<unsigned char*>(b.data)[0] = static_cast<unsigned char>(i);
        pool.release(b.data);
      }
    });
  for (auto& t : threads) t.join();
  const FramePool::Figures f = pool.figures();
  CHECK(f.blocks_made + f.reused == 1600);
  CHECK(f.blocks_made <= 8 * 3);  // at most one block of each size a thread at once
}

TEST_CASE("frame pool (GPU): page-locked within the budget, pageable past it, idle blocks of another size freed first") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  FramePool pool({0, true, 2 * MiB});
  const FramePool::Block a = pool.allocate(MiB);
  CHECK(a.direct);
  const FramePool::Block b = pool.allocate(MiB);
  CHECK(b.direct);
  const FramePool::Block c = pool.allocate(MiB);  // past the budget: pageable, copied into the staging
  CHECK_FALSE(c.direct);
  CHECK_FALSE(pool.direct(c.data));
  CHECK(pool.figures().page_locked_bytes == 2 * MiB);
  CHECK(pool.figures().pageable_blocks == 1);
  pool.release(a.data);
  pool.release(b.data);
  // A new size: the idle 1 MiB blocks go, and the new block is page-locked.
  const FramePool::Block d = pool.allocate(2 * MiB);
  CHECK(d.direct);
  CHECK(pool.figures().page_locked_bytes == 2 * MiB);
  CHECK(pool.figures().peak_page_locked_bytes == 2 * MiB);
  pool.release(c.data);
  pool.release(d.data);
}

TEST_CASE("frame pool: a pageable pool's blocks are never direct, and idle blocks of another size past idle_bytes are freed") {
  FramePool pool(pageable(3 * MiB));
  const std::vector<FramePool::Block> small = four_small(pool);
  for (const auto& b : small) {
    CHECK_FALSE(b.direct);
    CHECK_FALSE(pool.direct(b.data));
  }
  for (const auto& b : small) pool.release(b.data);
  CHECK(pool.figures().idle_bytes == 4 * MiB);
  const FramePool::Block again = pool.allocate(MiB);  // reused: no miss, nothing freed
  CHECK(std::any_of(small.begin(), small.end(), [&](const FramePool::Block& b) { return b.data == again.data; }));
  CHECK(pool.figures().idle_bytes == 3 * MiB);
  pool.release(again.data);
  // A miss with 4 MiB idle (> 3): the idle 1 MiB blocks go.
  const FramePool::Block big = pool.allocate(2 * MiB);
  CHECK(pool.figures().idle_bytes == 0);
  CHECK(pool.figures().blocks_made == 5);
  CHECK(pool.figures().pageable_blocks == 0);  // counted for page-locked pools only
  pool.release(big.data);
  // Under idle_bytes nothing is freed on a miss.
  const FramePool::Block other = pool.allocate(MiB);
  CHECK(pool.figures().idle_bytes == 2 * MiB);
  pool.release(other.data);
}

TEST_CASE("frame pool: begin_run starts the figures over the blocks held, which the next run reuses") {
  FramePool pool({-1, false, 0});
  const FramePool::Block a = pool.allocate(MiB);
  const FramePool::Block b = pool.allocate(2 * MiB);
  pool.release(a.data);
  pool.release(b.data);
  CHECK(pool.figures().blocks_made == 2);
  pool.begin_run();
  FramePool::Figures f = pool.figures();
  CHECK(f.blocks_made == 0);
  CHECK(f.reused == 0);
  CHECK(f.idle_bytes == 3 * MiB);  // still held
  const FramePool::Block again = pool.allocate(2 * MiB);
  CHECK(again.data == b.data);
  f = pool.figures();
  CHECK(f.blocks_made == 0);
  CHECK(f.reused == 1);
  CHECK(pool.options() == FramePoolOptions{-1, false, 0});
  CHECK_FALSE(pool.options() == FramePoolOptions{-1, false, MiB});
  pool.release(again.data);
}

TEST_CASE("frame pool: threads that miss make their blocks at once, and idle blocks of another size are freed once") {
  FramePool pool(pageable(2 * MiB));
  for (const auto& blk : four_small(pool)) pool.release(blk.data);
  std::vector<std::thread> threads;
  std::vector<FramePool::Block> got(8);
  for (int t = 0; t < 8; ++t) threads.emplace_back([&pool, &got, t] { got[t] = pool.allocate(3 * MiB); });
  for (auto& t : threads) t.join();
  const FramePool::Figures f = pool.figures();
  CHECK(f.blocks_made == 4 + 8);
  CHECK(f.blocks_freed == 4);  // the first miss past idle_bytes took them all
  CHECK(f.idle_bytes == 0);
  for (const auto& blk : got) {
    CHECK(blk.bytes == 3 * MiB);
    std::memset(blk.data, 1, blk.bytes);
    pool.release(blk.data);
  }
  CHECK(pool.figures().idle_bytes == 24 * MiB);
}
