// The run report's table and JSON, on reports built by hand: units per row,
// "–" (JSON null) for stages that did too little work to rate, the
// bottleneck mark, singular and plural.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "imgpipe/report.hpp"

using imgpipe::Report;
using imgpipe::StageReport;

namespace {

StageReport stage(const std::string& name, std::uint64_t items, const std::string& unit, double work_s,
                  double utilization) {
  StageReport s;
  s.name = name;
  s.items = items;
  s.unit = unit;
  s.busy_s = s.work_s = work_s;
  s.utilization = utilization;
  if (imgpipe::rateable(items, work_s)) {
    s.items_per_s = s.items_per_s_per_thread = items / work_s;
    s.mb_per_s = 1.5;
  }
  return s;
}

// 20 images in 4 batches and one batch for the sink (as with a final partial batch).
Report sample_report() {
  Report r;
  r.version = "0.1.0";
  r.backend = "host";
  r.stages = {stage("source", 20, "images", 0.0002, 0.001), stage("decode", 20, "images", 0.05, 0.45),
              stage("transfer", 4, "batches", 0.004, 0.05), stage("sink", 1, "batches", 0.3, 0.9)};
  r.bottleneck = "decode";
  r.inputs.discovered = r.inputs.delivered = 20;
  r.batches = 1;
  return r;
}

std::string table(const Report& r) {
  std::ostringstream os;
  r.print_table(os);
  return os.str();
}

// The table row of stage `name`.
std::string row(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) return line;
  return {};
}

using imgpipe::test::contains;

}  // namespace

TEST_CASE("report: a rate needs at least 2 items and 1 ms of work") {
  CHECK_FALSE(imgpipe::rateable(0, 10.0));
  CHECK_FALSE(imgpipe::rateable(1, 10.0));
  CHECK_FALSE(imgpipe::rateable(1000, 0.000999));
  CHECK(imgpipe::rateable(2, 0.001));
  CHECK(imgpipe::rateable(1000000, 5.0));
}

TEST_CASE("report table: each row says its unit, rates only where measured, the bottleneck marked") {
  const std::string t = table(sample_report());
  CAPTURE(t);
  const std::string source = row(t, "source"), decode = row(t, "decode"), transfer = row(t, "transfer"),
                    sink = row(t, "sink");
  REQUIRE_FALSE(source.empty());
  REQUIRE_FALSE(sink.empty());
  CHECK(contains(decode, "20 images"));
  CHECK(contains(decode, "400 images/s"));  // 20 / 0.05 s
  CHECK(contains(decode, "<- bottleneck"));
  CHECK(contains(transfer, "4 batches"));
  CHECK(contains(transfer, "1000 batches/s"));
  // Too little work (0.2 ms) or a single item: no rate, no MB/s.
  CHECK(contains(source, "–"));
  CHECK_FALSE(contains(source, "/s"));
  CHECK(contains(sink, "1 batch "));
  CHECK_FALSE(contains(sink, "1 batches"));
  CHECK_FALSE(contains(sink, "/s"));
  CHECK_FALSE(contains(sink, "bottleneck"));  // the highest utilization, but unrated
  CHECK(contains(t, "20 images delivered"));
  CHECK(contains(t, ", 1 batch\n"));
  CHECK(contains(t, "too little work to rate"));
  // Large rates are whole numbers, not 1737015.4.
  Report big = sample_report();
  big.stages[0] = stage("source", 1737015, "images", 1.0, 0.2);
  CHECK(contains(row(table(big), "source"), "1737015 images/s"));
}

TEST_CASE("report table: nothing delivered names no bottleneck, and singular counts read as such") {
  Report r = sample_report();
  r.inputs.delivered = 0;
  r.inputs.failed = r.inputs.discovered = 1;
  r.bottleneck.clear();
  r.batches = 0;
  r.memory.slot_reuses = 1;
  r.memory.slot_allocations = 1;
  const std::string t = table(r);
  CAPTURE(t);
  CHECK_FALSE(contains(t, "<- bottleneck"));
  CHECK(contains(t, "bottleneck: none (nothing was delivered)"));
  CHECK(contains(t, "0 images delivered"));
  CHECK(contains(t, ", 0 batches\n"));
  CHECK(contains(t, "1 slot reuse, 1 allocation"));
  r.inputs.delivered = 1;
  CHECK(contains(table(r), "1 image delivered"));
  CHECK(contains(table(r), "bottleneck: none (no stage did enough work to rate)"));
}

TEST_CASE("report JSON: unmeasured rates are null, every stage says its unit") {
  const nlohmann::json j = nlohmann::json::parse(sample_report().to_json());
  REQUIRE(j["stages"].size() == 4);
  const auto& source = j["stages"][0];
  CHECK(source["unit"] == "images");
  CHECK(source["items_per_s"].is_null());
  CHECK(source["items_per_s_per_thread"].is_null());
  CHECK(source["mb_per_s"].is_null());
  const auto& decode = j["stages"][1];
  CHECK(decode["items_per_s"].get<double>() == doctest::Approx(400));
  CHECK(decode["mb_per_s"].get<double>() == doctest::Approx(1.5));
  CHECK(j["stages"][2]["unit"] == "batches");
  CHECK(j["bottleneck"] == "decode");
  CHECK(j["timeline"]["ticks"].is_array());
}

TEST_CASE("report JSON: a path that is not UTF-8 does not fail the report") {
  Report r = sample_report();
  r.inputs.failures.push_back({std::string("bad\xff\xfe.jpg"), -1, "not an image"});
  std::string json;
  REQUIRE_NOTHROW(json = r.to_json());
  const nlohmann::json j = nlohmann::json::parse(json);
  CHECK(j["inputs"]["failures"][0]["path"].get<std::string>().rfind("bad", 0) == 0);
  CHECK_NOTHROW((void)r.to_html());
}

TEST_CASE("report JSON: the timeline, tick by tick") {
  Report r = sample_report();
  r.timeline.interval_s = 0.1;
  r.timeline.stages = {"source", "decode", "transfer", "sink"};
  imgpipe::Timeline::Tick k;
  k.t_s = 0.1;
  k.items = {5, 4, 1, 0};
  k.busy_s = {0.001, 0.04, 0.001, 0};
  k.wait_s = {0, 0, 0, 0};
  k.done = 3;
  k.failed = 1;
  k.ring_in_use = 2;
  k.rss_bytes = 123456789;
  r.timeline.ticks = {k};
  const nlohmann::json t = nlohmann::json::parse(r.to_json())["timeline"];
  CHECK(t["interval_s"] == 0.1);
  CHECK(t["stages"] == nlohmann::json({"source", "decode", "transfer", "sink"}));
  REQUIRE(t["ticks"].size() == 1);
  CHECK(t["ticks"][0]["items"] == nlohmann::json({5, 4, 1, 0}));
  CHECK(t["ticks"][0]["busy_s"][1] == 0.04);
  CHECK(t["ticks"][0]["done"] == 3);
  CHECK(t["ticks"][0]["failed"] == 1);
  CHECK(t["ticks"][0]["ring_in_use"] == 2);
  CHECK(t["ticks"][0]["rss_bytes"] == 123456789);
}

TEST_CASE("report table: samples named by what they are, a mix counted per kind") {
  Report r = sample_report();
  r.samples_per_s = 150;
  r.steady_samples_per_s = 190;
  r.inputs.discovered = r.inputs.delivered = 200;
  r.samples = {0, 200, "frames"};
  std::string t = table(r);
  CAPTURE(t);
  CHECK(contains(t, "200 frames delivered, 150.0 frames/s end to end, 190.0 frames/s after set-up"));
  CHECK_FALSE(contains(t, "images delivered"));
  r.samples = {30, 170, "samples"};
  t = table(r);
  CHECK(contains(t, "200 samples delivered (30 images, 170 frames), 150.0 samples/s end to end"));
  r.samples = {200, 0, "images"};
  CHECK(contains(table(r), "200 images delivered, 150.0 images/s end to end"));
  r.samples = {1, 0, "images"};
  r.inputs.delivered = 1;
  CHECK(contains(table(r), "1 image delivered,"));
}

TEST_CASE("report JSON: samples by kind and per second, the old names kept as deprecated aliases") {
  Report r = sample_report();
  r.samples = {30, 170, "samples"};
  r.inputs.delivered = 200;
  r.samples_per_s = 150;
  r.steady_samples_per_s = 190;
  const nlohmann::json j = nlohmann::json::parse(r.to_json());
  CHECK(j["samples"] == nlohmann::json({{"unit", "samples"}, {"images", 30}, {"frames", 170}, {"clips", 0}}));
  CHECK(j["samples_per_s"] == 150.0);
  CHECK(j["steady_samples_per_s"] == 190.0);
  CHECK(j["images_per_s"] == 150.0);
  CHECK(j["steady_images_per_s"] == 190.0);
}

TEST_CASE("report table: the video decoders' rows come first, named, with a note on what they time") {
  Report r = sample_report();
  CHECK_FALSE(contains(table(r), "video cpu"));
  r.stages.insert(r.stages.begin(), {stage("video cpu", 170, "frames", 1.0, 0.8), stage("video nvdec", 30, "frames", 0.1, 0.05)});
  r.bottleneck = "video cpu";
  const std::string t = table(r);
  CAPTURE(t);
  CHECK(contains(row(t, "video cpu"), "170 frames"));
  CHECK(contains(row(t, "video cpu"), "170 frames/s"));
  CHECK(contains(row(t, "video cpu"), "<- bottleneck"));
  CHECK(contains(row(t, "video nvdec"), "30 frames"));
  // The columns stay aligned with the longest name: "rate" ends where the rows' rates do.
  const std::string head = t.substr(t.find("stage"), t.find('\n', t.find("stage")) - t.find("stage"));
  const std::string nvdec = row(t, "video nvdec");
  REQUIRE(nvdec.find("frames/s") != std::string::npos);
  CHECK(head.find("rate") + 4 == nvdec.find("frames/s") + 9);  // the unit's column is 9 wide
  CHECK(head.find("rate") + 4 == row(t, "decode").find("images/s") + 9);
  CHECK(contains(t, "video cpu, video nvdec: decoding the videos"));
  CHECK(contains(t, "the source's time leaves out its waits for their frames"));
}
