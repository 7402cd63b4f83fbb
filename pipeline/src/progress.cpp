#include "progress.hpp"

#include <cmath>

#include <fmt/format.h>

namespace imgpipe::detail {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<std::uint64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string format_progress(const ProgressFigures& f, ProgressStyle style) {
  std::string text = style == ProgressStyle::line ? "imgpipe: progress: " : "imgpipe: ";
  const bool known_total = f.total > 0 && f.done <= f.total;
  if (known_total)
    text += fmt::format("{}/{} {} ({:.1f}%)", f.done, f.total, f.unit, 100.0 * static_cast<double>(f.done) / f.total);
  else
    text += fmt::format("{} {}", f.done, f.unit);
  // A rate needs something done in measurable time.
  const bool rated = f.done > 0 && f.elapsed_s > 0 && std::isfinite(f.elapsed_s);
  const double rate = rated ? static_cast<double>(f.done) / f.elapsed_s : 0;
  if (rated) text += fmt::format(" | {:.{}f} {}/s", rate, rate >= 100 ? 0 : 1, f.unit);
  else text += fmt::format(" | – {}/s", f.unit);
  if (known_total) {
    const std::uint64_t left = f.total - f.done;
    text += " | ETA " + (left == 0 ? format_duration(0) : rated ? format_duration(left / rate) : std::string("?"));
  }
  text += fmt::format(" | {} failed", f.failed);
  if (style == ProgressStyle::line) text += fmt::format(" | {:.1f} s", f.elapsed_s);
  return text;
}

namespace {
constexpr double kRedrawInterval = 0.25;
}

ProgressPrinter::ProgressPrinter(ProgressStyle style, double interval_s, std::FILE* out)
    : style_(style), interval_s_(style == ProgressStyle::redraw ? kRedrawInterval : interval_s), out_(out) {}

bool ProgressPrinter::tick(const ProgressFigures& f) {
  if (f.elapsed_s - last_ < interval_s_) return false;
  last_ = f.elapsed_s;
  const std::string text = format_progress(f, style_);
  if (style_ == ProgressStyle::redraw) {
    std::fprintf(out_, "\r\033[K%s", text.c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
  return true;
}

void ProgressPrinter::finish(const ProgressFigures& f) {
  if (style_ == ProgressStyle::line) {
    std::fprintf(out_, "%s\n", format_progress(f, style_).c_str());
    std::fflush(out_);
  } else {
    abandon();
  }
}

void ProgressPrinter::abandon() {
  if (!drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace imgpipe::detail
