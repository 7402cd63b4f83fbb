// FixedSlotResource: N equal blocks made once from the upstream, handed out
// and taken back without asking it again; exhaustion, bad requests, an
// upstream failure half way through construction, and thread safety. Over
// counted pageable memory here; over write-combined memory on a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "memory/fault_injection.hpp"
#include "memory/host_memory_chain.hpp"
#include "memory/memory_helpers.hpp"
#include "memory/slot_resource.hpp"
#include "memory/statistics_adaptor.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
}  // namespace

TEST_CASE("slot resource: the blocks are made once, at construction, in whole pages") {
  fault_injection::Scope faults;
  PageableResource pageable;
  StatisticsAdaptor<PageableResource> upstream(pageable);
  {
    FixedSlotResource slots(upstream, 10000, 3);
    CHECK(slots.slot_bytes() == 3 * 4096);
    CHECK(slots.slots() == 3);
    CHECK(slots.free_slots() == 3);
    CHECK(slots.upstream_allocations() == 3);
    CHECK(upstream.stats().allocations == 3);
    CHECK(upstream.stats().bytes == 3 * 3 * 4096);
    // Handing slots out and back never asks the upstream (an injected failure stays pending).
    fault_injection::fail_next(MemoryKind::pageable, 1);
    std::set<void*> seen;
    for (int round = 0; round < 5; ++round) {
      void* a = slots.allocate(10000, 4096);
      void* b = slots.allocate(0);
      void* c = slots.allocate(slots.slot_bytes());
      CHECK(slots.free_slots() == 0);
      for (void* p : {a, b, c}) {
        CHECK(reinterpret_cast<std::uintptr_t>(p) % 4096 == 0);
        seen.insert(p);
      }
      slots.deallocate(b, 0);
      slots.deallocate(a, 10000, 4096);
      slots.deallocate(c, slots.slot_bytes());
    }
    CHECK(seen.size() == 3);
    CHECK(fault_injection::pending(MemoryKind::pageable) == 1);
    CHECK(upstream.stats().allocations == 3);
    CHECK(slots.hits() == 15);
  }
  CHECK(upstream.stats().bytes == 0);  // every block went back at destruction
  fault_injection::clear();
  CHECK(FixedSlotResource(upstream, 0, 1).slot_bytes() == 4096);
}

TEST_CASE("slot resource: exhaustion, requests that do not fit, foreign pointers") {
  PageableResource pageable;
  FixedSlotResource slots(pageable, 4096, 2);
  void* a = slots.allocate(100);
  void* b = slots.allocate(100);
  CHECK_THROWS_AS((void)slots.allocate(100), std::bad_alloc);
  slots.deallocate(a, 100);
  CHECK(slots.allocate(100) == a);  // the slot just freed
  CHECK_THROWS_AS((void)slots.allocate(4097), std::invalid_argument);
  CHECK_THROWS_AS((void)slots.allocate(64, 8192), std::invalid_argument);
  CHECK_THROWS_AS((void)slots.allocate(64, 48), std::invalid_argument);
  test::LogCapture log;
  int x = 0;
  slots.deallocate(&x, 4);
  slots.deallocate(b, 100);
  slots.deallocate(b, 100);  // twice
  CHECK(log.count("not a slot") == 1);
  CHECK(log.count("already free") == 1);
  CHECK(slots.free_slots() == 1);
  slots.deallocate(a, 100);
  CHECK_THROWS_AS(FixedSlotResource(pageable, 4096, 0), std::invalid_argument);
}

TEST_CASE("slot resource: an upstream failure during construction returns the blocks made") {
  fault_injection::Scope faults;
  PageableResource pageable;
  StatisticsAdaptor<PageableResource> upstream(pageable);
  // The third upstream allocation fails (injected just before it).
  struct FailThird {
    StatisticsAdaptor<PageableResource>& up;
    int n = 0;
    void* allocate(std::size_t bytes, std::size_t alignment) {
      if (++n == 3) fault_injection::fail_next(MemoryKind::pageable, 1);
      return up.allocate(bytes, alignment);
    }
    void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept { up.deallocate(p, bytes, alignment); }
  } failing{upstream};
  CHECK_THROWS_AS(FixedSlotResource(failing, 4096, 5), CudaError);
  CHECK(upstream.stats().allocations == 2);
  CHECK(upstream.stats().bytes == 0);
  CHECK(upstream.stats().failures == 1);
}

TEST_CASE("slot resource: a slot is never held by two threads at once") {
  PageableResource pageable;
  FixedSlotResource slots(pageable, 4096, 4);
  {
    std::vector<void*> all;
    for (int i = 0; i < 4; ++i) all.push_back(slots.allocate(64));
    for (void* p : all) {
      std::memset(p, 0, 64);
      slots.deallocate(p, 64);
    }
  }
  std::atomic<int> clashes{0}, refusals{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        void* p = nullptr;
        try {
          p = slots.allocate(64);
        } catch (const std::bad_alloc&) {
          ++refusals;  // all four in use: expected now and then
          continue;
        }
        std::atomic_ref<int> owner(*static_cast<int*>(p));
        if (owner.exchange(t + 1) != 0) ++clashes;
        owner.store(0);
        slots.deallocate(p, 64);
      }
    });
  for (auto& th : threads) th.join();
  CHECK(clashes.load() == 0);
  CHECK(slots.free_slots() == 4);
  CHECK(slots.hits() + static_cast<std::uint64_t>(refusals.load()) == 4 + 8 * 2000);  // 4: the zeroing above
}

TEST_CASE("slot resource (GPU): write-combined slots through the chain") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  HostMemoryChain chain({.kind = MemoryKind::write_combined, .device = 0, .name = "slots"});
  FixedSlotResource slots(chain, 3 * MiB, 3);
  CHECK(chain.page_locked().bytes == 3 * 3 * MiB);
  CHECK(chain.page_locked().allocations == 3);
  void* p = slots.allocate(3 * MiB, 4096);
  CHECK(chain.kind_of(p) == MemoryKind::write_combined);
  test::fill(p, 3 * MiB, 5);  // written, never read by the CPU
  CHECK(test::read_through_device(p, 3 * MiB) == test::pattern(3 * MiB, 5));
  slots.deallocate(p, 3 * MiB, 4096);
  CHECK(chain.page_locked().allocations == 3);
}
