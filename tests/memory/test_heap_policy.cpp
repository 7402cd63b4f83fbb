// The C library's heap in runs with video files (memory::keep_freed_heap,
// memory/heap_policy.hpp): glibc keeps freed blocks below 32 MiB in its heap
// instead of mapping each anew (a block of 24 MiB then comes from the heap:
// mallinfo2's mapped bytes do not grow), unless IMGPIPE_HEAP=system or
// GLIBC_TUNABLES chose; an unknown policy is an error naming the variable.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "common.hpp"
#include "core/diagnostics.hpp"
#include "imgpipe/error.hpp"
#include "memory/heap_policy.hpp"

using imgpipe::Error;

// Under AddressSanitizer or ThreadSanitizer malloc is the sanitizer's, not
// glibc's: its mallopt may refuse, and the policy then says so.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_IS_SANITIZERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define HEAP_IS_SANITIZERS 1
#endif
#endif

TEST_CASE("heap policy: freed blocks stay in the heap unless IMGPIPE_HEAP=system, and a wrong name is an error") {
  {
    const imgpipe::test::ScopedEnv bad("IMGPIPE_HEAP", "sometimes");
    CHECK_THROWS_WITH_AS(imgpipe::Diagnostics::from_environment(), "IMGPIPE_HEAP='sometimes': expected keep or system",
                         Error);
  }
  {
    const imgpipe::test::ScopedEnv system("IMGPIPE_HEAP", "system");
    const imgpipe::Diagnostics d = imgpipe::Diagnostics::from_environment();
    CHECK(d.heap == "system");
    CHECK(std::count(d.set.begin(), d.set.end(), std::make_pair(std::string("IMGPIPE_HEAP"), std::string("system"))) ==
          1);
    CHECK(imgpipe::memory::keep_freed_heap(d.heap) == "left to the C library (IMGPIPE_HEAP=system)");
  }
  CHECK_THROWS_AS(imgpipe::memory::keep_freed_heap("never"), Error);
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  REQUIRE_MESSAGE((tunables == nullptr || std::strstr(tunables, "glibc.malloc.") == nullptr),
                  "GLIBC_TUNABLES sets malloc tunables: the policy leaves the heap alone");
  const std::string said = imgpipe::memory::keep_freed_heap();
  CHECK(imgpipe::memory::keep_freed_heap("keep") == said);  // once per process
#if defined(HEAP_IS_SANITIZERS)
  CHECK((said == "left to the C library (mallopt refused the thresholds)" ||
         said == "freed blocks kept in the heap (below 32 MiB; up to 1 GiB free at its top)"));
#else
  CHECK(said == "freed blocks kept in the heap (below 32 MiB; up to 1 GiB free at its top)");
  // A block of 24 MiB, past glibc's own threshold (128 KiB, raised only by
  // blocks freed before), comes from the heap: no new mapping.
  const std::size_t mapped = mallinfo2().hblkhd;
  void* p = std::malloc(std::size_t{24} << 20);
  REQUIRE(p != nullptr);
  std::memset(p, 1, 4096);
  CHECK(mallinfo2().hblkhd == mapped);
  std::free(p);
#endif
#endif
}
