// The routing probe: the JPEG marker parser and the rules that keep a JPEG
// on the CPU route, on real encodings (OpenCV, libjpeg) and on damaged bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "codecs/route/decode_meter.hpp"
#include "codecs/image/nvjpeg/jpeg_engines.hpp"
#include "codecs/parse/jpeg_checks.hpp"
#include "codecs/parse/jpeg_markers.hpp"
#include "codecs/route/route_steering.hpp"
#include "jpeg_writer.hpp"

using imgpipe::codecs::gpu_route_refusal;
using imgpipe::codecs::JpegLayout;
using imgpipe::codecs::parse_jpeg_layout;
using imgpipe::codecs::RouteSteering;
using Bytes = std::vector<unsigned char>;

namespace {

cv::Mat pattern(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(x * 7 & 255, y * 5 & 255, (x + y) & 255);
  return m;
}

Bytes encode(const cv::Mat& m, std::vector<int> params = {}) {
  Bytes b;
  REQUIRE(cv::imencode(".jpg", m, b, params));
  return b;
}

// libjpeg (tests/jpeg_writer.hpp): sampling factors, component count,
// arithmetic coding, restart interval; quality 75 (libjpeg's default).
Bytes encode_libjpeg(int components, int h0, int v0, bool progressive, bool arithmetic, int restart) {
  imgpipe::test::JpegWriteOptions o;
  o.components = components;
  o.quality = 75;
  if (components == 3) {
    o.h_samp = h0;
    o.v_samp = v0;
  }
  o.progressive = progressive;
  o.arithmetic = arithmetic;
  o.restart_interval = static_cast<unsigned>(restart);
  const std::vector<unsigned char> flat(48 * 32 * static_cast<std::size_t>(components), 90);
  return imgpipe::test::write_jpeg(flat.data(), 48, 32, 48 * static_cast<std::size_t>(components), o);
}

}  // namespace

TEST_CASE("probe: the marker parser reads baseline JPEGs from OpenCV: size, precision, components, 4:2:0") {
  const JpegLayout j = parse_jpeg_layout(encode(pattern(97, 61)));
  REQUIRE(j.valid);
  CHECK(j.sof == 0);
  CHECK(j.precision == 8);
  CHECK(j.width == 97);
  CHECK(j.height == 61);
  CHECK(j.components == 3);
  CHECK(j.subsampling == "420");
  CHECK(j.restart_interval == 0);
  CHECK(gpu_route_refusal(j).empty());
  cv::Mat grey;
  cv::cvtColor(pattern(40, 30), grey, cv::COLOR_BGR2GRAY);
  const JpegLayout g = parse_jpeg_layout(encode(grey));
  CHECK(g.subsampling == "gray");
  CHECK(gpu_route_refusal(g).empty());
}

TEST_CASE("probe: each layout the engines do not take is refused with its name") {
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode(pattern(64, 48), {cv::IMWRITE_JPEG_PROGRESSIVE, 1}))) ==
        "progressive");
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode_libjpeg(3, 2, 2, true, false, 0))) == "progressive");
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode_libjpeg(4, 1, 1, false, false, 0))) ==
        "4 components (CMYK/YCCK)");
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode_libjpeg(3, 4, 1, false, false, 0))) == "chroma subsampling 411");
  for (auto [h, v, name] : {std::tuple{1, 1, "444"}, {2, 1, "422"}, {2, 2, "420"}, {1, 2, "440"}}) {
    const JpegLayout j = parse_jpeg_layout(encode_libjpeg(3, h, v, false, false, 0));
    CHECK(j.subsampling == name);
    CHECK(gpu_route_refusal(j).empty());
  }
  const JpegLayout r = parse_jpeg_layout(encode_libjpeg(3, 2, 2, false, false, 4));
  CHECK(r.restart_interval == 4);
  CHECK(gpu_route_refusal(r).empty());  // restart markers: nvJPEG decides (DecodeBatchedSupported)
  // Thinner than 16 pixels either way: the CPU route (the engines' edge
  // upsampling differs by more than a level).
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode(pattern(1, 300)))) == "thinner than 16 pixels");
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode(pattern(300, 15)))) == "thinner than 16 pixels");
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode(pattern(16, 16)))).empty());
#ifdef C_ARITH_CODING_SUPPORTED
  CHECK(gpu_route_refusal(parse_jpeg_layout(encode_libjpeg(3, 2, 2, false, true, 0))) == "arithmetic coding");
#endif
  // A 12-bit frame header (SOF1, precision 12), patched into a baseline file.
  Bytes twelve = encode(pattern(16, 16));
  for (std::size_t i = 2; i + 4 < twelve.size(); ++i)
    if (twelve[i] == 0xFF && twelve[i + 1] == 0xC0) {
      twelve[i + 1] = 0xC1;
      twelve[i + 4] = 12;
      break;
    }
  CHECK(gpu_route_refusal(parse_jpeg_layout(twelve)) == "12-bit samples");
}

TEST_CASE("probe: damaged or foreign bytes never parse as valid and never read out of bounds") {
  const Bytes good = encode(pattern(33, 17));
  for (std::size_t cut = 0; cut < good.size(); cut += 7) {
    const Bytes part(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    const JpegLayout j = parse_jpeg_layout(part);
    if (j.valid) {  // the headers fit before the cut: the scan header was reached
      CHECK(j.width == 33);
    }
  }
  CHECK_FALSE(parse_jpeg_layout(Bytes{}).valid);
  CHECK_FALSE(parse_jpeg_layout(Bytes{0xFF, 0xD8, 0xFF}).valid);
  Bytes png;
  REQUIRE(cv::imencode(".png", pattern(8, 8), png));
  CHECK_FALSE(parse_jpeg_layout(png).valid);
  CHECK(gpu_route_refusal(parse_jpeg_layout(png)) == "header not understood");
  // A segment length that runs past the end.
  Bytes bad = good;
  bad[4] = 0xFF;
  bad[5] = 0xFF;
  CHECK_FALSE(parse_jpeg_layout(bad).valid);
}

TEST_CASE("probe: one parse lists the segments to the scan, which layout, checks and entropy walk share") {
  using imgpipe::codecs::JpegSegment;
  using imgpipe::codecs::JpegSegments;
  using imgpipe::codecs::parse_jpeg_segments;
  const Bytes good = encode_libjpeg(3, 2, 2, false, false, 2);  // with DRI
  const JpegSegments s = parse_jpeg_segments(good);
  REQUIRE(s.reached_scan());
  REQUIRE_FALSE(s.list.empty());
  // In file order, each at its FF, each whole, the first SOS last.
  std::vector<int> markers;
  std::size_t at = 2;
  for (const JpegSegment& g : s.list) {
    CHECK(g.at == at);
    CHECK(good[g.at] == 0xFF);
    CHECK(good[g.at + 1] == g.marker);
    CHECK(g.whole(good.size()));
    markers.push_back(g.marker);
    at = g.end();
  }
  CHECK(s.list.back().marker == 0xDA);
  CHECK(s.list.back().at == s.markers.sos);
  CHECK(std::count(markers.begin(), markers.end(), 0xC0) == 1);  // SOF0
  CHECK(std::count(markers.begin(), markers.end(), 0xDD) == 1);  // DRI
  CHECK(std::count(markers.begin(), markers.end(), 0xC4) >= 1);  // DHT
  CHECK(std::count(markers.begin(), markers.end(), 0xDB) >= 1);  // DQT
  CHECK(s.markers.restart_interval == 2);
  // The readers given the parse agree with those that parse for themselves.
  const JpegLayout j = imgpipe::codecs::jpeg_layout(good, s);
  CHECK(j.valid);
  CHECK(j.width == 48);
  CHECK(j.restart_interval == 2);
  imgpipe::codecs::JpegStructure a, b;
  CHECK(imgpipe::codecs::check_jpeg(good, s, a) == imgpipe::codecs::check_jpeg(good, b));
  CHECK(a.scan_at == s.list.back().end());
  CHECK(a.restarts == b.restarts);
  // A standalone marker is listed and walked over (the layout calls the file
  // irregular, the checks refuse it); a stray byte ends the walk there.
  Bytes rst = good;
  rst.insert(rst.begin() + 2, {0xFF, 0xD0});
  const JpegSegments r = parse_jpeg_segments(rst);
  REQUIRE(r.list.size() == s.list.size() + 1);
  CHECK(r.list.front().standalone());
  CHECK(r.markers.irregular);
  CHECK(r.reached_scan());
  CHECK_FALSE(imgpipe::codecs::jpeg_layout(rst, r).valid);
  CHECK(imgpipe::codecs::check_jpeg(rst, r, a) == imgpipe::codecs::JpegRefusal::not_jpeg);
  Bytes stray = good;
  stray.insert(stray.begin() + static_cast<std::ptrdiff_t>(s.list[1].at), 0x00);
  const JpegSegments t = parse_jpeg_segments(stray);
  CHECK(t.list.size() == 1);
  CHECK_FALSE(t.reached_scan());
  CHECK(t.stop_at == s.list[1].at);
}

TEST_CASE("probe: the steering sends its share to the GPU and moves it toward the measured balance") {
  using imgpipe::codecs::SteeringSample;
  RouteSteering fixed(false, 0.3, 16);
  int gpu = 0;
  for (int i = 0; i < 100; ++i) gpu += fixed.take_gpu();
  CHECK(gpu == 100);  // not adaptive: every GPU-able JPEG

  RouteSteering s(true, 0.5, 4);
  s.set_cpu_util(1.0);  // the plain balance, both routes running out together
  gpu = 0;
  for (int i = 0; i < 100; ++i) gpu += s.take_gpu();
  CHECK(gpu == 50);
  // One second: the CPU route decodes 100 images in 1 thread-second (d =
  // 10 ms, 400 img/s on 4 threads), the engines 1200 in 1 s of calls. No
  // other work: 1200 * 0.01 / (4 + 12) = 0.75, half-way from 0.5.
  SteeringSample m{100, 1.0, 1200, 1.0, 1300, 0.0, 1.0};
  s.update(m);
  CHECK(s.share() == doctest::Approx(0.625));
  // The next second, 2 ms of other work a sample: 1200 * 0.012 / 16 = 0.9.
  m = {200, 2.0, 2400, 2.0, 2600, 2.6, 2.0};
  s.update(m);
  CHECK(s.share() == doctest::Approx(0.5 * 0.625 + 0.5 * 0.9));
  CHECK(s.history().size() == 2);
  // Too few new samples, or too short a window: no change.
  s.update({205, 2.1, 2405, 2.1, 2610, 2.7, 3.0});
  s.update({400, 3.0, 3600, 3.0, 3900, 3.0, 2.01});
  CHECK(s.history().size() == 2);
  // Never all or nothing: both routes keep being measured.
  RouteSteering t(true, 0.5, 1);
  for (int k = 1; k < 20; ++k)
    t.update({100ull * k, 1.0 * k, 100000ull * k, 1.0 * k, 100100ull * k, 1.0 * k, 1.0 * k});
  CHECK(t.share() <= 0.98);
  CHECK(t.share() >= 0.97);  // the threads cannot even feed the engines: as much as it may
}

TEST_CASE("probe: engines that starve get every JPEG for a while, then the CPU route is tried again") {
  using imgpipe::codecs::SteeringSample;
  // The rates of the first case above (balance 0.75), but the engine thread
  // was in calls 0.6 s of the second: the engines waited for their batches.
  RouteSteering s(true, 0.5, 4);
  s.set_cpu_util(1.0);
  s.update({100, 1.0, 1200, 1.0, 1300, 0.0, 1.0, 0.6});
  CHECK(s.share() == 1.0);
  // Busy again half a second later: still held (kHoldS).
  s.update({150, 1.5, 1800, 1.5, 1950, 0.0, 1.5, 1.075});
  CHECK(s.share() == 1.0);
  // The hold over, busy: half-way to the balance.
  s.update({250, 2.5, 3000, 2.5, 3250, 0.0, 2.5, 2.025});
  CHECK(s.share() == doctest::Approx(0.5 * 1.0 + 0.5 * 0.75));
  CHECK(s.history().size() == 3);
  // Two GPUs: 1.2 s of calls in a second is 60% of two engine threads' time.
  RouteSteering two(true, 0.5, 4, 2);
  two.update({100, 1.0, 1200, 1.2, 1300, 0.0, 1.0, 1.2});
  CHECK(two.share() == 1.0);
  RouteSteering one(true, 0.5, 4, 1);  // the same 1.2 s on one GPU: busy
  one.update({100, 1.0, 1200, 1.2, 1300, 0.0, 1.0, 1.2});
  CHECK(one.share() < 0.7);
  // From 1, the CPU route's cost unknown: a step down to measure it, no
  // further until measured.
  RouteSteering first(true, 1.0, 4);
  first.update({0, 0.0, 1200, 1.0, 1200, 0.0, 1.0, 1.0});
  CHECK(first.share() == doctest::Approx(1.0 - RouteSteering::kProbeStep));
  first.update({5, 0.05, 2400, 2.0, 2405, 0.0, 2.0, 2.0});
  CHECK(first.share() == doctest::Approx(1.0 - RouteSteering::kProbeStep));
}

TEST_CASE("probe: the steering aims the CPU threads at a load below full, from the run's cost when windows are short") {
  using imgpipe::codecs::SteeringSample;
  // H200-like rates: engines 5750 img/s in calls, 15 threads, a CPU-route
  // image 11 ms, 0.2 ms of other work a sample. Windows of 25 ms (one call)
  // at share 0.95 hold ~7 CPU-route images: fewer than a window's 16.
  const double G = 5750, N = 15, o = 0.0002, d = 0.011;
  for (const double u : {1.0, RouteSteering::kCpuUtil, 0.6}) {
    CAPTURE(u);
    RouteSteering st(true, 1.0, static_cast<int>(N));
    if (u != RouteSteering::kCpuUtil) st.set_cpu_util(u);
    double t = 0, cpu = 0, gpu = 0, samples = 0;
    for (int k = 0; k < 200; ++k) {
      const double s = st.share();
      const double T = G / s;  // the engines limit; the threads keep up
      t += 0.025;
      gpu += G * 0.025;
      cpu += T * (1 - s) * 0.025;
      samples += T * 0.025;
      // Whole images only, as the counters hold.
      st.update({static_cast<std::uint64_t>(cpu), std::floor(cpu) * d, static_cast<std::uint64_t>(gpu), gpu / G,
                 static_cast<std::uint64_t>(samples), std::floor(samples) * o, t, gpu / G});
    }
    const double s = st.share();
    // Settled where the threads' load is u: T (o + (1 - s) d) = u N.
    CHECK(G / s * (o + (1 - s) * d) == doctest::Approx(u * N).epsilon(0.02));
    CHECK(s < 1.0 - RouteSteering::kProbeStep);  // it left the first try
  }
}

TEST_CASE("probe: a meter counts the engine calls in progress") {
  imgpipe::codecs::GpuDecodeMeter g;
  CHECK(g.busy_s(0) == 0.0);
  g.call_begins(1'000'000'000);
  CHECK(g.busy_s(1'250'000'000) == doctest::Approx(0.25));
  g.call_ends(1'000'000'000, 1'500'000'000);
  CHECK(g.busy_s(3'000'000'000) == doctest::Approx(0.5));
  CHECK(g.ns.load() == 500'000'000);
}

TEST_CASE("probe: the steered balance is the share that gives the most throughput") {
  // The model the balance comes from: at share s the engines allow G / s
  // images/s, the threads N / (o + (1 - s) d). The balance must sit at the
  // best share of a fine grid, for rates like the H200's and far from them.
  using imgpipe::codecs::SteeringSample;
  struct Rates {
    double G, N, o, d;
  };
  for (const Rates r : {Rates{5900, 16, 0.0007, 0.0128}, Rates{5900, 16, 0.0, 0.0128}, Rates{1500, 8, 0.001, 0.02},
                        Rates{20000, 64, 0.0002, 0.004}, Rates{800, 4, 0.004, 0.01}}) {
    CAPTURE(r.G);
    CAPTURE(r.o);
    auto throughput = [&](double s) { return std::min(r.G / s, r.N / (r.o + (1 - s) * r.d)); };
    double best = 0.02, best_t = 0;
    for (double s = 0.02; s <= 0.98; s += 0.0005)
      if (throughput(s) > best_t) best_t = throughput(s), best = s;
    // One window of steady state from these rates, repeated until settled.
    RouteSteering st(true, 0.5, static_cast<int>(r.N));
    st.set_cpu_util(1.0);
    for (int k = 1; k <= 40; ++k) {
      const double t = k;  // seconds
      const double cpu = 1000.0 * k, gpu = r.G * t;
      st.update({static_cast<std::uint64_t>(cpu), cpu * r.d, static_cast<std::uint64_t>(gpu), t,
                 static_cast<std::uint64_t>(cpu + gpu), (cpu + gpu) * r.o, t});
    }
    CHECK(st.share() == doctest::Approx(best).epsilon(0.01));
    CHECK(throughput(st.share()) >= 0.99 * best_t);
  }
}

TEST_CASE("probe: the JPEG engines are made in the background, or say why not") {
  imgpipe::codecs::JpegEngines e(0, {});
  imgpipe::codecs::GpuJpegDecoder* d = e.wait();
  std::string why;
  const bool engines = imgpipe::test::have_gpu() && imgpipe::codecs::GpuJpegDecoder::probe(0, &why).has_value();
  if (engines) {
    REQUIRE(d != nullptr);
    CHECK(e.ready() == d);
    CHECK(e.info().engines > 0);
    CHECK(e.error().empty());
  } else {
    CHECK(d == nullptr);
    CHECK(e.ready() == nullptr);
    CHECK_FALSE(e.error().empty());
  }
}

TEST_CASE("probe: with a cycle, the CPU route's JPEGs go to each engine call's first batches") {
  RouteSteering s(true, 0.92, 4);
  s.set_cycle(5, 32, 2);  // calls of 5 batches of 32, the last 2 without CPU-route JPEGs
  for (int cycle = 0; cycle < 3; ++cycle) {
    int cpu = 0, late = 0;
    for (std::uint64_t p = 0; p < 160; ++p) {
      const bool gpu = s.take_gpu(static_cast<std::uint64_t>(cycle) * 160 + p);
      cpu += !gpu;
      late += !gpu && p >= 96;
    }
    CHECK(cpu == 13);  // round(160 x 0.08)
    CHECK(late == 0);
  }
  // The same sample, the same answer, in any order (the probe is parallel).
  CHECK(s.take_gpu(7) == s.take_gpu(7));
  // Spread evenly over the window: no run of more than 96 / 13 + 1 samples without one.
  int gap = 0, longest = 0;
  for (std::uint64_t p = 0; p < 96; ++p) {
    gap = s.take_gpu(p) ? gap + 1 : 0;
    longest = std::max(longest, gap);
  }
  CHECK(longest <= 8);
  // At most the window: share 0.2 asks for 128 of 160, the window holds 96.
  RouteSteering low(true, 0.2, 4);
  low.set_cycle(5, 32, 2);
  int cpu = 0;
  for (std::uint64_t p = 0; p < 160; ++p) cpu += !low.take_gpu(p);
  CHECK(cpu == 96);
  // Share 1: every JPEG to the engines; no cycle: the error diffusion.
  RouteSteering all(true, 1.0, 4);
  all.set_cycle(5, 32, 2);
  for (std::uint64_t p = 0; p < 160; ++p) CHECK(all.take_gpu(p));
  RouteSteering plain(true, 0.5, 4);
  int g = 0;
  for (std::uint64_t p = 0; p < 100; ++p) g += plain.take_gpu(p);
  CHECK(g == 50);
}

TEST_CASE("probe: the first window's busy share counts from the engines' first call") {
  using imgpipe::codecs::SteeringSample;
  // 40 ms after the first call began (the steering was made long before, at
  // wall time 0 as far as its first window knows), in calls 38 ms of them.
  SteeringSample m{0, 0.0, 200, 0.038, 300, 0.01, 100.04, 0.038};
  RouteSteering unknown(true, 1.0, 15);
  unknown.update(m);  // from when is not known: idle over the whole window, held
  CHECK(unknown.share() == 1.0);
  m.engines_from_s = 100.0;
  RouteSteering known(true, 1.0, 15);
  known.update(m);  // busy: the CPU route is tried, one step down
  CHECK(known.share() == doctest::Approx(1.0 - RouteSteering::kProbeStep));
  // Starving after their first call: held.
  RouteSteering starved(true, 1.0, 15);
  m.busy_s = 0.02;
  starved.update(m);
  CHECK(starved.share() == 1.0);
}

TEST_CASE("probe: with a cycle only a clear starving holds, and for a quarter second") {
  // Balance 0.75 (the first case above); the engine thread in calls 85% of
  // the window: no hold with a cycle, a hold without.
  RouteSteering spread(true, 0.5, 4);
  spread.update({100, 1.0, 1200, 1.0, 1300, 0.0, 1.0, 0.85});
  CHECK(spread.share() == 1.0);
  RouteSteering early(true, 0.5, 4);
  early.set_cycle(5, 32, 2);
  early.set_cpu_util(1.0);
  early.update({100, 1.0, 1200, 1.0, 1300, 0.0, 1.0, 0.85});
  CHECK(early.share() == doctest::Approx(0.625));
  // 70%: held, until 0.25 s later.
  early.update({200, 2.0, 2400, 2.0, 2600, 0.0, 2.0, 1.55});
  CHECK(early.share() == 1.0);
  early.update({300, 2.2, 2640, 2.2, 2860, 0.0, 2.2, 1.75});
  CHECK(early.share() == 1.0);
  early.update({400, 3.2, 3840, 3.2, 4160, 0.0, 3.2, 2.75});
  CHECK(early.share() < 1.0);
}
