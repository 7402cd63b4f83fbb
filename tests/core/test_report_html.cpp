// Report::to_html, the page as text: escaping of what inputs put in it
// (paths and reasons with < > & " '), the embedded data, nothing fetched.
// tests/cli/test_report_browser.cpp renders it in headless Chromium.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

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

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

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
  CHECK(contains(page, "<td>bad &lt;b&gt;header&lt;/b&gt; &amp; &quot;quoted&quot; &#39;tail&#39; "
                       "&lt;/script&gt;&lt;!--</td>"));
  CHECK(contains(page, "<td class=\"frame\">7</td>"));
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
