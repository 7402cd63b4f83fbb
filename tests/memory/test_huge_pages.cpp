// Transparent huge pages for large host blocks (memory::huge_pages_policy,
// gpu::advise_huge_pages): off by default, so a host backend's buffer is not
// advised (its mapping's VmFlags in /proc/self/smaps lack "hg"); on with
// IMGPIPE_HUGE_PAGES=on, and then it is; a wrong value is an error naming
// the variable.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "common.hpp"
#include "core/diagnostics.hpp"
#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"
#include "memory/heap_policy.hpp"

using imgpipe::Error;

namespace {

// The VmFlags of the mapping that holds p (Linux); empty when none does.
std::string vm_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8);
  }
  return {};
}

bool advised(const std::string& flags) {
  std::istringstream words(flags);
  std::string w;
  while (words >> w)
    if (w == "hg") return true;
  return false;
}

}  // namespace

TEST_CASE("huge pages: the host's large blocks are not advised unless IMGPIPE_HUGE_PAGES=on, and a wrong value is an error") {
  {
    const imgpipe::test::ScopedEnv bad("IMGPIPE_HUGE_PAGES", "sometimes");
    CHECK_THROWS_WITH_AS(imgpipe::Diagnostics::from_environment(), "IMGPIPE_HUGE_PAGES='sometimes': expected on or off",
                         Error);
  }
  CHECK_THROWS_AS(imgpipe::memory::huge_pages_policy("yes"), Error);
  std::string asked;
  {
    const imgpipe::test::ScopedEnv on("IMGPIPE_HUGE_PAGES", "on");
    const imgpipe::Diagnostics d = imgpipe::Diagnostics::from_environment();
    asked = d.huge_pages;
    CHECK(asked == "on");
    CHECK(std::count(d.set.begin(), d.set.end(), std::make_pair(std::string("IMGPIPE_HUGE_PAGES"), asked)) == 1);
  }
  CHECK(imgpipe::Diagnostics::from_environment().huge_pages.empty());
#if defined(__linux__)
  constexpr std::size_t kBytes = std::size_t{8} << 20;
  CHECK(imgpipe::memory::huge_pages_policy() ==
        "large host blocks on the kernel's 4 KiB pages (no huge-page advice)");
  {
    const imgpipe::gpu::DeviceBuffer plain(-1, kBytes);
    const std::string flags = vm_flags(plain.get());
    INFO("VmFlags: " << flags);
    REQUIRE(!flags.empty());
    CHECK(!advised(flags));
  }
  CHECK(imgpipe::memory::huge_pages_policy(asked) ==
        "large host blocks advised onto huge pages (IMGPIPE_HUGE_PAGES=on)");
  {
    const imgpipe::gpu::DeviceBuffer huge(-1, kBytes);
    const std::string flags = vm_flags(huge.get());
    INFO("VmFlags: " << flags);
    CHECK(advised(flags));
  }
  CHECK(imgpipe::memory::huge_pages_policy("off") ==
        "large host blocks on the kernel's 4 KiB pages (no huge-page advice)");
  {
    const imgpipe::gpu::DeviceBuffer plain(-1, kBytes);
    CHECK(!advised(vm_flags(plain.get())));
  }
#endif
}
