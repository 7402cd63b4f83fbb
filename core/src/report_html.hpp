// Pieces of the HTML report (Report::to_html, report_html.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "imgpipe/report.hpp"

namespace imgpipe::report_html {

// The page's inline style sheet and script (report_html_assets.cpp).
extern const char* const kStyle;
extern const char* const kScript;

// Text for HTML element content and quoted attribute values: & < > " ' escaped.
std::string escape(std::string_view text);

// JSON text made safe inside <script type="application/json">: < > & written
// as \u003c \u003e \u0026 (the same string to JSON.parse), so no "</script>"
// or "<!--" in a path can end the element.
std::string script_safe_json(std::string_view json);

// The failed inputs of one path: a file that fails on every pass of a
// looped run is one row, not one per pass.
struct FailureGroup {
  std::string path;
  std::uint64_t failures = 0;
  // The distinct reasons with how often each was given, in order of first
  // appearance (a video's failed frames: "frame 7: reason").
  std::vector<std::pair<std::string, std::uint64_t>> reasons;
};
// Groups in order of each path's first failure.
std::vector<FailureGroup> group_failures(const std::vector<InputFailure>& failures);

// A stage busy less than this share of the run (the source, which only hands
// paths out) never came near bounding it: its rate, a large multiple of the
// run's, says nothing, and the page shows none.
inline constexpr double kMinRatedUtilization = 0.01;
// Whether the page shows the stage's rate (items/s), and its MB/s (a stage
// that moves no bytes has none).
bool shows_rate(const StageReport& s);
bool shows_mb_rate(const StageReport& s);

// The throughput lanes on one scale, so lanes compare: per stage (the
// timeline's lanes), samples per second between ticks, each interval over
// its own length (a lane that counts batches is converted at the run's
// samples per batch), and the scale every lane is drawn against (clipped
// there): the highest rate of the lanes whose stage's rate the page shows
// (shows_rate), or of all lanes when none. Intervals shorter than the
// timeline's (the last one, cut short by the run's end) are drawn but left
// out of the scale and of each lane's top: a few items counted over a short
// time make a rate no stage sustained. A run with no full interval scales on
// the short ones.
struct Lanes {
  std::vector<std::vector<double>> rates;  // [lane][interval]; interval i ends at ticks[i]
  std::vector<double> tops;                // [lane]: its highest rate, as the scale counts them
  double peak = 0;
};
Lanes lane_rates(const Report& r);
// How tall the page draws each throughput lane, in CSS pixels.
inline constexpr int kLaneHeightPx = 64;

}  // namespace imgpipe::report_html
