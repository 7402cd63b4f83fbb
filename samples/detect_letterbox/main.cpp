// A detector's loop, as a vision application writes one: video frames in,
// letterboxed batches on the GPU, a model (here a stand-in kernel that finds
// the red object), its boxes mapped back to the original frames with each
// sample's geometry, drawn there and written out.
//
//   imgpipe_detect_letterbox --video IN.avi --out boxes.avi [--boxes boxes.jsonl] [--device auto|cpu|N]
//                            [--size 320] [--batch 8]
//   imgpipe_detect_letterbox --make-demo demo.avi [--frames 48]   # a video with a moving red box
//   imgpipe_detect_letterbox --video demo.avi --expect-demo ...    # also checks the boxes against it
//
// The frames are read here (cv::VideoCapture) and pushed into the pipeline
// (imgpipe::PushSource): the application keeps each original, so it can draw
// on it when its batch comes back. Batches are pulled (Pipeline::start);
// batch.timeout_ms keeps a stalled camera's frames from waiting for a full
// batch.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include "imgpipe/geometry.hpp"
#include "imgpipe/pipeline.hpp"
#include "stand_in_model.hpp"

namespace {

// The demo video: a red 160x120 box moving over a dark, non-red background.
cv::Rect demo_box(int frame) { return {40 + 17 * frame, 60 + 9 * frame, 160, 120}; }

void make_demo(const std::string& path, int frames) {
  cv::VideoWriter out(path, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 30, {1280, 720});
  if (!out.isOpened()) throw std::runtime_error("cannot write '" + path + "'");
  cv::RNG rng(7);
  for (int i = 0; i < frames; ++i) {
    cv::Mat f(720, 1280, CV_8UC3);
    rng.fill(f, cv::RNG::UNIFORM, cv::Scalar(20, 60, 20), cv::Scalar(90, 120, 90));  // greenish, never red
    cv::rectangle(f, demo_box(i), cv::Scalar(0, 0, 230), cv::FILLED);                  // BGR: red
    out.write(f);
  }
}

// Originals by id, kept from the push until their batch is drawn.
class Originals {
 public:
  void put(const std::string& id, cv::Mat m) {
    std::lock_guard lk(m_);
    frames_[id] = std::move(m);
  }
  cv::Mat take(const std::string& id) {
    std::lock_guard lk(m_);
    auto it = frames_.find(id);
    if (it == frames_.end()) throw std::logic_error("no original frame kept for '" + id + "'");
    cv::Mat m = std::move(it->second);
    frames_.erase(it);
    return m;
  }

 private:
  std::mutex m_;
  std::map<std::string, cv::Mat> frames_;
};

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"Letterboxed batches from a video, a stand-in detector, boxes mapped back to the frames"};
  std::string video, out_path, boxes_path, demo, device = "auto";
  int frames = 48, size = 320, batch = 8;
  bool expect_demo = false;
  app.add_option("--video", video, "input video (any file or URL OpenCV's FFmpeg backend opens)");
  app.add_option("--out", out_path, "write the frames with their boxes drawn (MJPG .avi)");
  app.add_option("--boxes", boxes_path, "write one JSON line per frame: its box in the original frame");
  app.add_option("--make-demo", demo, "write a demo video with a moving red box, then exit");
  app.add_option("--frames", frames, "frames of the demo video")->check(CLI::Range(1, 10000));
  app.add_option("--size", size, "the model's square input (letterbox target)")->check(CLI::Range(16, 4096));
  app.add_option("--batch", batch, "batch.size")->check(CLI::Range(1, 256));
  app.add_option("--device", device, "auto, cpu or a CUDA ordinal");
  app.add_flag("--expect-demo", expect_demo, "check every box against the demo video's (exit 1 if one is off)");
  CLI11_PARSE(app, argc, argv);
  if (!demo.empty()) {
    make_demo(demo, frames);
    fmt::print("wrote {} ({} frames)\n", demo, frames);
    return 0;
  }
  if (video.empty()) throw std::runtime_error("--video is required (or --make-demo FILE)");

  imgpipe::Config cfg;
  cfg.devices = imgpipe::DeviceSelection::parse(device);
  cfg.transform.resize = {size, size, imgpipe::ResizeMode::letterbox};
  cfg.transform.layout = imgpipe::Layout::nchw;
  cfg.transform.dtype = imgpipe::DType::float32;
  cfg.transform.swap_rb = true;  // the model takes RGB
  cfg.batch.size = batch;
  cfg.batch.timeout_ms = 20;
  cfg.staging.slots = 3;
  imgpipe::Pipeline pipeline(cfg);
  const imgpipe::NormalizeConfig& n = cfg.transform.normalize;
  const detect::Normalization norm{n.mean, n.std, n.scale};

  cv::VideoCapture cap(video, cv::CAP_FFMPEG);
  if (!cap.isOpened()) throw std::runtime_error("cannot open video '" + video + "'");
  const double fps = cap.get(cv::CAP_PROP_FPS) > 0 ? cap.get(cv::CAP_PROP_FPS) : 30;
  auto source = std::make_shared<imgpipe::PushSource>(2 * batch);
  imgpipe::RunOptions options;
  options.source = source;
  imgpipe::BatchStream stream = pipeline.start(options);

  Originals originals;
  std::thread reader([&] {
    cv::Mat f;
    for (int i = 0; cap.read(f); ++i) {
      const std::string id = fmt::format("{}#{}", video, i);
      originals.put(id, f.clone());
      if (source->push_frame({f.data, f.cols, f.rows, f.step, imgpipe::PixelFormat::bgr}, id,
                             imgpipe::PushSource::wait_forever) != imgpipe::PushSource::Result::ok)
        break;  // the run stopped
    }
    source->close();
  });

  cv::VideoWriter writer;
  std::ofstream boxes_out;
  if (!boxes_path.empty()) boxes_out.open(boxes_path);
  int frame = 0, bad = 0, found = 0;
  while (imgpipe::Batch b = stream.next()) {
    const auto h = static_cast<int>(b->shape[2]), w = static_cast<int>(b->shape[3]);
    const auto* data = static_cast<const float*>(b->data);
    const std::vector<detect::TensorBox> boxes =
        b->device >= 0 ? detect::red_boxes_gpu(data, static_cast<int>(b->size()), h, w, norm, b->stream)
                       : detect::red_boxes_cpu(data, static_cast<int>(b->size()), h, w, norm);
    for (std::size_t i = 0; i < b->size(); ++i, ++frame) {
      const imgpipe::SampleId& s = b->samples[i];
      cv::Mat original = originals.take(s.path);
      const detect::TensorBox& t = boxes[i];
      imgpipe::Box box;  // empty when nothing was found
      if (!t.empty()) {
        ++found;
        box = imgpipe::tensor_to_image(s.geometry, imgpipe::Box{static_cast<double>(t.x0), static_cast<double>(t.y0),
                                                                 static_cast<double>(t.x1 - t.x0),
                                                                 static_cast<double>(t.y1 - t.y0)});
        cv::rectangle(original, cv::Rect(cv::Point(static_cast<int>(std::lround(box.x)), static_cast<int>(std::lround(box.y))),
                                         cv::Size(static_cast<int>(std::lround(box.width)),
                                                  static_cast<int>(std::lround(box.height)))),
                      cv::Scalar(255, 255, 0), 3);
      }
      if (boxes_out)
        boxes_out << fmt::format(R"({{"frame": {}, "id": "{}", "found": {}, "x": {:.2f}, "y": {:.2f}, "w": {:.2f}, "h": {:.2f}}})",
                                 frame, s.path, t.empty() ? "false" : "true", box.x, box.y, box.width, box.height)
                  << "\n";
      if (expect_demo) {
        // One tensor pixel of the letterbox covers 1/scale original pixels; MJPG blurs the edges a little.
        const cv::Rect want = demo_box(frame);
        const double tol = 1.0 / s.geometry.scale_x + 3;
        const bool ok = !t.empty() && std::abs(box.x - want.x) <= tol && std::abs(box.y - want.y) <= tol &&
                        std::abs(box.x + box.width - want.br().x) <= tol &&
                        std::abs(box.y + box.height - want.br().y) <= tol;
        if (!ok) {
          ++bad;
          std::fprintf(stderr, "frame %d: box (%.1f, %.1f, %.1f x %.1f), want (%d, %d, %d x %d) within %.1f px\n",
                       frame, box.x, box.y, box.width, box.height, want.x, want.y, want.width, want.height, tol);
        }
      }
      if (!out_path.empty()) {
        if (!writer.isOpened() &&
            !writer.open(out_path, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps, original.size()))
          throw std::runtime_error("cannot write '" + out_path + "'");
        writer.write(original);
      }
    }
  }
  reader.join();
  const imgpipe::Report& r = stream.report();
  fmt::print("{} frames, a box in {}; {} batches on {}; latency p50 {:.1f} ms, p99 {:.1f} ms\n", frame, found,
             r.batches, r.backend, r.latency.p50_ms, r.latency.p99_ms);
  if (expect_demo) fmt::print("demo check: {} of {} boxes off\n", bad, frame);
  return (bad > 0 || frame == 0 || r.inputs.failed > 0) ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "imgpipe_detect_letterbox: %s\n", e.what());
  return 1;
}
