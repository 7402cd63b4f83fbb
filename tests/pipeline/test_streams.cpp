// Stream URLs and cameras end to end, against a loopback HTTP server the test
// starts itself (tests/loopback_http.hpp): batches from a URL equal those
// from the same file, samples named by the URL; dead URLs and absent cameras
// are failures beside a good stream; count_inputs and `imgpipe validate`
// count streams; request_stop() and SIGINT end a run whose stream stalled.
// No outside address, no camera, no timing asserts.
#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "loopback_http.hpp"
#include "stages/video.hpp"


namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::Pipeline;
using imgpipe::Report;
using imgpipe::test::LoopbackHttpServer;

namespace {

fs::path data(const std::string& name) { return imgpipe::test::opencv_data_dir() / name; }

Config small_config(std::vector<std::string> paths, int batch = 8) {
  Config c;
  c.input.paths = std::move(paths);
  c.input.video.open_timeout_s = 30;  // generous: a loaded machine must never hit them
  c.input.video.read_timeout_s = 30;
  c.transform.resize.width = 64;
  c.transform.resize.height = 48;
  c.batch.size = batch;
  c.devices = imgpipe::DeviceSelection::parse("cpu");
  return c;
}

struct Delivered {
  std::vector<unsigned char> bytes;  // every batch, in order
  std::vector<std::string> paths;
  std::vector<std::int64_t> frames;
  Report report;
};

Delivered run_collect(const Config& cfg) {
  Delivered d;
  Pipeline p(cfg);
  d.report = p.run([&](const DeviceBatch& b) {
    const auto host = imgpipe::test::batch_to_host(b);
    d.bytes.insert(d.bytes.end(), host.begin(), host.end());
    for (const auto& s : b.samples) {
      d.paths.push_back(s.path);
      d.frames.push_back(s.frame);
    }
  });
  return d;
}

void check_accounting(const Report& r) {
  const auto& in = r.inputs;
  CHECK(in.discovered == in.delivered + in.failed + in.dropped + in.not_processed);
  CHECK(in.failed == in.failures.size());
}

std::string closed_url() {
  return "http://127.0.0.1:" + std::to_string(imgpipe::test::closed_loopback_port()) + "/gone.avi";
}

void wait_for_detached_readers() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (imgpipe::stages::VideoReader::detached_running() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(imgpipe::stages::VideoReader::detached_running() == 0);
}

}  // namespace

TEST_CASE("pipeline streams: batches from an HTTP URL equal the same file's, samples named by the URL and frame") {
  LoopbackHttpServer server;
  server.serve("vtest.avi", imgpipe::test::read_bytes(data("vtest.avi")));
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev.to_string());
    // The file as a file:// URL: through the same stream route (OpenCV's
    // conversion; video files take FFmpeg's libraries, docs/video.md).
    Config cfg = small_config({"file://" + data("vtest.avi").string()});
    cfg.devices = dev;
    cfg.input.video.start = 3;
    cfg.input.video.max_frames = 41;  // a partial last batch
    const Delivered file = run_collect(cfg);
    cfg.input.paths = {server.url("vtest.avi")};
    const Delivered url = run_collect(cfg);
    CHECK(url.report.inputs.failed == 0);
    CHECK(url.report.inputs.delivered == 41);
    CHECK(url.report.inputs.discovered == 41);
    check_accounting(url.report);
    REQUIRE(url.frames.size() == 41);
    for (std::size_t i = 0; i < 41; ++i) {
      CHECK(url.frames[i] == 3 + static_cast<std::int64_t>(i));
      CHECK(url.paths[i] == server.url("vtest.avi"));
    }
    CHECK(url.frames == file.frames);
    REQUIRE(url.bytes.size() == file.bytes.size());
    CHECK(std::memcmp(url.bytes.data(), file.bytes.data(), url.bytes.size()) == 0);
  }
}

TEST_CASE("pipeline streams: a dead URL and an absent camera are failures naming them, beside a good stream") {
  LoopbackHttpServer server;
  server.serve("m.avi", imgpipe::test::read_bytes(data("Megamind.avi")));
  const std::string dead = closed_url();
  Config cfg = small_config({dead, server.url("m.avi"), "camera:97", imgpipe::test::sample_images()[0].string()});
  cfg.input.video.max_frames = 5;

  const imgpipe::InputCounts n = imgpipe::count_inputs(cfg.input);
  CHECK(n.streams == 3);
  CHECK(n.videos == 0);
  CHECK(n.images == 1);
  CHECK(n.failures.empty());
  CHECK(n.total() == 4);

  const Delivered d = run_collect(cfg);
  check_accounting(d.report);
  CHECK(d.report.inputs.delivered == 6);  // 5 frames and the image
  REQUIRE(d.report.inputs.failures.size() == 2);
  const auto& f0 = d.report.inputs.failures[0];
  CHECK(f0.path == dead);
  CHECK(f0.frame == 0);
  CHECK(f0.reason.find("cannot open stream: cannot connect to 127.0.0.1:") == 0);
  const auto& f1 = d.report.inputs.failures[1];
  CHECK(f1.path == "camera:97");
  CHECK(f1.reason == "cannot open camera 97 (no such device /dev/video97)");

  // on_error: fail ends the run at the dead URL, naming it.
  cfg.input.on_error = imgpipe::OnError::fail;
  try {
    (void)Pipeline(cfg).run();
    FAIL("expected an InputError");
  } catch (const imgpipe::InputError& e) {
    CHECK(e.path() == dead);
    CHECK(e.reason().find("Connection refused") != std::string::npos);
  }
}

TEST_CASE("pipeline streams: request_stop() ends a run whose stream stalled, with its frames delivered") {
  const auto body = imgpipe::test::read_bytes(data("vtest.avi"));
  {
    LoopbackHttpServer server({false, body.size() / 3});
    server.serve("vtest.avi", body);
    Config cfg = small_config({server.url("vtest.avi")});
    cfg.input.video.read_timeout_s = 3600;  // only the stop can end the wait in time
    Pipeline p(cfg);
    std::atomic<std::uint64_t> seen{0};
    std::thread stopper;
    // Stop once the stream has stalled: no batch for a second after the first ones.
    std::atomic<bool> done{false};
    stopper = std::thread([&] {
      std::uint64_t last = 0;
      int quiet = 0;
      while (!done && quiet < 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const std::uint64_t now = seen.load();
        quiet = now > 0 && now == last ? quiet + 1 : 0;
        last = now;
      }
      p.request_stop();
    });
    const Report r = p.run([&](const DeviceBatch& b) { seen += b.size(); });
    done = true;
    stopper.join();
    CHECK(r.interrupted);
    check_accounting(r);
    CHECK(r.inputs.delivered == seen.load());
    CHECK(r.inputs.delivered > 100);  // about a third of 795
    CHECK(r.inputs.delivered < 795);
    CHECK(r.inputs.failed == 0);
  }  // the server closes the stalled connection: the detached read ends
  wait_for_detached_readers();
}

TEST_CASE("pipeline streams: the CLI validates and counts streams, rejects camera:x, and SIGINT ends a stalled stream") {
  imgpipe::test::TempDir d;
  const fs::path cfg = d / "c.yaml";
  std::ofstream(cfg) << "input: {video: {read_timeout_s: 3600}}\ntransform: {resize: {width: 64, height: 48}}\n"
                        "batch: {size: 4}\ndevices: cpu\nsink: {type: dump, dir: "
                     << (d / "out").string() << "}\n";
  std::string out;
  CHECK(imgpipe::test::run_cli("validate " + cfg.string() + " --input http://127.0.0.1:1/x.avi --input camera:0 --input " +
                                   data("vtest.avi").string(),
                               &out) == 0);
  CAPTURE(out);
  CHECK(out.find("(3 inputs: 0 images, 1 video, 2 streams)") != std::string::npos);
  CHECK(imgpipe::test::run_cli("validate " + cfg.string() + " --input camera:x", &out) == 2);
  CHECK(out.find("'camera:x' is not a camera: write camera:N") != std::string::npos);

  const auto body = imgpipe::test::read_bytes(data("vtest.avi"));
  LoopbackHttpServer server({false, body.size() / 3});
  server.serve("vtest.avi", body);
  const fs::path log = d / "log.txt";
  const std::string cmd = "exec " + imgpipe::test::cli_path() + " --config " + cfg.string() + " --input " +
                          server.url("vtest.avi") + " --progress >" + log.string() + " 2>&1";
  const pid_t pid = imgpipe::test::spawn_shell(cmd);
  REQUIRE(pid > 0);
  // Wait until the manifest has stopped growing (the stream stalled), then Ctrl-C.
  using clock = std::chrono::steady_clock;
  const fs::path manifest = d / "out" / "manifest.jsonl";
  std::uintmax_t last = 0;
  int quiet = 0;
  for (const auto t0 = clock::now(); quiet < 10 && clock::now() - t0 < std::chrono::seconds(120);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::error_code ec;
    const std::uintmax_t size = fs::exists(manifest, ec) ? fs::file_size(manifest, ec) : 0;
    quiet = size > 0 && size == last ? quiet + 1 : 0;
    last = size;
  }
  REQUIRE(::kill(pid, SIGINT) == 0);
  const std::optional<int> status = imgpipe::test::wait_child(pid, std::chrono::seconds(120));
  const std::string text = imgpipe::test::read_text(log);
  if (!status) FAIL("imgpipe did not stop after SIGINT while its stream stalled; its output:\n" << text);
  imgpipe::test::check_interrupted_exit(*status, text);
  CAPTURE(text);
  CHECK(text.find(" frames") != std::string::npos);  // progress counts frames
  CHECK(text.find("%)") == std::string::npos);       // and shows no total: a stream's length is unknown
}

TEST_CASE("pipeline streams: batch.timeout_ms sends a stalled stream's partial batch out while the stream waits") {
  const auto body = imgpipe::test::read_bytes(data("vtest.avi"));
  {
    LoopbackHttpServer server({false, body.size() / 3});
    server.serve("vtest.avi", body);
    // Batches of 1000 never fill from 795 frames: only the timeout lets one out before the end.
    Config cfg = small_config({server.url("vtest.avi")}, 1000);
    cfg.input.video.read_timeout_s = 3600;  // the stall lasts until the stop
    cfg.batch.timeout_ms = 200;
    cfg.staging.slots = 2;
    Pipeline p(cfg);
    imgpipe::BatchStream stream = p.start();
    // Cut batches come while frames arrive; once the stream stalls, nothing
    // more: take them until none came for 3 s (or 120 s have passed).
    std::size_t first = 0, batches = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < until) {
      std::optional<imgpipe::Batch> b = stream.next_for(std::chrono::seconds(3));
      if (!b) {
        if (batches > 0) break;  // stalled
        continue;
      }
      REQUIRE(*b);  // the run cannot end by itself: the stream only stalls
      CHECK((*b)->size() < 1000);
      CHECK((*b)->samples.front().path == server.url("vtest.avi"));
      first += (*b)->size();
      ++batches;
    }
    CHECK(batches >= 1);  // cut short (under 1000) while the run went on: only the timeout does that
    stream.stop();  // the stream is still stalled: only the stop ends it
    std::size_t more = 0;
    while (imgpipe::Batch rest = stream.next()) more += rest->size();
    CHECK(first + more > 100);  // about a third of 795 came before the stall
    CHECK(first + more < 795);
    const Report& r = stream.report();
    CHECK(r.interrupted);
    CHECK(r.inputs.delivered == first + more);
    check_accounting(r);
  }
  wait_for_detached_readers();
}
