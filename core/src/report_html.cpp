// Report::to_html: the figures as static HTML (readable without the script),
// the charts drawn by the inline script from the report's JSON embedded in
// the page (report_html_assets.cpp).
#include "report_html.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "imgpipe/report.hpp"
#include "report_format.hpp"

namespace imgpipe {

namespace report_html {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<FailureGroup> group_failures(const std::vector<InputFailure>& failures) {
  std::vector<FailureGroup> groups;
  std::unordered_map<std::string, std::size_t> at;  // path -> index in groups
  for (const auto& f : failures) {
    const auto [it, added] = at.try_emplace(f.path, groups.size());
    if (added) groups.push_back({f.path, 0, {}});
    FailureGroup& g = groups[it->second];
    ++g.failures;
    const std::string reason = f.frame >= 0 ? fmt::format("frame {}: {}", f.frame, f.reason) : f.reason;
    const auto r = std::find_if(g.reasons.begin(), g.reasons.end(), [&](const auto& x) { return x.first == reason; });
    if (r == g.reasons.end())
      g.reasons.emplace_back(reason, 1);
    else
      ++r->second;
  }
  return groups;
}

bool shows_rate(const StageReport& s) { return s.items_per_s && s.utilization >= kMinRatedUtilization; }

bool shows_mb_rate(const StageReport& s) { return shows_rate(s) && s.mb_per_s && s.bytes > 0; }

namespace {
// Which intervals count for the scale: those as long as the timeline's
// interval (within the monitor's rounding; ticks come late, never early),
// or all when none is.
std::vector<bool> scaled_intervals(const Timeline& t) {
  std::vector<bool> full;
  double t0 = 0;
  for (const auto& k : t.ticks) {
    full.push_back(t.interval_s <= 0 || k.t_s - t0 >= 0.9 * t.interval_s);
    t0 = k.t_s;
  }
  if (std::find(full.begin(), full.end(), true) == full.end()) full.assign(full.size(), true);
  return full;
}
}  // namespace

Lanes lane_rates(const Report& r) {
  Lanes l;
  const auto& ticks = r.timeline.ticks;
  const double per_batch = r.batches ? static_cast<double>(r.inputs.delivered) / r.batches : 1;
  const std::vector<bool> scaled = scaled_intervals(r.timeline);
  for (std::size_t j = 0; j < r.timeline.stages.size(); ++j) {
    const bool batches = j < r.stages.size() && r.stages[j].unit == "batches";
    std::vector<double>& lane = l.rates.emplace_back();
    double t0 = 0;
    std::uint64_t n0 = 0;
    for (const auto& k : ticks) {
      const std::uint64_t n = j < k.items.size() ? k.items[j] : n0;
      const double dt = k.t_s - t0;
      const double rate = dt > 0 ? static_cast<double>(n - std::min(n, n0)) / dt * (batches ? per_batch : 1) : 0;
      lane.push_back(rate);
      t0 = k.t_s;
      n0 = n;
    }
    double top = 0;
    for (std::size_t i = 0; i < lane.size(); ++i)
      if (scaled[i]) top = std::max(top, lane[i]);
    l.tops.push_back(top);
  }
  // The scale: the lanes of stages whose rate the page shows (a stage that
  // only hands paths out would flatten every other lane), else all lanes.
  for (const bool shown_only : {true, false}) {
    for (std::size_t j = 0; j < l.tops.size(); ++j)
      if (!shown_only || j >= r.stages.size() || shows_rate(r.stages[j])) l.peak = std::max(l.peak, l.tops[j]);
    if (l.peak > 0) break;
  }
  return l;
}

}  // namespace report_html

namespace {

using report_format::count;
using report_format::mib;
using report_format::number;
using report_html::escape;

// At most this many failed paths are listed on the page (all are in the JSON report).
constexpr std::size_t kMaxFailuresListed = 1000;

void figure(std::ostream& os, const std::string& value, const std::string& label) {
  os << "<div class=\"figure\"><b>" << escape(value) << "</b><span>" << escape(label) << "</span></div>\n";
}

void kv(std::ostream& os, const char* key, const std::string& value) {
  os << "<dt>" << key << "</dt><dd>" << escape(value) << "</dd>\n";
}

void header(const Report& r, std::ostream& os) {
  os << "<header><h1>imgpipe run report</h1>\n<p class=\"meta\">imgpipe " << escape(r.version) << " &middot; backend "
     << escape(r.backend) << " &middot; resize on " << escape(r.resize_where) << ", normalize on "
     << escape(r.normalize_where);
  if (r.shard.world_size > 1)
    os << fmt::format(" &middot; shard: rank {} of {} (from {})", r.shard.rank, r.shard.world_size,
                      escape(r.shard.origin));
  if (r.interrupted) os << " <span class=\"badge\">INTERRUPTED</span>";
  os << "</p></header>\n<div class=\"figures\" id=\"figures\">\n";
  figure(os, fmt::format("{:.3f} s", r.wall_s), "wall time");
  figure(os, fmt::format("{:.3f} s", r.setup_s), "set-up");
  const auto& n = r.samples;
  figure(os, count(r.inputs.delivered, n.unit),
         n.unit == "samples" ? fmt::format("delivered ({}, {})", count(n.images, "images"), count(n.frames, "frames"))
                             : std::string("delivered"));
  figure(os, fmt::format("{:.1f}/s", r.samples_per_s), n.unit + " end to end");
  figure(os, fmt::format("{:.1f}/s", r.steady_samples_per_s), n.unit + " after set-up");
  figure(os, count(r.batches, "batches"), "delivered");
  figure(os, std::to_string(r.inputs.failed), "failed inputs");
  figure(os, r.bottleneck.empty() ? "none" : r.bottleneck, "bottleneck");
  os << "</div>\n";
}

void stage_table(const Report& r, std::ostream& os) {
  os << "<section id=\"stages\"><h2>Stages</h2>\n<table class=\"stages\"><thead><tr><th>stage</th><th>threads</th>"
        "<th>items</th><th>busy s</th><th>wait s</th><th>rate</th><th>MB/s</th><th>util</th><th>idle s</th>"
        "</tr></thead><tbody>\n";
  for (const auto& s : r.stages) {
    const bool b = !r.bottleneck.empty() && s.name == r.bottleneck;
    os << (b ? "<tr class=\"bottleneck\">" : "<tr>") << "<td>" << escape(s.name) << (b ? " (bottleneck)" : "")
       << "</td><td>" << s.concurrency << "</td><td>" << escape(count(s.items, s.unit)) << "</td>"
       << fmt::format("<td>{:.3f}</td><td>{:.3f}</td>", s.busy_s, s.wait_s) << "<td>"
       << (report_html::shows_rate(s) ? escape(number(*s.items_per_s) + " " + s.unit + "/s") : "&ndash;")
       << "</td><td>" << (report_html::shows_mb_rate(s) ? number(*s.mb_per_s) : "&ndash;") << "</td>"
       << fmt::format("<td>{:.0f}%</td><td>{:.3f}</td></tr>\n", 100 * s.utilization, s.idle_s);
  }
  os << "</tbody></table>\n<p class=\"note\">rate and MB/s: what the stage sustains on its own with all its threads, "
        "blocking waits excluded; &ndash;: too little work to rate ("
     << fmt::format("under {:.0f} ms or {} items", kMinRatedWorkSeconds * 1e3, kMinRatedItems)
     << fmt::format("), busy under {:.0f}% of the run (it never came near bounding it: its rate says nothing) or no "
                    "bytes moved. util:",
                    100 * report_html::kMinRatedUtilization)
     << " the share of the run its threads worked. wait s: blocked inside the stage (a free staging "
        "slot, the GPU). idle s: starved by upstream or held by the token limit.</p>\n"
        "<h3>Utilisation</h3>\n<div class=\"legend\"><i style=\"background:#2f6fdf\"></i>working"
        "<i style=\"background:#f0a030\"></i>blocked inside the stage</div>\n"
        "<div class=\"chart\" id=\"chart-utilisation\"></div>\n</section>\n";
}

// A chart's placeholder, or a note when the run was not sampled.
void chart(const Report& r, std::ostream& os, const char* id, const char* note) {
  if (r.timeline.ticks.empty())
    os << "<p class=\"note\">Not sampled (RunOptions::timeline_interval_s is 0).</p>\n";
  else
    os << "<div class=\"chart\" id=\"" << id << "\"></div>\n<p class=\"note\">" << note << "</p>\n";
}

void timeline_sections(const Report& r, std::ostream& os) {
  os << "<section id=\"throughput\"><h2>Throughput over time</h2>\n";
  chart(r, os, "chart-lanes",
        fmt::format("Samples per second between ticks (every {:.2g} s; lanes that count batches at the run's "
                    "samples per batch), every lane on one scale: {}/s at the top, the highest rate of the stages that "
                    "show one. The last interval, cut short by the run's end, is left out of the scale (clipped "
                    "there): a few items over a short time make a rate no stage sustained.",
                    r.timeline.interval_s, number(report_html::lane_rates(r).peak))
            .c_str());
  os << "</section>\n<section id=\"ring\"><h2>Staging ring occupancy</h2>\n";
  chart(r, os, "chart-ring",
        fmt::format("Slots handed to the pack stage and not yet released by the sink; dashed: the ring's {}.",
                    count(static_cast<std::uint64_t>(r.memory.slots), "slots"))
            .c_str());
  os << "</section>\n";
}

void memory_section(const Report& r, std::ostream& os) {
  const auto& m = r.memory;
  os << "<section id=\"memory\"><h2>Memory</h2>\n<dl class=\"kv\">\n";
  kv(os, "staging", fmt::format("{} x {} {}", count(static_cast<std::uint64_t>(m.slots), "slots"),
                                mib(m.slots ? static_cast<double>(m.staging_bytes) / m.slots : 0), m.staging_kind));
  kv(os, "pinned", fmt::format("{} (peak {})", mib(m.pinned_bytes), mib(m.pinned_peak)));
  kv(os, "slots", fmt::format("{}, {}; waited {:.3f} s for a free slot", count(m.slot_reuses, "reuses"),
                              count(m.slot_allocations, "allocations"), m.slot_wait_s));
  kv(os, "device", mib(static_cast<double>(m.device_bytes)));
  if (m.fallbacks) kv(os, "fallbacks", fmt::format("{}: {}", m.fallbacks, m.fallback_reason));
  os << "</dl>\n";
  chart(r, os, "chart-memory", "The process's resident memory over the run.");
  os << "</section>\n";
}

void failures_table(const Report& r, std::ostream& os) {
  const auto& f = r.inputs.failures;
  const auto groups = report_html::group_failures(f);
  os << "<h3>Failed inputs (" << f.size() << (groups.size() != f.size() ? fmt::format(" from {}", count(groups.size(), "paths")) : "")
     << ")</h3>\n";
  if (f.empty()) {
    os << "<p class=\"note\">None.</p>\n";
    return;
  }
  os << "<table class=\"failures\" id=\"failures\"><thead><tr><th>input</th><th class=\"count\">failures</th>"
        "<th>reasons</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < groups.size() && i < kMaxFailuresListed; ++i) {
    const auto& g = groups[i];
    os << "<tr class=\"failure\"><td>" << escape(g.path) << "</td><td class=\"count\">" << g.failures << "</td><td>";
    for (std::size_t k = 0; k < g.reasons.size(); ++k)
      os << (k ? "<br>" : "") << escape(g.reasons[k].first)
         << (g.reasons[k].second > 1 ? fmt::format(" <span class=\"times\">&times;{}</span>", g.reasons[k].second) : "");
    os << "</td></tr>\n";
  }
  os << "</tbody></table>\n";
  if (groups.size() > kMaxFailuresListed)
    os << "<p class=\"note\">... and " << groups.size() - kMaxFailuresListed
       << " more paths (the JSON report embedded in this page lists every one).</p>\n";
}

void inputs_section(const Report& r, std::ostream& os) {
  const auto& in = r.inputs;
  os << "<section id=\"inputs\"><h2>Inputs</h2>\n<dl class=\"kv\">\n";
  kv(os, "discovered", std::to_string(in.discovered));
  kv(os, "delivered", std::to_string(in.delivered));
  kv(os, "failed", std::to_string(in.failed));
  if (in.dropped) kv(os, "dropped", fmt::format("{} (batch.drop_last)", in.dropped));
  if (in.not_processed) kv(os, "not processed", fmt::format("{} (interrupted)", in.not_processed));
  if (in.cpu_resized) kv(os, "resized on the CPU", fmt::format("{} (over the staging frame budget)", in.cpu_resized));
  os << "</dl>\n";
  chart(r, os, "chart-inputs", "Inputs through the sink (delivered or failed) and failed inputs, over the run.");
  failures_table(r, os);
  os << "</section>\n";
}

void transfer_section(const Report& r, std::ostream& os) {
  os << "<section id=\"transfer\"><h2>Transfer and decode</h2>\n<dl class=\"kv\">\n";
  kv(os, "transfer", fmt::format("{}: {} in {:.3f} s = {:.2f} GB/s", r.transfer.mode,
                                 mib(static_cast<double>(r.transfer.bytes)), r.transfer.seconds, r.transfer.gb_per_s));
  for (const auto& d : r.devices)
    if (r.devices.size() > 1)
      kv(os, "device", fmt::format("{}: {}, {} in {:.3f} s = {:.2f} GB/s", d.device, count(d.batches, "batches"),
                                   mib(static_cast<double>(d.bytes)), d.copy_s, d.gb_per_s));
  if (const auto& v = r.video; v.nvdec_files + v.cpu_files > 0) {
    std::string line = fmt::format("NVDEC {} ({}), CPU {} ({})", count(v.nvdec_files, "files"),
                                   count(v.nvdec_frames, "frames"), count(v.cpu_files, "files"),
                                   count(v.cpu_frames, "frames"));
    for (const auto& s : r.stages)
      if (is_video_decoder_row(s.name))
        line += fmt::format("; {}: {:.3f} s decoding{}", s.name, s.busy_s,
                            report_html::shows_rate(s) ? ", " + number(*s.items_per_s) + " frames/s" : "");
    for (const auto& [why, n] : v.cpu_reasons) line += fmt::format("; on the CPU ({}): {}", n, why);
    kv(os, "video", line);
  }
  const auto& d = r.decode;
  kv(os, "decode", d.where + (d.note.empty() ? "" : " (GPU route off: " + d.note + ")"));
  if (d.where != "cpu")
    kv(os, "decoded", fmt::format("GPU ({} JPEG engines): {} at {:.0f} img/s; CPU: {} at {:.0f} img/s; {} rejected "
                                  "by the engines",
                                  d.jpeg_engines, count(d.gpu, "images"), d.gpu_images_per_s, count(d.cpu, "images"),
                                  d.cpu_images_per_s, d.gpu_fallbacks));
  os << "</dl>\n</section>\n";
}

void latency_section(const Report& r, std::ostream& os) {
  const auto& l = r.latency;
  os << "<section id=\"latency\"><h2>Latency</h2>\n";
  if (!l.samples) {
    os << "<p class=\"note\">No sample delivered.</p>\n</section>\n";
    return;
  }
  os << "<div class=\"figures\">\n";
  figure(os, fmt::format("{:.1f} ms", l.p50_ms), "p50");
  figure(os, fmt::format("{:.1f} ms", l.p95_ms), "p95");
  figure(os, fmt::format("{:.1f} ms", l.p99_ms), "p99");
  figure(os, fmt::format("{:.1f} ms", l.max_ms), "max");
  os << "</div>\n<p class=\"note\">Per sample, from the source handing it out until its batch was ready (on the GPU: "
        "its last kernel done), over "
     << count(l.samples, "samples") << ".</p>\n</section>\n";
}

void context_section(const Report& r, std::ostream& os) {
  const auto& c = r.context;
  os << "<section id=\"context\"><h2>Run context</h2>\n<dl class=\"kv\">\n";
  kv(os, "command line", c.command_line.empty() ? "(not run from the CLI)" : c.command_line);
  kv(os, "host", c.hostname);
  kv(os, "OS", c.os);
  kv(os, "CPU", fmt::format("{}, {}", c.cpu_model.empty() ? "unknown model" : c.cpu_model,
                            count(c.cpu_count, "hardware threads")));
  std::string gpus;
  for (const auto& g : c.gpus) gpus += (gpus.empty() ? "" : "; ") + g;
  kv(os, "GPUs", gpus.empty() ? "none (host backend)" : gpus);
  kv(os, "CUDA", fmt::format("driver {}, runtime {}", c.cuda_driver, c.cuda_runtime));
  kv(os, "OpenCV", c.opencv);
  kv(os, "oneTBB", c.onetbb);
  os << "</dl>\n<h3>Effective config</h3>\n<pre class=\"config\" id=\"config\">" << escape(c.config) << "</pre>\n"
     << "</section>\n";
}

// The report's JSON without the per-batch records (the charts do not use them).
std::string page_data(const Report& r) {
  nlohmann::json j = nlohmann::json::parse(r.to_json(-1));
  j.erase("batch_records");
  const report_html::Lanes lanes = report_html::lane_rates(r);
  j["lanes"] = {{"rates", lanes.rates}, {"tops", lanes.tops}, {"peak", lanes.peak},
                {"height_px", report_html::kLaneHeightPx}};
  return report_html::script_safe_json(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

std::string Report::to_html() const {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>imgpipe run report: "
     << escape(backend) << (interrupted ? " (interrupted)" : "") << "</title>\n<style>" << report_html::kStyle
     << "</style>\n</head>\n<body data-drawn=\"0\">\n";
  header(*this, os);
  stage_table(*this, os);
  latency_section(*this, os);
  timeline_sections(*this, os);
  memory_section(*this, os);
  inputs_section(*this, os);
  transfer_section(*this, os);
  context_section(*this, os);
  os << "<script type=\"application/json\" id=\"imgpipe-data\">" << page_data(*this) << "</script>\n<script>"
     << report_html::kScript << "</script>\n</body>\n</html>\n";
  return os.str();
}

}  // namespace imgpipe
