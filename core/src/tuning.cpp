#include "core/tuning.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "imgpipe/error.hpp"

namespace imgpipe::tuning {

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

Knobs read_knobs() {
  Knobs k;
  if (const char* v = env("IMGPIPE_GPU_SHARE")) k.fixed_share = number_in("IMGPIPE_GPU_SHARE", v, 0, 1, "a share 0..1");
  if (const char* v = env("IMGPIPE_ROUTE")) {
    const std::string_view s(v);
    if (s == "spread") {
      k.free_batches = 0;
    } else if (s.starts_with("early:")) {
      const auto r = std::from_chars(s.data() + 6, s.data() + s.size(), k.free_batches);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size() || k.free_batches < 1 || k.free_batches > 6)
        throw Error("IMGPIPE_ROUTE='" + std::string(s) + "': expected early:N with N 1..6");
    } else if (s != "early") {
      throw Error("IMGPIPE_ROUTE='" + std::string(s) + "': expected early, early:N or spread");
    }
  }
  if (const char* v = env("IMGPIPE_CPU_UTIL")) k.cpu_util = number_in("IMGPIPE_CPU_UTIL", v, 0.3, 1, "a load 0.3..1");
  if (const char* v = env("IMGPIPE_STEER")) {
    std::string_view rest(v);
    while (true) {
      const std::size_t comma = rest.find(',');
      const std::string_view w = rest.substr(0, comma);
      if (w == "memory") {
        k.steer_memory = true;
      } else if (w == "unslowed") {
        k.hold_when_slowed = false;
      } else if (w == "slowed") {
        k.hold_when_slowed = true;
      } else {
        throw Error("IMGPIPE_STEER='" + std::string(v) +
                    "': expected memory, slowed or unslowed (the default), comma-separated");
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (const char* v = env("IMGPIPE_TRACE_CALLS")) k.trace_calls = v;
  return k;
}

const Knobs& knobs() {
  static const Knobs k = read_knobs();
  return k;
}

}  // namespace imgpipe::tuning
