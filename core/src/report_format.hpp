// Number and unit formatting shared by the report's table and HTML page.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace imgpipe::report_format {

inline std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

// The unit for n items, given its plural: "batches" for 0 and 2, "batch" for 1.
inline std::string_view unit_for(std::uint64_t n, std::string_view plural) {
  if (n != 1) return plural;
  if (plural.ends_with("ches")) return plural.substr(0, plural.size() - 2);  // batches
  return plural.ends_with('s') ? plural.substr(0, plural.size() - 1) : plural;
}

// "1 batch", "2 batches", "0 images".
inline std::string count(std::uint64_t n, std::string_view plural) {
  return fmt::format("{} {}", n, unit_for(n, plural));
}

// The delivered samples as the run's unit names them: "20 images delivered",
// "1 frame delivered", "200 samples delivered (30 images, 170 frames)".
inline std::string delivered(std::uint64_t n, const std::string& unit, std::uint64_t images, std::uint64_t frames) {
  std::string s = count(n, unit) + " delivered";
  if (unit == "samples" && images + frames > 0)
    s += fmt::format(" ({}, {})", count(images, "images"), count(frames, "frames"));
  return s;
}

// Three significant figures at most, no exponent: 0.123, 1.23, 12.3, 1234.
inline std::string number(double v) {
  const double a = std::abs(v);
  return fmt::format("{:.{}f}", v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

}  // namespace imgpipe::report_format
