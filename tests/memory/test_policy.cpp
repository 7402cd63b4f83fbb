// The memory policy (rule table and decisions from synthetic calibrations),
// the calibration (measurement, JSON, the cache file keyed by GPU, driver and
// host) and `imgpipe bench-memory`.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "memory/tools/bench_memory.hpp"
#include "imgpipe/error.hpp"
#include "memory/tools/calibration.hpp"
#include "memory/tools/policy.hpp"

using namespace imgpipe;
using namespace imgpipe::memory;

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;

struct Figures {
  double h2d = 0, d2h = 0, write = 0, read = 0, kernel = 0;
  bool available = true;
};

// A calibration as a GPU machine could have measured it.
Calibration synthetic(std::initializer_list<std::pair<MemoryKind, Figures>> kinds, int devices = 1) {
  Calibration c;
  c.key = {"Synthetic GPU", "13.0", "testhost"};
  c.device = 0;
  c.device_count = devices;
  c.device_description = "Synthetic GPU (sm_90, 80 GiB)";
  c.iterations = 10;
  c.sizes = {MiB, 256 * MiB};
  for (const auto& [k, f] : kinds) {
    KindMeasurement m;
    m.kind = k;
    m.available = f.available;
    if (!f.available) m.error = "cudaErrorMemoryAllocation";
    m.h2d_gbps = f.h2d;
    m.d2h_gbps = f.d2h;
    m.h2d_gbps_by_size = {f.h2d / 2, f.h2d};
    m.d2h_gbps_by_size = {f.d2h / 2, f.d2h};
    m.cpu_write_gbps = f.write;
    m.cpu_read_gbps = f.read;
    m.kernel_read_gbps = f.kernel;
    m.alloc_bytes = 256 * MiB;
    m.alloc_ms = 120;
    m.cpu_bytes = 64 * MiB;
    c.kinds.push_back(m);
  }
  return c;
}

// The H200 test machine's figures (ARCHITECTURE.md): every page-locked kind
// ~55 GB/s, WC reads not slower (the hypervisor ignores WC).
Calibration h200_like() {
  return synthetic({{MemoryKind::pageable, {5.8, 12.8, 5.5, 5.9}},
                    {MemoryKind::pinned, {55.1, 55.1, 5.4, 5.9}},
                    {MemoryKind::portable, {55.0, 55.2, 5.4, 5.9}},
                    {MemoryKind::write_combined, {55.2, 55.1, 5.5, 5.0}},
                    {MemoryKind::mapped, {55.0, 55.1, 5.4, 5.9, 51.0}},
                    {MemoryKind::host_registered, {55.0, 55.1, 5.4, 5.9}}});
}

using imgpipe::test::contains;

using imgpipe::test::ScopedEnv;
}  // namespace

TEST_CASE("policy: the rule table without a calibration") {
  CHECK(rule_table(UsagePattern::single_device) == MemoryKind::pinned);
  CHECK(rule_table(UsagePattern::multi_device) == MemoryKind::portable);
  CHECK(rule_table(UsagePattern::h2d_streaming) == MemoryKind::write_combined);
  CHECK(rule_table(UsagePattern::device_access_only) == MemoryKind::mapped);
  for (UsagePattern p : {UsagePattern::single_device, UsagePattern::multi_device, UsagePattern::h2d_streaming,
                         UsagePattern::device_access_only}) {
    CHECK(parse_usage_pattern(to_string(p)) == p);
    const PolicyDecision d = choose_memory_kind(p);
    CHECK(d.kind == rule_table(p));
    CHECK_FALSE(d.measured);
    CHECK(contains(d.explain(), "rule table"));
    CHECK(contains(d.explain(), std::string(to_string(p))));
  }
  CHECK_FALSE(parse_usage_pattern("streaming").has_value());
  // A calibration without a device (host figures only) is no better than none.
  Calibration host = synthetic({{MemoryKind::pageable, {0, 0, 5.5, 5.9}}});
  host.device = -1;
  const PolicyDecision d = choose_memory_kind(UsagePattern::h2d_streaming, &host);
  CHECK(d.kind == MemoryKind::write_combined);
  CHECK_FALSE(d.measured);
  CHECK(contains(d.explain(), "no device figures"));
}

TEST_CASE("policy h2d_streaming: write-combined only when its H2D and CPU writes are no slower") {
  SUBCASE("the H200 machine: WC H2D no faster (within 3%), CPU writes no slower -> WC, and says so") {
    const Calibration c = h200_like();
    const PolicyDecision d = choose_memory_kind(UsagePattern::h2d_streaming, &c);
    CAPTURE(d.explain());
    CHECK(d.kind == MemoryKind::write_combined);
    CHECK(d.measured);
    CHECK(contains(d.explain(), "no faster than default pinned"));
    CHECK(contains(d.explain(), "within 3%"));
    CHECK(contains(d.explain(), "never reads"));
  }
  SUBCASE("WC reads measured not slower: explained as an ignored WC attribute") {
    const Calibration c = synthetic({{MemoryKind::pinned, {55, 55, 5.4, 5.0}}, {MemoryKind::write_combined, {55, 55, 5.4, 5.0}}});
    const PolicyDecision d = choose_memory_kind(UsagePattern::h2d_streaming, &c);
    CHECK(contains(d.explain(), "looks ignored"));
  }
  SUBCASE("CPU writes into WC 10% slower -> pinned") {
    const Calibration c = synthetic({{MemoryKind::pinned, {55, 55, 10, 9}}, {MemoryKind::write_combined, {55.5, 55, 9, 0.5}}});
    const PolicyDecision d = choose_memory_kind(UsagePattern::h2d_streaming, &c);
    CAPTURE(d.explain());
    CHECK(d.kind == MemoryKind::pinned);
    CHECK(d.rule_kind == MemoryKind::write_combined);
    CHECK(contains(d.explain(), "no faster"));
    CHECK(contains(d.explain(), "CPU writes into write-combined memory are slower"));
    CHECK(contains(d.explain(), "the rule table says write_combined"));
  }
  SUBCASE("WC H2D clearly faster, writes equal -> WC") {
    const Calibration c = synthetic({{MemoryKind::pinned, {20, 20, 8, 8}}, {MemoryKind::write_combined, {24, 20, 8.1, 0.3}}});
    const PolicyDecision d = choose_memory_kind(UsagePattern::h2d_streaming, &c);
    CHECK(d.kind == MemoryKind::write_combined);
    CHECK(contains(d.explain(), "is faster than default pinned"));
    CHECK(contains(d.explain(), "never read it"));  // reads 0.3 against 8 GB/s
  }
  SUBCASE("WC H2D slower -> pinned") {
    const Calibration c = synthetic({{MemoryKind::pinned, {20, 20, 8, 8}}, {MemoryKind::write_combined, {18, 20, 9, 0.3}}});
    CHECK(choose_memory_kind(UsagePattern::h2d_streaming, &c).kind == MemoryKind::pinned);
  }
  SUBCASE("WC not available -> pinned") {
    Figures wc;
    wc.available = false;
    const Calibration c = synthetic({{MemoryKind::pinned, {20, 20, 8, 8}}, {MemoryKind::write_combined, wc}});
    const PolicyDecision d = choose_memory_kind(UsagePattern::h2d_streaming, &c);
    CHECK(d.kind == MemoryKind::pinned);
    CHECK(contains(d.explain(), "not available"));
  }
  SUBCASE("no pinned figures -> rule table") {
    const Calibration c = synthetic({{MemoryKind::write_combined, {20, 20, 8, 8}}});
    const PolicyDecision d = choose_memory_kind(UsagePattern::h2d_streaming, &c);
    CHECK(d.kind == MemoryKind::write_combined);
    CHECK_FALSE(d.measured);
  }
}

TEST_CASE("policy single_device, multi_device and device_access_only from measurements") {
  const Calibration h = h200_like();
  CHECK(choose_memory_kind(UsagePattern::single_device, &h).kind == MemoryKind::pinned);
  CHECK(choose_memory_kind(UsagePattern::multi_device, &h).kind == MemoryKind::portable);
  const PolicyDecision zc = choose_memory_kind(UsagePattern::device_access_only, &h);
  CHECK(zc.kind == MemoryKind::mapped);
  CHECK(contains(zc.explain(), "51.0 GB/s"));
  CHECK(contains(zc.explain(), "events"));
  CHECK(contains(choose_memory_kind(UsagePattern::multi_device, &h).explain(), "1 GPU"));

  // Page-locking buys nothing: pageable.
  const Calibration flat = synthetic({{MemoryKind::pageable, {20, 20, 5, 5}}, {MemoryKind::pinned, {20.3, 20.2, 5, 5}}});
  const PolicyDecision d = choose_memory_kind(UsagePattern::single_device, &flat);
  CHECK(d.kind == MemoryKind::pageable);
  CHECK(contains(d.explain(), "buys nothing"));

  // Pinned memory unavailable: registered memory.
  Figures gone;
  gone.available = false;
  const Calibration nopin = synthetic({{MemoryKind::pageable, {5, 12, 5, 5}}, {MemoryKind::pinned, gone},
                                       {MemoryKind::host_registered, {50, 50, 5, 5}}});
  CHECK(choose_memory_kind(UsagePattern::single_device, &nopin).kind == MemoryKind::host_registered);

  // Portable unavailable: pinned, explained.
  const Calibration noport = synthetic({{MemoryKind::pinned, {50, 50, 5, 5}}, {MemoryKind::portable, gone}});
  const PolicyDecision mp = choose_memory_kind(UsagePattern::multi_device, &noport);
  CHECK(mp.kind == MemoryKind::pinned);
  CHECK(contains(mp.explain(), "portable memory was not available"));

  // Multi-GPU figures appear in the explanation.
  Calibration multi = h200_like();
  multi.device_count = 2;
  multi.multi_device.push_back({MemoryKind::portable, 256 * MiB, {55.0, 54.8}, 101.0});
  CHECK(contains(choose_memory_kind(UsagePattern::multi_device, &multi).explain(), "all at once 101.0 GB/s"));

  // Zero-copy reads far slower than a copy: copy first.
  const Calibration slowzc = synthetic({{MemoryKind::pinned, {50, 50, 5, 5}}, {MemoryKind::mapped, {50, 50, 5, 5, 4}}});
  CHECK(choose_memory_kind(UsagePattern::device_access_only, &slowzc).kind == MemoryKind::pinned);
  // Mapped unavailable: pinned.
  const Calibration nomap = synthetic({{MemoryKind::pinned, {50, 50, 5, 5}}, {MemoryKind::mapped, gone}});
  CHECK(choose_memory_kind(UsagePattern::device_access_only, &nomap).kind == MemoryKind::pinned);
}

TEST_CASE("policy is a pure function of its inputs") {
  const Calibration c = h200_like();
  for (UsagePattern p : {UsagePattern::single_device, UsagePattern::multi_device, UsagePattern::h2d_streaming,
                         UsagePattern::device_access_only}) {
    const PolicyDecision a = choose_memory_kind(p, &c), b = choose_memory_kind(p, std::optional<Calibration>(c));
    CHECK(a.kind == b.kind);
    CHECK(a.explain() == b.explain());
  }
}

TEST_CASE("calibration JSON round trip") {
  Calibration c = h200_like();
  c.measured_at = "2025-01-01T00:00:00Z";
  c.multi_device.push_back({MemoryKind::pinned, 256 * MiB, {55.0, 54.8}, 101.0});
  const Calibration r = Calibration::from_json(nlohmann::json::parse(c.to_json().dump()));
  CHECK(r.key == c.key);
  CHECK(r.device == 0);
  CHECK(r.sizes == c.sizes);
  REQUIRE(r.kinds.size() == c.kinds.size());
  for (std::size_t i = 0; i < r.kinds.size(); ++i) {
    CHECK(r.kinds[i].kind == c.kinds[i].kind);
    CHECK(r.kinds[i].h2d_gbps == doctest::Approx(c.kinds[i].h2d_gbps));
    CHECK(r.kinds[i].h2d_gbps_by_size == c.kinds[i].h2d_gbps_by_size);
    CHECK(r.kinds[i].kernel_read_gbps == doctest::Approx(c.kinds[i].kernel_read_gbps));
  }
  REQUIRE(r.multi_device.size() == 1);
  CHECK(r.multi_device[0].per_device_gbps.size() == 2);
  CHECK(choose_memory_kind(UsagePattern::h2d_streaming, &r).explain() ==
        choose_memory_kind(UsagePattern::h2d_streaming, &c).explain());
  CHECK_THROWS_AS(Calibration::from_json(nlohmann::json::parse(R"({"key": 3})")), Error);
  CHECK_THROWS_WITH(Calibration::from_json(nlohmann::json::parse(
                        R"({"key":{"gpu":"a","driver":"b","host":"c"},"device":0,"sizes":[1],"kinds":[{"kind":"cached","available":true}]})")),
                    doctest::Contains("unknown memory kind 'cached'"));
}

TEST_CASE("calibration cache: round trip, one entry per key, mismatch re-measures") {
  test::TempDir dir;
  const auto path = dir / "sub" / "calibration.json";
  CHECK_FALSE(load_calibration(path, {"a", "b", "c"}).has_value());  // no file

  Calibration a = h200_like();
  Calibration b = h200_like();
  b.key.driver_version = "14.0";
  b.kinds.pop_back();
  save_calibration(path, a);
  save_calibration(path, b);
  save_calibration(path, a);  // replaces, does not duplicate
  const auto j = nlohmann::json::parse(std::ifstream(path));
  CHECK(j.at("entries").size() == 2);
  CHECK(j.at("format") == "imgpipe-calibration");

  const auto la = load_calibration(path, a.key);
  REQUIRE(la.has_value());
  CHECK(la->kinds.size() == 6);
  const auto lb = load_calibration(path, b.key);
  REQUIRE(lb.has_value());
  CHECK(lb->kinds.size() == 5);
  CHECK_FALSE(load_calibration(path, {"Synthetic GPU", "13.0", "otherhost"}).has_value());

  // This machine's key is not in the file: measured (host figures here, small), then cached.
  CalibrationOptions o;
  o.sizes = {MiB};
  o.iterations = 1;
  o.cpu_bytes_max = MiB;
  o.kinds = {MemoryKind::pageable, MemoryKind::pinned};
  bool measured = false;
  const Calibration m1 = load_or_measure_calibration(path, o, &measured);
  CHECK(measured);
  CHECK(m1.key == current_calibration_key(o.device));
  const Calibration m2 = load_or_measure_calibration(path, o, &measured);
  CHECK_FALSE(measured);
  CHECK(m2.measured_at == m1.measured_at);
  CHECK(nlohmann::json::parse(std::ifstream(path)).at("entries").size() == 3);

  // A corrupt file is ignored (and replaced on save).
  std::ofstream(path) << "{ not json";
  CHECK_FALSE(load_calibration(path, a.key).has_value());
  save_calibration(path, a);
  CHECK(load_calibration(path, a.key).has_value());
}

TEST_CASE("calibration: default path honours XDG_CACHE_HOME, else ~/.cache") {
  {
    ScopedEnv x("XDG_CACHE_HOME", "/tmp/xdg-test");
    CHECK(default_calibration_path() == std::filesystem::path("/tmp/xdg-test/imgpipe/calibration.json"));
  }
  ScopedEnv x("XDG_CACHE_HOME", "");
  ScopedEnv h("HOME", "/home/someone");
  CHECK(default_calibration_path() == std::filesystem::path("/home/someone/.cache/imgpipe/calibration.json"));
}

TEST_CASE("calibration measures this machine") {
  CalibrationOptions o;
  o.sizes = {MiB, 4 * MiB};
  o.iterations = 2;
  o.cpu_bytes_max = 4 * MiB;
  const Calibration c = measure_calibration(o);
  CHECK(c.sizes == o.sizes);
  CHECK(c.kinds.size() == memory_kind_count);
  const KindMeasurement* pageable = c.find(MemoryKind::pageable);
  REQUIRE(pageable);
  CHECK(pageable->available);
  CHECK(pageable->cpu_write_gbps > 0);
  CHECK(pageable->cpu_read_gbps > 0);
  CHECK_THROWS_AS(measure_calibration(CalibrationOptions{.sizes = {}}), std::invalid_argument);
  if (!test::have_gpu()) {
    CHECK_FALSE(c.has_device());
    CHECK(contains(c.device_description, "no CUDA device"));
    CHECK_FALSE(c.find(MemoryKind::pinned)->available);
    CHECK(c.key.gpu_name == "none");
    return;
  }
  CHECK(c.has_device());
  CHECK(c.key.gpu_name != "none");
  for (const auto& m : c.kinds) {
    CAPTURE(to_string(m.kind));
    CHECK(m.available);
    CHECK(m.h2d_gbps > 0);
    CHECK(m.d2h_gbps > 0);
    CHECK(m.h2d_gbps_by_size.size() == 2);
  }
  CHECK(c.find(MemoryKind::mapped)->kernel_read_gbps > 0);
  CHECK(c.find(MemoryKind::pinned)->kernel_read_gbps == 0);
}

TEST_CASE("bench-memory: sizes parsing") {
  CHECK(parse_byte_sizes("1M,16M, 256MiB") == std::vector<std::size_t>{MiB, 16 * MiB, 256 * MiB});
  CHECK(parse_byte_sizes("4096B,4k,1G,2") == std::vector<std::size_t>{4096, 4096, std::size_t{1} << 30, 2 * MiB});
  CHECK(parse_byte_sizes("0.5M") == std::vector<std::size_t>{MiB / 2});
  CHECK_THROWS_AS(parse_byte_sizes(""), std::invalid_argument);
  CHECK_THROWS_AS(parse_byte_sizes("1M,,2M"), std::invalid_argument);
  CHECK_THROWS_AS(parse_byte_sizes("12Q"), std::invalid_argument);
  CHECK_THROWS_AS(parse_byte_sizes("-1M"), std::invalid_argument);
}

TEST_CASE("bench-memory prints every kind and writes the calibration JSON") {
  test::TempDir dir;
  BenchMemoryOptions o;
  o.sizes = {MiB, 2 * MiB};
  o.iterations = 2;
  o.workloads = true;
  o.json_path = (dir / "bench.json").string();
  o.cache_path = (dir / "cache.json").string();
  std::ostringstream out;
  CHECK(run_bench_memory(o, out) == 0);
  const std::string text = out.str();
  CAPTURE(text);
  for (MemoryKind k : all_memory_kinds) CHECK(contains(text, std::string(to_string(k))));
  CHECK(contains(text, "CPU write"));
  CHECK(contains(text, "h2d_streaming ->"));
  const auto j = nlohmann::json::parse(std::ifstream(o.json_path));
  const Calibration c = Calibration::from_json(j);  // the bench's JSON is a calibration
  CHECK(c.sizes == o.sizes);
  CHECK(j.at("policy").size() == 4);
  CHECK(load_calibration(o.cache_path, c.key).has_value());
  if (!test::have_gpu()) {
    CHECK(contains(text, "NO CUDA DEVICE"));
    CHECK(contains(text, "workloads: skipped, there is no CUDA device"));
    CHECK(j.at("workloads").empty());
    return;
  }
  CHECK(contains(text, "H2D GB/s by size"));
  CHECK(contains(text, "time reduction"));
  REQUIRE(j.at("workloads").size() == 3);
  for (const auto& w : j.at("workloads")) {
    CAPTURE(w.dump());
    CHECK(w.at("error") == "");
    CHECK(w.at("policy_ms").get<double>() > 0);
    CHECK(w.at("baseline_ms").get<double>() > 0);
  }
}

TEST_CASE("imgpipe bench-memory command line") {
  std::string out;
  CHECK(test::run_cli("bench-memory --sizes 1M --iterations 1", &out) == 0);
  CAPTURE(out);
  CHECK(contains(out, "imgpipe bench-memory"));
  CHECK(contains(out, "pageable"));
  CHECK(test::run_cli("bench-memory --sizes 1X", &out) == 2);
  CHECK(contains(out, "--sizes"));
}
