// The adaptors, each on its own: the budget (LimitingAdaptor), the counters
// (StatisticsAdaptor), the leak tracker (TrackingAdaptor), and the
// type-erased HostResourceRef. They run over pageable memory here (host
// backend) and over pinned memory where a GPU exists; they compose (a
// budget over counters over a kind).
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "imgpipe/memory/resources.hpp"
#include "memory/errors.hpp"
#include "memory/fault_injection.hpp"
#include "memory/limiting_adaptor.hpp"
#include "memory/resource_ref.hpp"
#include "memory/statistics_adaptor.hpp"
#include "memory/tracking_adaptor.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
using imgpipe::test::contains;
}  // namespace

TEST_CASE("budget: enforced before the upstream is asked, the error names the numbers, bytes come back") {
  fault_injection::Scope faults;
  PageableResource pageable;
  LimitingAdaptor<PageableResource> budget(pageable, 8 * MiB);
  CHECK(budget.limit() == 8 * MiB);
  void* a = budget.allocate(4 * MiB);
  void* b = budget.allocate(3 * MiB);
  CHECK(budget.used() == 7 * MiB);
  // The upstream is not asked: a pending injected failure stays pending.
  fault_injection::fail_next(MemoryKind::pageable, 1);
  try {
    (void)budget.allocate(2 * MiB);
    FAIL("the budget was not enforced");
  } catch (const BudgetError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(e.limit() == 8 * MiB);
    CHECK(e.held() == 7 * MiB);
    CHECK(e.requested() == 2 * MiB);
    CHECK(contains(what, "budget of 8388608 bytes (8.0 MiB)"));
    CHECK(contains(what, "7340032 bytes (7.0 MiB) held"));
    CHECK(contains(what, "2097152 bytes (2.0 MiB) more requested"));
  }
  CHECK(fault_injection::pending(MemoryKind::pageable) == 1);
  // An upstream failure does not take budget.
  CHECK_THROWS_AS((void)budget.allocate(MiB), CudaError);
  CHECK(budget.used() == 7 * MiB);
  void* c = budget.allocate(MiB);  // exactly to the limit
  CHECK(budget.used() == 8 * MiB);
  CHECK_THROWS_AS((void)budget.allocate(0 + 1), BudgetError);
  budget.deallocate(b, 3 * MiB);
  void* d = budget.allocate(3 * MiB);  // room again
  budget.deallocate(a, 4 * MiB);
  budget.deallocate(c, MiB);
  budget.deallocate(d, 3 * MiB);
  CHECK(budget.used() == 0);
}

TEST_CASE("budget: thread-safe, never past the limit") {
  PageableResource pageable;
  LimitingAdaptor<PageableResource> budget(pageable, 10 * 4096);
  std::atomic<int> refused{0}, peak_over{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        try {
          void* p = budget.allocate(4096);
          if (budget.used() > 10 * 4096) ++peak_over;
          budget.deallocate(p, 4096);
        } catch (const BudgetError&) {
          ++refused;
        }
      }
    });
  for (auto& t : threads) t.join();
  CHECK(peak_over.load() == 0);
  CHECK(budget.used() == 0);
}

TEST_CASE("statistics: bytes now and at the peak, counts, failures") {
  fault_injection::Scope faults;
  PageableResource pageable;
  StatisticsAdaptor<PageableResource> counted(pageable);
  CHECK(counted.stats().bytes == 0);
  void* a = counted.allocate(1000);
  void* b = counted.allocate(3000, 64);
  AllocationStats s = counted.stats();
  CHECK(s.bytes == 4000);
  CHECK(s.peak_bytes == 4000);
  CHECK(s.allocations == 2);
  CHECK(s.blocks() == 2);
  counted.deallocate(a, 1000);
  void* c = counted.allocate(500);
  s = counted.stats();
  CHECK(s.bytes == 3500);
  CHECK(s.peak_bytes == 4000);
  CHECK(s.total_bytes == 4500);
  CHECK(s.allocations == 3);
  CHECK(s.deallocations == 1);
  fault_injection::fail_next(MemoryKind::pageable, 1, fault_injection::Failure::bad_alloc);
  CHECK_THROWS_AS((void)counted.allocate(10), std::bad_alloc);
  CHECK(counted.stats().failures == 1);
  CHECK(counted.stats().allocations == 3);
  counted.deallocate(b, 3000, 64);
  counted.deallocate(c, 500);
  CHECK(counted.stats().bytes == 0);
  CHECK(counted.stats().blocks() == 0);
}

TEST_CASE("adaptors compose: a budget over counters over a kind") {
  PageableResource pageable;
  StatisticsAdaptor<PageableResource> counted(pageable);
  LimitingAdaptor<StatisticsAdaptor<PageableResource>> budget(counted, 2 * MiB);
  void* a = budget.allocate(MiB);
  void* b = budget.allocate(MiB);
  CHECK_THROWS_AS((void)budget.allocate(1), BudgetError);
  // The refusal never reached the counters.
  CHECK(counted.stats().failures == 0);
  CHECK(counted.stats().bytes == 2 * MiB);
  budget.deallocate(a, MiB);
  budget.deallocate(b, MiB);
  CHECK(counted.stats().peak_bytes == 2 * MiB);
  CHECK(counted.stats().bytes == 0);
}

TEST_CASE("tracking: a leaked block is reported with its allocation site") {
  PageableResource pageable;
  test::LogCapture log;
  {
    TrackingAdaptor<PageableResource> tracked(pageable, "leaky");
    CHECK(tracked.leak_report().empty());
    const int line = __LINE__ + 1;
    void* p = tracked.allocate(1000);
    void* q = tracked.allocate(MiB);
    CHECK(tracked.live_blocks() == 2);
    tracked.deallocate(q, MiB);
    const std::string report = tracked.leak_report();
    CAPTURE(report);
    CHECK(contains(report, "leaky: 1 block(s) (1000 B) still allocated"));
    CHECK(contains(report, "1000 bytes at "));
    CHECK(contains(report, "test_adaptors.cpp:" + std::to_string(line)));
    CHECK(contains(report, "DOCTEST_ANON_FUNC"));  // the test case's function
    CHECK(tracked.live_bytes() == 1000);
    // Left allocated: the tracker reports it when it goes (it does not own it).
    CHECK(log.count("still allocated") == 0);
    (void)p;
    // So that the leak is the tracker's, not the memory's: free it behind its back.
    pageable.deallocate(p, 1000);
  }
  CHECK(log.count("leaky: 1 block(s)") == 1);
  CHECK(contains(log.text(), "test_adaptors.cpp:"));
}

TEST_CASE("tracking: every block back means an empty report, unknown pointers are logged") {
  PageableResource pageable;
  TrackingAdaptor<PageableResource> tracked(pageable);
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(tracked.allocate(100 + i));
  CHECK(tracked.live_blocks() == 10);
  for (int i = 0; i < 10; ++i) tracked.deallocate(blocks[i], 100 + i);
  CHECK(tracked.leak_report().empty());
  test::LogCapture log;
  void* other = pageable.allocate(64);
  tracked.deallocate(other, 64);  // still freed (forwarded), but logged
  CHECK(log.count("never saw allocated") == 1);
}

TEST_CASE("HostResourceRef forwards to the resource it refers to") {
  PageableResource pageable;
  StatisticsAdaptor<PageableResource> counted(pageable);
  HostResourceRef ref(counted);
  HostResourceRef copy = ref;
  CHECK(copy == ref);
  CHECK_FALSE(HostResourceRef(pageable) == ref);
  void* p = copy.allocate(4096, 4096);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 4096 == 0);
  CHECK(counted.stats().bytes == 4096);
  ref.deallocate(p, 4096, 4096);
  CHECK(counted.stats().bytes == 0);
  // A reference is itself a resource: adaptors stack on it.
  LimitingAdaptor<HostResourceRef> budget(ref, 100);
  CHECK_THROWS_AS((void)budget.allocate(101), BudgetError);
}

TEST_CASE("adaptors over pinned memory (GPU)") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  PinnedResource pinned;
  StatisticsAdaptor<PinnedResource> counted(pinned);
  LimitingAdaptor<StatisticsAdaptor<PinnedResource>> budget(counted, 4 * MiB);
  TrackingAdaptor<LimitingAdaptor<StatisticsAdaptor<PinnedResource>>> tracked(budget, "pinned");
  void* a = tracked.allocate(3 * MiB, 4096);
  std::memset(a, 1, 3 * MiB);
  CHECK_THROWS_AS((void)tracked.allocate(2 * MiB, 4096), BudgetError);
  CHECK(counted.stats().bytes == 3 * MiB);
  CHECK(tracked.live_blocks() == 1);
  tracked.deallocate(a, 3 * MiB, 4096);
  CHECK(tracked.leak_report().empty());
  CHECK(budget.used() == 0);
}
