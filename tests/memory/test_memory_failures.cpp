// The memory layer under real failure: a page-locked allocation that CUDA
// itself refuses leaves no stale error for the next kernel launch, a staging
// slot whose release fails stays held (all or nothing), each slot reports the
// kind it got, and CurrentDeviceGuard leaves the calling thread's device and
// context as it found them. The host cases run everywhere; the GPU cases need
// a CUDA device and skip visibly without one.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "memory/fault_injection.hpp"
#include "memory/gpu.hpp"
#include "memory/host_memory_chain.hpp"
#include "memory/memory_helpers.hpp"
#include "memory/staging_ring.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;
namespace fi = imgpipe::memory::fault_injection;

TEST_CASE("memory fault injection: allocations let through first, real_call asks for impossible bytes") {
  fi::Scope faults;
  fi::fail_next(MemoryKind::pinned, 1, fi::Failure::real_call, /*skip=*/2);
  CHECK(fi::pending(MemoryKind::pinned) == 1);
  CHECK(fi::check(MemoryKind::pinned, 10) == 10);
  CHECK(fi::check(MemoryKind::pinned, 10) == 10);
  CHECK(fi::check(MemoryKind::pinned, 10) == fi::impossible_bytes);
  CHECK(fi::check(MemoryKind::pinned, 10) == 10);
  CHECK(fi::fired() == 1);
  // Pageable memory refused for real: the C library's answer. Under ASan and
  // TSan the sanitizer's allocator aborts the process on an impossible size
  // instead (allocator_may_return_null=0), so the check runs unsanitized.
  if (!imgpipe::test::kSanitized) {
    fi::fail_next(MemoryKind::pageable, 1, fi::Failure::real_call);
    CHECK_THROWS_AS(PageableResource{}.allocate(64), std::bad_alloc);
  }
  fi::fail_next_release(2);
  CHECK(fi::pending_releases() == 2);
  CHECK_THROWS_AS(fi::check_release(), CudaError);
  fi::clear();
  CHECK(fi::pending_releases() == 0);
  CHECK_NOTHROW(fi::check_release());
}

TEST_CASE("staging ring: a release that fails leaves the slot held, and released again it is free") {
  fi::Scope faults;
  StagingRing ring(-1, 2, 4096, StagingMemory::write_combined);
  const gpu::Stream host;
  const int a = ring.acquire().slot();
  const int b = ring.acquire().slot();
  fi::fail_next_release(1);
  CHECK_THROWS_AS(ring.release(a, host), CudaError);
  CHECK(ring.held() == 2);  // nothing changed hands
  CHECK(ring.in_use() == 2);
  ring.release(b, host);
  CHECK(ring.held() == 1);
  // The failed slot is not handed out again until it is released.
  CHECK(ring.acquire().slot() == b);
  ring.release(b, host);
  ring.release(a, host);
  CHECK(ring.held() == 0);
  CHECK(ring.in_use() == 0);
}

TEST_CASE("staging ring: release_or_wait frees the slot even when the release fails, without throwing") {
  fi::Scope faults;
  StagingRing ring(-1, 2, 4096, StagingMemory::pinned);
  const gpu::Stream host;
  const int a = ring.acquire().slot();
  fi::fail_next_release(1);
  CHECK_FALSE(ring.release_or_wait(a, host));  // false: it had to wait on the host
  CHECK(ring.held() == 0);
  const int again = ring.acquire().slot();
  CHECK(ring.release_or_wait(again, host));
  CHECK(ring.held() == 0);
}

#if IMGPIPE_HAS_CUDA
namespace {

// The runtime has no error left over, and a kernel launch on this thread
// (whose check is cudaGetLastError) goes through.
void next_launch_is_clean() {
  CHECK(cudaPeekAtLastError() == cudaSuccess);
  gpu::DeviceBuffer d(0, 4096);
  CHECK_NOTHROW(test::gpu_memread(d.get(), 4096));
}

}  // namespace

TEST_CASE("memory: real page-locked allocation failures leave no stale CUDA error for the next launch (GPU)") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  fi::Scope faults;
  gpu::set_device(0);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  SUBCASE("cudaHostAlloc") {
    CHECK_THROWS_AS(PinnedResource{}.allocate(fi::impossible_bytes), CudaError);
    next_launch_is_clean();
  }
  SUBCASE("cudaHostRegister") {
    HostBuffer block(MemoryKind::pageable, 1 << 16);
    HostRegistration first(block.get(), block.size());
    CHECK_THROWS_AS(HostRegistration(block.get(), block.size()), CudaError);  // already registered
    next_launch_is_clean();
  }
  SUBCASE("cudaHostGetDevicePointer") {
    CHECK_THROWS_AS(memory::device_pointer(nullptr), CudaError);
    next_launch_is_clean();
  }
  SUBCASE("a chain's write_combined and host_registered steps refused by CUDA itself") {
    fi::fail_next(MemoryKind::write_combined, 1, fi::Failure::real_call);
    fi::fail_next(MemoryKind::host_registered, 1, fi::Failure::real_call);
    HostChainOptions o;
    o.kind = MemoryKind::write_combined;
    o.device = 0;
    HostMemoryChain chain(o);
    void* p = chain.allocate(1 << 16, 4096);
    CHECK(chain.kind_of(p) == MemoryKind::pinned);
    next_launch_is_clean();
    fi::fail_next(MemoryKind::pinned, 1, fi::Failure::real_call);
    void* q = chain.allocate(1 << 16, 4096);
    CHECK(chain.kind_of(q) == MemoryKind::pageable);  // pinned, then host_registered, refused
    CHECK(fi::fired() == 3);
    next_launch_is_clean();
    chain.deallocate(q, 1 << 16, 4096);
    chain.deallocate(p, 1 << 16, 4096);
  }
}

TEST_CASE("staging ring (GPU): each slot's kind, and the ring's kind is the furthest fallback any slot took") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  fi::Scope faults;
  // Slot 0 gets write-combined memory; the second allocation fails, so
  // slots 1 and 2 are pinned (write_combined is not asked again).
  fi::fail_next(MemoryKind::write_combined, 1, fi::Failure::cuda_out_of_memory, /*skip=*/1);
  StagingRing ring(0, 3, 1 << 16, StagingMemory::write_combined);
  CHECK(ring.kind(0) == MemoryKind::write_combined);
  CHECK(ring.kind(1) == MemoryKind::pinned);
  CHECK(ring.kind(2) == MemoryKind::pinned);
  CHECK(ring.kind() == MemoryKind::pinned);
  CHECK(ring.memory() == StagingMemory::pinned);
  CHECK(ring.fallbacks() == 2);
}

TEST_CASE("memory device guard (GPU): the thread's device and context come back, none included") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device");
  std::thread([] {
    // A fresh thread has no context; a library call that makes one current
    // and leaves it so is what the guard prevents (the sentinel works).
    // (No REQUIRE on these threads: its throw would end the process.)
    CHECK(gpu::current_context() == nullptr);
    std::thread([] {
      gpu::Stream unguarded(0);
      CHECK(gpu::current_context() != nullptr);
    }).join();
    {
      gpu::CurrentDeviceGuard guard(0);
      CHECK(gpu::current_context() != nullptr);
      int d = -1;
      CHECK(cudaGetDevice(&d) == cudaSuccess);
      CHECK(d == 0);
      gpu::Stream s(0);
      gpu::Event e(0, false);
      e.record(s);
      e.synchronize();
    }
    CHECK(gpu::current_context() == nullptr);
    int d = -1;
    CHECK(cudaGetDevice(&d) == cudaSuccess);
    CHECK(d == 0);
    // With a context current, that context comes back.
    gpu::set_device(0);
    CUctx_st* mine = gpu::current_context();
    CHECK(mine != nullptr);
    {
      gpu::CurrentDeviceGuard guard;
      gpu::DeviceBuffer b(0, 256);
      gpu::set_device(gpu::device_count() - 1);
    }
    CHECK(gpu::current_context() == mine);
    CHECK(cudaPeekAtLastError() == cudaSuccess);
  }).join();
}

TEST_CASE("memory device guard (GPU, 2 devices): a device the caller chose stays current") {
  IMGPIPE_SKIP_UNLESS(gpu::device_count() >= 2, "fewer than 2 CUDA devices");
  std::thread([] {
    const int last = gpu::device_count() - 1;
    gpu::set_device(last);
    {
      gpu::CurrentDeviceGuard guard(0);
      gpu::Stream s(0);
      int d = -1;
      CHECK(cudaGetDevice(&d) == cudaSuccess);
      CHECK(d == 0);
    }
    int d = -1;
    CHECK(cudaGetDevice(&d) == cudaSuccess);
    CHECK(d == last);
  }).join();
}
#else
TEST_CASE("memory: real page-locked allocation failures leave no stale CUDA error for the next launch (GPU)") {
  IMGPIPE_SKIP_UNLESS(false, "built without CUDA");
}
#endif
