// The fallback chain, step by step, driven by fault injection:
// write_combined -> pinned -> host_registered -> pageable. On the host backend
// page-locked kinds are unavailable and the chain goes straight to pageable
// with the reason "no CUDA device"; on a GPU every step is forced in turn.
#include <doctest/doctest.h>

#include <memory>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "memory/fault_injection.hpp"
#include "memory/pool.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;

using imgpipe::test::LogCapture;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;

PoolOptions gpu_pool(MemoryKind kind) {
  PoolOptions o;
  o.kind = kind;
  o.device = 0;
  return o;
}

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }
}  // namespace

TEST_CASE("fallback chains") {
  using K = MemoryKind;
  CHECK(fallback_chain(K::write_combined) == std::vector<K>{K::write_combined, K::pinned, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::pinned) == std::vector<K>{K::pinned, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::portable) == std::vector<K>{K::portable, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::mapped) == std::vector<K>{K::mapped, K::host_registered, K::pageable});
  CHECK(fallback_chain(K::host_registered) == std::vector<K>{K::host_registered, K::pageable});
  CHECK(fallback_chain(K::pageable) == std::vector<K>{K::pageable});
}

TEST_CASE("fallback on the host backend: straight to pageable, \"no CUDA device\", logged once") {
  fault_injection::Scope faults;
  LogCapture log;
  PoolOptions o;
  o.kind = MemoryKind::write_combined;
  o.device = -1;
  o.name = "staging pool";
  PinnedPool pool(o);
  CHECK(pool.host_backend());
  PoolBlock a = pool.allocate_block(MiB);
  PoolBlock b = pool.allocate_block(3 * MiB);
  PoolBlock c = pool.allocate_block(5 * MiB);
  CHECK(a.kind == MemoryKind::pageable);
  CHECK(c.kind == MemoryKind::pageable);
  CHECK(a.cpu_readable());
  // No CUDA was called: the injected failure for write-combined is still pending.
  fault_injection::fail_next(MemoryKind::write_combined, 1);
  pool.deallocate(b.host);
  (void)pool.allocate(7 * MiB);
  CHECK(fault_injection::pending(MemoryKind::write_combined) == 1);

  const PoolStats s = pool.stats();
  CHECK(s.fallbacks == 4);  // one step per new block
  CHECK(s.pinned_bytes == 0);
  const auto rec = pool.fallbacks();
  REQUIRE(rec.size() == 1);
  CHECK(rec[0].from == MemoryKind::write_combined);
  CHECK(rec[0].to == MemoryKind::pageable);
  CHECK(rec[0].count == 4);
  CHECK(contains(rec[0].reason, "no CUDA device"));
  CHECK(log.count("staging pool: write_combined allocation") == 1);
  CHECK(contains(log.text(), "no CUDA device"));
  // A reused block is not a new fallback.
  pool.deallocate(a.host);
  (void)pool.allocate(MiB);
  CHECK(pool.stats().fallbacks == 4);
}

TEST_CASE("fallback off: a clear error naming kind, bytes, budget and reason") {
  fault_injection::Scope faults;
  PoolOptions o;
  o.kind = MemoryKind::write_combined;
  o.device = -1;
  o.fallback = false;
  o.budget_bytes = 64 * MiB;
  PinnedPool pool(o);
  try {
    (void)pool.allocate(3 * MiB);
    FAIL("expected AllocationError");
  } catch (const AllocationError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(e.kind() == MemoryKind::write_combined);
    CHECK(e.bytes() == 3 * MiB);
    CHECK(e.budget() == 64 * MiB);
    CHECK(contains(what, "write_combined"));
    CHECK(contains(what, "3145728 bytes"));
    CHECK(contains(what, "67108864 bytes"));
    CHECK(contains(what, "no CUDA device"));
    CHECK(contains(what, "fallback is off"));
  }
  CHECK(pool.stats().failures == 1);
  CHECK(pool.stats().fallbacks == 0);
}

TEST_CASE("fallback: the last step failing too is an error listing every reason") {
  fault_injection::Scope faults;
  PoolOptions o;
  o.kind = MemoryKind::pinned;
  o.device = -1;
  PinnedPool pool(o);
  fault_injection::fail_next(MemoryKind::pageable, 1, fault_injection::Failure::bad_alloc);
  try {
    (void)pool.allocate(MiB);
    FAIL("expected AllocationError");
  } catch (const AllocationError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(contains(what, "pinned: no CUDA device"));
    CHECK_FALSE(contains(what, "host_registered"));  // the host backend's chain is pinned -> pageable
    CHECK(contains(what, "pageable: std::bad_alloc"));
  }
  // A failed malloc is not remembered: the next request works.
  void* p = pool.allocate(MiB);
  CHECK(pool.kind_of(p) == MemoryKind::pageable);
  pool.deallocate(p);
}

TEST_CASE("fallback with a CUDA build but no device: the host backend is chosen by itself") {
  if (test::have_gpu()) return;
  PinnedPool pool(gpu_pool(MemoryKind::write_combined));
  CHECK(pool.host_backend());
  CHECK(pool.allocate_block(4096).kind == MemoryKind::pageable);
  CHECK(contains(pool.fallbacks().at(0).reason, "no CUDA device"));
}

TEST_CASE("fallback (GPU): every step of write_combined -> pinned -> host_registered -> pageable") {
  if (!test::have_gpu()) return;
  fault_injection::Scope faults;
  using K = MemoryKind;

  SUBCASE("write_combined fails: pinned") {
    LogCapture log;
    PinnedPool pool(gpu_pool(K::write_combined));
    fault_injection::fail_next(K::write_combined, 1);
    PoolBlock b = pool.allocate_block(MiB);
    CHECK(b.kind == K::pinned);
    CHECK(pool.stats().fallbacks == 1);
    const auto rec = pool.fallbacks();
    REQUIRE(rec.size() == 1);
    CHECK(rec[0].from == K::write_combined);
    CHECK(rec[0].to == K::pinned);
    CHECK(contains(rec[0].reason, "cudaErrorMemoryAllocation"));
    // The failed kind is not asked again: no second injected failure is consumed.
    fault_injection::fail_next(K::write_combined, 1);
    CHECK(pool.allocate_block(2 * MiB).kind == K::pinned);
    CHECK(fault_injection::pending(K::write_combined) == 1);
    CHECK(pool.stats().fallbacks == 2);
    CHECK(log.count("write_combined allocation") == 1);
    // Until asked to retry: then write-combined is tried (and fails once more, injected), then works.
    pool.retry_failed_kinds();
    CHECK(pool.allocate_block(3 * MiB).kind == K::pinned);
    CHECK(fault_injection::pending(K::write_combined) == 0);
    pool.retry_failed_kinds();
    CHECK(pool.allocate_block(4 * MiB).kind == K::write_combined);
  }
  SUBCASE("write_combined and pinned fail: host_registered") {
    PinnedPool pool(gpu_pool(K::write_combined));
    fault_injection::fail_next(K::write_combined, 1);
    fault_injection::fail_next(K::pinned, 1);
    PoolBlock b = pool.allocate_block(MiB);
    CHECK(b.kind == K::host_registered);
    CHECK(pool.stats().fallbacks == 2);
    CHECK(pool.stats().pinned_bytes == MiB);  // registered memory is page-locked too
    const auto rec = pool.fallbacks();
    REQUIRE(rec.size() == 2);
    CHECK(rec[1].from == K::pinned);
    CHECK(rec[1].to == K::host_registered);
  }
  SUBCASE("write_combined, pinned and host_registered fail: pageable") {
    PinnedPool pool(gpu_pool(K::write_combined));
    fault_injection::fail_next(K::write_combined, 1);
    fault_injection::fail_next(K::pinned, 1, fault_injection::Failure::bad_alloc);
    fault_injection::fail_next(K::host_registered, 1);
    PoolBlock b = pool.allocate_block(MiB);
    CHECK(b.kind == K::pageable);
    CHECK(pool.stats().fallbacks == 3);
    CHECK(pool.stats().pinned_bytes == 0);
    CHECK(pool.stats().pageable_bytes == MiB);
    const auto rec = pool.fallbacks();
    REQUIRE(rec.size() == 3);
    CHECK(contains(rec[1].reason, "bad_alloc"));
    CHECK(rec[2].to == K::pageable);
  }
  SUBCASE("everything fails: AllocationError") {
    PinnedPool pool(gpu_pool(K::write_combined));
    for (K k : {K::write_combined, K::pinned, K::host_registered}) fault_injection::fail_next(k, 1);
    fault_injection::fail_next(K::pageable, 1, fault_injection::Failure::bad_alloc);
    CHECK_THROWS_AS((void)pool.allocate(MiB), AllocationError);
    CHECK(pool.stats().failures == 1);
  }
  SUBCASE("fallback off: the first failure is an error") {
    PoolOptions o = gpu_pool(K::write_combined);
    o.fallback = false;
    PinnedPool pool(o);
    fault_injection::fail_next(K::write_combined, 1);
    try {
      (void)pool.allocate(MiB);
      FAIL("expected AllocationError");
    } catch (const AllocationError& e) {
      CHECK(e.kind() == K::write_combined);
      CHECK(contains(e.what(), "cudaErrorMemoryAllocation"));
      CHECK(contains(e.what(), "fallback is off"));
    }
  }
  SUBCASE("the budget walks the chain too") {
    PoolOptions o = gpu_pool(K::write_combined);
    o.budget_bytes = MiB;
    PinnedPool pool(o);
    CHECK(pool.allocate_block(MiB).kind == K::write_combined);
    CHECK(pool.allocate_block(MiB).kind == K::pageable);
    const auto rec = pool.fallbacks();
    REQUIRE(rec.size() == 3);
    for (const auto& r : rec) CHECK(contains(r.reason, "budget"));
    // Budget failures are not remembered: with room again, write-combined is used.
    PinnedPool roomy(gpu_pool(K::write_combined));
    CHECK(roomy.allocate_block(MiB).kind == K::write_combined);
  }
  SUBCASE("mapped falls back to registered memory that is still mapped") {
    PinnedPool pool(gpu_pool(K::mapped));
    fault_injection::fail_next(K::mapped, 1);
    PoolBlock b = pool.allocate_block(MiB);
    CHECK(b.kind == K::host_registered);
    CHECK(b.device != nullptr);
  }
  SUBCASE("extra flags follow the chain: write_combined|mapped -> mapped") {
    PoolOptions o = gpu_pool(K::write_combined);
    o.extra_flags = PinnedResource::mapped;
    PinnedPool pool(o);
    PoolBlock a = pool.allocate_block(MiB);
    CHECK(a.kind == K::write_combined);
    CHECK(a.device != nullptr);
    CHECK_FALSE(a.cpu_readable());
    fault_injection::fail_next(K::write_combined, 1);
    PinnedPool pool2(o);
    PoolBlock b = pool2.allocate_block(MiB);
    CHECK(b.kind == K::mapped);
    CHECK(b.device != nullptr);
  }
}
