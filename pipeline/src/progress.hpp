// The progress line on stderr (RunOptions::progress): on a terminal one line
// redrawn in place, "imgpipe: 1234/5000 images (24.7%) | 567 images/s | ETA
// 0:07 | 3 failed"; elsewhere (srun, nohup, CI logs) the same as a plain
// line every few seconds and once at the end. The text is a pure function of
// the figures (format_progress); the printer only decides when to print.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace imgpipe::detail {

struct ProgressFigures {
  std::uint64_t done = 0;    // inputs through the sink, delivered or failed
  std::uint64_t total = 0;   // inputs expected; 0 when unknown (a video's frames are not known ahead)
  std::uint64_t failed = 0;  // of `done`, failed
  double elapsed_s = 0;      // since the first input
  std::string unit = "images";
};

enum class ProgressStyle {
  redraw,  // for a terminal: no newline, the caller returns the cursor
  line,    // a log line (no newline either: the printer adds it)
};

// "1234/5000 images (24.7%) | 567 images/s | ETA 0:07 | 3 failed" after
// "imgpipe: " (redraw) or "imgpipe: progress: " (line; the elapsed time is
// added). No rate before anything is done; no share or ETA when the total is
// unknown or passed (more done than listed).
std::string format_progress(const ProgressFigures& f, ProgressStyle style);

// "0:07", "12:34", "1:02:03"; "?" when negative or not finite.
std::string format_duration(double seconds);

// Prints the progress to `out` when due: every 0.25 s redrawn, or every
// `interval_s` as a line. Used by one thread (the run monitor's).
class ProgressPrinter {
 public:
  ProgressPrinter(ProgressStyle style, double interval_s, std::FILE* out);
  // Prints when the last print is at least the interval old (by f.elapsed_s).
  // Returns true when it printed.
  bool tick(const ProgressFigures& f);
  // The run is over: a last line (line style), or the redrawn line cleared.
  void finish(const ProgressFigures& f);
  // The run failed: the redrawn line cleared, nothing else.
  void abandon();

 private:
  ProgressStyle style_;
  double interval_s_;
  std::FILE* out_;
  double last_ = 0;
  bool drawn_ = false;
};

}  // namespace imgpipe::detail
