// One conformance suite for every host memory resource and adaptor: each
// kind resource, each adaptor over a kind, the type-erased reference, the
// fallback resource, the host memory chain and the fixed-slot resource. Every
// one allocates and deallocates at the usual sizes and alignments (up to
// 4096, what every kind honours), gives a valid block for 0 bytes, keeps two
// live blocks apart and works as an Allocation<> owner. Blocks are written by
// the CPU and read back only where the CPU may read them (never
// write-combined memory: that goes through the GPU when there is one). On
// the host backend, fixtures over a page-locked kind are unavailable and must
// say so by throwing; chains are always available (they fall back).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "imgpipe/memory/resources.hpp"
#include "memory/fallback_resource.hpp"
#include "memory/fault_injection.hpp"
#include "memory/host_memory_chain.hpp"
#include "memory/limiting_adaptor.hpp"
#include "memory/memory_helpers.hpp"
#include "memory/slot_resource.hpp"
#include "memory/statistics_adaptor.hpp"
#include "memory/tracking_adaptor.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;
using namespace imgpipe::test;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;

// A fixture owns a resource `r` (and whatever it stands on) and says whether
// it can allocate here and whether the CPU may read a block it gave.
template <typename Kind>
struct KindFixture {
  Kind r;
  bool available() const { return r.is_available(); }
  bool readable(const void*) const { return r.cpu_readable(); }
};

// An adaptor over a kind: available and readable as the kind is.
template <typename Kind>
struct OverKind {
  Kind kind;
  bool available() const { return kind.is_available(); }
  bool readable(const void*) const { return kind.cpu_readable(); }
};
template <typename Kind>
struct Limited : OverKind<Kind> {
  LimitingAdaptor<Kind> r{this->kind, 64 * MiB};
};
template <typename Kind>
struct Counted : OverKind<Kind> {
  StatisticsAdaptor<Kind> r{this->kind};
};
template <typename Kind>
struct Tracked : OverKind<Kind> {
  TrackingAdaptor<Kind> r{this->kind, "conformance"};
};

struct RefToPageable {
  PageableResource kind;
  HostResourceRef r{kind};
  bool available() const { return true; }
  bool readable(const void*) const { return true; }
};

// write_combined -> pageable, as FallbackResource steps.
struct FallbackFixture {
  WriteCombinedResource wc;
  PageableResource pageable;
  FallbackResource r{"conformance",
                     {{MemoryKind::write_combined, wc, false, {}}, {MemoryKind::pageable, pageable, false, {}}}};
  bool available() const { return true; }
  bool readable(const void* p) const { return r.kind_of(p) != MemoryKind::write_combined; }
};

struct ChainFixture {
  HostMemoryChain r{{.kind = MemoryKind::write_combined, .budget_bytes = 64 * MiB, .device = 0, .name = "conformance"}};
  bool available() const { return true; }
  bool readable(const void* p) const { return r.kind_of(p) != MemoryKind::write_combined; }
};

struct SlotFixture {
  HostMemoryChain chain{{.kind = MemoryKind::pinned, .device = 0, .name = "conformance"}};
  FixedSlotResource r{chain, 4 * MiB, 4};
  bool available() const { return true; }
  bool readable(const void* p) const { return chain.kind_of(p) != MemoryKind::write_combined; }
};

template <typename F>
void check_block(const F& f, void* p, std::size_t bytes, unsigned seed) {
  fill(p, bytes, seed);  // a sequential write: allowed for every kind
  if (f.readable(p)) {
    CHECK(matches(p, bytes, seed));
  } else if (have_gpu()) {
    CHECK(read_through_device(p, bytes) == pattern(bytes, seed));
  }
}

// The GPU writes the block (D2H), the CPU or the GPU reads it back.
template <typename F>
void check_device_write(const F& f, void* p, std::size_t bytes) {
  write_through_device(p, pattern(bytes, 9));
  if (f.readable(p))
    CHECK(matches(p, bytes, 9));
  else
    CHECK(read_through_device(p, bytes) == pattern(bytes, 9));
}

}  // namespace

TEST_CASE_TEMPLATE("host memory resource conformance", F, KindFixture<PageableResource>, KindFixture<PinnedResource>,
                   KindFixture<PortableResource>, KindFixture<WriteCombinedResource>, KindFixture<MappedResource>,
                   KindFixture<HostRegisteredResource>, Limited<PageableResource>, Limited<WriteCombinedResource>,
                   Counted<PinnedResource>, Counted<PageableResource>, Tracked<WriteCombinedResource>,
                   Tracked<PageableResource>, RefToPageable, FallbackFixture, ChainFixture, SlotFixture) {
  fault_injection::Scope faults;
  F f;
  auto& r = f.r;

  if (!f.available()) {
    // Only fixtures over a page-locked kind: a build without CUDA, or no device.
    CHECK_FALSE(have_gpu());
    if (gpu::built_with_cuda())
      CHECK_THROWS_AS((void)r.allocate(4096, 256), CudaError);
    else
      CHECK_THROWS_AS((void)r.allocate(4096, 256), std::logic_error);
    return;
  }

  SUBCASE("sizes and alignments") {
    for (std::size_t bytes : {std::size_t{1}, std::size_t{100}, std::size_t{4095}, std::size_t{4096},
                              std::size_t{65537}, 3 * MiB + 7}) {
      for (std::size_t align : {std::size_t{8}, std::size_t{64}, std::size_t{256}, std::size_t{4096}}) {
        CAPTURE(bytes);
        CAPTURE(align);
        void* p = r.allocate(bytes, align);
        REQUIRE(p != nullptr);
        CHECK(reinterpret_cast<std::uintptr_t>(p) % align == 0);
        check_block(f, p, bytes, static_cast<unsigned>(bytes + align));
        r.deallocate(p, bytes, align);
      }
    }
  }

  SUBCASE("zero bytes gives a valid pointer") {
    void* p = r.allocate(0, 256);
    CHECK(p != nullptr);
    r.deallocate(p, 0, 256);
  }

  SUBCASE("two live blocks do not overlap") {
    void* a = r.allocate(8192, 256);
    void* b = r.allocate(8192, 256);
    CHECK(a != b);
    fill(a, 8192, 1);
    fill(b, 8192, 2);
    if (f.readable(a) && f.readable(b)) {
      CHECK(matches(a, 8192, 1));
      CHECK(matches(b, 8192, 2));
    } else if (have_gpu()) {
      CHECK(read_through_device(a, 8192) == pattern(8192, 1));
      CHECK(read_through_device(b, 8192) == pattern(8192, 2));
    }
    r.deallocate(b, 8192, 256);
    r.deallocate(a, 8192, 256);
  }

  SUBCASE("Allocation is a move-only owner") {
    using R = std::remove_reference_t<decltype(r)>;
    Allocation<R> a(r, 10000);
    REQUIRE(a);
    void* p = a.get();
    Allocation<R> b(std::move(a));
    CHECK_FALSE(a);
    CHECK(b.get() == p);
    CHECK(b.size() == 10000);
    check_block(f, b.get(), b.size(), 7);
    b.reset();
    CHECK_FALSE(b);
  }

  SUBCASE("the GPU can write it (D2H)") {
    if (!have_gpu()) return;
    void* p = r.allocate(100003, 4096);
    check_device_write(f, p, 100003);
    r.deallocate(p, 100003, 4096);
  }
}
