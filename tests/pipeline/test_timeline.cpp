// The run report's assembly and the run monitor: stage rows (units, rates
// only where measured), the bottleneck, and the timeline sampled while a run
// lasts (Report::timeline), thinned on long runs.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "pipeline/src/monitor.hpp"
#include "pipeline/src/report.hpp"

namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::Pipeline;
using imgpipe::Report;
using imgpipe::RunOptions;
using imgpipe::Timeline;
using imgpipe::test::TempDir;

namespace {

Config small_config(int batch) {
  Config c;
  c.input.paths = {imgpipe::test::sample_dir().string()};
  c.transform.resize.width = 64;
  c.transform.resize.height = 48;
  c.batch.size = batch;
  c.devices = imgpipe::DeviceSelection::parse("cpu");
  return c;
}

Timeline::Tick tick(double t, int ring) {
  Timeline::Tick k;
  k.t_s = t;
  k.items = {static_cast<std::uint64_t>(t * 10)};
  k.ring_in_use = ring;
  return k;
}

}  // namespace

TEST_CASE("report assembly: units per stage kind, no rate for too little work") {
  imgpipe::stages::StageStats images("decode", true, imgpipe::stages::Counts::images);
  images.items = 40;
  images.busy_ns = 20'000'000;  // 20 ms over 2 threads' worth of capacity
  images.bytes = 4'000'000;
  auto r = imgpipe::detail::make_stage_report(images, 2, 0.1, "frames");
  CHECK(r.unit == "images");  // decode counts image files, whatever the run's samples
  REQUIRE(r.items_per_s);
  CHECK(*r.items_per_s_per_thread == doctest::Approx(2000));
  CHECK(*r.items_per_s == doctest::Approx(4000));
  CHECK(*r.mb_per_s == doctest::Approx(400));
  CHECK(r.utilization == doctest::Approx(0.1));
  // A stage that moves no bytes (the source lists paths) has a rate but no MB/s, not "0.000".
  images.bytes = 0;
  r = imgpipe::detail::make_stage_report(images, 2, 0.1, "frames");
  CHECK(r.items_per_s);
  CHECK_FALSE(r.mb_per_s);
  images.bytes = 4'000'000;

  imgpipe::stages::StageStats samples("transform", true, imgpipe::stages::Counts::samples);
  samples.items = 40;
  samples.busy_ns = 900'000;  // 0.9 ms: too little to rate
  r = imgpipe::detail::make_stage_report(samples, 2, 0.1, "frames");
  CHECK(r.unit == "frames");
  CHECK_FALSE(r.items_per_s);
  CHECK_FALSE(r.items_per_s_per_thread);
  CHECK_FALSE(r.mb_per_s);
  CHECK(r.utilization > 0);  // the utilisation is still what it was

  imgpipe::stages::StageStats batches("sink", false, imgpipe::stages::Counts::batches);
  batches.items = 1;
  batches.busy_ns = 50'000'000;  // one batch is a latency, not a rate
  r = imgpipe::detail::make_stage_report(batches, 2, 0.1, "images");
  CHECK(r.unit == "batches");
  CHECK(r.concurrency == 1);
  CHECK_FALSE(r.items_per_s);
}

TEST_CASE("report assembly: the bottleneck is the busiest stage with a rate, none when nothing was delivered") {
  std::vector<imgpipe::StageReport> st(3);
  st[0].name = "source";
  st[0].utilization = 0.9;  // busiest, but unrated
  st[1].name = "read";
  st[1].utilization = 0.3;
  st[1].items_per_s = 100;
  st[2].name = "decode";
  st[2].utilization = 0.6;
  st[2].items_per_s = 50;
  CHECK(imgpipe::detail::pick_bottleneck(st, 10) == "decode");
  CHECK(imgpipe::detail::pick_bottleneck(st, 0).empty());
  st[1].items_per_s.reset();
  st[2].items_per_s.reset();
  CHECK(imgpipe::detail::pick_bottleneck(st, 10).empty());
}

TEST_CASE("timeline: thinning keeps every other tick, the larger ring occupancy, and doubles the interval") {
  Timeline t;
  t.interval_s = 0.1;
  t.ticks = {tick(0.1, 2), tick(0.2, 0), tick(0.3, 1), tick(0.4, 1), tick(0.5, 0), tick(0.6, 3)};
  imgpipe::detail::thin(t);
  CHECK(t.interval_s == doctest::Approx(0.2));
  REQUIRE(t.ticks.size() == 3);
  CHECK(t.ticks[0].t_s == doctest::Approx(0.2));
  CHECK(t.ticks[0].ring_in_use == 2);
  CHECK(t.ticks[1].t_s == doctest::Approx(0.4));
  CHECK(t.ticks[1].ring_in_use == 1);
  CHECK(t.ticks[2].t_s == doctest::Approx(0.6));
  CHECK(t.ticks[2].ring_in_use == 3);
  CHECK(t.ticks[2].items[0] == 6);
  // An odd count keeps the newest.
  t.ticks.push_back(tick(0.8, 1));
  imgpipe::detail::thin(t);
  REQUIRE(t.ticks.size() == 2);
  CHECK(t.ticks[0].t_s == doctest::Approx(0.4));
  CHECK(t.ticks[1].t_s == doctest::Approx(0.8));
}

TEST_CASE("timeline: the process's resident memory is read") {
  CHECK(imgpipe::detail::resident_bytes() > 1024 * 1024);
}

TEST_CASE("timeline: sampled while the run lasts, cumulative, ending at the report's figures") {
  Config cfg = small_config(2);  // 20 samples, 10 batches
  RunOptions o;
  o.timeline_interval_s = 0.01;
  // 20 ms a batch in the callback: the run lasts about 0.2 s.
  const Report r =
      Pipeline(cfg).run([](const imgpipe::DeviceBatch&) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); },
                        o);
  const Timeline& t = r.timeline;
  CHECK(t.interval_s == doctest::Approx(0.01));
  REQUIRE(t.stages.size() == r.stages.size());
  for (std::size_t j = 0; j < t.stages.size(); ++j) CHECK(t.stages[j] == r.stages[j].name);
  REQUIRE(t.ticks.size() >= 5);
  for (std::size_t i = 0; i < t.ticks.size(); ++i) {
    const auto& k = t.ticks[i];
    CAPTURE(i);
    REQUIRE(k.items.size() == t.stages.size());
    REQUIRE(k.busy_s.size() == t.stages.size());
    REQUIRE(k.wait_s.size() == t.stages.size());
    CHECK(k.ring_in_use >= 0);
    CHECK(k.ring_in_use <= r.memory.slots);
    CHECK(k.rss_bytes > 0);
    if (i == 0) continue;
    const auto& p = t.ticks[i - 1];
    CHECK(k.t_s >= p.t_s);
    CHECK(k.done >= p.done);
    for (std::size_t j = 0; j < k.items.size(); ++j) {
      CHECK(k.items[j] >= p.items[j]);
      CHECK(k.busy_s[j] >= p.busy_s[j]);
    }
  }
  // The pack stage held a slot at some tick while the callback slept.
  int most = 0;
  for (const auto& k : t.ticks) most = std::max(most, k.ring_in_use);
  CHECK(most >= 1);
  const auto& last = t.ticks.back();
  CHECK(last.done == 20);
  CHECK(last.failed == 0);
  for (std::size_t j = 0; j < r.stages.size(); ++j) CHECK(last.items[j] == r.stages[j].items);
  CHECK(last.t_s <= r.pipeline_s + 1e-6);
}

TEST_CASE("timeline: a long run keeps at most kMaxTicks ticks, and interval 0 samples nothing") {
  Config cfg = small_config(2);
  RunOptions o;
  o.timeline_interval_s = 0.0002;  // thousands of ticks over the 2 s below, even on a loaded machine
  const Report r =
      Pipeline(cfg).run([](const imgpipe::DeviceBatch&) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); },
                        o);
  CAPTURE(r.timeline.ticks.size());
  CHECK(r.timeline.ticks.size() <= Timeline::kMaxTicks + 1);  // plus the final tick
  CHECK(r.timeline.interval_s >= 0.0004 - 1e-12);             // thinned at least once
  CHECK(r.timeline.ticks.size() >= 10);
  for (std::size_t i = 1; i < r.timeline.ticks.size(); ++i) CHECK(r.timeline.ticks[i].t_s >= r.timeline.ticks[i - 1].t_s);

  o.timeline_interval_s = 0;
  const Report none = Pipeline(cfg).run({}, o);
  CHECK(none.timeline.ticks.empty());
  CHECK(none.timeline.interval_s == 0);
  CHECK(none.inputs.delivered == 20);
}

TEST_CASE("report: a run that delivers nothing names no bottleneck, and counts its failures over time") {
  TempDir d;
  for (const char* name : {"a.jpg", "b.jpg", "c.jpg"}) std::ofstream(d / name) << "not an image";
  Config cfg = small_config(2);
  cfg.input.paths = {d.path().string()};
  const Report r = Pipeline(cfg).run();
  CHECK(r.inputs.delivered == 0);
  CHECK(r.inputs.failed == 3);
  CHECK(r.bottleneck.empty());
  std::ostringstream os;
  r.print_table(os);
  CHECK(os.str().find("<- bottleneck") == std::string::npos);
  CHECK(os.str().find("bottleneck: none (nothing was delivered)") != std::string::npos);
  REQUIRE_FALSE(r.timeline.ticks.empty());
  CHECK(r.timeline.ticks.back().failed == 3);
  CHECK(r.timeline.ticks.back().done == 3);
}
