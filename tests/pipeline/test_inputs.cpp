// The inputs users have, end to end: real videos from Debian's opencv-doc
// (every frame delivered, counted and named by file and frame; start, stride,
// max_frames; broken and fake videos), videos mixed with images, input.list,
// loop and shuffle, and sharding across real imgpipe processes started with
// the launchers' environment variables.
#include <doctest/doctest.h>

#include <array>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "stages/dump_folder.hpp"

namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::DeviceSelection;
using imgpipe::DType;
using imgpipe::Layout;
using imgpipe::Pipeline;
using imgpipe::Report;
using imgpipe::test::TempDir;

namespace {

fs::path data(const std::string& name) { return imgpipe::test::opencv_data_dir() / name; }

// Frames of a video as cv::VideoCapture (FFmpeg) reads it.
std::int64_t count_frames(const fs::path& p) {
  cv::VideoCapture cap(p.string(), cv::CAP_FFMPEG);
  REQUIRE(cap.isOpened());
  std::int64_t n = 0;
  while (cap.grab()) ++n;
  return n;
}

Config small_config(std::vector<std::string> paths, int batch = 16) {
  Config c;
  c.input.paths = std::move(paths);
  c.transform.resize.width = 64;
  c.transform.resize.height = 48;
  c.batch.size = batch;
  c.devices = DeviceSelection::parse("cpu");
  return c;
}

struct Sample {
  std::string path;
  std::int64_t frame;
  std::uint64_t input_index;
};

std::vector<Sample> read_manifest(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in, "no manifest at " << p);
  std::vector<Sample> v;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    v.push_back({j.at("path").get<std::string>(), j.at("frame").get<std::int64_t>(),
                 j.at("input_index").get<std::uint64_t>()});
  }
  return v;
}

struct Run {
  Report report;
  std::vector<Sample> manifest;
};

Run run_dump(Config cfg, const fs::path& out, const imgpipe::BatchCallback& cb = {}) {
  cfg.sink.type = imgpipe::SinkType::dump;
  cfg.sink.dir = out.string();
  Pipeline p(cfg);
  Run r;
  r.report = p.run(cb);
  // A rank from input.shard writes its own sub-folder.
  const auto& shard = cfg.input.shard;
  r.manifest = read_manifest((shard.rank < 0 ? out
                                             : out / ("rank_" + std::to_string(shard.rank) + "_of_" +
                                                      std::to_string(shard.world_size))) /
                             "manifest.jsonl");
  return r;
}

void check_accounting(const Report& r) {
  const auto& in = r.inputs;
  CHECK(in.discovered == in.delivered + in.failed + in.dropped + in.not_processed);
  CHECK(in.failed == in.failures.size());
}

// A copy of `src` cut to `fraction` of its bytes.
void truncated_copy(const fs::path& src, const fs::path& dst, double fraction) {
  const auto b = imgpipe::test::read_bytes(src);
  imgpipe::test::write_bytes(dst, std::vector<unsigned char>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() * fraction)));
}

// A path quoted for the shell.
using imgpipe::test::q;

}  // namespace

TEST_CASE("inputs: every frame of vtest.avi is delivered, counted, in order, with cv::VideoCapture's pixels +-4") {
  const fs::path video = data("vtest.avi");
  const std::int64_t n = count_frames(video);
  REQUIRE(n > 700);  // 795 in opencv-doc 4.6
  Config cfg = small_config({video.string()}, 32);
  cfg.transform.dtype = DType::uint8;
  cfg.transform.layout = Layout::nchw;
  // Frames whose tensors are checked against blobFromImage of the frame read
  // directly.
  const std::set<std::int64_t> probe{0, 1, 100, 401, n - 1};
  std::map<std::int64_t, std::vector<unsigned char>> got;
  TempDir out;
  const Run r = run_dump(cfg, out / "out", [&](const DeviceBatch& b) {
    REQUIRE(b.device == -1);
    const std::size_t per = 3 * 48 * 64;
    for (std::size_t i = 0; i < b.size(); ++i)
      if (probe.count(b.samples[i].frame)) {
        const auto* p = static_cast<const unsigned char*>(b.data) + i * per;
        got[b.samples[i].frame].assign(p, p + per);
      }
  });
  const auto& in = r.report.inputs;
  CHECK(in.discovered == static_cast<std::uint64_t>(n));
  CHECK(in.delivered == static_cast<std::uint64_t>(n));
  CHECK(in.failed == 0);
  check_accounting(r.report);
  CHECK_FALSE(r.report.interrupted);
  CHECK(r.report.batches == static_cast<std::uint64_t>((n + 31) / 32));
  REQUIRE(r.manifest.size() == static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto& s = r.manifest[static_cast<std::size_t>(i)];
    REQUIRE(s.frame == i);
    REQUIRE(s.path == video.string());
    REQUIRE(s.input_index == 0);
  }
  // Pixels: the pipeline's frame k is frame k read here, resized and swapped
  // to RGB as blobFromImage does, within the two BT.601 conversions' rounding
  // (OpenCV's swscale and kernels/yuv.hpp; docs/video.md).
  cv::VideoCapture cap(video.string(), cv::CAP_FFMPEG);
  cv::Mat f;
  for (std::int64_t i = 0; cap.read(f); ++i) {
    if (!probe.count(i)) continue;
    CAPTURE(i);
    const cv::Mat blob = cv::dnn::blobFromImage(f, 1.0, cv::Size(64, 48), cv::Scalar(), true, false, CV_8U);
    REQUIRE(got.count(i));
    const cv::Mat mine(1, static_cast<int>(got[i].size()), CV_8U, got[i].data());
    const cv::Mat theirs = blob.reshape(1, 1);
    CHECK(cv::norm(mine, theirs, cv::NORM_INF) <= 4);
  }
}

TEST_CASE("inputs: videos mixed with images in one folder, with start, stride and max_frames per video") {
  TempDir d;
  const auto samples = imgpipe::test::sample_images();
  fs::create_symlink(data("Megamind.avi"), d / "b_megamind.avi");
  fs::create_symlink(data("basketball1.png"), d / "c_grey.png");
  fs::create_directories(d / "d_sub");
  fs::create_symlink(data("tree.avi"), d / "d_sub" / "tree.AVI");
  fs::copy_file(samples[0], d / "a_first.jpg");
  fs::copy_file(samples[1], d / "e_last.jpg");
  const std::int64_t mega = count_frames(data("Megamind.avi")), tree = count_frames(data("tree.avi"));
  REQUIRE(mega == 270);
  REQUIRE(tree == 68);
  struct Expect {
    std::string name;
    std::vector<std::int64_t> frames;
  };
  auto frames = [](std::int64_t start, std::int64_t stride, std::int64_t max, std::int64_t total) {
    std::vector<std::int64_t> v;
    for (std::int64_t f = start; f < total && (max == 0 || static_cast<std::int64_t>(v.size()) < max); f += stride)
      v.push_back(f);
    return v;
  };
  for (const auto& dev : imgpipe::test::test_devices()) {
    for (const std::array<std::int64_t, 3>& v : {std::array<std::int64_t, 3>{0, 1, 0}, {10, 3, 20}, {60, 7, 0}}) {
      const std::int64_t start = v[0], stride = v[1], max = v[2];
      CAPTURE(dev.to_string());
      CAPTURE(start);
      CAPTURE(stride);
      CAPTURE(max);
      Config cfg = small_config({d.path().string()}, 8);
      cfg.devices = dev;
      cfg.input.video.start = start;
      cfg.input.video.stride = stride;
      cfg.input.video.max_frames = max;
      const std::vector<Expect> want{{"a_first.jpg", {-1}},
                                     {"b_megamind.avi", frames(start, stride, max, mega)},
                                     {"c_grey.png", {-1}},
                                     {"tree.AVI", frames(start, stride, max, tree)},
                                     {"e_last.jpg", {-1}}};
      std::size_t total = 0;
      for (const auto& e : want) total += e.frames.size();
      TempDir out;
      const Run r = run_dump(cfg, out / "out");
      CHECK(r.report.inputs.discovered == total);
      CHECK(r.report.inputs.delivered == total);
      CHECK(r.report.inputs.failed == 0);
      check_accounting(r.report);
      REQUIRE(r.manifest.size() == total);
      std::size_t k = 0;
      for (std::size_t item = 0; item < want.size(); ++item)
        for (const std::int64_t f : want[item].frames) {
          CAPTURE(k);
          CHECK(fs::path(r.manifest[k].path).filename() == want[item].name);
          CHECK(r.manifest[k].frame == f);
          CHECK(r.manifest[k].input_index == item);
          ++k;
        }
    }
  }
}

TEST_CASE("inputs: a broken video delivers its good frames and one failure where it stopped, a fake .mp4 fails") {
  TempDir d;
  truncated_copy(data("vtest.avi"), d / "b_cut.avi", 0.4);
  std::ofstream(d / "c_fake.mp4") << "plain text, not a video";
  fs::copy_file(imgpipe::test::sample_images()[0], d / "a.jpg");
  Config cfg = small_config({d.path().string()}, 16);
  cfg.input.video.interleave = 1;  // the cut file's frames, then the fake's failure
  TempDir out;
  const Run r = run_dump(cfg, out / "out");
  const auto& in = r.report.inputs;
  check_accounting(r.report);
  REQUIRE(in.failures.size() == 2);
  const auto& cut = in.failures[0];
  CHECK(cut.path == (d / "b_cut.avi").string());
  CAPTURE(cut.reason);
  CHECK(cut.reason.find("at frame " + std::to_string(cut.frame)) != std::string::npos);
  CHECK(cut.frame > 200);  // ~40% of 795
  CHECK(cut.frame < 400);
  const auto& fake = in.failures[1];
  CHECK(fake.path == (d / "c_fake.mp4").string());
  CHECK(fake.frame == 0);
  CHECK(fake.reason.find("cannot open video") != std::string::npos);
  // a.jpg, then frames 0 .. cut.frame - 1 of the cut file.
  CHECK(in.delivered == static_cast<std::uint64_t>(1 + cut.frame));
  CHECK(in.discovered == in.delivered + 2);
  REQUIRE(r.manifest.size() == in.delivered);
  for (std::int64_t i = 0; i < cut.frame; ++i) {
    const auto& s = r.manifest[static_cast<std::size_t>(1 + i)];
    REQUIRE(s.frame == i);
    REQUIRE(s.input_index == 1);
  }
  // on_error: fail stops at the cut file, naming it and the frame.
  cfg.input.on_error = imgpipe::OnError::fail;
  Pipeline p(cfg);
  try {
    (void)p.run();
    FAIL("expected an InputError");
  } catch (const imgpipe::InputError& e) {
    CHECK(e.path() == (d / "b_cut.avi").string());
    CHECK(e.frame() == cut.frame);
    CHECK(e.reason().find("at frame " + std::to_string(cut.frame)) != std::string::npos);
  }
}

TEST_CASE("inputs: request_stop() in the middle of a video keeps discovered = delivered + failed + dropped + not processed") {
  const auto samples = imgpipe::test::sample_images();
  Config cfg = small_config({data("vtest.avi").string(), data("Megamind.avi").string(), samples[0].string(),
                             samples[1].string()},
                            4);
  cfg.pipeline.max_tokens = 4;
  cfg.decode.threads = 1;
  Pipeline p(cfg);
  std::uint64_t seen = 0;
  const Report r = p.run([&](const DeviceBatch& b) {
    seen += b.size();
    if (seen >= 20) p.request_stop();
  });
  CHECK(r.interrupted);
  check_accounting(r);
  CHECK(r.inputs.delivered == seen);
  CHECK(r.inputs.delivered < 795);
  CHECK(r.inputs.not_processed == 3);  // Megamind.avi (once) and the two images
  CHECK(r.inputs.discovered == r.inputs.delivered + 3);
  // The next run goes to the end.
  cfg.input.paths = {data("Megamind.avi").string()};
  const Report again = Pipeline(cfg).run();
  CHECK_FALSE(again.interrupted);
  CHECK(again.inputs.delivered == 270);
  CHECK(again.inputs.not_processed == 0);
}

TEST_CASE("inputs: input.list, loop and shuffle: the manifest follows the ordered list, the report names the shard") {
  const auto samples = imgpipe::test::sample_images();
  TempDir d;
  {
    std::ofstream list(d / "list.txt");
    list << "# two samples and a video\n" << samples[3].string() << "\n" << samples[4].string() << "\n";
  }
  Config cfg = small_config({samples[0].string()}, 5);
  cfg.input.list = (d / "list.txt").string();
  cfg.input.loop = 3;
  cfg.input.shuffle_seed = 11;
  std::vector<std::string> orders[2];
  for (int run = 0; run < 2; ++run) {
    TempDir out;
    const Run r = run_dump(cfg, out / "out");
    CHECK(r.report.inputs.delivered == 9);
    CHECK(r.report.shard.world_size == 1);
    CHECK(r.report.shard.origin == "default");
    std::map<std::string, int> count;
    for (const auto& s : r.manifest) {
      ++count[fs::path(s.path).filename().string()];
      orders[run].push_back(s.path);
    }
    CHECK(count == std::map<std::string, int>{{samples[0].filename().string(), 3},
                                              {samples[3].filename().string(), 3},
                                              {samples[4].filename().string(), 3}});
  }
  CHECK(orders[0] == orders[1]);  // the same seed, the same order
  std::vector<std::string> plain;
  for (int l = 0; l < 3; ++l)
    for (int i : {0, 3, 4}) plain.push_back(samples[static_cast<std::size_t>(i)].string());
  CHECK(orders[0] != plain);

  // A shard from the config: every third of the shuffled list.
  cfg.input.shard = {1, 3};
  TempDir out;
  const Run r = run_dump(cfg, out / "out");
  CHECK(r.report.shard.rank == 1);
  CHECK(r.report.shard.world_size == 3);
  CHECK(r.report.shard.origin == "config");
  REQUIRE(r.manifest.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) CHECK(r.manifest[k].path == orders[0][1 + 3 * k]);
  const auto j = nlohmann::json::parse(r.report.to_json());
  CHECK(j.at("shard").at("rank") == 1);
  CHECK(j.at("shard").at("world_size") == 3);
  CHECK(j.at("shard").at("origin") == "config");
}

TEST_CASE("inputs: imgpipe processes started with RANK/WORLD_SIZE, OMPI_* or SLURM_* split the input, disjoint and complete") {
  TempDir d;
  const auto samples = imgpipe::test::sample_images();
  REQUIRE(samples.size() == 20);
  std::set<std::string> all;
  for (const auto& s : samples) all.insert(fs::canonical(s).string());
  struct Launcher {
    int world;
    std::string rank_var, size_var;
  };
  for (const Launcher& l : {Launcher{3, "RANK", "WORLD_SIZE"}, Launcher{2, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                            Launcher{4, "SLURM_PROCID", "SLURM_NTASKS"}}) {
    CAPTURE(l.rank_var);
    // One job config, one dump folder: each rank writes its own sub-folder
    // rank_R_of_W there.
    const fs::path out = d / l.rank_var;
    auto config_for = [&](int rank) {
      const fs::path cfg = d / (l.rank_var + std::to_string(rank) + ".yaml");
      std::ofstream(cfg) << "input:\n  paths: [" << q(imgpipe::test::sample_dir()) << "]\n  shuffle: {seed: 3}\n"
                         << "transform:\n  resize: {width: 32, height: 24}\nbatch:\n  size: 4\n"
                         << "devices: cpu\nsink:\n  type: dump\n  dir: " << q(out) << "\n";
      return cfg;
    };
    // The processes run at the same time, as under a launcher.
    std::vector<int> rc(static_cast<std::size_t>(l.world));
    std::vector<std::string> text(static_cast<std::size_t>(l.world));
    std::vector<std::thread> procs;
    for (int rank = 0; rank < l.world; ++rank) {
      const fs::path cfg = config_for(rank);
      const fs::path report = d / (l.rank_var + std::to_string(rank) + ".json");
      procs.emplace_back([&, rank, cfg, report] {
        const std::string env = l.rank_var + "=" + std::to_string(rank) + " " + l.size_var + "=" + std::to_string(l.world);
        rc[static_cast<std::size_t>(rank)] =
            imgpipe::test::run_cli("--quiet --config " + q(cfg) + " --report " + q(report), &text[static_cast<std::size_t>(rank)], env);
      });
    }
    for (auto& t : procs) t.join();
    std::set<std::string> seen;
    std::size_t total = 0;
    for (int rank = 0; rank < l.world; ++rank) {
      CAPTURE(rank);
      CAPTURE(text[static_cast<std::size_t>(rank)]);
      REQUIRE(rc[static_cast<std::size_t>(rank)] == 0);
      const auto j = nlohmann::json::parse(std::ifstream(d / (l.rank_var + std::to_string(rank) + ".json")));
      CHECK(j.at("shard").at("rank") == rank);
      CHECK(j.at("shard").at("world_size") == l.world);
      const std::uint64_t delivered = j.at("inputs").at("delivered").get<std::uint64_t>();
      CHECK(delivered == static_cast<std::uint64_t>((20 - rank + l.world - 1) / l.world));
      const auto m = read_manifest(out / imgpipe::stages::rank_folder_name(rank, l.world) / "manifest.jsonl");
      CHECK(m.size() == delivered);
      for (const auto& s : m) {
        CHECK(seen.insert(fs::canonical(s.path).string()).second);  // disjoint
        ++total;
      }
    }
    CHECK(total == 20);
    CHECK(seen == all);  // together, the whole input
  }

  // A malformed variable is an error naming it, not a silent full run.
  const fs::path cfg = d / "RANK0.yaml";
  std::string text;
  const int rc = imgpipe::test::run_cli("--quiet --config " + q(cfg), &text, "RANK=two WORLD_SIZE=3");
  CAPTURE(text);
  CHECK(rc != 0);
  CHECK(text.find("RANK='two'") != std::string::npos);
}

TEST_CASE("inputs: a kept Pipeline's runs are epochs: each its own order, set_epoch replays one, ranks cover it") {
  const auto samples = imgpipe::test::sample_images();
  REQUIRE(samples.size() >= 10);
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < 10; ++i) paths.push_back(samples[i].string());
  Config cfg = small_config(paths, 4);
  cfg.input.shuffle_seed = 7;
  // One run's sample paths in delivery order (batches are in order).
  const auto order_of = [](Pipeline& p, std::optional<std::uint64_t> epoch = std::nullopt) {
    std::vector<std::string> order;
    imgpipe::RunOptions o;
    o.epoch = epoch;
    const auto r = p.run(
        [&](const DeviceBatch& b) {
          for (std::size_t i = 0; i < b.size(); ++i) order.push_back(b.samples[i].path);
        },
        o);
    return std::make_pair(order, r);
  };
  Pipeline p(cfg);
  CHECK(p.epoch() == 0);
  const auto [e0, r0] = order_of(p);
  const auto [e1, r1] = order_of(p);
  const auto [e2, r2] = order_of(p);
  CHECK(p.epoch() == 3);
  CHECK(r0.epoch == 0);
  CHECK(r1.epoch == 1);
  CHECK(r2.epoch == 2);
  CHECK(nlohmann::json::parse(r2.to_json()).at("epoch") == 2);
  CHECK(e0 != e1);
  CHECK(e1 != e2);
  for (const auto* e : {&e0, &e1, &e2}) CHECK(std::set<std::string>(e->begin(), e->end()) == std::set<std::string>(paths.begin(), paths.end()));
  // Epoch 0 of a kept Pipeline is the order a fresh one gives (what input.shuffle gave before epochs).
  Pipeline fresh(cfg);
  CHECK(order_of(fresh).first == e0);
  // set_epoch replays an epoch exactly; RunOptions::epoch chooses one for a run.
  p.set_epoch(1);
  CHECK(order_of(p).first == e1);
  CHECK(p.epoch() == 2);
  CHECK(order_of(fresh, 2).first == e2);
  // every_epoch false: one order for every epoch.
  Config same = cfg;
  same.input.shuffle_every_epoch = false;
  Pipeline q(same);
  const auto q0 = order_of(q).first;
  CHECK(q0 == e0);
  CHECK(order_of(q).first == q0);

  // 4 ranks of epoch 1 (10 items): uneven covers it once; pad repeats the
  // epoch's first 2; drop leaves its last 2 out. Every rank as many with pad and drop.
  for (const imgpipe::ShardRemainder rem :
       {imgpipe::ShardRemainder::uneven, imgpipe::ShardRemainder::pad, imgpipe::ShardRemainder::drop}) {
    CAPTURE(static_cast<int>(rem));
    std::multiset<std::string> all;
    std::set<std::size_t> sizes;
    for (int rank = 0; rank < 4; ++rank) {
      Config c = cfg;
      c.input.shard = {rank, 4};
      c.input.shard_remainder = rem;
      Pipeline rp(c);
      rp.set_epoch(1);
      const auto [mine, report] = order_of(rp);
      CHECK(report.shard.remainder == std::string(imgpipe::enum_name(imgpipe::shard_remainder_names, rem)));
      CHECK(report.shard.padded == (rem == imgpipe::ShardRemainder::pad ? 2u : 0u));
      CHECK(report.shard.dropped == (rem == imgpipe::ShardRemainder::drop ? 2u : 0u));
      for (std::size_t k = 0; k < mine.size(); ++k) {
        const std::size_t pos = static_cast<std::size_t>(rank) + 4 * k;
        CHECK(mine[k] == e1[pos % e1.size()]);  // rank r deals positions r, r + 4, ... of the epoch's order
      }
      all.insert(mine.begin(), mine.end());
      sizes.insert(mine.size());
    }
    const std::set<std::string> distinct(all.begin(), all.end());
    if (rem == imgpipe::ShardRemainder::uneven) {
      CHECK(all.size() == 10);
      CHECK(distinct.size() == 10);
    } else if (rem == imgpipe::ShardRemainder::pad) {
      CHECK(all.size() == 12);
      CHECK(distinct.size() == 10);
      CHECK(all.count(e1[0]) == 2);
      CHECK(all.count(e1[1]) == 2);
      CHECK(sizes.size() == 1);
    } else {
      CHECK(all.size() == 8);
      CHECK(all.count(e1[8]) == 0);
      CHECK(all.count(e1[9]) == 0);
      CHECK(sizes.size() == 1);
    }
  }
}
