#include "memory/heap_policy.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"

namespace imgpipe::memory {

namespace {
// glibc's largest M_MMAP_THRESHOLD (HEAP_MAX_SIZE / 2 on 64-bit hosts).
constexpr int kKeepBelow = 32 << 20;
constexpr int kTrimAbove = 1 << 30;
}  // namespace

std::string keep_freed_heap(const std::string& asked) {
  if (!asked.empty() && asked != "keep" && asked != "system")
    throw Error("the heap policy '" + asked + "': expected keep or system");
  if (asked == "system") return "left to the C library (IMGPIPE_HEAP=system)";
#if defined(__GLIBC__)
  static std::once_flag once;
  static std::string said;
  std::call_once(once, [] {
    const char* t = std::getenv("GLIBC_TUNABLES");
    if (t != nullptr && std::strstr(t, "glibc.malloc.") != nullptr) {
      said = "left to the C library (GLIBC_TUNABLES sets malloc tunables)";
      return;
    }
    const bool ok = mallopt(M_MMAP_THRESHOLD, kKeepBelow) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimAbove) == 1;
    said = ok ? "freed blocks kept in the heap (below 32 MiB; up to 1 GiB free at its top)"
              : "left to the C library (mallopt refused the thresholds)";
  });
  return said;
#else
  return "left to the C library (not glibc)";
#endif
}

std::string huge_pages_policy(const std::string& asked) {
  if (!asked.empty() && asked != "on" && asked != "off")
    throw Error("the huge page policy '" + asked + "': expected on or off");
  const bool on = asked == "on";
  gpu::set_huge_pages(on);
  return on ? "large host blocks advised onto huge pages (IMGPIPE_HUGE_PAGES=on)"
            : "large host blocks on the kernel's 4 KiB pages (no huge-page advice)";
}

}  // namespace imgpipe::memory
