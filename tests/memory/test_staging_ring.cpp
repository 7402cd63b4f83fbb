// The staging ring: slot order, write-only access with bounds checks, exact
// copies to the device, slot reuse guarded by the release event, and the
// memory figures (stats, fallbacks, budget, tracking) it reports. Runs on
// the host backend (device -1) always and on GPU 0 when there is one.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"
#include "memory_helpers.hpp"
#include "memory/fault_injection.hpp"
#include "memory/gpu.hpp"
#include "memory/staging_ring.hpp"

using imgpipe::StagingMemory;
using imgpipe::memory::SlotWriter;
using imgpipe::memory::StagingRing;
namespace gpu = imgpipe::gpu;
using imgpipe::test::read_back;
using imgpipe::test::ring_devices;
using imgpipe::test::ring_pattern;

// ---- The CPU never reads a slot: the writer offers no read access. --------
namespace {
template <typename T>
concept has_data = requires(T t) { t.data(); };
template <typename T>
concept has_get = requires(T t) { t.get(); };
template <typename T>
concept has_subscript = requires(T t) { t[std::size_t{0}]; };
template <typename T>
concept has_deref = requires(T t) { *t; };
template <typename T>
concept has_read_member = requires { &T::read; };
template <typename T>
concept has_read_call = requires(T t, void* dst, std::size_t n) { t.read(n, dst, n); } ||
                        requires(T t, void* dst, std::size_t n) { t.read(dst, n); } ||
                        requires(T t, std::size_t n) { t.read(n); };
template <typename T>
concept has_begin = requires(T t) { t.begin(); };
template <typename T>
concept has_pointer_conversion = std::is_convertible_v<T, const void*> || std::is_convertible_v<T, void*>;
template <typename T>
concept has_write = requires(T t, const void* src, std::size_t n) { t.write(n, src, n); };

// The concepts detect what they should (so the checks below are not vacuous).
static_assert(has_data<std::vector<int>> && has_subscript<std::vector<int>> && has_begin<std::vector<int>>);
static_assert(has_get<std::unique_ptr<int>> && has_deref<std::unique_ptr<int>>);
struct Readable {
  void read(std::size_t, void*, std::size_t) {}
};
static_assert(has_read_member<Readable> && has_read_call<Readable>);

static_assert(has_write<SlotWriter>, "the writer writes");
static_assert(!has_data<SlotWriter>, "SlotWriter must not expose data()");
static_assert(!has_get<SlotWriter>, "SlotWriter must not expose get()");
static_assert(!has_subscript<SlotWriter>, "SlotWriter must not have operator[]");
static_assert(!has_deref<SlotWriter>, "SlotWriter must not be dereferenceable");
static_assert(!has_read_member<SlotWriter>, "SlotWriter must not have read()");
static_assert(!has_read_call<SlotWriter>, "SlotWriter must not have read()");
static_assert(!has_begin<SlotWriter>, "SlotWriter must not be iterable");
static_assert(!has_pointer_conversion<SlotWriter>, "SlotWriter must not convert to a pointer");
// Nor does the ring hand out a slot's address to the CPU: its device address
// is a gpu::DeviceAddress, which reads nothing on the host (a memcpy from
// it does not build: tests/memory/compile_fail).
using imgpipe::gpu::DeviceAddress;
static_assert(!has_data<StagingRing> && !has_subscript<StagingRing>);
static_assert(std::is_same_v<decltype(std::declval<const StagingRing&>().device_pointer(0)), DeviceAddress>);
static_assert(!has_deref<DeviceAddress>, "DeviceAddress must not be dereferenceable");
static_assert(!has_subscript<DeviceAddress>, "DeviceAddress must not have operator[]");
static_assert(!has_data<DeviceAddress> && !has_get<DeviceAddress> && !has_begin<DeviceAddress>);
static_assert(!has_pointer_conversion<DeviceAddress>, "DeviceAddress must not convert to a pointer");
static_assert(!std::is_constructible_v<const void*, DeviceAddress>, "not even explicitly");
static_assert(!std::is_convertible_v<const void*, DeviceAddress>, "a pointer becomes one only explicitly");
}  // namespace

TEST_CASE("staging ring: a device address offers offsets, comparison, a null check and the named accessor") {
  const unsigned char bytes[8] = {};
  const DeviceAddress a(bytes);
  CHECK((a + 3).for_device() == bytes + 3);
  CHECK(a + 0 == a);
  CHECK(a + 1 != a);
  CHECK(a != DeviceAddress());
  CHECK_FALSE(DeviceAddress());
  CHECK_FALSE(DeviceAddress(nullptr));
  CHECK(static_cast<bool>(a));
  CHECK(DeviceAddress() == nullptr);
}

namespace {

void fill(gpu::DeviceBuffer& d, unsigned char value, const gpu::Stream& s) {
  const std::vector<unsigned char> h(d.size(), value);
  gpu::copy_h2d_async(d.get(), h.data(), h.size(), s);
  s.synchronize();
}

}  // namespace

TEST_CASE("staging ring: slots are handed out in ring order and wrap around") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    gpu::Stream stream(dev);
    for (int n : {2, 3, 5}) {
      CAPTURE(n);
      StagingRing ring(dev, n, 4096, StagingMemory::write_combined);
      CHECK(ring.slots() == n);
      CHECK(ring.slot_bytes() == 4096);
      std::vector<int> got;
      for (int i = 0; i < 3 * n + 1; ++i) {
        SlotWriter w = ring.acquire();
        CHECK(w.capacity() == 4096);
        got.push_back(w.slot());
        ring.release(w.slot(), stream);
      }
      std::vector<int> want;
      for (int i = 0; i < 3 * n + 1; ++i) want.push_back(i % n);
      CHECK(got == want);
      ring.drain();
    }
    // The two examples of the protocol's description, literally.
    StagingRing two(dev, 2, 64, StagingMemory::pinned);
    std::vector<int> a;
    for (int i = 0; i < 4; ++i) {
      a.push_back(two.acquire().slot());
      two.release(a.back(), stream);
    }
    CHECK(a == std::vector<int>{0, 1, 0, 1});
    StagingRing three(dev, 3, 64, StagingMemory::pinned);
    std::vector<int> b;
    for (int i = 0; i < 4; ++i) {
      b.push_back(three.acquire().slot());
      three.release(b.back(), stream);
    }
    CHECK(b == std::vector<int>{0, 1, 2, 0});
  }
}

TEST_CASE("staging ring: invalid construction is refused") {
  CHECK_THROWS_AS(StagingRing(-1, 1, 4096, StagingMemory::pageable), std::invalid_argument);
  CHECK_THROWS_AS(StagingRing(-1, 0, 4096, StagingMemory::pageable), std::invalid_argument);
  CHECK_THROWS_AS(StagingRing(-1, 2, 0, StagingMemory::pageable), std::invalid_argument);
}

TEST_CASE("staging ring: writes are bounds-checked") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    StagingRing ring(dev, 2, 1000, StagingMemory::write_combined);
    SlotWriter w = ring.acquire();
    const auto src = ring_pattern(2000, 1);
    const std::size_t max = std::numeric_limits<std::size_t>::max();
    CHECK_NOTHROW(w.write(0, src.data(), 1000));
    CHECK_NOTHROW(w.write(999, src.data(), 1));
    CHECK_NOTHROW(w.write(1000, src.data(), 0));
    CHECK_THROWS_AS(w.write(0, src.data(), 1001), std::out_of_range);
    CHECK_THROWS_AS(w.write(990, src.data(), 11), std::out_of_range);
    CHECK_THROWS_AS(w.write(1000, src.data(), 1), std::out_of_range);
    CHECK_THROWS_AS(w.write(1001, src.data(), 0), std::out_of_range);
    // Overflowing offset + bytes must not wrap around into range.
    CHECK_THROWS_AS(w.write(max, src.data(), 2), std::out_of_range);
    CHECK_THROWS_AS(w.write(2, src.data(), max), std::out_of_range);
    CHECK_THROWS_AS(w.write(max / 2 + 1, src.data(), max / 2 + 1), std::out_of_range);
    // The copy to the device is bounded by the slot too.
    gpu::Stream stream(dev);
    gpu::DeviceBuffer d(dev, 2000);
    CHECK_THROWS_AS(ring.copy_to_device(w.slot(), d.get(), 1001, stream), std::out_of_range);
    CHECK_THROWS_AS(ring.copy_to_device(2, d.get(), 10, stream), std::out_of_range);
    CHECK_THROWS_AS(ring.copy_to_device(-1, d.get(), 10, stream), std::out_of_range);
    CHECK_THROWS_AS(ring.copy_to_device(w.slot(), 995, d.get(), 6, stream), std::out_of_range);
    CHECK_THROWS_AS(ring.copy_to_device(w.slot(), 1001, d.get(), 0, stream), std::out_of_range);
    CHECK_THROWS_AS(ring.copy_to_device(w.slot(), 2, d.get(), max, stream), std::out_of_range);
  }
}

TEST_CASE("staging ring: copy_to_device delivers exactly what was written, where it was written") {
  for (int dev : ring_devices()) {
    for (StagingMemory kind : {StagingMemory::write_combined, StagingMemory::pinned, StagingMemory::pageable}) {
      CAPTURE(dev);
      CAPTURE(std::string(imgpipe::memory::to_string(kind)));
      constexpr std::size_t cap = 4096 + 13;
      gpu::Stream stream(dev);
      StagingRing ring(dev, 2, cap, kind);
      const auto a = ring_pattern(cap, 1), b = ring_pattern(cap, 2), c = ring_pattern(cap, 3), e = ring_pattern(cap, 4);

      SlotWriter w0 = ring.acquire();
      SlotWriter w1 = ring.acquire();
      REQUIRE(w0.slot() == 0);
      REQUIRE(w1.slot() == 1);
      // Slot 0: pieces at offsets, one overwriting part of another (the later write wins).
      w0.write(0, a.data(), 1000);
      w0.write(1000, b.data(), 1500);  // [1000, 2500)
      w0.write(500, c.data(), 100);    // [500, 600) replaced
      w0.write(cap - 7, e.data(), 7);  // the slot's last bytes
      // Slot 1: something else entirely; must not leak into slot 0.
      w1.write(0, e.data(), cap);

      std::vector<unsigned char> want0(a.begin(), a.begin() + 1000);
      want0.insert(want0.end(), b.begin(), b.begin() + 1500);
      std::copy(c.begin(), c.begin() + 100, want0.begin() + 500);

      gpu::DeviceBuffer d0(dev, cap + 64), d1(dev, cap + 64);
      fill(d0, 0xAB, stream);
      fill(d1, 0xAB, stream);
      ring.copy_to_device(0, d0.get(), 2500, stream);  // a prefix only
      ring.copy_to_device(1, d1.get(), cap, stream);
      ring.release(0, stream);
      ring.release(1, stream);
      const auto h0 = read_back(d0, cap + 64, stream);
      const auto h1 = read_back(d1, cap + 64, stream);
      CHECK(std::equal(want0.begin(), want0.end(), h0.begin()));
      // Nothing past the requested bytes was copied.
      CHECK(std::all_of(h0.begin() + 2500, h0.end(), [](unsigned char x) { return x == 0xAB; }));
      CHECK(std::equal(e.begin(), e.end(), h1.begin()));
      CHECK(std::all_of(h1.begin() + cap, h1.end(), [](unsigned char x) { return x == 0xAB; }));
      // The whole slot, including the tail written last.
      gpu::DeviceBuffer d2(dev, cap);
      ring.copy_to_device(0, d2.get(), cap, stream);
      const auto h2 = read_back(d2, cap, stream);
      CHECK(std::equal(e.begin(), e.begin() + 7, h2.end() - 7));
      // A run from inside the slot (the transfer copies the runs the CPU
      // wrote, skipping frames copied from elsewhere).
      gpu::DeviceBuffer d4(dev, 64);
      fill(d4, 0xAB, stream);
      ring.copy_to_device(0, 990, d4.get(), 20, stream);
      const auto h4 = read_back(d4, 64, stream);
      CHECK(std::equal(want0.begin() + 990, want0.begin() + 1010, h4.begin()));
      CHECK(std::all_of(h4.begin() + 20, h4.end(), [](unsigned char x) { return x == 0xAB; }));

      // After wrapping around, slot 0 is rewritten and delivers the new bytes.
      SlotWriter again = ring.acquire();
      REQUIRE(again.slot() == 0);
      again.write(0, c.data(), cap);
      ring.copy_to_device(0, d0.get(), cap, stream);
      ring.release(0, stream);
      const auto h3 = read_back(d0, cap, stream);
      CHECK(std::equal(c.begin(), c.end(), h3.begin()));
      ring.drain();
    }
  }
}

TEST_CASE("staging ring: device_pointer is the mapped slot in zero-copy mode, read by the GPU's copies") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    for (auto transfer : {imgpipe::TransferMode::copy, imgpipe::TransferMode::zero_copy}) {
      CAPTURE(static_cast<int>(transfer));
      imgpipe::memory::StagingOptions o;
      o.device = dev;
      o.slots = 2;
      o.slot_bytes = 4096;
      o.transfer = transfer;
      StagingRing ring(o);
      // Mapped memory on a GPU only (the host backend's slots are pageable).
      CHECK(ring.zero_copy() == (dev >= 0 && transfer == imgpipe::TransferMode::zero_copy));
      CHECK_THROWS_AS((void)ring.device_pointer(2), std::out_of_range);
      if (!ring.zero_copy()) {
        CHECK_FALSE(ring.device_pointer(0));
        continue;
      }
      CHECK(ring.device_pointer(0));
      CHECK(ring.device_pointer(0) != ring.device_pointer(1));
      gpu::Stream stream(dev);
      SlotWriter w = ring.acquire();
      const auto src = ring_pattern(4096, 7);
      w.write(0, src.data(), src.size());
      // What the host wrote, read back by the GPU from the mapped address (and an offset into it).
      std::vector<unsigned char> back(4096 - 100);
      gpu::copy_d2h_async(back.data(), ring.device_pointer(w.slot()) + 100, back.size(), stream);
      gpu::DeviceBuffer d(dev, 4096);
      gpu::copy_d2d_async(d.get(), ring.device_pointer(w.slot()), 4096, stream);
      ring.release(w.slot(), stream);
      stream.synchronize();
      CHECK(std::equal(back.begin(), back.end(), src.begin() + 100));
      CHECK(read_back(d, 4096, stream) == src);
      ring.drain();
    }
  }
}

TEST_CASE("staging ring: memory kind and pinned bytes") {
  SUBCASE("host backend: always pageable, nothing pinned") {
    for (StagingMemory kind : {StagingMemory::write_combined, StagingMemory::pinned, StagingMemory::pageable}) {
      StagingRing ring(-1, 3, 1 << 16, kind);
      CHECK(ring.memory() == StagingMemory::pageable);
      CHECK(ring.pinned_bytes() == 0);
      CHECK(ring.fallbacks() == 0);
      CHECK(ring.fallback_reason().empty());
      CHECK(ring.wait_seconds() == 0.0);
    }
  }
  if (imgpipe::test::have_gpu()) {
    SUBCASE("GPU: the requested pinned kind, every slot counted") {
      for (StagingMemory kind : {StagingMemory::write_combined, StagingMemory::pinned}) {
        StagingRing ring(0, 3, 1 << 16, kind);
        CHECK(ring.fallbacks() == 0);
        CHECK(ring.memory() == kind);
        CHECK(ring.pinned_bytes() == 3u * (1u << 16));
      }
      StagingRing pageable(0, 2, 1 << 16, StagingMemory::pageable);
      CHECK(pageable.memory() == StagingMemory::pageable);
      CHECK(pageable.pinned_bytes() == 0);
    }
  }
}

TEST_CASE("staging ring: on the host backend acquire never blocks") {
  // Host copies are done when they are enqueued: a released slot is free.
  gpu::Stream stream(-1);
  StagingRing ring(-1, 2, 1 << 20, StagingMemory::write_combined);
  const auto src = ring_pattern(1 << 20, 9);
  gpu::DeviceBuffer d(-1, 1 << 20);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    SlotWriter w = ring.acquire();
    w.write(0, src.data(), src.size());
    ring.copy_to_device(w.slot(), d.get(), src.size(), stream);
    ring.release(w.slot(), stream);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ring.wait_seconds() <= s);
  CHECK(std::memcmp(d.get(), src.data(), src.size()) == 0);
}

TEST_CASE("staging ring: a slot is reused only after its release event completed") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    // On the GPU: queue ~4 GiB of copies out of slot 0 (tens of milliseconds
    // at PCIe speed), then a probe event, then slot 0's release. On the host
    // backend the copies are done when enqueued, and so is the release.
    const std::size_t slot = dev >= 0 ? std::size_t{256} << 20 : std::size_t{4} << 20;
    const int copies = dev >= 0 ? 16 : 2;
    gpu::Stream stream(dev);
    StagingRing ring(dev, 2, slot, StagingMemory::pinned);
    gpu::DeviceBuffer d(dev, slot);
    SlotWriter w0 = ring.acquire();
    SlotWriter w1 = ring.acquire();
    REQUIRE(w0.slot() == 0);
    REQUIRE(w1.slot() == 1);
    const auto src = ring_pattern(1 << 16, 5);
    w0.write(slot - src.size(), src.data(), src.size());
    for (int i = 0; i < copies; ++i) ring.copy_to_device(0, d.get(), slot, stream);
    gpu::Event probe(dev, false);
    probe.record(stream);
    ring.release(0, stream);
    const bool busy_before = !probe.ready();
    const double waited_before = ring.wait_seconds();
    SlotWriter again = ring.acquire();  // slot 0: must wait for the copies
    const bool done_after = probe.ready();
    CHECK(again.slot() == 0);
    CHECK(done_after);  // the release event came after the probe on the same stream
    if (dev >= 0) {
      WARN_MESSAGE(busy_before, "the copies finished before acquire() was called; the wait was not exercised");
      if (busy_before) CHECK(ring.wait_seconds() > waited_before);
    } else {
      CHECK_FALSE(busy_before);
    }
    // The copies delivered the slot's content.
    std::vector<unsigned char> tail(src.size());
    gpu::copy_d2h_async(tail.data(), static_cast<unsigned char*>(d.get()) + slot - src.size(), tail.size(), stream);
    stream.synchronize();
    CHECK(tail == src);
    ring.release(0, stream);
    ring.release(1, stream);
    ring.drain();
  }
}

TEST_CASE("staging ring: stats() for the report") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    gpu::Stream stream(dev);
    StagingRing ring(dev, 3, 1 << 16, StagingMemory::write_combined);
    for (int i = 0; i < 7; ++i) ring.release(ring.acquire().slot(), stream);
    ring.drain();
    const imgpipe::memory::StagingStats s = ring.stats();
    CHECK(s.hits == 7);    // every acquire reused a slot
    CHECK(s.misses == 3);  // one allocation per slot, at construction
    CHECK(s.fallbacks == 0);
    CHECK(s.pinned_bytes == (dev >= 0 ? 3u << 16 : 0u));
    CHECK(s.pinned_peak == s.pinned_bytes);
    CHECK(s.pinned_bytes == ring.pinned_bytes());
    // The transitional spelling used by pipeline.cpp reads the same figures.
    const imgpipe::memory::StagingStats ps = ring.stats();
    CHECK(ps.hits == s.hits);
    CHECK(ps.misses == s.misses);
    CHECK(ps.pinned_peak == s.pinned_peak);
  }
}

TEST_CASE("staging ring: a device asked for where there is none: pageable slots, the reason reported") {
  IMGPIPE_SKIP_UNLESS(!imgpipe::test::have_gpu(), "a CUDA device is present: this case checks the answer where there is none");
  imgpipe::test::LogCapture log;
  StagingRing ring(0, 2, 4096, StagingMemory::write_combined);
  CHECK(ring.memory() == StagingMemory::pageable);
  CHECK(ring.fallbacks() == 2);  // one step per slot
  CHECK(ring.fallback_reason().find("write_combined -> pageable: no CUDA device") != std::string::npos);
  CHECK(ring.stats().pinned_bytes == 0);
  CHECK(log.count("staging: write_combined allocation") == 1);

  imgpipe::memory::StagingOptions o;
  o.device = 0;
  o.slot_bytes = 4096;
  o.fallback = false;
  CHECK_THROWS_WITH_AS(StagingRing{o}, doctest::Contains("fallback is off"), imgpipe::memory::AllocationError);
}

TEST_CASE("staging ring: track records where each slot was allocated") {
  for (int dev : ring_devices()) {
    CAPTURE(dev);
    imgpipe::test::LogCapture log;
    {
      imgpipe::memory::StagingOptions o;
      o.device = dev;
      o.slots = 2;
      o.slot_bytes = 10000;
      o.track = true;
      StagingRing ring(o);
      const std::string report = ring.tracking_report();
      CAPTURE(report);
      CHECK(report.find("staging: 2 block(s)") != std::string::npos);
      CHECK(report.find("staging_ring.cpp:") != std::string::npos);
      CHECK(StagingRing(dev, 2, 64, StagingMemory::pinned).tracking_report().empty());  // not tracked
    }
    CHECK(log.count("still allocated") == 0);  // every slot came back at destruction
  }
}

TEST_CASE("staging ring (GPU): fallbacks and the budget, the least capable slot reported") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  namespace mem = imgpipe::memory;
  mem::fault_injection::Scope faults;
  SUBCASE("write_combined fails: pinned slots") {
    mem::fault_injection::fail_next(mem::MemoryKind::write_combined, 1);
    StagingRing ring(0, 3, 1 << 16, StagingMemory::write_combined);
    CHECK(ring.memory() == StagingMemory::pinned);
    CHECK(ring.fallbacks() == 3);
    CHECK(mem::fault_injection::pending(mem::MemoryKind::write_combined) == 0);
    CHECK(ring.pinned_bytes() == 3u << 16);
  }
  SUBCASE("a budget of one slot: the second is pageable") {
    mem::StagingOptions o;
    o.device = 0;
    o.slots = 2;
    o.slot_bytes = 1 << 20;
    o.budget_bytes = 1 << 20;
    StagingRing ring(o);
    CHECK(ring.kind() == mem::MemoryKind::pageable);
    CHECK(ring.stats().pinned_bytes == 1u << 20);
    const auto rec = ring.fallback_records();
    REQUIRE(rec.size() == 1);
    CHECK(rec[0].from == mem::MemoryKind::write_combined);
    CHECK(rec[0].to == mem::MemoryKind::pageable);
    CHECK(rec[0].reason.find("budget") != std::string::npos);
    o.fallback = false;
    CHECK_THROWS_WITH_AS(StagingRing{o}, doctest::Contains("budget"), mem::AllocationError);
  }
}
