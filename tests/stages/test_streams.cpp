// Live inputs: stream URLs served by a loopback HTTP server that the test
// starts itself (127.0.0.1, an ephemeral port; tests/loopback_http.hpp), a
// file:// URL, URLs that cannot be opened, a server that stalls mid-stream,
// stopping while a stream waits for data, an absent camera; the names
// (is_stream_url, camera:N) and what discovery and the input check make of
// them. No outside address, no camera and no timing asserts: the timeouts
// are generous and a hang would show as the test's own CTest timeout.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "loopback_http.hpp"
#include "stages/live_input.hpp"
#include "stages/source.hpp"
#include "stages/video.hpp"

namespace fs = std::filesystem;
using imgpipe::stages::camera_index;
using imgpipe::stages::is_camera;
using imgpipe::stages::is_live_input;
using imgpipe::stages::is_stream_url;
using imgpipe::stages::live_input_problem;
using imgpipe::stages::VideoOptions;
using imgpipe::stages::VideoReader;
using imgpipe::test::LoopbackHttpServer;

namespace {

fs::path data(const std::string& name) { return imgpipe::test::opencv_data_dir() / name; }

std::vector<unsigned char> bytes_of(const std::string& name) { return imgpipe::test::read_bytes(data(name)); }

// Generous limits: a loaded 2-core machine must never hit them by accident.
VideoOptions stream_options(double open_s = 30, double read_s = 30) {
  VideoOptions o;
  o.stream = {open_s, read_s};
  return o;
}

bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

struct Read {
  std::vector<std::int64_t> index;
  std::string error;
  std::int64_t stopped_at = -1;
  bool bit_exact = true;  // every frame equal to the file's frame of that index
};

// Reads `url` to its end with a VideoReader and compares every delivered
// frame with the frame of the same index read directly from `file`.
Read read_and_compare(const std::string& url, const fs::path& file, VideoOptions o) {
  cv::VideoCapture direct(file.string(), cv::CAP_FFMPEG);
  REQUIRE(direct.isOpened());
  std::int64_t direct_index = -1;
  cv::Mat d;
  VideoReader r(url, o);
  Read out;
  imgpipe::stages::VideoPayload f;
  std::int64_t i = -1;
  while (r.next(f, i)) {
    out.index.push_back(i);
    while (direct_index < i && direct.read(d)) ++direct_index;
    if (direct_index != i || !same_pixels(f.bgr, d)) out.bit_exact = false;
  }
  REQUIRE(r.finished());
  out.error = r.error();
  out.stopped_at = r.stopped_at();
  return out;
}

std::int64_t frames_of(const fs::path& p) {
  cv::VideoCapture cap(p.string(), cv::CAP_FFMPEG);
  REQUIRE(cap.isOpened());
  std::int64_t n = 0;
  while (cap.grab()) ++n;
  return n;
}

// Waits (up to a generous deadline) until no detached reader thread is left,
// so that one test's stalled reader never outlives it.
void wait_for_detached_readers() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (VideoReader::detached_running() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(VideoReader::detached_running() == 0);
}

}  // namespace

TEST_CASE("stream: names: a scheme and :// is a stream URL, camera:N a camera, a bare number neither") {
  for (const char* u : {"rtsp://10.0.0.5:554/cam1", "rtsps://h/x", "http://127.0.0.1:8000/v.avi", "HTTPS://h/v.mp4",
                        "rtmp://h/live", "udp://@:1234", "tcp://127.0.0.1:9000", "file:///tmp/v.avi", "srt+x.y-z://h"}) {
    CAPTURE(u);
    CHECK(is_stream_url(u));
    CHECK(is_live_input(u));
    CHECK_FALSE(is_camera(u));
    CHECK(live_input_problem(u).empty());
  }
  for (const char* p : {"/tmp/v.avi", "v.avi", "dir/http://x", "://x", "1http://x", "C:/x.avi", "0", "12", ""}) {
    CAPTURE(p);
    CHECK_FALSE(is_live_input(p));
  }
  CHECK(camera_index("camera:0") == 0);
  CHECK(camera_index("camera:12") == 12);
  CHECK(live_input_problem("camera:3").empty());
  for (const char* c : {"camera:", "camera:x", "camera:-1", "camera:1.5", "camera:12345"}) {
    CAPTURE(c);
    CHECK(is_camera(c));
    CHECK(camera_index(c) == -1);
    CHECK(live_input_problem(c).find("is not a camera: write camera:N") != std::string::npos);
  }
  CHECK(live_input_problem("http://").find("nothing after") != std::string::npos);
}

TEST_CASE("stream: an HTTP URL on loopback delivers every frame of vtest.avi, bit-exact with the file, seekable or not") {
  const fs::path file = data("vtest.avi");
  const std::int64_t n = frames_of(file);
  REQUIRE(n > 700);
  for (const bool ranges : {true, false}) {
    CAPTURE(ranges);
    LoopbackHttpServer server({ranges});
    server.serve("vtest.avi", bytes_of("vtest.avi"));
    const Read r = read_and_compare(server.url("vtest.avi"), file, stream_options());
    CAPTURE(r.error);
    CHECK(r.error.empty());
    REQUIRE(r.index.size() == static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) REQUIRE(r.index[static_cast<std::size_t>(i)] == i);
    CHECK(r.bit_exact);
    CHECK(server.requests() >= 1);
  }
}

TEST_CASE("stream: start, stride and max_frames apply to a stream URL as to a file") {
  const fs::path file = data("Megamind.avi");
  LoopbackHttpServer server;
  server.serve("m.avi", bytes_of("Megamind.avi"));
  VideoOptions o = stream_options();
  o.start = 5;
  o.stride = 7;
  o.max_frames = 10;
  const Read r = read_and_compare(server.url("m.avi"), file, o);
  CHECK(r.error.empty());
  REQUIRE(r.index.size() == 10);
  for (std::size_t k = 0; k < 10; ++k) CHECK(r.index[k] == 5 + 7 * static_cast<std::int64_t>(k));
  CHECK(r.bit_exact);
}

TEST_CASE("stream: a file:// URL reads like the file, a missing one fails naming the file") {
  const fs::path file = data("Megamind.avi");
  const Read r = read_and_compare("file://" + file.string(), file, stream_options());
  CHECK(r.error.empty());
  CHECK(r.index.size() == 270);
  CHECK(r.bit_exact);
  const Read missing = read_and_compare("file:///nonexistent/dir/clip.avi", file, stream_options());
  CHECK(missing.index.empty());
  CHECK(missing.stopped_at == 0);
  CHECK(missing.error == "cannot open stream: no such file '/nonexistent/dir/clip.avi'");
}

TEST_CASE("stream: a URL nothing listens on, or a 404, fails at frame 0 with the reason, not a hang") {
  const fs::path file = data("Megamind.avi");
  const std::string closed = "http://127.0.0.1:" + std::to_string(imgpipe::test::closed_loopback_port()) + "/v.avi";
  const Read refused = read_and_compare(closed, file, stream_options());
  CAPTURE(refused.error);
  CHECK(refused.index.empty());
  CHECK(refused.stopped_at == 0);
  CHECK(refused.error.find("cannot open stream: cannot connect to 127.0.0.1:") == 0);
  CHECK(refused.error.find("Connection refused") != std::string::npos);

  LoopbackHttpServer server;
  const Read absent = read_and_compare(server.url("absent.avi"), file, stream_options());
  CAPTURE(absent.error);
  CHECK(absent.index.empty());
  CHECK(absent.error.find("cannot open stream: 127.0.0.1:" + std::to_string(server.port()) +
                          " accepts connections, but FFmpeg cannot open a video stream there") == 0);
}

TEST_CASE("stream: a server that stalls mid-stream ends as a failure at that frame after the read timeout") {
  const fs::path file = data("vtest.avi");
  const auto body = bytes_of("vtest.avi");
  // Not seekable, so FFmpeg reads the file in order and the stall comes
  // mid-stream (a seekable AVI would be read at its end first, at open).
  LoopbackHttpServer server({false, body.size() / 3});
  server.serve("vtest.avi", body);
  const Read r = read_and_compare(server.url("vtest.avi"), file, stream_options(30, 2));
  CAPTURE(r.error);
  REQUIRE_FALSE(r.error.empty());
  CHECK(r.error.find("stream stalled at frame " + std::to_string(r.stopped_at) +
                     ": no data for 2 s (input.video.read_timeout_s)") == 0);
  // About a third of the frames, each the file's; the one cut by the stall is
  // reported, not delivered.
  CHECK(r.stopped_at == static_cast<std::int64_t>(r.index.size()));
  CHECK(r.index.size() > 100);
  CHECK(r.index.size() < 795 / 2);
  CHECK(r.bit_exact);
}

TEST_CASE("stream: a server that stalls before the stream header is an open failure after the open timeout") {
  const auto body = bytes_of("vtest.avi");
  LoopbackHttpServer server({false, 200});
  server.serve("vtest.avi", body);
  const Read r = read_and_compare(server.url("vtest.avi"), data("vtest.avi"), stream_options(2, 30));
  CAPTURE(r.error);
  CHECK(r.index.empty());
  CHECK(r.stopped_at == 0);
  CHECK(r.error == "cannot open stream: no stream within 2 s (input.video.open_timeout_s)");
}

TEST_CASE("stream: stopping while a stalled stream waits for data returns at once, the reader's thread ends later") {
  const auto body = bytes_of("vtest.avi");
  std::atomic<bool> cancel{false};
  {
    LoopbackHttpServer server({false, body.size() / 3});
    server.serve("vtest.avi", body);
    {
      // An hour of read timeout: only the stop can end this read in time
      // (a hang would show as the test's CTest timeout).
      VideoReader r(server.url("vtest.avi"), stream_options(30, 3600), 4, &cancel);
      imgpipe::stages::VideoPayload f;
      std::int64_t i = -1, frames = 0;
      std::thread stopper;
      while (r.next(f, i)) {
        // Once the first frames came, stop in a moment: the reader then waits on the stall.
        if (++frames == 20) stopper = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            cancel = true;
          });
      }
      stopper.join();
      CHECK(frames >= 20);
      CHECK(frames < 795);
      CHECK_FALSE(r.finished());  // not ended: stopped while waiting
    }  // the destructor leaves the thread blocked in its read
  }    // the server closes the stalled connection: the read ends, then the thread
  wait_for_detached_readers();
}

TEST_CASE("stream: an absent camera fails at once, naming its number and device") {
  // /dev/video97: no machine the tests run on has 98 cameras.
  VideoReader r("camera:97", stream_options());
  imgpipe::stages::VideoPayload f;
  std::int64_t i = -1;
  CHECK_FALSE(r.next(f, i));
  CHECK(r.finished());
  CHECK(r.stopped_at() == 0);
  CHECK(r.error() == "cannot open camera 97 (no such device /dev/video97)");
  VideoReader bad("camera:x", stream_options());
  CHECK_FALSE(bad.next(f, i));
  CHECK(bad.error() == "'camera:x' is not a camera: write camera:N, N the device index (0 for /dev/video0)");
}

TEST_CASE("stream: discovery takes URLs and cameras as named videos, the input check skips them and rejects camera:x") {
  imgpipe::InputConfig in;
  in.paths = {"rtsp://127.0.0.1:1/live", "camera:3", "rtsp://127.0.0.1:1/live", "http://127.0.0.1:1/*.avi"};
  CHECK_NOTHROW(imgpipe::stages::check_inputs(in));
  const auto items = imgpipe::stages::discover_all_inputs(in);
  REQUIRE(items.size() == 3);  // the repeated URL once; the '*' is not a glob
  CHECK(items[0].path == "rtsp://127.0.0.1:1/live");
  CHECK(items[1].path == "camera:3");
  CHECK(items[2].path == "http://127.0.0.1:1/*.avi");
  for (const auto& it : items) {
    CHECK(it.video);
    CHECK(it.error.empty());
  }
  // input.list entries too, taken as written (not resolved against the list's folder).
  imgpipe::test::TempDir d;
  std::ofstream(d / "list.txt") << "# streams\nrtsp://127.0.0.1:1/a\ncamera:0\n";
  imgpipe::InputConfig listed;
  listed.list = (d / "list.txt").string();
  CHECK_NOTHROW(imgpipe::stages::check_inputs(listed));
  const auto from_list = imgpipe::stages::discover_all_inputs(listed);
  REQUIRE(from_list.size() == 2);
  CHECK(from_list[0].path == "rtsp://127.0.0.1:1/a");
  CHECK(from_list[1].path == "camera:0");
  CHECK(from_list[1].video);

  in.paths = {"camera:x"};
  try {
    imgpipe::stages::check_inputs(in);
    FAIL("expected a ConfigError");
  } catch (const imgpipe::ConfigError& e) {
    CHECK(std::string(e.what()).find("'camera:x' is not a camera: write camera:N") != std::string::npos);
  }
  // A bare number is a file: one that does not exist says how to name a camera.
  in.paths = {"7"};
  try {
    imgpipe::stages::check_inputs(in);
    FAIL("expected a ConfigError");
  } catch (const imgpipe::ConfigError& e) {
    CHECK(std::string(e.what()).find("'7' does not exist (for camera 7, write camera:7)") != std::string::npos);
  }
}

TEST_CASE("stream: the source stage names a stream's frames by URL and index, then a dead URL is one failure") {
  LoopbackHttpServer server;
  server.serve("m.avi", bytes_of("Megamind.avi"));
  const std::string dead = "http://127.0.0.1:" + std::to_string(imgpipe::test::closed_loopback_port()) + "/x.avi";
  imgpipe::InputConfig in;
  in.paths = {server.url("m.avi"), dead};
  in.video.max_frames = 12;
  const auto items = imgpipe::stages::discover_all_inputs(in);
  REQUIRE(items.size() == 2);
  std::atomic<bool> stop{false};
  imgpipe::stages::Source source(items, in.video, 2, stop);
  imgpipe::stages::Work work;  // one recycled Work, as a pool of one token would give
  auto acquire = [&] { return &work; };
  std::vector<std::int64_t> frames;
  std::vector<std::string> failures;
  for (imgpipe::stages::Work* w = source.next(acquire); w; w = source.next(acquire)) {
    if (w->kind == imgpipe::stages::Work::Kind::flush) continue;
    REQUIRE(w->sample.input);
    if (!w->sample.error.empty()) {
      CHECK(w->sample.input->path == dead);
      CHECK(w->sample.frame == 0);
      failures.push_back(w->sample.error);
      continue;
    }
    CHECK(w->sample.input->path == server.url("m.avi"));
    CHECK(w->pixels.decoded.type() == CV_8UC3);
    frames.push_back(w->sample.frame);
  }
  CHECK(frames == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].find("Connection refused") != std::string::npos);
  CHECK(source.complete());
}
