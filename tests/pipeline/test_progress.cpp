// The progress line (pipeline/src/progress.hpp): its text as a pure function
// of the figures, at the edges (nothing done yet, unknown total, more done
// than listed), and when the printer prints.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "common.hpp"
#include "pipeline/src/progress.hpp"

using imgpipe::detail::format_duration;
using imgpipe::detail::format_progress;
using imgpipe::detail::ProgressFigures;
using imgpipe::detail::ProgressPrinter;
using imgpipe::detail::ProgressStyle;

namespace {

ProgressFigures figures(std::uint64_t done, std::uint64_t total, std::uint64_t failed, double elapsed,
                        const char* unit = "images") {
  return {done, total, failed, elapsed, unit};
}

using imgpipe::test::contains;

// What a printer wrote to its FILE.
std::string text_of(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

}  // namespace

TEST_CASE("progress: durations") {
  CHECK(format_duration(0) == "0:00");
  CHECK(format_duration(7.4) == "0:07");
  CHECK(format_duration(59.6) == "1:00");
  CHECK(format_duration(754) == "12:34");
  CHECK(format_duration(3723) == "1:02:03");
  CHECK(format_duration(1e6) == "277:46:40");
  CHECK(format_duration(-1) == "?");
  CHECK(format_duration(std::numeric_limits<double>::infinity()) == "?");
  CHECK(format_duration(std::nan("")) == "?");
}

TEST_CASE("progress: done/total, share, rate, ETA and failures") {
  const std::string s = format_progress(figures(1234, 5000, 3, 2.0), ProgressStyle::redraw);
  CHECK(s == "imgpipe: 1234/5000 images (24.7%) | 617 images/s | ETA 0:06 | 3 failed");
  // A slow run: one decimal on the rate.
  CHECK(format_progress(figures(50, 100, 0, 10.0), ProgressStyle::redraw) ==
        "imgpipe: 50/100 images (50.0%) | 5.0 images/s | ETA 0:10 | 0 failed");
  // The log line adds the elapsed time.
  CHECK(format_progress(figures(50, 100, 0, 10.0), ProgressStyle::line) ==
        "imgpipe: progress: 50/100 images (50.0%) | 5.0 images/s | ETA 0:10 | 0 failed | 10.0 s");
  // Done: nothing left.
  CHECK(contains(format_progress(figures(100, 100, 2, 4.0), ProgressStyle::line), "(100.0%) | 25.0 images/s | ETA 0:00"));
}

TEST_CASE("progress: nothing done yet has no rate and no ETA") {
  CHECK(format_progress(figures(0, 100, 0, 3.0), ProgressStyle::redraw) ==
        "imgpipe: 0/100 images (0.0%) | – images/s | ETA ? | 0 failed");
  // Done, but no time measured: still no rate to divide by.
  CHECK(format_progress(figures(5, 100, 0, 0.0), ProgressStyle::redraw) ==
        "imgpipe: 5/100 images (5.0%) | – images/s | ETA ? | 0 failed");
}

TEST_CASE("progress: an unknown total (videos) or more done than listed shows no share and no ETA") {
  CHECK(format_progress(figures(1234, 0, 1, 2.0, "frames"), ProgressStyle::redraw) ==
        "imgpipe: 1234 frames | 617 frames/s | 1 failed");
  CHECK(format_progress(figures(120, 100, 0, 2.0), ProgressStyle::line) ==
        "imgpipe: progress: 120 images | 60.0 images/s | 0 failed | 2.0 s");
  CHECK(format_progress(figures(0, 0, 0, 0.0, "samples"), ProgressStyle::redraw) ==
        "imgpipe: 0 samples | – samples/s | 0 failed");
}

TEST_CASE("progress: the printer prints lines every interval and a last one, or redraws in place") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  {
    ProgressPrinter p(ProgressStyle::line, 5.0, f);
    CHECK_FALSE(p.tick(figures(1, 10, 0, 0.1)));
    CHECK_FALSE(p.tick(figures(3, 10, 0, 4.9)));
    CHECK(p.tick(figures(4, 10, 0, 5.0)));
    CHECK_FALSE(p.tick(figures(6, 10, 0, 9.9)));
    CHECK(p.tick(figures(8, 10, 1, 10.1)));
    p.finish(figures(10, 10, 1, 12.0));
  }
  const std::string lines = text_of(f);
  std::fclose(f);
  CAPTURE(lines);
  CHECK(lines ==
        "imgpipe: progress: 4/10 images (40.0%) | 0.8 images/s | ETA 0:08 | 0 failed | 5.0 s\n"
        "imgpipe: progress: 8/10 images (80.0%) | 0.8 images/s | ETA 0:03 | 1 failed | 10.1 s\n"
        "imgpipe: progress: 10/10 images (100.0%) | 0.8 images/s | ETA 0:00 | 1 failed | 12.0 s\n");

  std::FILE* g = std::tmpfile();
  REQUIRE(g);
  {
    ProgressPrinter p(ProgressStyle::redraw, 5.0, g);  // redrawn every 0.25 s whatever the interval
    CHECK_FALSE(p.tick(figures(0, 10, 0, 0.1)));
    CHECK(p.tick(figures(2, 10, 0, 0.3)));
    CHECK(p.tick(figures(4, 10, 0, 0.6)));
    p.finish(figures(10, 10, 0, 1.0));
  }
  const std::string redrawn = text_of(g);
  std::fclose(g);
  CHECK(redrawn.find('\n') == std::string::npos);
  CHECK(contains(redrawn, "\r\033[Kimgpipe: 2/10 images (20.0%)"));
  CHECK(contains(redrawn, "\r\033[Kimgpipe: 4/10 images (40.0%)"));
  CHECK(redrawn.size() >= 4);
  CHECK(redrawn.substr(redrawn.size() - 4) == "\r\033[K");  // cleared at the end
}
