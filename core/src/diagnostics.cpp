#include "core/diagnostics.hpp"

#include <cstdlib>
#include <string>

#include "imgpipe/error.hpp"

namespace imgpipe {

namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// `v`, the value of `name`, as a number in lo..hi; else an Error that names
// the variable and what it expects.
double number_in(const char* name, const char* v, double lo, double hi, const char* expected) {
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= lo && x <= hi))
    throw Error(std::string(name) + "='" + v + "': expected " + expected);
  return x;
}
}  // namespace

Diagnostics Diagnostics::from_environment() {
  Diagnostics d;
  if (const char* v = env("IMGPIPE_GPU_SHARE")) {
    d.gpu_share = number_in("IMGPIPE_GPU_SHARE", v, 0, 1, "a share 0..1");
    d.set.emplace_back("IMGPIPE_GPU_SHARE", v);
  }
  if (const char* v = env("IMGPIPE_TRACE_CALLS")) {
    d.trace_calls = v;
    d.set.emplace_back("IMGPIPE_TRACE_CALLS", v);
  }
  if (const char* v = env("IMGPIPE_FAULT")) {
    d.fault = v;
    d.set.emplace_back("IMGPIPE_FAULT", v);
  }
  if (const char* v = env("IMGPIPE_CUDA_WAIT")) {
    const std::string w = v;
    if (w != "block" && w != "yield" && w != "spin" && w != "auto")
      throw Error("IMGPIPE_CUDA_WAIT='" + w + "': expected block, yield, spin or auto");
    d.cuda_wait = w;
    d.set.emplace_back("IMGPIPE_CUDA_WAIT", v);
  }
  if (const char* v = env("IMGPIPE_HEAP")) {
    const std::string h = v;
    if (h != "keep" && h != "system") throw Error("IMGPIPE_HEAP='" + h + "': expected keep or system");
    d.heap = h;
    d.set.emplace_back("IMGPIPE_HEAP", v);
  }
  if (const char* v = env("IMGPIPE_HUGE_PAGES")) {
    const std::string h = v;
    if (h != "on" && h != "off") throw Error("IMGPIPE_HUGE_PAGES='" + h + "': expected on or off");
    d.huge_pages = h;
    d.set.emplace_back("IMGPIPE_HUGE_PAGES", v);
  }
  return d;
}

}  // namespace imgpipe
