// The host-only variant of core/nvtx.hpp, forced here whatever the build: an
// empty class that constant-evaluates, so ranges cost nothing where NVTX is
// compiled out. (Its own inline namespace keeps it apart from the NVTX
// variant the rest of a CUDA build uses.)
#undef IMGPIPE_WITH_NVTX
#define IMGPIPE_WITH_NVTX 0
#include "core/nvtx.hpp"

#include <doctest/doctest.h>

#include <type_traits>

namespace {

// Nested ranges, evaluated at compile time below.
constexpr int nested_ranges() {
  const imgpipe::nvtx::Range outer("outer");
  int depth = 1;
  {
    const imgpipe::nvtx::Range inner("inner", 7);
    ++depth;
  }
  return depth;
}

static_assert(!imgpipe::nvtx::enabled);
static_assert(std::is_empty_v<imgpipe::nvtx::Range>);
static_assert(std::is_trivially_destructible_v<imgpipe::nvtx::Range>);
static_assert(nested_ranges() == 2, "no-op ranges are constant expressions");

}  // namespace

TEST_CASE("nvtx: the host-only variant is an empty, trivially destructible, constexpr class") {
  CHECK_FALSE(imgpipe::nvtx::enabled);
  CHECK(std::is_empty_v<imgpipe::nvtx::Range>);
  CHECK(nested_ranges() == 2);
}
