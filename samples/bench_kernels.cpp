// Kernel benchmark: achieved bandwidth of each preprocessing kernel on
// W1-shaped batches (32 images, 640x640x3 outputs; 1920x1080 u8 sources for
// the resize family), against a device-to-device cudaMemcpy measured in the
// same run. GB/s = (bytes read + bytes written) / time, both for the kernels
// and for the copy (which reads and writes its size); times are CUDA-event
// medians of --runs launches after --warmup launches.
//
// Bytes counted: the resize family reads each source image once (its
// width * height * channels bytes) and writes the output; normalize reads the
// u8 batch and writes the output; checksum reads its input.
//
// Usage: imgpipe_bench_kernels [--runs N] [--warmup N] [--batch N]
//                              [--data photos|random] [--json FILE]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "memory/gpu.hpp"
#include "kernels/checksum.hpp"
#include "kernels/crop.hpp"
#include "core/cuda_check.hpp"
#include "kernels/fused.hpp"
#include "kernels/letterbox.hpp"
#include "kernels/normalize.hpp"
#include "kernels/resize.hpp"

namespace fs = std::filesystem;
using namespace imgpipe;
using namespace imgpipe::kernels;

namespace {

struct Result {
  std::string name;
  std::string shape;
  double bytes = 0;      // read + written per launch
  double median_ms = 0;
  double gbps = 0;
};

// Median milliseconds of `runs` timed launches of f (each bracketed by events).
double time_median(const std::function<void()>& f, cudaStream_t s, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) f();
  IMGPIPE_CUDA_TRY(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  IMGPIPE_CUDA_TRY(cudaEventCreate(&a));
  IMGPIPE_CUDA_TRY(cudaEventCreate(&b));
  std::vector<float> ms(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    IMGPIPE_CUDA_TRY(cudaEventRecord(a, s));
    f();
    IMGPIPE_CUDA_TRY(cudaEventRecord(b, s));
    IMGPIPE_CUDA_TRY(cudaEventSynchronize(b));
    IMGPIPE_CUDA_TRY(cudaEventElapsedTime(&ms[static_cast<std::size_t>(i)], a, b));
  }
  IMGPIPE_CUDA_TRY(cudaEventDestroy(a));
  IMGPIPE_CUDA_TRY(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
}

// Source images: the sample photos scaled to w x h (photo-like content, what
// W1 feeds), or uniform noise (worst case for the kernels' table lookups).
std::vector<std::uint8_t> make_sources(int n, int w, int h, bool photos, std::string* what) {
  const std::size_t image = static_cast<std::size_t>(w) * h * 3;
  std::vector<std::uint8_t> v(image * n);
  std::vector<fs::path> paths;
  const fs::path dir = fs::path(IMGPIPE_SOURCE_DIR) / "samples" / "data";
  if (photos && fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".jpg" || e.path().extension() == ".png") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) {
    std::mt19937 rng(1);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    *what = "uniform noise";
    return v;
  }
  for (int i = 0; i < n; ++i) {
    cv::Mat img = cv::imread(paths[static_cast<std::size_t>(i) % paths.size()].string(), cv::IMREAD_COLOR);
    cv::Mat dst(h, w, CV_8UC3, v.data() + i * image);
    cv::resize(img, dst, dst.size(), 0, 0, cv::INTER_LINEAR);
  }
  *what = fmt::format("{} sample photos scaled to {}x{}", paths.size(), w, h);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"imgpipe kernel bandwidth benchmark"};
  int runs = 30, warmup = 5, batch = 32;
  std::string data = "photos", json_path;
  app.add_option("--runs", runs, "timed launches per kernel (median reported)")->check(CLI::Range(20, 100000));
  app.add_option("--warmup", warmup, "untimed launches first")->check(CLI::Range(1, 1000));
  app.add_option("--batch", batch, "images per batch")->check(CLI::Range(1, 4096));
  app.add_option("--data", data, "source content: photos | random")->check(CLI::IsMember({"photos", "random"}));
  app.add_option("--json", json_path, "also write the results to this JSON file");
  CLI11_PARSE(app, argc, argv);

  try {
    std::string why;
    if (gpu::device_count(&why) == 0) {
      std::cerr << "no CUDA device: " << why << "\n";
      return 1;
    }
    IMGPIPE_CUDA_TRY(cudaSetDevice(0));
    cudaStream_t s;
    IMGPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    const int SW = 1920, SH = 1080, W = 640, H = 640, C = 3;
    const std::size_t src_image = static_cast<std::size_t>(SW) * SH * C;
    const std::size_t u8_batch = static_cast<std::size_t>(batch) * W * H * C;
    const std::size_t f32_batch = u8_batch * 4;

    std::string content;
    const std::vector<std::uint8_t> h_src = make_sources(batch, SW, SH, data == "photos", &content);
    std::vector<std::uint8_t> h_small(u8_batch);  // the sources resized on the host, for normalize
    for (int i = 0; i < batch; ++i) {
      cv::Mat in(SH, SW, CV_8UC3, const_cast<std::uint8_t*>(h_src.data()) + i * src_image);
      cv::Mat out(H, W, CV_8UC3, h_small.data() + static_cast<std::size_t>(i) * W * H * C);
      cv::resize(in, out, out.size(), 0, 0, cv::INTER_LINEAR);
    }

    gpu::DeviceBuffer d_src(0, h_src.size()), d_small(0, u8_batch), d_out(0, f32_batch), d_out2(0, f32_batch),
        d_sum(0, sizeof(std::uint64_t));
    IMGPIPE_CUDA_TRY(cudaMemcpy(d_src.get(), h_src.data(), h_src.size(), cudaMemcpyHostToDevice));
    IMGPIPE_CUDA_TRY(cudaMemcpy(d_small.get(), h_small.data(), u8_batch, cudaMemcpyHostToDevice));

    std::vector<SrcImage> images(static_cast<std::size_t>(batch));
    for (int i = 0; i < batch; ++i) {
      images[static_cast<std::size_t>(i)].offset = i * src_image;
      images[static_cast<std::size_t>(i)].width = SW;
      images[static_cast<std::size_t>(i)].height = SH;
    }
    ResizeBatch rb;
    rb.channels = C;
    rb.src = static_cast<const std::uint8_t*>(d_src.get());
    rb.images = images.data();
    rb.batch = batch;
    rb.width = W;
    rb.height = H;
    rb.pad_value = 114;
    const double src_bytes = static_cast<double>(h_src.size());

    auto fused = [&](DType dt, Layout l, Interp in, Fit fit) {
      FusedParams f;
      f.in = rb;
      f.in.interp = in;
      f.in.fit = fit;
      f.dst = d_out.get();
      f.dtype = dt;
      f.layout = l;
      f.swap_rb = true;
      f.scale = 1.0f / 255.0f;
      f.mean = {0.485f, 0.456f, 0.406f, 0.0f};
      f.std = {0.229f, 0.224f, 0.225f, 1.0f};
      return f;
    };

    std::vector<Result> results;
    auto bench = [&](const std::string& name, const std::string& shape, double bytes, const std::function<void()>& f) {
      Result r;
      r.name = name;
      r.shape = shape;
      r.bytes = bytes;
      r.median_ms = time_median(f, s, warmup, runs);
      r.gbps = bytes / (r.median_ms * 1e-3) / 1e9;
      results.push_back(r);
    };

    // The ceiling: device-to-device copy of the f32 batch size.
    bench("cudaMemcpy D2D", fmt::format("{} MB", f32_batch / 1000000), 2.0 * f32_batch, [&] {
      IMGPIPE_CUDA_TRY(cudaMemcpyAsync(d_out2.get(), d_out.get(), f32_batch, cudaMemcpyDeviceToDevice, s));
    });
    const double d2d = results.front().gbps;

    const std::string src_shape = fmt::format("{}x{}x{}x3 u8 -> ", batch, SH, SW);
    const std::string out_shape = fmt::format("{}x3x{}x{}", batch, H, W);
    for (auto [dt, l, in, fit, label] :
         {std::tuple{DType::float32, Layout::nchw, Interp::linear, Fit::stretch, "fused bilinear f32 nchw"},
          std::tuple{DType::float16, Layout::nchw, Interp::linear, Fit::stretch, "fused bilinear f16 nchw"},
          std::tuple{DType::float32, Layout::nhwc, Interp::linear, Fit::stretch, "fused bilinear f32 nhwc"},
          std::tuple{DType::float32, Layout::nchw, Interp::linear, Fit::letterbox, "fused letterbox f32 nchw"},
          std::tuple{DType::float32, Layout::nchw, Interp::linear, Fit::center_crop, "fused centre crop f32 nchw"},
          std::tuple{DType::float32, Layout::nchw, Interp::nearest, Fit::stretch, "fused nearest f32 nchw"}}) {
      const FusedParams f = fused(dt, l, in, fit);
      bench(label, src_shape + out_shape + " " + std::string(to_string(dt)), src_bytes + double(output_bytes(f)),
            [&, f] { fused_gpu(f, s); });
    }
    const double u8_out = static_cast<double>(u8_batch);
    bench("resize bilinear u8", src_shape + fmt::format("{}x{}x{}x3 u8", batch, H, W), src_bytes + u8_out,
          [&] { resize_gpu(rb, static_cast<std::uint8_t*>(d_out.get()), s); });
    bench("letterbox bilinear u8", src_shape + fmt::format("{}x{}x{}x3 u8", batch, H, W), src_bytes + u8_out,
          [&] { letterbox_gpu(rb, static_cast<std::uint8_t*>(d_out.get()), nullptr, s); });
    bench("centre crop bilinear u8", src_shape + fmt::format("{}x{}x{}x3 u8", batch, H, W), src_bytes + u8_out,
          [&] { center_crop_gpu(rb, static_cast<std::uint8_t*>(d_out.get()), s); });

    NormalizeParams n;
    n.batch = batch;
    n.height = H;
    n.width = W;
    n.channels = C;
    n.src = static_cast<const std::uint8_t*>(d_small.get());
    n.dst = d_out.get();
    n.swap_rb = true;
    n.scale = 1.0f / 255.0f;
    n.mean = {0.485f, 0.456f, 0.406f, 0.0f};
    n.std = {0.229f, 0.224f, 0.225f, 1.0f};
    for (auto [dt, l] : {std::pair{DType::float32, Layout::nchw}, std::pair{DType::float16, Layout::nchw},
                         std::pair{DType::float32, Layout::nhwc}}) {
      NormalizeParams m = n;
      m.dtype = dt;
      m.layout = l;
      bench(fmt::format("normalize {} {}", to_string(dt), to_string(l)),
            fmt::format("{}x{}x{}x3 u8 -> {}", batch, H, W, to_string(dt)), u8_out + double(output_bytes(m)),
            [&, m] { normalize_gpu(m, s); });
    }
    bench("checksum", fmt::format("{} MB", f32_batch / 1000000), static_cast<double>(f32_batch), [&] {
      checksum_gpu(d_out.get(), f32_batch, static_cast<std::uint64_t*>(d_sum.get()), s);
    });

    // Spot check: the fused f32 NCHW output of image 0 equals the CPU twin's.
    bool verified = false;
    {
      FusedParams f = fused(DType::float32, Layout::nchw, Interp::linear, Fit::stretch);
      fused_gpu(f, s);
      std::vector<std::uint8_t> got(static_cast<std::size_t>(W) * H * C * 4), want(got.size());
      IMGPIPE_CUDA_TRY(cudaMemcpyAsync(got.data(), d_out.get(), got.size(), cudaMemcpyDeviceToHost, s));
      IMGPIPE_CUDA_TRY(cudaStreamSynchronize(s));
      FusedParams one = f;
      one.in.src = h_src.data();
      one.in.batch = 1;
      one.dst = want.data();
      fused_ref(one);
      verified = got == want;
    }

    const std::string device = gpu::device_description(0);
    std::cout << "device: " << device << "\nsources: " << content << "\nmedian of " << runs << " runs after "
              << warmup << " warm-up; GB/s counts bytes read + written\n\n";
    std::cout << fmt::format("{:<28} {:<44} {:>9} {:>9} {:>9} {:>7}\n", "kernel", "shape", "MB", "ms", "GB/s",
                             "of D2D");
    for (const Result& r : results)
      std::cout << fmt::format("{:<28} {:<44} {:>9.1f} {:>9.4f} {:>9.1f} {:>6.0f}%\n", r.name, r.shape, r.bytes / 1e6,
                               r.median_ms, r.gbps, 100.0 * r.gbps / d2d);
    std::cout << "\nfused f32 nchw image 0 vs CPU twin: " << (verified ? "identical" : "DIFFERENT") << "\n";

    if (!json_path.empty()) {
      nlohmann::json j;
      j["device"] = device;
      j["sources"] = content;
      j["runs"] = runs;
      j["warmup"] = warmup;
      j["batch"] = batch;
      j["d2d_gbps"] = d2d;
      j["verified_fused_vs_cpu"] = verified;
      for (const Result& r : results)
        j["kernels"].push_back({{"name", r.name},
                                {"shape", r.shape},
                                {"bytes", r.bytes},
                                {"median_ms", r.median_ms},
                                {"gbps", r.gbps},
                                {"fraction_of_d2d", r.gbps / d2d}});
      std::ofstream out(json_path);
      out << j.dump(2) << "\n";
      if (!out) throw std::runtime_error("cannot write " + json_path);
    }
    IMGPIPE_CUDA_TRY(cudaStreamDestroy(s));
    return verified ? 0 : 3;
  } catch (const std::exception& e) {
    std::cerr << "bench_kernels: " << e.what() << "\n";
    return 1;
  }
}
