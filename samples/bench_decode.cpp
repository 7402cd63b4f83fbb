// The entropy check (codecs/parse/jpeg_entropy.hpp) against the decode stage's
// full and reduced decode; reduced-size JPEG decode against full-size decode, as the pipeline's decode
// stage does it (stages::Decode, then the transform's resize); random_crop with the box decoded alone
// (decode.region) against a whole decode then the cut; on one thread
// and on every thread (oneTBB parallel_for over in-memory files); first, the
// decode stage's full-size decode against plain cv::imdecode.
//
// Usage: imgpipe_bench_decode [--dir FOLDER] [--targets 640x360,320x320]
//        [--mode stretch|center_crop|letterbox] [--runs 5] [--threads N]
//        [--width 1920 --height 1080]
//
// Without --dir the corpus is samples/data's JPEGs scaled up to
// --width x --height and re-encoded at quality 90 (in memory). Each figure is
// the median of --runs runs; every run decodes the whole corpus (repeated so
// that each thread gets at least 4 images).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "codecs/parse/image_header.hpp"
#include "codecs/parse/jpeg_entropy.hpp"
#include "stages/decode.hpp"
#include "stages/transform.hpp"
#include "imgpipe/augment.hpp"

#ifndef IMGPIPE_SOURCE_DIR
#define IMGPIPE_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

namespace {

std::vector<Bytes> load_folder(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Bytes> out;
  for (const auto& f : files) {
    std::vector<unsigned char> b;
    FILE* fp = std::fopen(f.string().c_str(), "rb");
    if (!fp) continue;
    std::fseek(fp, 0, SEEK_END);
    b.resize(static_cast<std::size_t>(std::ftell(fp)));
    std::fseek(fp, 0, SEEK_SET);
    if (std::fread(b.data(), 1, b.size(), fp) == b.size()) out.push_back(std::move(b));
    std::fclose(fp);
  }
  return out;
}

std::vector<Bytes> scaled_samples(int width, int height) {
  std::vector<Bytes> out;
  for (const Bytes& b : load_folder(fs::path(IMGPIPE_SOURCE_DIR) / "samples" / "data")) {
    const cv::Mat m = cv::imdecode(b, cv::IMREAD_COLOR);
    cv::Mat big;
    cv::resize(m, big, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);
    Bytes jpg;
    cv::imencode(".jpg", big, jpg, {cv::IMWRITE_JPEG_QUALITY, 90});
    out.push_back(std::move(jpg));
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Images per second of `threads` threads calling decode_one on every image
// of `corpus` `passes` times; the median of `runs`.
template <class DecodeOne>
double measure_with(const std::vector<Bytes>& corpus, const DecodeOne& decode_one, int threads, int passes, int runs) {
  const std::size_t n = corpus.size() * static_cast<std::size_t>(passes);
  std::vector<double> rates;
  tbb::task_arena arena(threads);
  for (int r = 0; r < runs + 1; ++r) {  // the first run warms caches and allocators, untimed
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1), [&](const tbb::blocked_range<std::size_t>& range) {
        cv::Mat img, out, scratch;
        for (std::size_t i = range.begin(); i != range.end(); ++i) decode_one(corpus[i % corpus.size()], img, out, scratch);
      });
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) rates.push_back(static_cast<double>(n) / s);
  }
  return median(rates);
}

// The decode stage (and, with `resize`, the transform's resize).
double measure(const std::vector<Bytes>& corpus, const imgpipe::stages::Decode& decode,
               const imgpipe::stages::Transform* resize, int threads, int passes, int runs) {
  return measure_with(
      corpus,
      [&](const Bytes& b, cv::Mat& img, cv::Mat& out, cv::Mat& scratch) {
        const std::string err = decode.decode(b, img);
        if (!err.empty()) throw std::runtime_error(err);
        if (resize) resize->resize(img, out, scratch);
      },
      threads, passes, runs);
}

// Plain cv::imdecode, full size: the baseline of the decode stage's own
// libjpeg path (which also checks the data for damage).
double measure_imdecode(const std::vector<Bytes>& corpus, int threads, int passes, int runs) {
  return measure_with(
      corpus,
      [](const Bytes& b, cv::Mat& img, cv::Mat&, cv::Mat&) {
        img = cv::imdecode(b, cv::IMREAD_COLOR);
        if (img.empty()) throw std::runtime_error("cv::imdecode failed");
      },
      threads, passes, runs);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"reduced vs full JPEG decode throughput"};
  std::string dir, targets_text = "640x360,320x320", mode_text = "stretch";
  int runs = 5, threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int width = 1920, height = 1080;
  app.add_option("--dir", dir, "folder of JPEGs (default: samples/data scaled to --width x --height)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--targets", targets_text, "resize targets WxH, comma-separated");
  app.add_option("--mode", mode_text, "resize mode: stretch | center_crop | letterbox");
  app.add_option("--runs", runs, "timed runs per figure (median)")->check(CLI::Range(1, 1000));
  app.add_option("--threads", threads, "threads of the parallel figures (default: every hardware thread)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--width", width, "synthetic corpus width")->check(CLI::Range(16, 16384));
  app.add_option("--height", height, "synthetic corpus height")->check(CLI::Range(16, 16384));
  CLI11_PARSE(app, argc, argv);

  imgpipe::ResizeMode mode;
  if (mode_text == "stretch") mode = imgpipe::ResizeMode::stretch;
  else if (mode_text == "center_crop") mode = imgpipe::ResizeMode::center_crop;
  else if (mode_text == "letterbox") mode = imgpipe::ResizeMode::letterbox;
  else {
    std::cerr << "--mode: stretch, center_crop or letterbox\n";
    return 2;
  }
  std::vector<std::pair<int, int>> targets;
  for (std::size_t at = 0; at < targets_text.size();) {
    const std::size_t end = std::min(targets_text.find(',', at), targets_text.size());
    int w = 0, h = 0;
    if (std::sscanf(targets_text.substr(at, end - at).c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1) {
      std::cerr << "--targets: expected WxH[,WxH...]\n";
      return 2;
    }
    targets.emplace_back(w, h);
    at = end + 1;
  }

  cv::setNumThreads(1);  // parallelism comes from the benchmark's own threads, as in the pipeline
  const std::vector<Bytes> corpus = dir.empty() ? scaled_samples(width, height) : load_folder(dir);
  if (corpus.empty()) {
    std::cerr << "no JPEGs to decode\n";
    return 1;
  }
  const auto header = imgpipe::codecs::sniff_header(corpus.front());
  double mb = 0;
  for (const auto& b : corpus) mb += static_cast<double>(b.size()) / 1e6;
  std::cout << fmt::format("corpus: {} JPEGs ({}x{} first, {:.0f} kB average){}; {} hardware threads; median of {} runs\n",
                           corpus.size(), header.width, header.height, mb * 1000 / static_cast<double>(corpus.size()),
                           dir.empty() ? " scaled up from samples/data, quality 90" : "",
                           std::thread::hardware_concurrency(), runs);
  const int passes_parallel =
      std::max(1, static_cast<int>((4 * static_cast<std::size_t>(threads) + corpus.size() - 1) / corpus.size()));
  std::vector<int> thread_counts{1};
  if (threads > 1) thread_counts.push_back(threads);

  imgpipe::DecodeConfig full_cfg, reduced_cfg;
  full_cfg.reduced = false;
  reduced_cfg.reduced = true;
  {
    const imgpipe::stages::Decode full(full_cfg, imgpipe::TransformConfig{});
    std::cout << "\nfull-size decode: the decode stage (libjpeg, damage checks) against cv::imdecode\n";
    std::cout << fmt::format("  {:<8} {:>14} {:>14} {:>8}\n", "threads", "decode stage", "cv::imdecode", "ratio");
    for (const int n : thread_counts) {
      const int passes = n == 1 ? 1 : passes_parallel;
      const double ds = measure(corpus, full, nullptr, n, passes, runs);
      const double cv = measure_imdecode(corpus, n, passes, runs);
      std::cout << fmt::format("  {:<8} {:>10.1f} i/s {:>10.1f} i/s {:>7.2f}x\n", n, ds, cv, ds / cv);
    }
  }
  {
    // decode.verify full: the entropy check runs on the probe's threads for
    // every JPEG sent to the engines (docs/benchmarks.md#entropy-check).
    imgpipe::TransformConfig t;
    t.resize.width = targets.front().first;
    t.resize.height = targets.front().second;
    t.resize.mode = mode;
    const imgpipe::stages::Decode full(full_cfg, imgpipe::TransformConfig{}), reduced(reduced_cfg, t);
    // The JPEGs the check walks whole: those the engines take (progressive
    // ones and the like stop at the headers and are left out here).
    std::vector<Bytes> engine_jpegs;
    for (const Bytes& b : corpus)
      if (imgpipe::codecs::check_entropy(b).clean) engine_jpegs.push_back(b);
    std::cout << fmt::format("\n{} of the {} JPEGs are sequential Huffman ones the check walks whole",
                             engine_jpegs.size(), corpus.size());
    std::cout << fmt::format("\nentropy check (decode.verify full) against the decode stage (reduced for {}x{})\n",
                             t.resize.width, t.resize.height);
    std::cout << fmt::format("  {:<8} {:>14} {:>14} {:>14} {:>10} {:>10} {:>14}\n", "threads", "entropy check",
                             "decode full", "reduced", "of full", "of reduced", "core-s/1000");
    for (const int n : thread_counts) {
      const int passes = n == 1 ? 1 : passes_parallel;
      const double ec = measure_with(
          engine_jpegs,
          [](const Bytes& b, cv::Mat&, cv::Mat&, cv::Mat&) {
            if (!imgpipe::codecs::check_entropy(b).clean) throw std::runtime_error("entropy check: not clean");
          },
          n, passes, runs);
      const double df = measure(engine_jpegs, full, nullptr, n, passes, runs);
      const double dr = measure(engine_jpegs, reduced, nullptr, n, passes, runs);
      std::cout << fmt::format("  {:<8} {:>10.1f} i/s {:>10.1f} i/s {:>10.1f} i/s {:>9.0f}% {:>9.0f}% {:>14.3f}\n", n, ec,
                               df, dr, 100 * df / ec, 100 * dr / ec, 1000.0 * n / ec);
    }
  }
  for (const auto& [w, h] : targets) {
    imgpipe::TransformConfig t;
    t.resize.width = w;
    t.resize.height = h;
    t.resize.mode = mode;
    const int r = imgpipe::stages::reduced_scale(header.width, header.height, t.resize);
    const imgpipe::stages::Decode full(full_cfg, t), reduced(reduced_cfg, t);
    const imgpipe::stages::Transform resize(t, false);
    std::cout << fmt::format("\ntarget {}x{} {}: reduced decode at 1/{} ({}x{})\n", w, h, mode_text, r,
                             (header.width + r - 1) / r, (header.height + r - 1) / r);
    std::cout << fmt::format("  {:<8} {:>14} {:>14} {:>8}   {:>14} {:>14} {:>8}\n", "threads", "decode full",
                             "reduced", "speed-up", "+resize full", "reduced", "speed-up");
    for (const int n : thread_counts) {
      const int passes = n == 1 ? 1 : passes_parallel;
      const double df = measure(corpus, full, nullptr, n, passes, runs);
      const double dr = measure(corpus, reduced, nullptr, n, passes, runs);
      const double rf = measure(corpus, full, &resize, n, passes, runs);
      const double rr = measure(corpus, reduced, &resize, n, passes, runs);
      std::cout << fmt::format("  {:<8} {:>10.1f} i/s {:>10.1f} i/s {:>7.2f}x   {:>10.1f} i/s {:>10.1f} i/s {:>7.2f}x\n",
                               n, df, dr, dr / df, rf, rr, rr / rf);
    }
  }
  {
    // transform.resize.mode random_crop (torchvision's RandomResizedCrop,
    // scale 0.08..1, ratio 3/4..4/3) to the first target: the decode stage
    // decoding each JPEG whole then cutting the box, against decoding the
    // box alone (decode.region), each followed by the box's resize.
    imgpipe::TransformConfig t;
    t.resize.width = targets.front().first;
    t.resize.height = targets.front().second;
    t.resize.mode = imgpipe::ResizeMode::random_crop;
    imgpipe::DecodeConfig whole_cfg = full_cfg, region_cfg = full_cfg;
    whole_cfg.region = false;
    region_cfg.region = true;
    const imgpipe::stages::Decode whole(whole_cfg, t), region(region_cfg, t);
    const imgpipe::stages::Transform resize(t, false);
    const auto crop = [&](const imgpipe::stages::Decode& d) {
      return [&resize, &corpus, &t, dp = &d](const Bytes& b, cv::Mat& img, cv::Mat& out, cv::Mat& scratch) {
        const imgpipe::stages::Decode::SampleKey key{static_cast<std::uint64_t>(&b - corpus.data()), -1};
        imgpipe::SampleGeometry g;
        cv::Point origin;
        const std::string err = dp->decode(b, img, nullptr, &g, &key, &origin);
        if (!err.empty()) throw std::runtime_error(err);
        imgpipe::Augment a = imgpipe::draw_augment(t, 0, key.item, -1, g.width, g.height);
        a.x -= origin.x;
        a.y -= origin.y;
        resize.resize(img, out, scratch, &a);
      };
    };
    std::cout << fmt::format("\nrandom_crop to {}x{}: decode whole then cut, against the box alone (decode.region)\n",
                             t.resize.width, t.resize.height);
    std::cout << fmt::format("  {:<8} {:>14} {:>14} {:>8}\n", "threads", "whole + cut", "region", "speed-up");
    for (const int n : thread_counts) {
      const int passes = n == 1 ? 1 : passes_parallel;
      const double w = measure_with(corpus, crop(whole), n, passes, runs);
      const double r = measure_with(corpus, crop(region), n, passes, runs);
      std::cout << fmt::format("  {:<8} {:>10.1f} i/s {:>10.1f} i/s {:>7.2f}x\n", n, w, r, r / w);
    }
  }
  return 0;
}
