// The pull API (Pipeline::start, BatchStream, Batch), the push source
// (PushSource), batch.timeout_ms and the latency figures, on every backend of
// test_devices(): the same tensors as the callback run, batches held past
// later ones, back-pressure, stop and tear-down with batches held, errors,
// pushed bytes and frames, and the timeout cutting a batch short.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

#include "common.hpp"
#include "imgpipe/log.hpp"
#include "imgpipe/pipeline.hpp"
#include "stages/latency.hpp"

namespace fs = std::filesystem;
using imgpipe::Batch;
using imgpipe::BatchStream;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::DeviceSelection;
using imgpipe::Pipeline;
using imgpipe::PushSource;
using imgpipe::Report;
using imgpipe::RunOptions;
using imgpipe::test::TempDir;
using namespace std::chrono_literals;

namespace {

Config small_config(const DeviceSelection& dev, int batch = 4, int slots = 3) {
  Config c;
  c.input.paths = {imgpipe::test::sample_dir().string()};
  c.devices = dev;
  c.batch.size = batch;
  c.staging.slots = slots;
  c.transform.resize.width = 48;
  c.transform.resize.height = 40;
  c.decode.reduced = false;
  c.decode.where = imgpipe::Where::cpu;  // one route: tensors comparable byte for byte
  return c;
}

struct Got {
  std::vector<unsigned char> bytes;
  std::vector<std::string> paths;
};

// Every batch of a callback run, copied to the host.
std::vector<Got> callback_run(const Config& c) {
  std::vector<Got> out;
  Pipeline p(c);
  p.run([&](const DeviceBatch& b) {
    Got g{imgpipe::test::batch_to_host(b), {}};
    for (const auto& s : b.samples) g.paths.push_back(s.path);
    out.push_back(std::move(g));
  });
  return out;
}

Got copy_of(const Batch& b) {
  Got g{imgpipe::test::batch_to_host(*b), {}};
  for (const auto& s : b->samples) g.paths.push_back(s.path);
  return g;
}

std::string label(const DeviceSelection& d) { return d.kind == DeviceSelection::Kind::cpu ? "cpu" : "gpu0"; }

// A JPEG of a sample image, in memory.
std::vector<unsigned char> jpeg_of(const cv::Mat& m) {
  std::vector<unsigned char> b;
  REQUIRE(cv::imencode(".jpg", m, b, {cv::IMWRITE_JPEG_QUALITY, 92}));
  return b;
}

}  // namespace

TEST_CASE("pull API: the same batches as the callback, in order, and the report") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    const Config c = small_config(dev);
    const std::vector<Got> want = callback_run(c);
    REQUIRE(want.size() == 5);  // 20 sample images, batches of 4
    Pipeline p(c);
    BatchStream stream = p.start();
    std::vector<Got> got;
    std::uint64_t index = 0;
    while (Batch b = stream.next()) {
      CHECK(b->index == index++);
      got.push_back(copy_of(b));
    }
    CHECK(stream.done());
    CHECK_FALSE(stream.next());  // the end stays the end
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].paths == want[i].paths);
      CHECK(got[i].bytes == want[i].bytes);
    }
    const Report& r = stream.report();
    CHECK(r.inputs.delivered == 20);
    CHECK(r.batches == 5);
    CHECK_FALSE(r.interrupted);
    CHECK(r.latency.samples == 20);
    CHECK(r.latency.p50_ms > 0);
    CHECK(r.latency.p50_ms <= r.latency.p95_ms);
    CHECK(r.latency.p95_ms <= r.latency.p99_ms);
    CHECK(r.latency.p99_ms <= r.latency.max_ms);
    // A range-for over a second stream of the same Pipeline (its resources kept).
    std::size_t n = 0;
    BatchStream again = p.start();
    for (Batch& b : again) n += b->size();
    CHECK(n == 20);
  }
}

TEST_CASE("pull API: a held batch stays intact while later ones come, and outlives its stream and Pipeline") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    const Config c = small_config(dev, 4, 3);
    const std::vector<Got> want = callback_run(c);
    Batch first, third;
    {
      Pipeline p(c);
      BatchStream stream = p.start();
      first = stream.next();
      REQUIRE(first);
      const void* first_data = first->data;
      std::vector<Batch> rest;
      // With 3 slots and `first` held, two more can be held; the rest come
      // through released ones.
      while (Batch b = stream.next()) {
        CHECK(b->data != first_data);  // never the held batch's memory
        if (b->index == 2) third = std::move(b);  // kept
      }
      CHECK(copy_of(first).bytes == want[0].bytes);
      REQUIRE(third);
      // The stream and the Pipeline end here; the batches stay.
    }
    CHECK(copy_of(first).bytes == want[0].bytes);
    CHECK(copy_of(third).bytes == want[2].bytes);
    CHECK(copy_of(third).paths == want[2].paths);
    first.release();
    CHECK_FALSE(first);
    CHECK_THROWS_AS(first.get(), std::logic_error);
    first.release();  // idempotent
  }
}

// In zero-copy mode with a tensor the CPU made, a batch's data is not the
// mapped (write-combined) slot but the GPU's copy of it, a device buffer of
// the slot's own: it moves out of the ring at its address like any other
// batch, pinned or not, and holding every slot never stops the run.
TEST_CASE("pull API (GPU): zero-copy batches are device memory and move out at their address, pinned or not") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  const DeviceSelection dev = DeviceSelection::parse("0");
  Config cfg = small_config(dev, 2, 2);
  cfg.staging.transfer = imgpipe::TransferMode::zero_copy;
  cfg.transform.resize.where = imgpipe::Where::cpu;
  cfg.transform.normalize.where = imgpipe::Where::cpu;  // the CPU makes the tensor in the mapped slot
  const std::vector<Got> want = callback_run(cfg);
  REQUIRE(want.size() >= 4);
  Pipeline p(cfg);
  BatchStream stream = p.start();
  Batch a = stream.next(), b = stream.next();
  REQUIRE(a);
  REQUIRE(b);
#if IMGPIPE_HAS_CUDA
  cudaPointerAttributes attr{};
  REQUIRE(cudaPointerGetAttributes(&attr, a->data) == cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeDevice);  // not the mapped host slot
  CHECK(attr.device == 0);
#endif
  a.pin();
  b.pin();
  const void* where_a = a->data;
  const void* where_b = b->data;
  Batch c = stream.next();  // both slots held: a moves out, pinned or not
  REQUIRE(c);
  CHECK(c->index == 2);
  CHECK(a.moved_out());
  CHECK(a->data == where_a);
  CHECK(copy_of(a).bytes == want[0].bytes);
  CHECK(copy_of(b).bytes == want[1].bytes);
  CHECK(copy_of(c).bytes == want[2].bytes);
  // Tear-down while the caller holds every slot: the run ends, the batches stay valid.
  c.pin();
  stream.stop();
  CHECK_NOTHROW((void)stream.report());  // held batches move out: the run can end
  const auto t0 = std::chrono::steady_clock::now();
  stream = BatchStream();
  CHECK(std::chrono::steady_clock::now() - t0 < 30s);
  CHECK(b->data == where_b);
  CHECK(copy_of(b).bytes == want[1].bytes);
  CHECK(copy_of(c).bytes == want[2].bytes);
}

// Issue 29: batches are values to their holders (docs/architecture.md,
// "Holding batches"). On a GPU these run on the device too (test_devices()).
TEST_CASE("pull API: holding every batch with 2 slots moves them out of the ring, values unchanged") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    const Config c = small_config(dev, 2, 2);
    const std::vector<Got> want = callback_run(c);
    REQUIRE(want.size() >= 4);
    Pipeline p(c);
    BatchStream stream = p.start();
    std::vector<Batch> all;
    while (Batch b = stream.next()) all.push_back(std::move(b));  // like Python's list(p)
    REQUIRE(all.size() == want.size());
    std::uint64_t moved = 0, moved_bytes = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      CAPTURE(i);
      const Got g = copy_of(all[i]);
      CHECK(g.bytes == want[i].bytes);
      CHECK(g.paths == want[i].paths);
      CHECK(all[i]->index == i);
      if (all[i].moved_out()) {
        ++moved;
        moved_bytes += all[i]->bytes;
      }
    }
    // With 2 slots, at most the last two can still be in the ring.
    CHECK(moved >= all.size() - 2);
    const Report& r = stream.report();
    CHECK(r.memory.held_batch_copies == moved);
    CHECK(r.memory.held_batch_copy_bytes == moved_bytes);
    CHECK(r.to_json().find("\"held_batch_copies\": " + std::to_string(moved)) != std::string::npos);
    std::ostringstream text;
    r.print_table(text);
    CHECK(text.str().find("held batches moved out of the ring: " + std::to_string(moved)) != std::string::npos);
    // The copies outlive the stream and the pipeline.
    stream = BatchStream();
    CHECK(copy_of(all[0]).bytes == want[0].bytes);
  }
}

TEST_CASE("pull API: a held batch moves out at the same address, in copy and zero-copy mode (GPU)") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    for (const bool zero_copy : {false, true}) {
      if (zero_copy && dev.kind == DeviceSelection::Kind::cpu) continue;  // no mapped staging on the host backend
      CAPTURE(zero_copy);
      Config c = small_config(dev, 2, 2);
      if (zero_copy) {
        c.staging.transfer = imgpipe::TransferMode::zero_copy;
        c.transform.resize.where = imgpipe::Where::cpu;
        c.transform.normalize.where = imgpipe::Where::cpu;
      }
      const std::vector<Got> want = callback_run(c);
      Pipeline p(c);
      BatchStream stream = p.start();
      Batch a = stream.next(), b = stream.next();
      REQUIRE(b);
      const void* where_a = a->data;
      Batch third = stream.next();  // both slots held: a moves out of the ring
      REQUIRE(third);
      CHECK(a.moved_out());
      CHECK_FALSE(b.moved_out());
      CHECK(a->data == where_a);
      CHECK(copy_of(a).bytes == want[0].bytes);
      CHECK(copy_of(b).bytes == want[1].bytes);
      CHECK(copy_of(third).bytes == want[2].bytes);
      a.release();
      b.release();
      third.release();
      while (Batch rest = stream.next()) {
      }
      CHECK(stream.report().memory.held_batch_copies == 1);
    }
  }
}

TEST_CASE("pull API: keeping every other batch with 2 slots, values unchanged") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    const Config c = small_config(dev, 2, 2);
    const std::vector<Got> want = callback_run(c);
    Pipeline p(c);
    BatchStream stream = p.start();
    std::vector<Batch> kept;
    std::size_t n = 0;
    while (Batch b = stream.next()) {
      if (n++ % 2 == 0) kept.push_back(std::move(b));
    }
    REQUIRE(n == want.size());
    for (std::size_t i = 0; i < kept.size(); ++i) {
      CAPTURE(i);
      CHECK(copy_of(kept[i]).bytes == want[2 * i].bytes);
      CHECK(copy_of(kept[i]).paths == want[2 * i].paths);
    }
    CHECK(stream.report().memory.held_batch_copies > 0);
  }
}

TEST_CASE("pull API: a loop that lets go of each batch (or keeps the last one) copies nothing") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    const Config c = small_config(dev, 2, 2);
    const std::vector<Got> want = callback_run(c);
    {
      Pipeline p(c);
      BatchStream stream = p.start();
      std::size_t n = 0;
      while (Batch b = stream.next()) {
        CHECK(copy_of(b).bytes == want[n++].bytes);
        CHECK_FALSE(b.moved_out());
      }
      CHECK(n == want.size());
      CHECK(stream.report().memory.held_batch_copies == 0);
      CHECK(stream.report().memory.held_batch_copy_bytes == 0);
    }
    {
      Pipeline p(c);
      BatchStream stream = p.start();
      Batch previous;  // a training loop that keeps last step's batch
      while (Batch b = stream.next()) {
        if (previous) CHECK_FALSE(previous.moved_out());
        previous = std::move(b);
      }
      CHECK(stream.report().memory.held_batch_copies == 0);
    }
  }
}

TEST_CASE("pull API: the next epoch reuses the staging while the caller keeps the last epoch's last batch, which keeps its values") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    const Config c = small_config(dev, 4, 2);
    const std::vector<Got> want = callback_run(c);
    Pipeline p(c);
    Batch held;  // a training loop's variable: the last batch of the epoch before
    Got held_copy;
    for (int epoch = 0; epoch < 3; ++epoch) {
      CAPTURE(epoch);
      BatchStream s = p.start();
      std::size_t n = 0;
      for (;;) {
        std::optional<Batch> b = s.next_for(std::chrono::seconds(60));
        REQUIRE_MESSAGE(b.has_value(), "no batch within 60 s: the run is stuck");
        if (!*b) break;
        CHECK(copy_of(*b).bytes == want.at(n++).bytes);
        // The batch kept from the epoch before moved out of the staging this
        // epoch reuses: its values stay.
        if (held && epoch > 0 && n == 1) CHECK(held.moved_out());
        if (held) CHECK(copy_of(held).bytes == held_copy.bytes);
        held = std::move(*b);
        held_copy = copy_of(held);
      }
      CHECK(n == want.size());
      CHECK(s.report().inputs.delivered == s.report().inputs.discovered);
    }
    CHECK(copy_of(held).bytes == want.back().bytes);
  }
}

TEST_CASE("pull API: stop() delivers what is in flight, then the end, report() says interrupted") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    Config c = small_config(dev, 2, 3);
    c.input.loop = 50;  // 1000 samples: more than a stop lets through
    Pipeline p(c);
    BatchStream stream = p.start();
    CHECK_THROWS_AS(stream.report(), std::logic_error);  // not at the end yet
    Batch first = stream.next();
    REQUIRE(first);
    std::size_t delivered = first->size();
    first.release();
    stream.stop();
    while (Batch b = stream.next()) delivered += b->size();
    const Report& r = stream.report();
    CHECK(r.interrupted);
    CHECK(r.inputs.delivered < 1000);
    CHECK(r.inputs.delivered == delivered);
    // The Pipeline runs again afterwards, to the end.
    BatchStream again = p.start();
    std::size_t n = 0;
    while (Batch b = again.next()) n += b->size();
    CHECK(n == 1000);
  }
}

TEST_CASE("pull API: errors before the run throw from start(), errors during it from next()") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    Config missing = small_config(dev);
    missing.input.paths = {"/nonexistent/imgpipe/folder"};
    Pipeline pm(missing);
    CHECK_THROWS_AS(pm.start(), imgpipe::ConfigError);

    TempDir dir;
    const auto samples = imgpipe::test::sample_images();
    for (int i = 0; i < 6; ++i) fs::copy_file(samples[i], dir / samples[i].filename());
    imgpipe::test::write_bytes(dir / "zz_broken.jpg", {0xFF, 0xD8, 0xFF, 0xE0, 0, 3, 1});
    Config c = small_config(dev, 2, 3);
    c.input.paths = {dir.path().string()};
    c.input.on_error = imgpipe::OnError::fail;
    Pipeline p(c);
    BatchStream stream = p.start();
    std::size_t batches = 0;
    bool threw = false;
    try {
      while (Batch b = stream.next()) ++batches;
    } catch (const imgpipe::InputError& e) {
      threw = true;
      CHECK(std::string(e.what()).find("zz_broken.jpg") != std::string::npos);
    }
    CHECK(threw);
    CHECK(batches <= 3);
    CHECK_FALSE(stream.next());  // once thrown, the end
  }
}

TEST_CASE("push source: queue results, capacity, waits and close") {
  PushSource src(2);
  CHECK_THROWS_AS(PushSource(0), std::invalid_argument);
  const std::vector<unsigned char> bytes{1, 2, 3};
  CHECK(src.push_encoded(bytes, "a") == PushSource::Result::ok);
  CHECK(src.push_encoded(bytes.data(), bytes.size(), "b") == PushSource::Result::ok);
  CHECK(src.size() == 2);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(src.push_encoded(bytes, "c", 30ms) == PushSource::Result::full);
  CHECK(std::chrono::steady_clock::now() - t0 >= 25ms);
  CHECK(src.push_encoded(bytes, "c") == PushSource::Result::full);
  // A pusher waiting forever gets in once the consumer takes one.
  std::atomic<int> result{-1};
  std::thread pusher([&] { result = static_cast<int>(src.push_encoded(bytes, "d", PushSource::wait_forever)); });
  imgpipe::PushedItem item;
  std::this_thread::sleep_for(20ms);
  REQUIRE(src.take(item, 1s) == PushSource::Take::got);
  CHECK(item.id == "a");
  pusher.join();
  CHECK(result == static_cast<int>(PushSource::Result::ok));
  unsigned char px[12] = {};
  CHECK_THROWS_AS(src.push_frame({nullptr, 2, 2, 0, imgpipe::PixelFormat::bgr}, "x"), std::invalid_argument);
  CHECK_THROWS_AS(src.push_frame({px, 0, 2, 0, imgpipe::PixelFormat::bgr}, "x"), std::invalid_argument);
  CHECK_THROWS_AS(src.push_frame({px, 2, 2, 5, imgpipe::PixelFormat::bgr}, "x"), std::invalid_argument);
  src.close();
  CHECK(src.push_encoded(bytes, "e", 1s) == PushSource::Result::closed);
  CHECK(src.pushed() == 3);
  // Closed: the queued ones still come out, then the end.
  CHECK(src.take(item, 0ms) == PushSource::Take::got);
  CHECK(src.take(item, 0ms) == PushSource::Take::got);
  CHECK(item.id == "d");
  CHECK(src.take(item, 0ms) == PushSource::Take::end);
  PushSource empty(1);
  CHECK(empty.take(item, 10ms) == PushSource::Take::empty);
}

TEST_CASE("push source: pushed bytes and frames give the files' tensors, from several threads") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    // The reference: the first 8 samples as files.
    TempDir dir;
    const auto samples = imgpipe::test::sample_images();
    std::vector<fs::path> files;
    for (int i = 0; i < 8; ++i) {
      files.push_back(dir / samples[i].filename());
      fs::copy_file(samples[i], files.back());
    }
    Config c = small_config(dev, 8, 3);
    c.input.paths = {dir.path().string()};
    const std::vector<Got> want = callback_run(c);
    REQUIRE(want.size() == 1);
    const std::size_t sample_bytes = want[0].bytes.size() / 8;

    // Pushed: even ones as encoded bytes, odd ones as decoded frames in
    // BGR, RGB (with padded rows) and grey-as-BGR formats.
    auto src = std::make_shared<PushSource>(4);
    Config pc = c;
    pc.input.paths.clear();
    Pipeline p(pc);
    RunOptions opt;
    opt.source = src;
    BatchStream stream = p.start(opt);
    std::thread producer([&] {
      for (int i = 0; i < 8; ++i) {
        const std::string id = "cam/" + std::to_string(i);
        if (i % 2 == 0) {
          REQUIRE(src->push_encoded(imgpipe::test::read_bytes(files[i]), id, PushSource::wait_forever, i) ==
                  PushSource::Result::ok);
          continue;
        }
        const cv::Mat bgr = cv::imread(files[i].string(), cv::IMREAD_COLOR);
        REQUIRE(!bgr.empty());
        if (i == 3) {  // RGB in a wider buffer: a stride past the row
          cv::Mat rgb;
          cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
          cv::Mat wide(rgb.rows, rgb.cols + 7, CV_8UC3, cv::Scalar::all(255));
          rgb.copyTo(wide(cv::Rect(0, 0, rgb.cols, rgb.rows)));
          REQUIRE(src->push_frame({wide.data, rgb.cols, rgb.rows, wide.step, imgpipe::PixelFormat::rgb}, id,
                                  PushSource::wait_forever, i) == PushSource::Result::ok);
        } else {
          REQUIRE(src->push_frame({bgr.data, bgr.cols, bgr.rows, bgr.step, imgpipe::PixelFormat::bgr}, id,
                                  PushSource::wait_forever, i) == PushSource::Result::ok);
        }
      }
      src->close();
    });
    std::vector<Got> got;
    while (Batch b = stream.next()) got.push_back(copy_of(b));
    producer.join();
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].bytes.size() == want[0].bytes.size());
    for (int i = 0; i < 8; ++i) {
      CAPTURE(i);
      CHECK(got[0].paths[i] == "cam/" + std::to_string(i));
      CHECK(std::memcmp(got[0].bytes.data() + i * sample_bytes, want[0].bytes.data() + i * sample_bytes,
                        sample_bytes) == 0);
    }
    const Report& r = stream.report();
    CHECK(r.inputs.delivered == 8);
    CHECK(r.inputs.failed == 0);
    CHECK(r.latency.samples == 8);

    // Grey frames arrive as BGR with three equal channels; many pushers at once.
    auto many = std::make_shared<PushSource>(8);
    RunOptions mopt;
    mopt.source = many;
    BatchStream ms = p.start(mopt);
    std::vector<std::thread> pushers;
    const cv::Mat grey(30, 50, CV_8UC1, cv::Scalar(77));
    for (int t = 0; t < 4; ++t)
      pushers.emplace_back([&, t] {
        for (int k = 0; k < 25; ++k)
          REQUIRE(many->push_frame({grey.data, grey.cols, grey.rows, grey.step, imgpipe::PixelFormat::gray},
                                   std::to_string(t) + "/" + std::to_string(k),
                                   PushSource::wait_forever) == PushSource::Result::ok);
      });
    std::map<std::string, int> seen;
    std::thread closer([&] {
      for (auto& th : pushers) th.join();
      many->close();
    });
    while (Batch b = ms.next())
      for (const auto& s : b->samples) ++seen[s.path];
    closer.join();
    CHECK(seen.size() == 100);
    CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& kv) { return kv.second == 1; }));
  }
}

namespace {

// The warnings of imgpipe's logger while alive, each with when it came;
// wait_for() blocks until one holds a text (thread-safe: the run's threads log).
class WarningWatch : public spdlog::sinks::base_sink<std::mutex> {
 public:
  bool wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
    std::unique_lock lk(m_);
    return cv_.wait_for(lk, timeout, [&] {
      return std::any_of(lines_.begin(), lines_.end(), [&](const std::string& l) { return l.find(needle) != l.npos; });
    });
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    {
      std::lock_guard lk(m_);
      lines_.emplace_back(msg.payload.data(), msg.payload.size());
    }
    cv_.notify_all();
  }
  void flush_() override {}

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
};

}  // namespace

TEST_CASE("push source: a failed input is warned about when it fails, while the run goes on, not at its end") {
  const auto logger = imgpipe::logger();
  const auto old_sinks = logger->sinks();
  const auto old_level = logger->level();
  auto watch = std::make_shared<WarningWatch>();
  logger->sinks() = {watch};
  logger->set_level(spdlog::level::warn);
  struct Restore {
    std::shared_ptr<spdlog::logger> l;
    std::vector<spdlog::sink_ptr> sinks;
    spdlog::level::level_enum level;
    ~Restore() {
      l->sinks() = sinks;
      l->set_level(level);
    }
  } restore{logger, old_sinks, old_level};
  auto src = std::make_shared<PushSource>(8);
  Config c = small_config(DeviceSelection::parse("cpu"), 1, 3);
  c.input.paths.clear();
  Pipeline p(c);
  RunOptions opt;
  opt.source = src;
  BatchStream stream = p.start(opt);
  REQUIRE(src->push_encoded(std::vector<unsigned char>{'n', 'o', 'p', 'e'}, "net/bad-1") == PushSource::Result::ok);
  // The run waits for the next input: the warning is out already.
  CHECK(watch->wait_for("net/bad-1: ", std::chrono::seconds(10)));
  const cv::Mat img(40, 60, CV_8UC3, cv::Scalar(10, 200, 30));
  REQUIRE(src->push_encoded(jpeg_of(img), "good-2") == PushSource::Result::ok);
  src->close();
  int n = 0;
  while (Batch b = stream.next()) n += static_cast<int>(b->size());
  CHECK(n == 1);
  CHECK(stream.report().inputs.failed == 1);
}

TEST_CASE("push source: a bad pushed image is reported with its id, the run goes on") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    auto src = std::make_shared<PushSource>(8);
    Config c = small_config(dev, 4, 3);
    c.input.paths.clear();
    Pipeline p(c);
    RunOptions opt;
    opt.source = src;
    BatchStream stream = p.start(opt);
    const cv::Mat img(40, 60, CV_8UC3, cv::Scalar(10, 200, 30));
    REQUIRE(src->push_encoded(jpeg_of(img), "good-1") == PushSource::Result::ok);
    REQUIRE(src->push_encoded(std::vector<unsigned char>{'n', 'o', 'p', 'e'}, "net/bad-2") ==
            PushSource::Result::ok);
    REQUIRE(src->push_encoded(std::vector<unsigned char>{}, "net/empty-3") == PushSource::Result::ok);
    REQUIRE(src->push_encoded(jpeg_of(img), "good-4") == PushSource::Result::ok);
    src->close();
    std::vector<std::string> ids;
    while (Batch b = stream.next())
      for (const auto& s : b->samples) ids.push_back(s.path);
    CHECK(ids == std::vector<std::string>{"good-1", "good-4"});
    const Report& r = stream.report();
    CHECK(r.inputs.failed == 2);
    REQUIRE(r.inputs.failures.size() == 2);
    CHECK(r.inputs.failures[0].path == "net/bad-2");
    CHECK(r.inputs.failures[1].path == "net/empty-3");
    CHECK(r.inputs.failures[1].reason.find("0 bytes") != std::string::npos);
  }
}

TEST_CASE("batch.timeout_ms: a stalled source's partial batch comes out, full batches are unaffected") {
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(label(dev));
    auto src = std::make_shared<PushSource>(16);
    Config c = small_config(dev, 8, 3);
    c.input.paths.clear();
    c.batch.timeout_ms = 300;  // long enough for three quick pushes on a loaded machine
    c.batch.drop_last = true;  // about the end of the input: a batch cut by the timeout still goes out
    Pipeline p(c);
    RunOptions opt;
    opt.source = src;
    BatchStream stream = p.start(opt);
    const cv::Mat frame(40, 48, CV_8UC3, cv::Scalar(1, 2, 3));
    auto push = [&](int n, const std::string& tag) {
      for (int i = 0; i < n; ++i)
        REQUIRE(src->push_frame({frame.data, frame.cols, frame.rows, frame.step, imgpipe::PixelFormat::bgr},
                                tag + std::to_string(i), PushSource::wait_forever) == PushSource::Result::ok);
    };
    push(3, "a");  // then the source stalls
    std::optional<Batch> b = stream.next_for(20s);
    REQUIRE(b);
    REQUIRE(*b);
    CHECK((*b)->size() == 3);  // cut short, without waiting for close()
    b->release();
    push(8, "b");  // a full batch at once
    b = stream.next_for(20s);
    REQUIRE(b);
    REQUIRE(*b);
    CHECK((*b)->size() == 8);
    b->release();
    // Nothing pushed: next_for times out, the run goes on.
    std::optional<Batch> none = stream.next_for(50ms);
    CHECK_FALSE(none.has_value());
    src->close();
    b = stream.next_for(20s);
    REQUIRE(b);
    CHECK_FALSE(*b);  // the end
    const Report& r = stream.report();
    CHECK(r.inputs.delivered == 11);
    CHECK(r.batches == 2);
  }
}

TEST_CASE("latency histogram: percentiles within 1%") {
  imgpipe::stages::LatencyHistogram h;
  CHECK(h.summary().samples == 0);
  for (int i = 1; i <= 1000; ++i) h.add(i * 0.1);  // 0.1 .. 100 ms
  const auto s = h.summary();
  CHECK(s.samples == 1000);
  CHECK(s.p50_ms == doctest::Approx(50.0).epsilon(0.011));
  CHECK(s.p95_ms == doctest::Approx(95.0).epsilon(0.011));
  CHECK(s.p99_ms == doctest::Approx(99.0).epsilon(0.011));
  CHECK(s.max_ms == doctest::Approx(100.0));
  h.add(0);  // below the first bin: counted there
  CHECK(h.count() == 1001);
}
