// A live source's latency: frames pushed at a fixed rate (a camera's) through
// a PushSource, batched with batch.timeout_ms, pulled with the pull API.
// Prints the per-frame latency (push -> batch ready on the GPU) p50/p95/p99
// from the run report, and the batch sizes that the timeout produced.
//
//   imgpipe_bench_live [--video FILE] [--fps 30] [--seconds 10] [--batch 8] [--timeout-ms 20]
//                      [--device auto|cpu|N] [--json FILE]
// Without --video the frames are synthetic 1280x720 BGR images; with it,
// the video's frames (decoded once, before timing) are pushed in a loop.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include "imgpipe/pipeline.hpp"

namespace {

std::vector<cv::Mat> load_frames(const std::string& video) {
  std::vector<cv::Mat> frames;
  if (video.empty()) {
    for (int i = 0; i < 30; ++i) {
      cv::Mat m(720, 1280, CV_8UC3);
      cv::randu(m, cv::Scalar::all(0), cv::Scalar::all(255));
      cv::circle(m, {100 + 30 * i, 360}, 80, cv::Scalar(0, 0, 255), -1);
      frames.push_back(m);
    }
    return frames;
  }
  cv::VideoCapture cap(video, cv::CAP_FFMPEG);
  if (!cap.isOpened()) throw std::runtime_error("cannot open video '" + video + "'");
  cv::Mat f;
  while (frames.size() < 300 && cap.read(f)) frames.push_back(f.clone());
  if (frames.empty()) throw std::runtime_error("no frames in '" + video + "'");
  return frames;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"Latency of a live source: frames pushed at a fixed rate, batch.timeout_ms, the pull API"};
  std::string video, device = "auto", json_path;
  double fps = 30, seconds = 10;
  int batch = 8, timeout_ms = 20;
  app.add_option("--video", video, "frames from this video (default: synthetic 1280x720)");
  app.add_option("--fps", fps, "frames pushed per second")->check(CLI::Range(1.0, 10000.0));
  app.add_option("--seconds", seconds, "how long to push")->check(CLI::Range(0.5, 3600.0));
  app.add_option("--batch", batch, "batch.size")->check(CLI::Range(1, 1024));
  app.add_option("--timeout-ms", timeout_ms, "batch.timeout_ms")->check(CLI::Range(0, 60000));
  app.add_option("--device", device, "auto, cpu or a CUDA ordinal");
  app.add_option("--json", json_path, "write the figures here");
  CLI11_PARSE(app, argc, argv);

  const std::vector<cv::Mat> frames = load_frames(video);
  imgpipe::Config cfg;
  cfg.devices = imgpipe::DeviceSelection::parse(device);
  cfg.batch.size = batch;
  cfg.batch.timeout_ms = timeout_ms;
  cfg.staging.slots = 4;
  imgpipe::Pipeline pipeline(cfg);
  auto source = std::make_shared<imgpipe::PushSource>(64);
  imgpipe::RunOptions options;
  options.source = source;
  imgpipe::BatchStream stream = pipeline.start(options);

  std::uint64_t full = 0;
  std::thread camera([&] {
    const auto period = std::chrono::duration<double>(1.0 / fps);
    const auto t0 = std::chrono::steady_clock::now();
    const auto n = static_cast<std::uint64_t>(seconds * fps);
    for (std::uint64_t i = 0; i < n; ++i) {
      std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(period * i));
      const cv::Mat& f = frames[i % frames.size()];
      const auto r = source->push_frame({f.data, f.cols, f.rows, f.step, imgpipe::PixelFormat::bgr},
                                        fmt::format("camera/{}", i));
      if (r == imgpipe::PushSource::Result::full) ++full;  // a camera drops a frame it cannot hand over
    }
    source->close();
  });
  std::map<std::size_t, std::uint64_t> sizes;  // batch size -> batches
  while (imgpipe::Batch b = stream.next()) ++sizes[b->size()];
  camera.join();
  const imgpipe::Report& r = stream.report();

  std::string size_text;
  for (const auto& [n, count] : sizes) size_text += fmt::format("{}{}x{}", size_text.empty() ? "" : " ", count, n);
  fmt::print("live source: {:.0f} fps for {:.1f} s, batch {}, timeout {} ms, backend {}\n", fps, seconds, batch,
             timeout_ms, r.backend);
  fmt::print("frames: {} delivered, {} failed, {} dropped by a full queue; batches (count x size): {}\n",
             r.inputs.delivered, r.inputs.failed, full, size_text);
  fmt::print("latency (push -> batch ready): p50 {:.2f} ms  p95 {:.2f} ms  p99 {:.2f} ms  max {:.2f} ms ({} frames)\n",
             r.latency.p50_ms, r.latency.p95_ms, r.latency.p99_ms, r.latency.max_ms, r.latency.samples);
  if (!json_path.empty()) {
    nlohmann::json j{{"fps", fps},          {"seconds", seconds},       {"batch", batch},
                     {"timeout_ms", timeout_ms}, {"backend", r.backend}, {"delivered", r.inputs.delivered},
                     {"dropped_full", full}, {"p50_ms", r.latency.p50_ms}, {"p95_ms", r.latency.p95_ms},
                     {"p99_ms", r.latency.p99_ms}, {"max_ms", r.latency.max_ms}};
    std::ofstream(json_path) << j.dump(1) << "\n";
  }
  return r.inputs.delivered > 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "imgpipe_bench_live: %s\n", e.what());
  return 1;
}
