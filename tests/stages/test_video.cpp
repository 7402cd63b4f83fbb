// Video inputs on real files from Debian's opencv-doc package: the reader
// thread (every frame, in order, within a level or two of cv::VideoCapture's:
// both convert BT.601 with nearest chroma, rounding apart; start, stride,
// max_frames; truncated, empty and fake files), the prefetcher, and the source
// stage that turns images and videos into work items, taking videos in turns
// or in order of readiness.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>

#include "common.hpp"
#include "stages/source.hpp"
#include "stages/video.hpp"

namespace fs = std::filesystem;
using imgpipe::stages::InputItem;
using imgpipe::stages::is_video_path;
using imgpipe::stages::Source;
using imgpipe::stages::VideoOptions;
using imgpipe::stages::VideoPrefetcher;
using imgpipe::stages::VideoReader;
using imgpipe::stages::Work;
using imgpipe::test::TempDir;

namespace {

fs::path data(const std::string& name) { return imgpipe::test::opencv_data_dir() / name; }

// A frame's print: its middle rows in full (neighbouring frames of these
// videos differ there by far more than the conversions' rounding).
using Print = cv::Mat;
Print fingerprint(const cv::Mat& m) { return m.rowRange(m.rows / 2 - 4, m.rows / 2 + 4).clone(); }

// The same frame up to the two conversions' rounding (OpenCV's swscale and
// kernels/yuv.hpp): every value within 3 levels.
bool same_frame(const Print& a, const Print& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  return cv::norm(a, b, cv::NORM_INF) <= 3;
}

// Every frame of a file as cv::VideoCapture (FFmpeg) reads it: prints.
std::vector<Print> direct_frames(const fs::path& p) {
  cv::VideoCapture cap(p.string(), cv::CAP_FFMPEG);
  REQUIRE(cap.isOpened());
  std::vector<Print> v;
  cv::Mat f;
  while (cap.read(f)) v.push_back(fingerprint(f));
  return v;
}

// A reader's frame as BGR: a file's YUV frame converted, a live one as it is.
cv::Mat bgr_of(const imgpipe::stages::VideoPayload& p) {
  if (!p.yuv) return p.bgr;
  cv::Mat m(p.yuv->height(), p.yuv->width(), CV_8UC3);
  p.yuv->to_bgr(m.data, m.step);
  return m;
}

struct Read {
  std::vector<std::int64_t> index;
  std::vector<Print> print;
  std::string error;
  std::int64_t stopped_at = -1;
};

Read read_all(const fs::path& p, VideoOptions o = {}, std::size_t depth = 4) {
  VideoReader r(p.string(), o, depth);
  Read out;
  imgpipe::stages::VideoPayload f;
  std::int64_t i = -1;
  while (r.next(f, i)) {
    const cv::Mat m = bgr_of(f);
    REQUIRE(m.type() == CV_8UC3);
    out.index.push_back(i);
    out.print.push_back(fingerprint(m));
  }
  out.error = r.error();
  out.stopped_at = r.stopped_at();
  return out;
}

// A copy of `src` cut to `fraction` of its bytes.
fs::path truncated_copy(const fs::path& src, const fs::path& dst, double fraction) {
  const auto b = imgpipe::test::read_bytes(src);
  imgpipe::test::write_bytes(dst, std::vector<unsigned char>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() * fraction)));
  return dst;
}

// A video that cannot be read until the test says so: `fifo` is made a FIFO,
// whose reader blocks until feed() (or, so that nothing hangs, `latest` after
// construction) writes the file `src` into it on a thread of its own.
// Declare it before the Source that reads it and feed() before the Source
// ends, else the Source's end waits for `latest` (its reader is blocked).
class FifoVideo {
 public:
  FifoVideo(const fs::path& fifo, const fs::path& src, std::chrono::seconds latest) {
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    thread_ = std::thread([this, fifo, bytes = imgpipe::test::read_bytes(src), latest] {
      // The reader may close its end early (a stop): EPIPE, not SIGPIPE.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      {
        std::unique_lock lk(m_);
        late_ = !cv_.wait_for(lk, latest, [&] { return go_; });
      }
      // Opened once the reader has its end open (ENXIO until then).
      int fd = -1;
      for (int tries = 0; fd < 0 && tries < 2000; ++tries) {
        fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (fd < 0) return;
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      for (std::size_t at = 0; at < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
      }
      ::close(fd);
    });
  }
  ~FifoVideo() {
    feed();
    thread_.join();
  }
  FifoVideo(const FifoVideo&) = delete;
  FifoVideo& operator=(const FifoVideo&) = delete;

  void feed() {
    {
      std::lock_guard lk(m_);
      go_ = true;
    }
    cv_.notify_all();
  }
  // True when `latest` passed before feed().
  bool late() {
    std::lock_guard lk(m_);
    return late_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool go_ = false;
  bool late_ = false;
  std::thread thread_;
};

}  // namespace

TEST_CASE("video: is_video_path knows the FFmpeg container extensions, case-insensitively") {
  for (const char* p : {"a.avi", "b.MP4", "dir.x/c.mkv", "d.mov", "e.webm", "f.m4v", "g.mpg", "h.ts", "i.OGV"})
    CHECK(is_video_path(p));
  for (const char* p : {"a.jpg", "b.png", "mp4", "c.mp4.txt", "avi/readme", ""}) CHECK_FALSE(is_video_path(p));
}

TEST_CASE("video: the reader delivers every frame of vtest.avi in order, as cv::VideoCapture's") {
  const fs::path p = data("vtest.avi");
  const auto direct = direct_frames(p);
  REQUIRE(direct.size() > 700);  // 795 in opencv-doc 4.6
  const Read r = read_all(p);
  CHECK(r.error.empty());
  CHECK(r.index.size() == direct.size());
  for (std::size_t i = 0; i < r.index.size(); ++i) {
    REQUIRE(r.index[i] == static_cast<std::int64_t>(i));
    REQUIRE(same_frame(r.print[i], direct[i]));
    if (i > 0) REQUIRE_FALSE(same_frame(r.print[i], direct[i - 1]));  // the test tells frames apart
  }
}

TEST_CASE("video: start, stride and max_frames pick the frames (a start past the end gives none, no error)") {
  const fs::path p = data("Megamind.avi");
  const auto direct = direct_frames(p);
  REQUIRE(direct.size() == 270);
  {
    const Read r = read_all(p, VideoOptions{5, 7, 10, {}});
    CHECK(r.error.empty());
    REQUIRE(r.index.size() == 10);
    for (std::size_t k = 0; k < 10; ++k) {
      CHECK(r.index[k] == 5 + 7 * static_cast<std::int64_t>(k));
      CHECK(same_frame(r.print[k], direct[static_cast<std::size_t>(r.index[k])]));
    }
  }
  {
    const Read r = read_all(p, VideoOptions{250, 6, 0, {}});  // 250, 256, 262, 268
    CHECK(r.error.empty());
    CHECK(r.index == std::vector<std::int64_t>{250, 256, 262, 268});
  }
  {
    const Read r = read_all(p, VideoOptions{1000, 1, 0, {}});
    CHECK(r.error.empty());
    CHECK(r.index.empty());
  }
}

TEST_CASE("video: a truncated file delivers its good frames, then an error with the frame where it stopped") {
  TempDir d;
  for (const char* name : {"vtest.avi", "Megamind.avi"}) {
    CAPTURE(name);
    const fs::path cut = truncated_copy(data(name), d / name, 0.4);
    const auto direct = direct_frames(data(name));
    const Read r = read_all(cut);
    CAPTURE(r.error);
    REQUIRE_FALSE(r.error.empty());
    CHECK(r.error.find("at frame " + std::to_string(r.stopped_at)) != std::string::npos);
    CHECK(r.stopped_at == static_cast<std::int64_t>(r.index.size()));
    // About 40% of the frames, each the intact file's (none damaged).
    CHECK(r.index.size() > direct.size() / 4);
    CHECK(r.index.size() < direct.size() / 2);
    for (std::size_t i = 0; i < r.index.size(); ++i) CHECK(same_frame(r.print[i], direct[i]));
  }
}

TEST_CASE("video: an AVI whose empty 'repeat' chunks count as frames is not reported as broken (tree.avi)") {
  // tree.avi declares 444 frames but stores 68 images; the rest are empty
  // chunks that repeat the previous frame. Its last frame is at 443 / fps.
  const fs::path p = data("tree.avi");
  const auto direct = direct_frames(p);
  const Read r = read_all(p);
  CHECK(r.error.empty());
  CHECK(r.index.size() == direct.size());
}

TEST_CASE("video: files that are not videos, or empty, fail at frame 0 with the reason") {
  TempDir d;
  std::ofstream(d / "fake.mp4") << "this is a text file, not a video\n";
  std::ofstream(d / "empty.avi");
  for (const char* name : {"fake.mp4", "empty.avi", "missing.mkv"}) {
    CAPTURE(name);
    const Read r = read_all(d / name);
    CHECK(r.index.empty());
    CHECK(r.stopped_at == 0);
    CHECK(r.error.find("cannot open video") != std::string::npos);
  }
}

TEST_CASE("video: a reader destroyed mid-file, its queue full, stops and joins at once") {
  for (std::size_t depth : {1, 4}) {
    VideoReader r(data("vtest.avi").string(), {}, depth);
    imgpipe::stages::VideoPayload f;
    std::int64_t i = -1;
    REQUIRE(r.next(f, i));
    CHECK(i == 0);
  }  // destructor: stop() wakes the thread blocked on the full queue
  CHECK(true);
}

TEST_CASE("video: the prefetcher opens up to `ahead` upcoming videos, in list order, skipping images") {
  std::vector<InputItem> items{{data("Megamind.avi").string(), -1, {}, true},
                               {"image.jpg", -1, {}, false},
                               {data("tree.avi").string(), -1, {}, true},
                               {data("vtest.avi").string(), -1, {}, true}};
  VideoPrefetcher pf(items, {}, 2);
  pf.prefetch(0);
  CHECK(pf.open_readers() == 2);  // Megamind and tree
  VideoReader& m = pf.reader(0);
  imgpipe::stages::VideoPayload f;
  std::int64_t i = -1;
  REQUIRE(m.next(f, i));
  pf.release(0);
  pf.prefetch(1);
  CHECK(pf.open_readers() == 2);  // tree and vtest
  VideoReader& t = pf.reader(2);
  std::int64_t n = 0;
  while (t.next(f, i)) ++n;
  CHECK(n == 68);
  pf.stop_all();
  CHECK(pf.open_readers() == 0);
}

TEST_CASE("video: the source emits images, every frame of a video (predecoded), and one failure per broken video") {
  TempDir d;
  const fs::path cut = truncated_copy(data("Megamind.avi"), d / "cut.avi", 0.4);
  std::ofstream(d / "fake.mp4") << "not a video";
  std::vector<InputItem> items{{"a.jpg", -1, {}, false},
                               {data("Megamind.avi").string(), -1, {}, true},
                               {cut.string(), -1, {}, true},
                               {"b.png", -1, {}, false},
                               {(d / "fake.mp4").string(), -1, {}, true},
                               {"missing.avi", -1, "no such file or directory", false}};
  std::atomic<bool> stop{false};
  imgpipe::VideoConfig vc;
  vc.stride = 2;
  vc.interleave = 1;  // one video after another (the interleaved order has its own case)
  Source src(items, vc, 2, stop);
  // One recycled Work, as a pool of one token would give.
  Work w;
  struct Seen {
    std::uint64_t seq;
    std::int64_t frame;
    bool predecoded;
    std::string error;
  };
  std::vector<Seen> seen;
  for (;;) {
    Work* x = src.next([&] { return &w; });
    if (!x) break;
    if (x->kind == Work::Kind::flush) continue;
    const bool predecoded = x->kind == Work::Kind::video_frame && !x->failed();
    if (predecoded) {
      REQUIRE(x->pixels.video);  // YUV, for the decode stage to convert
      CHECK(x->pixels.video->width() == 720);
    }
    seen.push_back({x->sample.seq, x->sample.frame, predecoded, x->sample.error});
  }
  // a.jpg, 135 frames of Megamind (stride 2), the cut file's frames then its
  // failure, b.png, fake.mp4's failure, missing.avi (read stage fails it).
  REQUIRE(seen.size() > 140);
  CHECK(seen[0].seq == 0);
  CHECK_FALSE(seen[0].predecoded);
  CHECK(seen[0].frame == -1);
  std::size_t k = 1;
  for (std::int64_t f = 0; f < 270; f += 2, ++k) {
    REQUIRE(seen[k].seq == 1);
    CHECK(seen[k].predecoded);
    CHECK(seen[k].frame == f);
  }
  std::int64_t last = -2;
  for (; seen[k].seq == 2 && seen[k].predecoded; ++k) {
    CHECK(seen[k].frame == last + 2);
    last = seen[k].frame;
  }
  CHECK(last > 80);
  REQUIRE(seen[k].seq == 2);
  CHECK(seen[k].error.find("at frame " + std::to_string(seen[k].frame)) != std::string::npos);
  CHECK(seen[k].frame > last);
  CHECK(seen[k].frame <= last + 2);
  ++k;
  CHECK(seen[k].seq == 3);
  CHECK_FALSE(seen[k].predecoded);
  ++k;
  CHECK(seen[k].seq == 4);
  CHECK(seen[k].frame == 0);
  CHECK(seen[k].error.find("cannot open video") != std::string::npos);
  ++k;
  CHECK(seen[k].seq == 5);
  CHECK(seen[k].error.empty());  // discovery errors are set by the read stage
  CHECK_FALSE(seen[k].predecoded);
  CHECK(k + 1 == seen.size());
  CHECK(src.emitted() == seen.size());
  CHECK(src.stats().items == seen.size());
  CHECK(src.not_reached() == 0);
  CHECK(src.complete());
}

TEST_CASE("video: a stop mid-video ends the source: that video is not counted as not reached, later items are") {
  std::vector<InputItem> items{{data("vtest.avi").string(), -1, {}, true},
                               {"a.jpg", -1, {}, false},
                               {data("Megamind.avi").string(), -1, {}, true}};
  std::atomic<bool> stop{false};
  Source src(items, {}, 2, stop);
  Work w;
  int frames = 0;
  for (;;) {
    Work* x = src.next([&] { return &w; });
    REQUIRE(x);
    if (x->kind == Work::Kind::flush) break;
    if (++frames == 10) stop = true;
  }
  CHECK(frames == 10);
  CHECK(src.next([&] { return &w; }) == nullptr);
  CHECK(src.emitted() == 10);
  CHECK(src.not_reached() == 2);
  CHECK_FALSE(src.complete());
}

TEST_CASE("video: order turns takes consecutive videos in turns, one frame each, in the same order every run") {
  std::vector<InputItem> items{{data("Megamind.avi").string(), -1, {}, true},
                               {data("tree.avi").string(), -1, {}, true},
                               {data("vtest.avi").string(), -1, {}, true},
                               {"a.jpg", -1, {}, false}};
  const auto run = [&] {
    std::atomic<bool> stop{false};
    imgpipe::VideoConfig vc;
    vc.interleave = 2;
    vc.order = imgpipe::VideoOrder::turns;
    vc.max_frames = 100;
    Source src(items, vc, 4, stop);
    CHECK(src.interleave() == 2);
    CHECK_FALSE(src.ready_order());
    CHECK(src.video_threads() == 2);  // 4 threads over the 2 videos decoding at once
    Work w;
    std::vector<std::pair<std::uint64_t, std::int64_t>> seen;
    for (Work* x = src.next([&] { return &w; }); x; x = src.next([&] { return &w; })) {
      if (x->kind == Work::Kind::flush) continue;
      REQUIRE_FALSE(x->failed());
      seen.emplace_back(x->sample.seq, x->sample.frame);
    }
    CHECK(src.complete());
    return seen;
  };
  const auto seen = run();
  // Megamind and tree alternate while both have frames (tree has 68); then
  // vtest takes tree's turn; a.jpg comes after every video.
  REQUIRE(seen.size() == 100 + 68 + 100 + 1);
  for (std::size_t k = 0; k < 136; ++k) {
    CHECK(seen[k].first == k % 2);
    CHECK(seen[k].second == static_cast<std::int64_t>(k / 2));
  }
  std::map<std::uint64_t, std::int64_t> next_frame;
  for (const auto& [seq, frame] : seen) {
    if (seq == 3) continue;
    CHECK(frame == next_frame[seq]++);  // each video's frames in order
  }
  CHECK(next_frame[0] == 100);
  CHECK(next_frame[1] == 68);
  CHECK(next_frame[2] == 100);
  CHECK(seen.back().first == 3);
  // vtest's first frame follows tree's last, in Megamind's next turn's stead... in tree's slot.
  CHECK(seen[136].first == 0);
  CHECK(seen[137].first == 2);
  CHECK(run() == seen);  // the order does not depend on timing
}

TEST_CASE("video: order ready delivers every frame of every video once, each video's in order, failures as turns does") {
  TempDir d;
  const fs::path cut = truncated_copy(data("Megamind.avi"), d / "cut.avi", 0.4);
  std::ofstream(d / "fake.mp4") << "not a video";
  const std::vector<InputItem> items{{"a.jpg", -1, {}, false},
                                     {data("Megamind.avi").string(), -1, {}, true},
                                     {cut.string(), -1, {}, true},
                                     {(d / "fake.mp4").string(), -1, {}, true},
                                     {data("tree.avi").string(), -1, {}, true},
                                     {"b.png", -1, {}, false}};
  using Seen = std::tuple<std::uint64_t, std::int64_t, std::string>;  // seq, frame, error
  const auto run = [&](imgpipe::VideoOrder order) {
    std::atomic<bool> stop{false};
    imgpipe::VideoConfig vc;
    vc.interleave = 3;
    vc.order = order;
    Source src(items, vc, 4, stop);
    CHECK(src.ready_order() == (order == imgpipe::VideoOrder::ready));
    Work w;
    std::vector<Seen> seen;
    for (Work* x = src.next([&] { return &w; }); x; x = src.next([&] { return &w; }))
      if (x->kind != Work::Kind::flush) seen.emplace_back(x->sample.seq, x->sample.frame, x->sample.error);
    CHECK(src.complete());
    CHECK(src.emitted() == seen.size());
    CHECK(src.not_reached() == 0);
    return seen;
  };
  const std::vector<Seen> ready = run(imgpipe::VideoOrder::ready);
  REQUIRE(ready.size() > 2);
  CHECK(std::get<0>(ready.front()) == 0);  // a.jpg before the videos start
  CHECK(std::get<0>(ready.back()) == 5);   // b.png after every video
  // Each video's frames once, in increasing order; its failure after them.
  std::map<std::uint64_t, std::int64_t> next_frame;
  std::map<std::uint64_t, std::string> failure;
  for (const auto& [seq, frame, error] : ready) {
    if (seq == 0 || seq == 5) continue;
    CAPTURE(seq);
    CHECK(failure[seq].empty());  // nothing after a failure
    if (!error.empty()) {
      failure[seq] = error;
      CHECK(frame == next_frame[seq]);  // where it stopped: after the frames it delivered
      continue;
    }
    CHECK(frame == next_frame[seq]++);
  }
  CHECK(next_frame[1] == 270);
  CHECK(failure[1].empty());
  CHECK(next_frame[2] > 80);
  CHECK(next_frame[2] < 135);
  CHECK(failure[2].find("at frame " + std::to_string(next_frame[2])) != std::string::npos);
  CHECK(next_frame[3] == 0);
  CHECK(failure[3].find("cannot open video") != std::string::npos);
  CHECK(next_frame[4] == 68);
  CHECK(failure[4].empty());
  // The same work items as in turns, failures alike: only the order differs.
  std::vector<Seen> turns = run(imgpipe::VideoOrder::turns);
  std::vector<Seen> sorted = ready;
  std::sort(sorted.begin(), sorted.end());
  std::sort(turns.begin(), turns.end());
  CHECK(sorted == turns);
}

TEST_CASE("video: order ready takes the other videos' frames while one reader has none, cuts a pending batch, stops") {
  // The first video is a FIFO that delivers nothing until the test feeds it:
  // the other two videos' frames all come first (in turns they would wait).
  TempDir d;
  const std::vector<InputItem> items{{(d / "slow.avi").string(), -1, {}, true},
                                     {data("Megamind.avi").string(), -1, {}, true},
                                     {data("tree.avi").string(), -1, {}, true}};
  FifoVideo slow(d / "slow.avi", data("tree.avi"), std::chrono::seconds(10));
  std::atomic<bool> stop{false};
  imgpipe::VideoConfig vc;
  vc.interleave = 3;
  vc.max_frames = 20;
  // batch.timeout_ms: a partial batch waits no longer than 200 ms.
  Source src(items, vc, 4, stop, {nullptr, std::chrono::milliseconds(200), 1000});
  Work w;
  std::vector<std::pair<std::uint64_t, std::int64_t>> seen;
  int others = 0;
  bool cut_while_waiting = false;
  for (Work* x = src.next([&] { return &w; }); x; x = src.next([&] { return &w; })) {
    if (x->kind == Work::Kind::flush) continue;
    if (x->kind == Work::Kind::cut) {
      if (others == 40 && !cut_while_waiting) {  // the others are done: now the slow one may come
        cut_while_waiting = true;
        slow.feed();
      }
      continue;
    }
    REQUIRE_FALSE(x->failed());
    seen.emplace_back(x->sample.seq, x->sample.frame);
    if (x->sample.seq != 0) ++others;
  }
  CHECK_FALSE(slow.late());
  CHECK(cut_while_waiting);
  REQUIRE(seen.size() == 60);
  std::map<std::uint64_t, std::int64_t> next_frame;
  for (std::size_t k = 0; k < seen.size(); ++k) {
    const auto [seq, frame] = seen[k];
    CHECK((seq == 0) == (k >= 40));  // the slow video's frames after all the others'
    CHECK(frame == next_frame[seq]++);
  }
  CHECK(src.complete());

  // A stop while the source waits for a frame ends it (no frame taken after
  // it): the FIFO is fed well after the stop, so that its reader, blocked
  // opening it, can end and be joined.
  TempDir d2;
  const std::vector<InputItem> one{{(d2 / "slow.avi").string(), -1, {}, true}};
  FifoVideo later(d2 / "slow.avi", data("tree.avi"), std::chrono::seconds(10));
  std::atomic<bool> stop2{false};
  Source waiting(one, vc, 4, stop2);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop2 = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    later.feed();
  });
  int frames = 0;
  Work* x = waiting.next([&] { return &w; });
  for (; x && x->kind != Work::Kind::flush; x = waiting.next([&] { return &w; })) ++frames;
  stopper.join();
  REQUIRE(x);
  CHECK(frames == 0);
  CHECK_FALSE(waiting.complete());
  CHECK_FALSE(later.late());
}

TEST_CASE("video: a file's frame leaves the Work its BGR buffer for the decode stage (none piles up in the reader)") {
  const std::vector<InputItem> items{{data("tree.avi").string(), -1, {}, true}};
  std::atomic<bool> stop{false};
  imgpipe::VideoConfig vc;
  vc.max_frames = 3;
  Source src(items, vc, 2, stop);
  Work w;
  const unsigned char* buffer = nullptr;
  int frames = 0;
  for (Work* x = src.next([&] { return &w; }); x; x = src.next([&] { return &w; })) {
    if (x->kind == Work::Kind::flush) continue;
    REQUIRE(x->pixels.video);
    if (buffer) CHECK(x->pixels.decoded.data == buffer);  // the Work's own, not handed to the reader
    // As the decode stage leaves it: the frame converted into pixels.decoded.
    x->pixels.decoded.create(x->pixels.video->height(), x->pixels.video->width(), CV_8UC3);
    buffer = x->pixels.decoded.data;
    x->pixels.video.reset();
    ++frames;
  }
  CHECK(frames == 3);
}

TEST_CASE("video: order ready is fair: with every video's frames queued, it takes one of each in turn") {
  const std::vector<InputItem> items{{data("tree.avi").string(), -1, {}, true},
                                     {data("vtest.avi").string(), -1, {}, true},
                                     {data("Megamind.avi").string(), -1, {}, true}};
  std::atomic<bool> stop{false};
  imgpipe::VideoConfig vc;
  vc.interleave = 3;
  vc.max_frames = 8;  // each reader's queue holds all of its frames
  Source src(items, vc, 3, stop);
  // The readers start with the Source; give them time to queue their 8 frames.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  Work w;
  std::vector<std::pair<std::uint64_t, std::int64_t>> seen;
  for (Work* x = src.next([&] { return &w; }); x; x = src.next([&] { return &w; }))
    if (x->kind != Work::Kind::flush) seen.emplace_back(x->sample.seq, x->sample.frame);
  REQUIRE(seen.size() == 24);
  for (std::size_t k = 0; k < seen.size(); ++k) {
    CHECK(seen[k].first == k % 3);  // from the video after the one taken last
    CHECK(seen[k].second == static_cast<std::int64_t>(k / 3));
  }
}
