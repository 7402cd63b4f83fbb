// The CLI's progress and report outputs: plain progress lines when stderr is
// a pipe (--progress, or by default off a terminal), none with --quiet; the
// HTML report (--report-html), and the page rendered in headless Chromium:
// it loads without a console error and its script draws every chart.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "core/src/report_format.hpp"

namespace fs = std::filesystem;
using imgpipe::test::run_cli;
using imgpipe::test::TempDir;

namespace {

// Quoted for the shell (built up: GCC 12 warns falsely on "'" + string).
using imgpipe::test::q;

using imgpipe::test::contains;

std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (contains(line, what)) v.push_back(line);
  return v;
}

using imgpipe::test::read_text;

// `copies` copies of each sample image, plus one broken file whose name has < > & ".
void make_inputs(const fs::path& dir, int copies) {
  fs::create_directories(dir);
  for (int c = 0; c < copies; ++c)
    for (const auto& s : imgpipe::test::sample_images())
      fs::copy_file(s, dir / fmt::format("{}_{}", c, s.filename().string()));
  std::ofstream(dir / "bro<ken>&\"x.jpg") << "not an image";
}

// Headless Chromium (Debian's chromium), or empty when absent.
std::string find_chromium() {
  if (const char* env = std::getenv("IMGPIPE_CHROMIUM")) return env;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    for (const char* name : {"chromium", "chromium-browser"})
      if (!d.empty() && ::access((fs::path(d) / name).c_str(), X_OK) == 0) return (fs::path(d) / name).string();
  return {};
}

struct Rendered {
  int rc = -1;
  std::string dom;
  std::string console;  // the page's console messages and uncaught errors, from Chromium's log
};

// Loads `page` in headless Chromium (a fresh profile in `scratch`) and dumps the DOM after the scripts ran.
Rendered render(const std::string& chromium, const fs::path& page, const fs::path& scratch) {
  const fs::path dom = scratch / "dom.html", log = scratch / "chromium.log";
  const std::string cmd = "timeout 180 " + q(chromium) +
                          " --headless --disable-gpu --no-sandbox --disable-dev-shm-usage --no-first-run --user-data-dir=" +
                          q(scratch / "profile") + " --enable-logging=stderr --v=0 --dump-dom " +
                          q("file://" + fs::absolute(page).string()) + " >" + q(dom) + " 2>" + q(log);
  Rendered r;
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.dom = read_text(dom);
  for (const auto& line : lines_with(read_text(log), ":CONSOLE")) r.console += line + "\n";
  return r;
}

std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("cli: progress lines on a pipe with --progress (and by default), none with --quiet") {
  TempDir d;
  make_inputs(d / "in", 5);  // 100 images + 1 broken, at 640x640 (the shipped config)
  const std::string run = "--device cpu --config " + q(imgpipe::test::source_dir() / "configs" / "pipeline.yaml") +
                          " --input " + q(d / "in");
  std::string out;
  REQUIRE(run_cli(run + " --progress --progress-interval 0.05", &out) == 0);
  CAPTURE(out);
  const auto lines = lines_with(out, "imgpipe: progress: ");
  REQUIRE(lines.size() >= 2);  // at least one while running, and the last
  for (const auto& l : lines) {
    CAPTURE(l);
    // "imgpipe: progress: N/101 images (P%) | R images/s | ETA m:ss | F failed | T s"
    unsigned long done = 0, failed = 9;
    double share = -1, elapsed = -1;
    char rate[32] = {}, eta[32] = {};
    CHECK(std::sscanf(l.c_str(), "imgpipe: progress: %lu/101 images (%lf%%) | %31s images/s | ETA %31s | %lu failed | %lf s",
                      &done, &share, rate, eta, &failed, &elapsed) == 6);
    CHECK(done <= 101);
    CHECK(share == doctest::Approx(100.0 * done / 101).epsilon(0.01));
    CHECK(failed <= 1);
    CHECK(elapsed >= 0);
    CHECK(l.find('\r') == std::string::npos);  // plain lines, no terminal control
    CHECK(l.find('\033') == std::string::npos);
  }
  CHECK(contains(lines.back(), "101/101 images (100.0%)"));
  CHECK(contains(lines.back(), "ETA 0:00 | 1 failed"));
  // stderr is not a terminal here: plain lines are the default (5 s apart, so the last one only).
  REQUIRE(run_cli(run, &out) == 0);
  CHECK(lines_with(out, "imgpipe: progress: ").size() >= 1);
  // --quiet: no progress at all, --progress or not.
  REQUIRE(run_cli(run + " -q --progress --progress-interval 0.05", &out) == 0);
  CHECK(lines_with(out, "progress").empty());
  CHECK(run_cli(run + " --progress-interval 0", &out) == 2);  // out of range
}

TEST_CASE("cli: --report-html writes one self-contained page with every failed input") {
  TempDir d;
  make_inputs(d / "in", 1);
  const fs::path page = d / "report.html";
  std::string out;
  REQUIRE(run_cli("-q --device cpu --config " + q(imgpipe::test::source_dir() / "configs" / "pipeline.yaml") +
                      " --input " + q(d / "in") + " --report-html " + q(page),
                  &out) == 0);
  const std::string html = read_text(page);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(contains(html, "bro&lt;ken&gt;&amp;&quot;x.jpg"));
  CHECK(contains(html, "Failed inputs (1)"));
  // A page that cannot be written is a usage error found before the run.
  CHECK(run_cli("-q --device cpu --config " + q(imgpipe::test::source_dir() / "configs" / "pipeline.yaml") +
                    " --input " + q(d / "in") + " --report-html " + q(d / "no" / "such" / "dir.html"),
                &out) == 2);
  CHECK(contains(out, "--report-html: cannot write"));
}

TEST_CASE("cli: a run of images and a video names its samples by kind and times video decoding on its own row") {
  TempDir d;
  make_inputs(d / "in", 1);
  fs::copy_file(imgpipe::test::opencv_data_dir() / "Megamind.avi", d / "in" / "clip.avi");
  const std::size_t images = imgpipe::test::sample_images().size();
  std::string out;
  REQUIRE(run_cli("--device cpu --input " + q(d / "in") +
                      " --set input.video.max_frames=40 --set transform.resize.width=64"
                      " --set transform.resize.height=48 --report " + q(d / "r.json") + " --report-html " +
                      q(d / "r.html"),
                  &out) == 0);
  CAPTURE(out);
  // The table: a mix, counted per kind; rates in samples.
  CHECK(contains(out, fmt::format("{} samples delivered ({} images, 40 frames), ", images + 40, images)));
  CHECK(std::regex_search(out, std::regex("[0-9.]+ samples/s end to end, [0-9.]+ samples/s after set-up")));
  // The video decoder's row, before the source's; no NVDEC row on the host backend.
  const auto decoder = lines_with(out, "video cpu ");
  REQUIRE(decoder.size() == 1);
  CHECK(contains(decoder[0], "40 frames"));
  CHECK(out.find("\nvideo cpu ") < out.find("\nsource "));
  CHECK(lines_with(out, "video nvdec ").empty());

  const auto j = nlohmann::json::parse(read_text(d / "r.json"));
  CHECK(j["samples"]["images"] == images);
  CHECK(j["samples"]["frames"] == 40);
  CHECK(j["samples"]["unit"] == "samples");
  CHECK(j["samples_per_s"].get<double>() > 0);
  CHECK(j["images_per_s"] == j["samples_per_s"]);  // deprecated alias, kept for a release
  CHECK(j["steady_images_per_s"] == j["steady_samples_per_s"]);
  REQUIRE(j["stages"].size() >= 2);
  const auto& video = j["stages"][0];
  const auto& source = j["stages"][1];
  CHECK(video["name"] == "video cpu");
  CHECK(video["unit"] == "frames");
  CHECK(video["items"] == 40);
  CHECK(source["name"] == "source");
  // The source hands out what the decoder made: the decoder's time is not the source's.
  CHECK(source["busy_s"].get<double>() < 0.5 * video["busy_s"].get<double>());
  CHECK(j["bottleneck"] != "source");
  CHECK(j["timeline"]["stages"][0] == "video cpu");

  const std::string html = read_text(d / "r.html");
  CHECK(contains(html, fmt::format("<b>{} samples</b><span>delivered ({} images, 40 frames)</span>", images + 40,
                                   images)));
  CHECK(contains(html, "<span>samples end to end</span>"));
  CHECK(contains(html, "<dt>video</dt><dd>NVDEC 0 files (0 frames), CPU 1 file (40 frames); video cpu: "));
  CHECK(std::regex_search(html, std::regex("<tr( class=\"bottleneck\")?><td>video cpu( \\(bottleneck\\))?</td>")));
}

TEST_CASE("report html: the page renders in headless Chromium without a console error, every chart drawn") {
  const std::string chromium = find_chromium();
  IMGPIPE_SKIP_UNLESS(!chromium.empty(), "chromium not found (apt-get install chromium; or set IMGPIPE_CHROMIUM)");
  TempDir d;
  make_inputs(d / "in", 1);
  // The shipped config with the inputs looped 3 times: the broken file fails 3 times.
  std::string config = read_text(imgpipe::test::source_dir() / "configs" / "pipeline.yaml");
  const auto loop = config.find("\n  loop: 1\n");
  REQUIRE(loop != std::string::npos);
  config.replace(loop, 10, "\n  loop: 3\n");
  std::ofstream(d / "looped.yaml") << config;
  const fs::path page = d / "report.html";
  std::string out;
  REQUIRE(run_cli("-q --device cpu --config " + q(d / "looped.yaml") + " --input " + q(d / "in") +
                      " --report-html " + q(page) + " --report " + q(d / "r.json"),
                  &out) == 0);
  const Rendered r = render(chromium, page, d.path());
  CAPTURE(r.console);
  REQUIRE(r.rc == 0);
  REQUIRE_FALSE(r.dom.empty());
  CHECK(r.console.empty());
  CHECK_FALSE(contains(r.dom, "data-error="));
  // The script ran to its end and drew the five charts.
  CHECK(contains(r.dom, "data-drawn=\"5\""));
  for (const char* id : {"chart-utilisation", "chart-lanes", "chart-ring", "chart-memory", "chart-inputs"}) {
    CAPTURE(id);
    const auto at = r.dom.find(std::string("id=\"") + id + "\"><svg");
    CHECK(at != std::string::npos);
  }
  // One bar and one lane per stage (9 stages on the host backend), four series.
  const std::size_t stages = nlohmann::json::parse(read_text(d / "r.json"))["stages"].size();
  CHECK(stages >= 9);
  CHECK(occurrences(r.dom, "class=\"bar\"") == stages);
  CHECK(occurrences(r.dom, "class=\"lane\"") == stages);
  // Lanes tall enough to read (at least 60 px each).
  std::smatch lanes_svg;
  REQUIRE(std::regex_search(r.dom, lanes_svg, std::regex("id=\"chart-lanes\"><svg[^>]* height=\"([0-9]+)\"")));
  CHECK(std::stoul(lanes_svg[1].str()) >= 60 * stages);
  CHECK(occurrences(r.dom, "class=\"series\"") == 4);
  // The failed input, as text: one row for its 3 failures, the reason counted.
  CHECK(contains(r.dom, "Failed inputs (3 from 1 path)"));
  CHECK(occurrences(r.dom, "<tr class=\"failure\">") == 1);
  CHECK(contains(r.dom, "bro&lt;ken&gt;&amp;\"x.jpg</td><td class=\"count\">3</td>"));
  CHECK(contains(r.dom, "<span class=\"times\">×3</span>"));

  // The latency percentiles, as the JSON report has them.
  const auto report = nlohmann::json::parse(read_text(d / "r.json"));
  CHECK(contains(r.dom, "<section id=\"latency\">"));
  for (const char* p : {"p50", "p95", "p99", "max"}) {
    CAPTURE(p);
    CHECK(contains(r.dom, fmt::format("<b>{:.1f} ms</b><span>{}</span>", report["latency"][std::string(p) + "_ms"].get<double>(), p)));
  }
  // The run context: command line, host, versions, the effective config; the same in the JSON.
  const auto& c = report["context"];
  CHECK(contains(c["command_line"].get<std::string>(), "--report-html " + page.string()));
  CHECK(c["cpu_count"].get<unsigned>() >= 1);
  CHECK_FALSE(c["hostname"].get<std::string>().empty());
  CHECK(contains(c["config"].get<std::string>(), "loop: 3"));
  CHECK(c["gpus"].empty());  // --device cpu
  for (const std::string v : {std::string("<section id=\"context\">"), "<dd>" + c["command_line"].get<std::string>() + "</dd>",
                              "<dd>" + c["hostname"].get<std::string>() + "</dd>", "<dd>" + c["os"].get<std::string>() + "</dd>",
                              fmt::format("{} hardware threads</dd>", c["cpu_count"].get<unsigned>()),
                              std::string("<dd>none (host backend)</dd>"),
                              "<dd>driver " + c["cuda_driver"].get<std::string>() + ", runtime " + c["cuda_runtime"].get<std::string>() + "</dd>",
                              "<dd>" + c["opencv"].get<std::string>() + "</dd>", "<dd>" + c["onetbb"].get<std::string>() + "</dd>",
                              std::string("<pre class=\"config\" id=\"config\">")}) {
    CAPTURE(v);
    CHECK(contains(r.dom, v));
  }
  CHECK(contains(r.dom, "loop: 3"));
  // The lanes share one scale, drawn and printed; no stage rate that says nothing.
  const std::string html = read_text(page), open = "id=\"imgpipe-data\">";
  const auto data_at = html.find(open) + open.size();
  const auto data = nlohmann::json::parse(html.substr(data_at, html.find("</script>", data_at) - data_at));
  CHECK(data["lanes"]["peak"].get<double>() > 0);
  CHECK(contains(r.dom, "scale " + imgpipe::report_format::number(data["lanes"]["peak"].get<double>()) + "/s</text>"));
  CHECK_FALSE(std::regex_search(r.dom, std::regex("<td>0\\.000</td><td>[0-9]+%</td>")));  // MB/s, before util

  // The checks above can fail: the same page with broken data reports the
  // script's error both ways (console and data-error), and draws nothing.
  std::string broken = read_text(page);
  const auto at = broken.find("\"timeline\":");
  REQUIRE(at != std::string::npos);
  broken.replace(at, 11, "\"timelinX\":");
  std::ofstream(d / "broken.html") << broken;
  const Rendered b = render(chromium, d / "broken.html", d.path());
  CAPTURE(b.dom.substr(0, 400));
  CHECK(contains(b.console, "Uncaught"));
  CHECK(contains(b.dom, "data-error="));
  CHECK_FALSE(contains(b.dom, "data-drawn=\"5\""));
}
