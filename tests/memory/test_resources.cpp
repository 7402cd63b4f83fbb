// The memory kinds: what only the kind resources promise (availability and
// its reasons, alignment limits, device addresses, fault injection), flag
// combinations, caller-memory registration, HostBuffer, the fault hooks and
// the memread kernels' CPU twins. What every resource and adaptor promises is
// the conformance suite (test_conformance.cpp). Page-locked kinds are
// unavailable on the host backend (the suite then checks that they say so);
// their data checks run where a GPU exists. Write-combined memory is never
// read by the CPU: it is checked through a device round trip.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"
#include "memory/fault_injection.hpp"
#include "imgpipe/memory/resources.hpp"
#include "kernels/memread.hpp"
#include "memory/memory_helpers.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;
using namespace imgpipe::test;

TEST_CASE_TEMPLATE("memory kind resources: availability, alignment limits, device addresses, fault injection", R,
                   PageableResource, PinnedResource, PortableResource, WriteCombinedResource, MappedResource,
                   HostRegisteredResource) {
  fault_injection::Scope faults;
  R r;
  CAPTURE(r.name());
  CHECK(!r.name().empty());

  if (!r.is_available()) {
    // Only page-locked kinds can be unavailable: a build without CUDA, or no device.
    REQUIRE(r.is_pinned());
    CHECK_FALSE(test::have_gpu());
    CHECK_FALSE(pinned_unavailable_reason().empty());
    if (!gpu::built_with_cuda()) {
      CHECK_THROWS_AS(r.allocate(4096), std::logic_error);
      CHECK_THROWS_WITH(r.allocate(4096), doctest::Contains("built without CUDA"));
    } else {
      CHECK_THROWS_AS(r.allocate(4096), CudaError);
    }
    return;
  }

  SUBCASE("alignment rules") {
    CHECK_THROWS_AS(r.allocate(64, 48), std::invalid_argument);
    if (r.is_pinned() && r.kind() != MemoryKind::host_registered) {
      CHECK_THROWS_AS(r.allocate(64, 8192), std::invalid_argument);
    } else {
      void* p = r.allocate(64, 8192);
      CHECK(reinterpret_cast<std::uintptr_t>(p) % 8192 == 0);
      r.deallocate(p, 64, 8192);
    }
  }

  SUBCASE("mapped memory is read in place by a kernel") {
    if constexpr (requires { r.device_pointer(nullptr); }) {
      if (!r.is_mapped()) {
        CHECK_THROWS_AS((void)r.device_pointer(nullptr), std::logic_error);
      } else {
        Allocation<R> a(r, 1 << 20);
        fill(a.get(), 1 << 20, 3);
        void* d = r.device_pointer(a.get());
        REQUIRE(d != nullptr);
        CHECK(memory::device_pointer(a.get()) == d);
        const auto expected = kernels::memread_ref(pattern(1 << 20, 3).data(), 1 << 20);
        CHECK(gpu_memread(d, 1 << 20) == expected);
      }
    }  // pageable memory has no device address at all
  }

  SUBCASE("an injected failure surfaces like a real one, then allocation works again") {
    fault_injection::fail_next(r.kind(), 1);
    try {
      (void)r.allocate(4096);
      FAIL("the injected failure did not fire");
    } catch (const CudaError& e) {
      CHECK(e.code() == 2);
      CHECK(e.name() == "cudaErrorMemoryAllocation");
    }
    CHECK(fault_injection::pending(r.kind()) == 0);
    fault_injection::fail_next(r.kind(), 1, fault_injection::Failure::bad_alloc);
    CHECK_THROWS_AS((void)r.allocate(4096), std::bad_alloc);
    void* p = r.allocate(4096);
    CHECK(p != nullptr);
    r.deallocate(p, 4096);
  }
}

TEST_CASE("memory kinds: names, parsing and pinned flag combinations") {
  for (MemoryKind k : all_memory_kinds) CHECK(parse_memory_kind(to_string(k)) == k);
  CHECK(parse_memory_kind("wc") == MemoryKind::write_combined);
  CHECK(parse_memory_kind("default") == MemoryKind::pinned);
  CHECK_FALSE(parse_memory_kind("cached").has_value());
  CHECK_FALSE(is_page_locked(MemoryKind::pageable));
  CHECK(is_page_locked(MemoryKind::host_registered));

  CHECK(PinnedResource().kind() == MemoryKind::pinned);
  CHECK(PortableResource().kind() == MemoryKind::portable);
  CHECK(MappedResource().kind() == MemoryKind::mapped);
  CHECK(WriteCombinedResource().kind() == MemoryKind::write_combined);
  CHECK(PinnedResource(PinnedResource::portable | PinnedResource::mapped).kind() == MemoryKind::mapped);
  CHECK(PinnedResource(PinnedResource::portable | PinnedResource::mapped | PinnedResource::write_combined).name() ==
        "portable|mapped|write_combined");
  CHECK_FALSE(WriteCombinedResource().cpu_readable());

  // Every combination CUDA allows, where a GPU exists.
  if (!test::have_gpu()) return;
  for (unsigned f = 0; f < 8; ++f) {
    PinnedResource r(f);
    CAPTURE(r.name());
    REQUIRE(r.is_available());
    Allocation<PinnedResource> a(r, 65536);
    fill(a.get(), 65536, f);
    if (r.cpu_readable())
      CHECK(matches(a.get(), 65536, f));
    else
      CHECK(read_through_device(a.get(), 65536) == pattern(65536, f));
    if (r.is_mapped()) CHECK(gpu_memread(r.device_pointer(a.get()), 65536) == kernels::memread_ref(pattern(65536, f).data(), 65536));
  }
}

TEST_CASE("host registration of memory the caller owns") {
  fault_injection::Scope faults;
  std::vector<unsigned char> mine(1 << 20);
  CHECK_THROWS_AS(HostRegistration(nullptr, 10), std::invalid_argument);
  if (!test::have_gpu()) {
    if (!gpu::built_with_cuda())
      CHECK_THROWS_AS(HostRegistration(mine.data(), mine.size()), std::logic_error);
    else
      CHECK_THROWS_AS(HostRegistration(mine.data(), mine.size()), CudaError);
    return;
  }
  {
    HostRegistration reg(mine.data(), mine.size(), HostRegisteredResource::mapped);
    CHECK(reg.get() == mine.data());
    fill(mine.data(), mine.size(), 5);
    CHECK(read_through_device(mine.data(), mine.size()) == mine);
    CHECK(gpu_memread(reg.device_pointer(), mine.size()) == kernels::memread_ref(mine.data(), mine.size()));
    HostRegistration moved = std::move(reg);
    CHECK_FALSE(reg);
    CHECK(moved);
  }
  // Unregistered again: registering the same range a second time works.
  HostRegistration again(mine.data(), mine.size());
  CHECK_THROWS_AS((void)again.device_pointer(), std::logic_error);
  fault_injection::fail_next(MemoryKind::host_registered, 1);
  std::vector<unsigned char> other(4096);
  CHECK_THROWS_AS(HostRegistration(other.data(), other.size()), CudaError);
}

TEST_CASE("HostBuffer allocates any kind chosen at run time") {
  HostBuffer p(MemoryKind::pageable, 12345);
  CHECK(p.size() == 12345);
  CHECK(p.kind() == MemoryKind::pageable);
  CHECK(reinterpret_cast<std::uintptr_t>(p.get()) % 4096 == 0);
  CHECK_FALSE(p.is_mapped());
  CHECK_THROWS_AS((void)p.device_pointer(), std::logic_error);
  fill(p.get(), p.size(), 1);
  HostBuffer q = std::move(p);
  CHECK_FALSE(p);
  CHECK(matches(q.get(), q.size(), 1));
  if (!test::have_gpu()) {
    CHECK_THROWS((void)HostBuffer(MemoryKind::pinned, 4096));
    return;
  }
  for (MemoryKind k : all_memory_kinds) {
    CAPTURE(to_string(k));
    HostBuffer b(k, 1 << 16, PinnedResource::mapped);
    CHECK(b.kind() == k);
    CHECK(b.is_mapped() == (k != MemoryKind::pageable));
    fill(b.get(), b.size(), 4);
    if (b.is_mapped()) CHECK(gpu_memread(b.device_pointer(), b.size()) == kernels::memread_ref(pattern(1 << 16, 4).data(), 1 << 16));
  }
}

TEST_CASE("fault injection: counts, kinds, clear, and thread safety") {
  fault_injection::Scope faults;
  fault_injection::fail_next(MemoryKind::pinned, 3);
  fault_injection::fail_next(MemoryKind::pinned, 0);
  fault_injection::fail_next(MemoryKind::write_combined, 1, fault_injection::Failure::bad_alloc);
  CHECK(fault_injection::pending(MemoryKind::pinned) == 3);
  CHECK(fault_injection::pending(MemoryKind::write_combined) == 1);
  CHECK(fault_injection::pending(MemoryKind::pageable) == 0);
  // Another kind's allocation is untouched.
  PageableResource pageable;
  void* p = pageable.allocate(100);
  pageable.deallocate(p, 100);
  CHECK_THROWS_AS(fault_injection::check(MemoryKind::write_combined, 10), std::bad_alloc);
  CHECK_THROWS_AS(fault_injection::check(MemoryKind::pinned, 10), CudaError);
  CHECK(fault_injection::pending(MemoryKind::pinned) == 2);
  CHECK(fault_injection::fired() == 2);
  fault_injection::clear();
  CHECK(fault_injection::pending(MemoryKind::pinned) == 0);
  CHECK(fault_injection::fired() == 0);
  CHECK_NOTHROW(fault_injection::check(MemoryKind::pinned, 10));

  // Exactly N of many concurrent allocations fail.
  constexpr int injected = 37, threads = 8, per_thread = 100;
  fault_injection::fail_next(MemoryKind::pageable, injected, fault_injection::Failure::bad_alloc);
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      PageableResource r;
      for (int i = 0; i < per_thread; ++i) {
        try {
          void* q = r.allocate(256);
          r.deallocate(q, 256);
        } catch (const std::bad_alloc&) {
          ++failures;
        }
      }
    });
  for (auto& t : pool) t.join();
  CHECK(failures.load() == injected);
  CHECK(fault_injection::pending(MemoryKind::pageable) == 0);
}

TEST_CASE("memread CPU twins, and the kernels against them on the GPU") {
  const unsigned char one[9] = {1, 0, 0, 0, 0, 0, 0, 0, 2};
  CHECK(kernels::memread_ref(one, 8) == 1);
  CHECK(kernels::memread_ref(one, 9) == 3);
  CHECK(kernels::memread_ref(one, 0) == 0);
  const std::vector<unsigned char> big = pattern(1 << 20, 11);
  const std::uint32_t idx[] = {3, 0, 200};
  CHECK(kernels::gather_read_ref(big.data(), 4096, idx, 3) ==
        kernels::memread_ref(big.data() + 3 * 4096, 4096) + kernels::memread_ref(big.data(), 4096) +
            kernels::memread_ref(big.data() + 200 * 4096, 4096));
  if (!test::have_gpu()) {
    if (!gpu::built_with_cuda()) CHECK_THROWS_AS(kernels::memread_gpu(nullptr, 0, nullptr, nullptr), std::logic_error);
    return;
  }
  gpu::Stream s(0);
  gpu::DeviceBuffer d(0, big.size());
  gpu::copy_h2d_async(d.get(), big.data(), big.size(), s);
  s.synchronize();
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{15}, std::size_t{16},
                        std::size_t{17}, std::size_t{4099}, std::size_t{65536 * 15 + 5}, big.size()}) {
    CAPTURE(n);
    CHECK(gpu_memread(d.get(), n) == kernels::memread_ref(big.data(), n));
  }
  CHECK_THROWS_AS(gpu_memread(static_cast<unsigned char*>(d.get()) + 4, 64), std::invalid_argument);
  gpu::DeviceBuffer d_idx(0, sizeof idx), result(0, 8);
  gpu::copy_h2d_async(d_idx.get(), idx, sizeof idx, s);
  kernels::gather_read_gpu(d.get(), 4096, static_cast<const std::uint32_t*>(d_idx.get()), 3,
                           static_cast<std::uint64_t*>(result.get()), s.get());
  std::uint64_t got = 0;
  gpu::copy_d2h_async(&got, result.get(), 8, s);
  s.synchronize();
  CHECK(got == kernels::gather_read_ref(big.data(), 4096, idx, 3));
}
