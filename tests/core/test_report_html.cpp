// Report::to_html, the page as text: escaping of what inputs put in it
// (paths and reasons with < > & " '), the embedded data, nothing fetched.
// tests/cli/test_report_browser.cpp renders it in headless Chromium.
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "core/src/report_html.hpp"
#include "imgpipe/report.hpp"

using imgpipe::Report;

namespace {

const std::string kEvilPath = "in/<script>alert(\"x\")</script>&'q'.jpg";
const std::string kEvilReason = "bad <b>header</b> & \"quoted\" 'tail' </script><!--";

Report report_with_failure(bool sampled) {
  Report r;
  r.version = "0.1.0";
  r.backend = "host <&>";
  imgpipe::StageReport s;
  s.name = "decode";
  s.items = 3;
  s.busy_s = s.work_s = 0.0001;  // too little to rate
  r.stages = {s};
  r.inputs.discovered = 4;
  r.inputs.delivered = 3;
  r.inputs.failed = 1;
  r.inputs.failures.push_back({kEvilPath, 7, kEvilReason});
  r.memory.slots = 2;
  if (sampled) {
    r.timeline.interval_s = 0.1;
    r.timeline.stages = {"decode"};
    imgpipe::Timeline::Tick k;
    k.t_s = 0.1;
    k.items = {3};
    k.busy_s = {0.0001};
    k.wait_s = {0};
    r.timeline.ticks = {k};
  }
  return r;
}

std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

using imgpipe::test::contains;

// The text of <script type="application/json" id="imgpipe-data">.
std::string page_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"imgpipe-data\">";
  const auto a = page.find(open);
  REQUIRE(a != std::string::npos);
  const auto b = page.find("</script>", a);
  REQUIRE(b != std::string::npos);
  return page.substr(a + open.size(), b - a - open.size());
}

}  // namespace

TEST_CASE("report html: escape and script_safe_json") {
  using imgpipe::report_html::escape;
  using imgpipe::report_html::script_safe_json;
  CHECK(escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(escape("plain/path.jpg") == "plain/path.jpg");
  CHECK(script_safe_json(R"({"p":"</script><!--&"})") == R"({"p":"\u003c/script\u003e\u003c!--\u0026"})");
}

TEST_CASE("report html: a failed input's path and reason are escaped, in the table and in the data") {
  const std::string page = report_with_failure(true).to_html();
  // Exactly our two script elements: no path or reason opened or closed one.
  CHECK(occurrences(page, "<script") == 2);
  CHECK(occurrences(page, "</script>") == 2);
  CHECK_FALSE(contains(page, "<b>header"));
  CHECK_FALSE(contains(page, "<!--"));
  CHECK(contains(page, "<td>in/&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;q&#39;.jpg</td>"));
  CHECK(contains(page, "<td>frame 7: bad &lt;b&gt;header&lt;/b&gt; &amp; &quot;quoted&quot; &#39;tail&#39; "
                       "&lt;/script&gt;&lt;!--</td>"));
  CHECK(contains(page, "backend host &lt;&amp;&gt;"));
  // The embedded data parses back to the same strings and holds no '<'.
  const std::string data = page_data(page);
  CHECK(data.find('<') == std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(data);
  CHECK(j["inputs"]["failures"][0]["path"] == kEvilPath);
  CHECK(j["inputs"]["failures"][0]["reason"] == kEvilReason);
  CHECK_FALSE(j.contains("batch_records"));
  CHECK(j["timeline"]["ticks"].size() == 1);
}

TEST_CASE("report html: self-contained, with a placeholder for every chart") {
  const std::string page = report_with_failure(true).to_html();
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_FALSE(contains(page, " src="));
  CHECK_FALSE(contains(page, "<link"));
  CHECK_FALSE(contains(page, "@import"));
  CHECK_FALSE(contains(page, "url("));
  // The only URL is the SVG namespace name, which nothing fetches.
  CHECK(occurrences(page, "http") == occurrences(page, "http://www.w3.org/2000/svg"));
  for (const char* id : {"chart-utilisation", "chart-lanes", "chart-ring", "chart-memory", "chart-inputs"}) {
    CAPTURE(id);
    CHECK(contains(page, std::string("id=\"") + id + "\""));
  }
  CHECK(contains(page, "<body data-drawn=\"0\">"));  // the script sets the number of charts drawn
  CHECK(contains(page, "<td>&ndash;</td>"));         // decode did too little work to rate
  CHECK(contains(page, "Failed inputs (1)"));
}

TEST_CASE("report html: a run without a timeline says so instead of drawing empty charts") {
  const std::string page = report_with_failure(false).to_html();
  CHECK(contains(page, "id=\"chart-utilisation\""));
  CHECK_FALSE(contains(page, "id=\"chart-lanes\""));
  CHECK_FALSE(contains(page, "id=\"chart-ring\""));
  CHECK(contains(page, "Not sampled"));
}

TEST_CASE("report html: failures grouped by path, with counts and reasons") {
  using imgpipe::report_html::group_failures;
  // 3 files looped 40 times; b.jpg fails two ways, a video fails on frames.
  Report r = report_with_failure(false);
  r.inputs.failures.clear();
  for (int pass = 0; pass < 40; ++pass) {
    r.inputs.failures.push_back({"a.jpg", -1, "not an image"});
    r.inputs.failures.push_back({"b<1>.jpg", -1, pass % 4 ? "truncated" : "bad <header>"});
    r.inputs.failures.push_back({"c.mp4", pass % 2, "corrupt frame"});
  }
  r.inputs.failed = r.inputs.failures.size();
  const auto g = group_failures(r.inputs.failures);
  REQUIRE(g.size() == 3);
  CHECK(g[0].path == "a.jpg");
  CHECK(g[0].failures == 40);
  REQUIRE(g[0].reasons.size() == 1);
  CHECK(g[0].reasons[0] == std::pair<std::string, std::uint64_t>{"not an image", 40});
  CHECK(g[1].path == "b<1>.jpg");
  REQUIRE(g[1].reasons.size() == 2);
  CHECK(g[1].reasons[0] == std::pair<std::string, std::uint64_t>{"bad <header>", 10});  // first seen first
  CHECK(g[1].reasons[1] == std::pair<std::string, std::uint64_t>{"truncated", 30});
  REQUIRE(g[2].reasons.size() == 2);
  CHECK(g[2].reasons[0] == std::pair<std::string, std::uint64_t>{"frame 0: corrupt frame", 20});
  CHECK(group_failures({}).empty());

  const std::string page = r.to_html();
  CHECK(contains(page, "Failed inputs (120 from 3 paths)"));
  CHECK(occurrences(page, "<tr class=\"failure\">") == 3);
  CHECK(contains(page, "<td>b&lt;1&gt;.jpg</td><td class=\"count\">40</td><td>bad &lt;header&gt; "
                       "<span class=\"times\">&times;10</span><br>truncated <span class=\"times\">&times;30</span></td>"));
}

TEST_CASE("report html: rates that say nothing are hidden (a stage that only lists paths, no bytes moved)") {
  using imgpipe::report_html::shows_mb_rate;
  using imgpipe::report_html::shows_rate;
  Report r = report_with_failure(false);
  imgpipe::StageReport source;  // lists paths: rated, but busy 0.01% of the run
  source.name = "source";
  source.items = 101;
  source.items_per_s = 2032838;
  source.mb_per_s = 0;
  source.utilization = 0.0001;
  imgpipe::StageReport decode;  // the real work
  decode.name = "decode";
  decode.items = 101;
  decode.bytes = 4e6;
  decode.items_per_s = 812.4;
  decode.mb_per_s = 32.4;
  decode.utilization = 0.6;
  imgpipe::StageReport sink = decode;  // busy, rated, but moves no bytes
  sink.name = "sink";
  sink.bytes = 0;
  sink.mb_per_s = 0;
  sink.items_per_s = 911;
  r.stages = {source, decode, sink};
  CHECK_FALSE(shows_rate(source));
  CHECK_FALSE(shows_mb_rate(source));
  CHECK(shows_rate(decode));
  CHECK(shows_mb_rate(decode));
  CHECK(shows_rate(sink));
  CHECK_FALSE(shows_mb_rate(sink));
  const std::string html = r.to_html(), page = html.substr(0, html.find("<script"));  // the table, not the data
  CHECK_FALSE(contains(page, "2032838"));
  CHECK_FALSE(std::regex_search(page, std::regex("<td>0\\.000</td><td>[0-9]+%</td>")));  // MB/s, before util
  CHECK(contains(page, "<td>812 images/s</td><td>32.4</td>"));
  CHECK(contains(page, "<td>911 images/s</td><td>&ndash;</td>"));
}

TEST_CASE("report html: throughput lanes on one scale, batch lanes in samples") {
  using imgpipe::report_html::lane_rates;
  Report r;
  r.inputs.delivered = 80;
  r.batches = 10;  // 8 samples per batch
  imgpipe::StageReport source, decode, pack;
  source.name = "source";  // a burst of paths: unrated, left off the scale
  source.utilization = 0.0001;
  source.items_per_s = 1e6;
  decode.name = "decode";
  decode.utilization = 0.5;
  decode.items_per_s = 100;
  pack.name = "pack";
  pack.unit = "batches";
  pack.utilization = 0.2;
  pack.items_per_s = 20;
  r.stages = {source, decode, pack};
  r.timeline.interval_s = 0.5;
  r.timeline.stages = {"source", "decode", "pack"};
  for (const auto& [t, items] : std::vector<std::pair<double, std::vector<std::uint64_t>>>{
           {0.5, {80, 20, 2}}, {1.0, {80, 60, 7}}, {1.5, {80, 80, 10}}}) {
    imgpipe::Timeline::Tick k;
    k.t_s = t;
    k.items = items;
    r.timeline.ticks.push_back(k);
  }
  const auto l = lane_rates(r);
  REQUIRE(l.rates.size() == 3);
  CHECK(l.rates[0] == std::vector<double>{160, 0, 0});
  CHECK(l.rates[1] == std::vector<double>{40, 80, 40});
  CHECK(l.rates[2] == std::vector<double>{32, 80, 48});  // batches x 8 samples
  CHECK(l.peak == doctest::Approx(80));                // not the source's burst
  // Every lane unrated: the scale is then the highest of all.
  for (auto& s : r.stages) s.utilization = 0;
  CHECK(lane_rates(r).peak == doctest::Approx(160));
  // The page carries the lanes and says which scale they share.
  r.stages[1].utilization = 0.5;
  const std::string page = r.to_html();
  const nlohmann::json j = nlohmann::json::parse(page_data(page));
  CHECK(j["lanes"]["peak"].get<double>() == doctest::Approx(80));
  CHECK(j["lanes"]["rates"][2][1].get<double>() == doctest::Approx(80));
  CHECK(contains(page, "every lane on one scale: 80.0/s at the top"));
}

TEST_CASE("report html: latency percentiles and the run context, escaped") {
  Report r = report_with_failure(false);
  r.latency = {1000, 12.24, 30.5, 41.0, 77.76};
  r.context.command_line = "imgpipe --input 'a <b>.jpg'";
  r.context.hostname = "node<7>";
  r.context.os = "Linux 6.1.0 x86_64";
  r.context.cpu_model = "AMD EPYC 9654";
  r.context.cpu_count = 16;
  r.context.gpus = {"cuda:0 NVIDIA H200 (sm_90, 139 GiB)", "cuda:1 NVIDIA H200 (sm_90, 139 GiB)"};
  r.context.cuda_driver = "12.4";
  r.context.cuda_runtime = "12.2";
  r.context.opencv = "4.6.0";
  r.context.onetbb = "2021.8.0";
  r.context.config = "batch:\n  size: 8  # <x>\n";
  const std::string page = r.to_html();
  CHECK(contains(page, "<section id=\"latency\">"));
  for (const char* v : {"<b>12.2 ms</b><span>p50</span>", "<b>30.5 ms</b><span>p95</span>",
                        "<b>41.0 ms</b><span>p99</span>", "<b>77.8 ms</b><span>max</span>", "1000 samples"}) {
    CAPTURE(v);
    CHECK(contains(page, v));
  }
  for (const char* v : {"<dd>imgpipe --input &#39;a &lt;b&gt;.jpg&#39;</dd>", "<dd>node&lt;7&gt;</dd>",
                        "<dd>Linux 6.1.0 x86_64</dd>", "<dd>AMD EPYC 9654, 16 hardware threads</dd>",
                        "<dd>cuda:0 NVIDIA H200 (sm_90, 139 GiB); cuda:1 NVIDIA H200 (sm_90, 139 GiB)</dd>",
                        "<dd>driver 12.4, runtime 12.2</dd>", "<dd>4.6.0</dd>", "<dd>2021.8.0</dd>",
                        "<pre class=\"config\" id=\"config\">batch:\n  size: 8  # &lt;x&gt;\n</pre>"}) {
    CAPTURE(v);
    CHECK(contains(page, v));
  }
  // The JSON report carries the same context.
  const nlohmann::json j = nlohmann::json::parse(r.to_json());
  CHECK(j["context"]["hostname"] == "node<7>");
  CHECK(j["context"]["gpus"].size() == 2);
  CHECK(j["context"]["cuda_driver"] == "12.4");
  CHECK(j["context"]["cpu_count"] == 16);
  CHECK(j["context"]["config"] == r.context.config);
  CHECK(j["context"]["command_line"] == r.context.command_line);
  // No sample delivered: said, no percentiles of nothing.
  r.latency = {};
  CHECK(contains(r.to_html(), "No sample delivered."));
}

TEST_CASE("report html: the figures name the samples by kind, a mix with its counts") {
  Report r = report_with_failure(false);
  r.inputs.delivered = 200;
  r.samples_per_s = 150;
  r.steady_samples_per_s = 190;
  r.samples = {0, 200, "frames"};
  std::string page = r.to_html();
  CHECK(contains(page, "<b>200 frames</b><span>delivered</span>"));
  CHECK(contains(page, "<b>150.0/s</b><span>frames end to end</span>"));
  CHECK(contains(page, "<b>190.0/s</b><span>frames after set-up</span>"));
  CHECK_FALSE(contains(page, "<span>images end to end"));
  r.samples = {30, 170, "samples"};
  page = r.to_html();
  CHECK(contains(page, "<b>200 samples</b><span>delivered (30 images, 170 frames)</span>"));
  CHECK(contains(page, "<span>samples end to end</span>"));
  r.samples = {200, 0, "images"};
  CHECK(contains(r.to_html(), "<b>200 images</b><span>delivered</span>"));
}

TEST_CASE("report html: a video line with the files and frames per route and each decoder's time") {
  Report r = report_with_failure(false);
  CHECK_FALSE(contains(r.to_html(), "<dt>video</dt>"));  // no video files
  r.video.cpu_files = 2;
  r.video.cpu_frames = 170;
  r.video.nvdec_files = 1;
  r.video.nvdec_frames = 30;
  r.video.cpu_reasons = {{"its display rotation is applied on the CPU route", 1}};
  imgpipe::StageReport cpu, nvdec;
  cpu.name = "video cpu";
  cpu.unit = nvdec.unit = "frames";
  cpu.items = 170;
  cpu.busy_s = cpu.work_s = 1.0;
  cpu.items_per_s = 170;
  cpu.utilization = 0.8;
  nvdec.name = "video nvdec";
  nvdec.items = 30;
  nvdec.busy_s = nvdec.work_s = 0.25;
  nvdec.items_per_s = 120;
  nvdec.utilization = 0.2;
  r.stages.insert(r.stages.begin(), {cpu, nvdec});
  const std::string page = r.to_html();
  CHECK(contains(page, "<dt>video</dt><dd>NVDEC 1 file (30 frames), CPU 2 files (170 frames); video cpu: 1.000 s "
                       "decoding, 170 frames/s; video nvdec: 0.250 s decoding, 120 frames/s; on the CPU (1): its "
                       "display rotation is applied on the CPU route</dd>"));
  // Their rows in the stage table too.
  CHECK(contains(page, "<tr><td>video cpu</td><td>1</td><td>170 frames</td>"));
  CHECK(contains(page, "<tr><td>video nvdec</td><td>1</td><td>30 frames</td>"));
}

TEST_CASE("report html: the last interval, cut short by the run's end, is drawn but left out of the scale") {
  using imgpipe::report_html::lane_rates;
  Report r;
  r.inputs.delivered = 96;
  r.batches = 12;  // 8 samples per batch
  imgpipe::StageReport decode, sink;
  decode.name = "decode";
  decode.utilization = 0.5;
  decode.items_per_s = 100;
  sink.name = "sink";
  sink.unit = "batches";
  sink.utilization = 0.1;
  sink.items_per_s = 110;
  r.stages = {decode, sink};
  r.timeline.interval_s = 0.1;
  r.timeline.stages = {"decode", "sink"};
  // 10 samples (about a batch) each 0.1 s, then the final tick 0.01 s later: the last batches in it.
  for (const auto& [t, items] : std::vector<std::pair<double, std::vector<std::uint64_t>>>{
           {0.1, {10, 1}}, {0.2, {20, 2}}, {0.3, {30, 4}}, {0.4, {40, 5}}, {0.41, {42, 7}}}) {
    imgpipe::Timeline::Tick k;
    k.t_s = t;
    k.items = items;
    r.timeline.ticks.push_back(k);
  }
  const auto l = lane_rates(r);
  REQUIRE(l.rates.size() == 2);
  REQUIRE(l.rates[1].size() == 5);
  // Each interval over its own length: the short one's rates are drawn as they are.
  CHECK(l.rates[0][4] == doctest::Approx(200));   // 2 samples in 0.01 s
  CHECK(l.rates[1][4] == doctest::Approx(1600));  // 2 batches of 8 in 0.01 s
  CHECK(l.rates[1][2] == doctest::Approx(160));
  // The scale and each lane's top come from the full intervals only.
  REQUIRE(l.tops.size() == 2);
  CHECK(l.tops[0] == doctest::Approx(100));
  CHECK(l.tops[1] == doctest::Approx(160));
  CHECK(l.peak == doctest::Approx(160));
  // A run shorter than one interval has only its short tick: that is the scale.
  r.timeline.ticks = {r.timeline.ticks.back()};
  r.timeline.ticks[0].t_s = 0.05;
  CHECK(lane_rates(r).peak == doctest::Approx(7 * 8 / 0.05));  // the sink's 7 batches
  // The page's data carries the tops and the lanes' height, which is readable.
  r.timeline.ticks[0].t_s = 0.41;
  const nlohmann::json j = nlohmann::json::parse(page_data(r.to_html()));
  CHECK(j["lanes"]["tops"].size() == 2);
  CHECK(j["lanes"]["height_px"].get<int>() >= 60);
  CHECK(contains(r.to_html(), "left out of the scale"));
}
