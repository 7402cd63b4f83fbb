// The fallback chain, step by step, driven by fault injection.
// FallbackResource's rules are checked on the host with pageable memory
// standing in for each kind (a step is labelled with a kind; fault injection
// makes the pageable allocation it asks for fail). HostMemoryChain, the
// wiring write_combined -> pinned -> host_registered -> pageable with the
// page-locked budget, runs on the host backend (page-locked kinds fail with
// "no CUDA device" and the chain goes to pageable) and, on a GPU, with every
// step forced in turn.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "memory/fallback_resource.hpp"
#include "memory/fault_injection.hpp"
#include "memory/host_memory_chain.hpp"
#include "memory/limiting_adaptor.hpp"
#include "memory/statistics_adaptor.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;

using imgpipe::test::LogCapture;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;
using K = MemoryKind;

using imgpipe::test::contains;

HostChainOptions gpu_chain(MemoryKind kind) {
  HostChainOptions o;
  o.kind = kind;
  o.device = 0;
  o.name = "staging";
  return o;
}
}  // namespace

TEST_CASE("fallback chains") {
  CHECK(fallback_chain(K::write_combined) ==
        std::vector<K>{K::write_combined, K::pinned, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::pinned) == std::vector<K>{K::pinned, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::portable) == std::vector<K>{K::portable, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::mapped) == std::vector<K>{K::mapped, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::host_registered) == std::vector<K>{K::host_registered, K::pageable});
  CHECK(fallback_chain(K::pageable) == std::vector<K>{K::pageable});
}

TEST_CASE("FallbackResource: each step counted, logged once, failed page-locked kinds not asked again") {
  fault_injection::Scope faults;
  LogCapture log;
  PageableResource a, b, c;  // stand-ins for pinned, host_registered, pageable
  FallbackResource chain("chain",
                         {{K::pinned, a, false, {}}, {K::host_registered, b, false, {}}, {K::pageable, c, false, {}}});
  CHECK(chain.requested() == K::pinned);

  fault_injection::fail_next(K::pageable, 1);  // the first step asked fails
  void* p1 = chain.allocate(MiB);
  CHECK(chain.kind_of(p1) == K::host_registered);
  CHECK(chain.fallbacks() == 1);
  fault_injection::fail_next(K::pageable, 1);  // step 0 is not asked again: step 1 takes this one
  void* p2 = chain.allocate(2 * MiB);
  CHECK(chain.kind_of(p2) == K::pageable);
  CHECK(chain.fallbacks() == 3);  // pinned -> host_registered, host_registered -> pageable
  void* p3 = chain.allocate(MiB);  // straight to the last step: two steps, nothing injected consumed
  CHECK(chain.kind_of(p3) == K::pageable);
  CHECK(chain.fallbacks() == 5);
  CHECK(fault_injection::fired() == 2);

  const auto rec = chain.records();
  REQUIRE(rec.size() == 2);
  CHECK(rec[0].from == K::pinned);
  CHECK(rec[0].to == K::host_registered);
  CHECK(rec[0].count == 3);
  CHECK(rec[0].bytes == 4 * MiB);
  CHECK(contains(rec[0].reason, "cudaErrorMemoryAllocation"));
  CHECK(rec[1].from == K::host_registered);
  CHECK(rec[1].count == 2);
  CHECK(log.count("chain: pinned allocation of 1.0 MiB failed") == 1);
  CHECK(log.count("chain: host_registered allocation of 2.0 MiB failed") == 1);
  CHECK(log.count("falling back") == 2);  // logged once per step, however often it is taken

  chain.deallocate(p1, MiB);
  chain.deallocate(p2, 2 * MiB);
  chain.deallocate(p3, MiB);
  CHECK_FALSE(chain.owns(p3));
  CHECK_THROWS_AS((void)chain.kind_of(p3), std::invalid_argument);
  CHECK_THROWS_AS((void)chain.allocate(64, 8192), std::invalid_argument);
  CHECK_THROWS_AS((void)chain.allocate(64, 48), std::invalid_argument);
  int x = 0;
  chain.deallocate(&x, 4);  // not ours: logged, ignored
  CHECK(log.count("did not hand out") == 1);
}

TEST_CASE("FallbackResource: the budget is asked again, a failed malloc too") {
  fault_injection::Scope faults;
  PageableResource pageable, last;
  LimitingAdaptor<PageableResource> budget(pageable, MiB);
  FallbackResource chain("budgeted", {{K::pinned, budget, false, {}}, {K::pageable, last, false, {}}});
  void* a = chain.allocate(MiB);
  void* b = chain.allocate(MiB);  // over the budget
  CHECK(chain.kind_of(a) == K::pinned);
  CHECK(chain.kind_of(b) == K::pageable);
  REQUIRE(chain.records().size() == 1);
  CHECK(contains(chain.records()[0].reason, "budget of 1048576 bytes"));
  chain.deallocate(a, MiB);
  void* c = chain.allocate(MiB);  // room again: the first step is asked
  CHECK(chain.kind_of(c) == K::pinned);
  chain.deallocate(b, MiB);
  chain.deallocate(c, MiB);

  // The last step failing too is an error listing every reason; not remembered.
  FallbackResource host("host",
                        {{K::pinned, pageable, false, "no CUDA device (test)"}, {K::pageable, last, false, {}}});
  fault_injection::fail_next(K::pageable, 1, fault_injection::Failure::bad_alloc);
  try {
    (void)host.allocate(MiB);
    FAIL("expected AllocationError");
  } catch (const AllocationError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(e.kind() == K::pinned);
    CHECK(contains(what, "pinned: no CUDA device (test)"));
    CHECK(contains(what, "pageable: std::bad_alloc"));
  }
  CHECK(host.failures() == 1);
  void* p = host.allocate(MiB);
  CHECK(host.kind_of(p) == K::pageable);
  host.deallocate(p, MiB);
}

TEST_CASE("FallbackResource with fallback off: the first failure is an error naming kind, size and reason") {
  fault_injection::Scope faults;
  PageableResource pageable, last;
  LimitingAdaptor<PageableResource> budget(pageable, MiB);
  FallbackResource chain("strict", {{K::write_combined, budget, false, {}}, {K::pageable, last, false, {}}}, false);
  CHECK_FALSE(chain.fallback());
  void* a = chain.allocate(MiB);
  try {
    (void)chain.allocate(3 * MiB);
    FAIL("expected AllocationError");
  } catch (const AllocationError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(e.kind() == K::write_combined);
    CHECK(e.bytes() == 3 * MiB);
    CHECK(contains(what, "strict: cannot allocate 3145728 bytes (3.0 MiB) of write_combined host memory"));
    CHECK(contains(what, "budget of 1048576 bytes"));
    CHECK(contains(what, "fallback is off"));
  }
  fault_injection::fail_next(K::pageable, 1);
  chain.deallocate(a, MiB);
  CHECK_THROWS_WITH_AS((void)chain.allocate(10), doctest::Contains("cudaErrorMemoryAllocation"), AllocationError);
  CHECK(chain.fallbacks() == 0);
  CHECK(chain.failures() == 2);
}

TEST_CASE("FallbackResource frees blocks still live at destruction") {
  LogCapture log;
  PageableResource pageable;
  StatisticsAdaptor<PageableResource> counted(pageable);
  {
    FallbackResource chain("leaky", {{K::pageable, counted, false, {}}});
    (void)chain.allocate(1000);
  }
  CHECK(log.count("leaky: 1 block(s) (1000 B) still allocated at destruction; freeing them") == 1);
  CHECK(counted.stats().bytes == 0);
}

TEST_CASE("host memory chain on the host backend: straight to pageable, \"no CUDA device\", logged once") {
  for (int device : {-1, 0}) {
    if (device == 0 && test::have_gpu()) continue;  // device 0 exists: not the host backend
    CAPTURE(device);
    fault_injection::Scope faults;
    LogCapture log;
    HostChainOptions o = gpu_chain(K::write_combined);
    o.device = device;
    HostMemoryChain chain(o);
    CHECK(chain.host_backend());
    fault_injection::fail_next(K::write_combined, 1);  // no CUDA is called: stays pending
    std::vector<void*> blocks;
    for (std::size_t n : {MiB, 3 * MiB, 5 * MiB}) {
      blocks.push_back(chain.allocate(n, 4096));
      CHECK(chain.kind_of(blocks.back()) == K::pageable);
      CHECK(chain.device_pointer(blocks.back()) == nullptr);
      std::memset(blocks.back(), 1, n);
    }
    CHECK(fault_injection::pending(K::write_combined) == 1);
    CHECK(chain.fallback_count() == 3);  // one step per block
    CHECK(chain.page_locked().bytes == 0);
    CHECK(chain.page_locked().failures == 0);  // the page-locked part was never asked
    const auto rec = chain.fallbacks();
    REQUIRE(rec.size() == 1);
    CHECK(rec[0].from == K::write_combined);
    CHECK(rec[0].to == K::pageable);
    CHECK(rec[0].count == 3);
    CHECK(contains(rec[0].reason, "no CUDA device"));
    CHECK(log.count("staging: write_combined allocation") == 1);
    chain.deallocate(blocks[0], MiB, 4096);
    chain.deallocate(blocks[1], 3 * MiB, 4096);
    chain.deallocate(blocks[2], 5 * MiB, 4096);
  }
}

TEST_CASE("host memory chain with fallback off on the host backend: a clear error") {
  fault_injection::Scope faults;
  HostChainOptions o = gpu_chain(K::write_combined);
  o.device = -1;
  o.fallback = false;
  o.budget_bytes = 64 * MiB;
  HostMemoryChain chain(o);
  try {
    (void)chain.allocate(3 * MiB);
    FAIL("expected AllocationError");
  } catch (const AllocationError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(e.kind() == K::write_combined);
    CHECK(e.bytes() == 3 * MiB);
    CHECK(contains(what, "write_combined"));
    CHECK(contains(what, "3145728 bytes"));
    CHECK(contains(what, "no CUDA device"));
    CHECK(contains(what, "fallback is off"));
  }
  CHECK(chain.failures() == 1);
  CHECK(chain.fallback_count() == 0);
}

TEST_CASE("host memory chain: pageable asked for is pageable, outside any budget, no fallback") {
  fault_injection::Scope faults;
  HostChainOptions o = gpu_chain(K::pageable);
  o.budget_bytes = MiB;
  HostMemoryChain chain(o);
  void* a = chain.allocate(2 * MiB);
  CHECK(chain.kind_of(a) == K::pageable);
  CHECK(chain.fallback_count() == 0);
  CHECK(chain.page_locked().bytes == 0);
  fault_injection::fail_next(K::pageable, 1, fault_injection::Failure::bad_alloc);
  CHECK_THROWS_WITH_AS((void)chain.allocate(10), doctest::Contains("pageable: std::bad_alloc"), AllocationError);
  chain.deallocate(a, 2 * MiB);
}

TEST_CASE("host memory chain (GPU): every step of write_combined -> pinned -> host_registered -> pageable") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  fault_injection::Scope faults;

  SUBCASE("write_combined fails: pinned, and write_combined is not asked again") {
    LogCapture log;
    HostMemoryChain chain(gpu_chain(K::write_combined));
    CHECK_FALSE(chain.host_backend());
    fault_injection::fail_next(K::write_combined, 1);
    void* a = chain.allocate(MiB, 4096);
    CHECK(chain.kind_of(a) == K::pinned);
    CHECK(chain.fallback_count() == 1);
    const auto rec = chain.fallbacks();
    REQUIRE(rec.size() == 1);
    CHECK(rec[0].from == K::write_combined);
    CHECK(rec[0].to == K::pinned);
    CHECK(contains(rec[0].reason, "cudaErrorMemoryAllocation"));
    fault_injection::fail_next(K::write_combined, 1);
    void* b = chain.allocate(2 * MiB, 4096);
    CHECK(chain.kind_of(b) == K::pinned);
    CHECK(fault_injection::pending(K::write_combined) == 1);
    CHECK(chain.fallback_count() == 2);
    CHECK(log.count("write_combined allocation") == 1);
    CHECK(chain.page_locked().bytes == 3 * MiB);
    chain.deallocate(a, MiB, 4096);
    chain.deallocate(b, 2 * MiB, 4096);
    CHECK(chain.page_locked().bytes == 0);
    CHECK(chain.page_locked().peak_bytes == 3 * MiB);
  }
  SUBCASE("write_combined and pinned fail: host_registered, page-locked too") {
    HostMemoryChain chain(gpu_chain(K::write_combined));
    fault_injection::fail_next(K::write_combined, 1);
    fault_injection::fail_next(K::pinned, 1);
    void* a = chain.allocate(MiB, 4096);
    CHECK(chain.kind_of(a) == K::host_registered);
    CHECK(chain.fallback_count() == 2);
    CHECK(chain.page_locked().bytes == MiB);
    const auto rec = chain.fallbacks();
    REQUIRE(rec.size() == 2);
    CHECK(rec[1].from == K::pinned);
    CHECK(rec[1].to == K::host_registered);
    chain.deallocate(a, MiB, 4096);
  }
  SUBCASE("every page-locked kind fails: pageable, outside the page-locked figures") {
    HostMemoryChain chain(gpu_chain(K::write_combined));
    fault_injection::fail_next(K::write_combined, 1);
    fault_injection::fail_next(K::pinned, 1, fault_injection::Failure::bad_alloc);
    fault_injection::fail_next(K::host_registered, 1);
    void* a = chain.allocate(MiB, 4096);
    CHECK(chain.kind_of(a) == K::pageable);
    CHECK(chain.fallback_count() == 3);
    CHECK(chain.page_locked().bytes == 0);
    const auto rec = chain.fallbacks();
    REQUIRE(rec.size() == 3);
    CHECK(contains(rec[1].reason, "bad_alloc"));
    CHECK(rec[2].to == K::pageable);
    chain.deallocate(a, MiB, 4096);
  }
  SUBCASE("everything fails: AllocationError") {
    HostMemoryChain chain(gpu_chain(K::write_combined));
    for (K k : {K::write_combined, K::pinned, K::host_registered}) fault_injection::fail_next(k, 1);
    fault_injection::fail_next(K::pageable, 1, fault_injection::Failure::bad_alloc);
    CHECK_THROWS_AS((void)chain.allocate(MiB), AllocationError);
    CHECK(chain.failures() == 1);
  }
}

TEST_CASE("host memory chain (GPU): fallback off, the budget, mapped memory and extra flags") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  fault_injection::Scope faults;

  SUBCASE("fallback off: the first failure is an error") {
    HostChainOptions o = gpu_chain(K::write_combined);
    o.fallback = false;
    HostMemoryChain chain(o);
    fault_injection::fail_next(K::write_combined, 1);
    try {
      (void)chain.allocate(MiB);
      FAIL("expected AllocationError");
    } catch (const AllocationError& e) {
      CHECK(e.kind() == K::write_combined);
      CHECK(contains(e.what(), "cudaErrorMemoryAllocation"));
      CHECK(contains(e.what(), "fallback is off"));
    }
    CHECK(fault_injection::pending(K::pinned) == 0);
  }
  SUBCASE("the budget goes to pageable, and is asked again when there is room") {
    HostChainOptions o = gpu_chain(K::write_combined);
    o.budget_bytes = MiB;
    HostMemoryChain chain(o);
    void* a = chain.allocate(MiB, 4096);
    void* b = chain.allocate(MiB, 4096);
    CHECK(chain.kind_of(a) == K::write_combined);
    CHECK(chain.kind_of(b) == K::pageable);
    const auto rec = chain.fallbacks();
    REQUIRE(rec.size() == 1);
    CHECK(rec[0].to == K::pageable);
    CHECK(contains(rec[0].reason, "budget"));
    chain.deallocate(a, MiB, 4096);
    void* c = chain.allocate(MiB, 4096);
    CHECK(chain.kind_of(c) == K::write_combined);
    chain.deallocate(b, MiB, 4096);
    chain.deallocate(c, MiB, 4096);
  }
  SUBCASE("mapped falls back to registered memory that is still mapped") {
    HostMemoryChain chain(gpu_chain(K::mapped));
    fault_injection::fail_next(K::mapped, 1);
    void* a = chain.allocate(MiB, 4096);
    CHECK(chain.kind_of(a) == K::host_registered);
    CHECK(chain.device_pointer(a) != nullptr);
    chain.deallocate(a, MiB, 4096);
  }
  SUBCASE("extra flags follow the chain: write_combined|mapped -> mapped") {
    HostChainOptions o = gpu_chain(K::write_combined);
    o.extra_flags = PinnedResource::mapped;
    HostMemoryChain chain(o);
    void* a = chain.allocate(MiB, 4096);
    CHECK(chain.kind_of(a) == K::write_combined);
    CHECK(chain.device_pointer(a) != nullptr);
    fault_injection::fail_next(K::write_combined, 1);
    HostMemoryChain chain2(o);
    void* b = chain2.allocate(MiB, 4096);
    CHECK(chain2.kind_of(b) == K::mapped);
    CHECK(chain2.device_pointer(b) != nullptr);
    chain.deallocate(a, MiB, 4096);
    chain2.deallocate(b, MiB, 4096);
  }
}
