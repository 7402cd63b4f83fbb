// The CPU twin of the YUV -> BGR conversion (kernels::yuv_to_bgr_ref) on one
// thread, per frame, against the scalar definition (a per-pixel loop over
// kernels::detail::yuv_at) and, for the BT.601 layouts OpenCV knows, against
// cv::cvtColor as the ceiling. Then the whole CPU route of a video frame to
// the tensor (--out-width x --out-height, bilinear stretch, NCHW float32,
// ImageNet mean/std: W1's): the BGR conversion, cv::resize and the normalise
// twin, as the route ran before the one pass, against the one pass
// (kernels::yuv_fused_cpu) on its AVX2 and its portable rows, and on its AVX2
// rows into a batch of 32 with checksum parts, as a run does. Random samples;
// each figure is the median of --runs conversions, the fastest run in
// brackets (a shared machine's noise).
//   imgpipe_bench_yuv [--width 1920] [--height 1080] [--out-width 640] [--out-height 640] [--runs 50]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "kernels/normalize.hpp"
#include "kernels/yuv.hpp"
#include "kernels/yuv_fused.hpp"

namespace kn = imgpipe::kernels;

namespace {

constexpr std::size_t kBatch = 32;  // frames of a batch (W1's)

std::string timed(const std::function<void()>& f, int runs) {
  f();  // warm the caches and the pages
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return fmt::format("{:.2f} ({:.2f})", ms[ms.size() / 2], ms[0]);
}

struct Layout {
  std::string name;
  int bytes, shift;
  bool interleaved;
  int cv_code;  // -1: OpenCV has no conversion for it
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"YUV -> BGR on the CPU: ms per frame, one thread"};
  int width = 1920, height = 1080, out_width = 640, out_height = 640, runs = 50;
  app.add_option("--width", width)->check(CLI::Range(2, 16384));
  app.add_option("--height", height)->check(CLI::Range(2, 16384));
  app.add_option("--out-width", out_width, "the tensor's width")->check(CLI::Range(1, 16384));
  app.add_option("--out-height", out_height, "the tensor's height")->check(CLI::Range(1, 16384));
  app.add_option("--runs", runs, "timed conversions per figure (median)")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  width &= ~1;
  height &= ~1;

  const Layout layouts[] = {{"I420", 1, 0, false, cv::COLOR_YUV2BGR_I420},
                            {"NV12", 1, 0, true, cv::COLOR_YUV2BGR_NV12},
                            {"yuv420p10le", 2, 0, false, -1},
                            {"P010", 2, 6, true, -1}};
  cv::RNG rng(1);
  std::vector<std::uint8_t> bgr(static_cast<std::size_t>(width) * height * 3);
  std::vector<std::string> tensor_rows;
  fmt::print("{}x{} 4:2:0, BT.709 limited, ms per frame, median of {} runs (fastest), one thread\n", width, height, runs);
  fmt::print("{:<12} {:>14} {:>16} {:>14}\n", "layout", "scalar", "yuv_to_bgr_ref", "cvtColor");
  for (const Layout& l : layouts) {
    // One buffer: the luma plane, then the chroma planes (I420's layout when 8-bit planar).
    const std::size_t luma = static_cast<std::size_t>(width) * height * l.bytes;
    std::vector<std::uint8_t> buf(luma * 3 / 2);
    cv::Mat m(1, static_cast<int>(buf.size()), CV_8U, buf.data());
    rng.fill(m, cv::RNG::UNIFORM, 0, 256);
    if (l.bytes == 2)  // 10-bit samples at bit `shift`
      for (std::size_t i = 0; i < buf.size(); i += 2) {
        const unsigned v = ((buf[i] | buf[i + 1] << 8) & 1023u) << l.shift;
        buf[i] = static_cast<std::uint8_t>(v);
        buf[i + 1] = static_cast<std::uint8_t>(v >> 8);
      }
    kn::YuvImage img;
    img.width = width;
    img.height = height;
    img.format.bits = l.bytes == 1 ? 8 : 10;
    img.format.bytes = l.bytes;
    img.format.shift = l.shift;
    img.format.uv_interleaved = l.interleaved;
    img.format.matrix = kn::ColorMatrix::bt709;
    const std::size_t crow = static_cast<std::size_t>(width / 2) * l.bytes;
    img.plane[0] = buf.data();
    img.plane[1] = buf.data() + luma;
    img.plane[2] = buf.data() + luma + crow * (height / 2);
    img.pitch[0] = static_cast<std::size_t>(width) * l.bytes;
    img.pitch[1] = l.interleaved ? 2 * crow : crow;
    img.pitch[2] = crow;

    const kn::YuvCoeffs c = kn::make_coeffs(img.format.matrix, img.format.range, img.format.bits);
    const std::string scalar = timed(
        [&] {
          for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x)
              kn::detail::yuv_at(img, c, x, y, bgr.data() + (static_cast<std::size_t>(y) * width + x) * 3);
        },
        runs);
    const std::string ref = timed([&] { kn::yuv_to_bgr_ref(img, bgr.data()); }, runs);
    std::string cv_ms = "-";
    if (l.cv_code >= 0) {
      const cv::Mat src(height * 3 / 2, width, CV_8U, buf.data());
      cv::Mat dst(height, width, CV_8UC3, bgr.data());
      const int threads = cv::getNumThreads();
      cv::setNumThreads(1);
      cv_ms = timed([&] { cv::cvtColor(src, dst, l.cv_code); }, runs);
      cv::setNumThreads(threads);
    }
    fmt::print("{:<12} {:>14} {:>16} {:>14}\n", l.name, scalar, ref, cv_ms);

    // The frame to the tensor.
    std::vector<float> tensor(static_cast<std::size_t>(out_width) * out_height * 3);
    kn::NormalizeParams n;
    n.height = out_height;
    n.width = out_width;
    n.dst = tensor.data();
    n.scale = 1.0f / 255.0f;
    n.mean = {0.485f, 0.456f, 0.406f, 0};
    n.std = {0.229f, 0.224f, 0.225f, 1};
    n.swap_rb = true;
    cv::Mat frame(height, width, CV_8UC3, bgr.data()), resized;
    const int threads = cv::getNumThreads();
    cv::setNumThreads(1);
    const std::string before = timed(
        [&] {
          kn::yuv_to_bgr_ref(img, bgr.data());
          cv::resize(frame, resized, cv::Size(out_width, out_height), 0, 0, cv::INTER_LINEAR);
          n.src = resized.data;
          kn::normalize_image_ref(n);
        },
        runs);
    cv::setNumThreads(threads);
    kn::YuvFusedParams f;
    f.src = img;
    f.width = out_width;
    f.height = out_height;
    f.dst = tensor.data();
    f.swap_rb = true;
    f.scale = n.scale;
    f.mean = {n.mean[0], n.mean[1], n.mean[2]};
    f.std = {n.std[0], n.std[1], n.std[2]};
    const std::string simd = timed([&] { kn::yuv_fused_cpu(f, true); }, runs);
    const std::string portable = timed([&] { kn::yuv_fused_cpu(f, false); }, runs);
    // As a run uses it: each frame to its place in a batch of 32 (memory
    // that no cache holds) with the checksum parts a checksumming sink takes.
    std::vector<float> batch(tensor.size() * kBatch);
    kn::ChecksumPart parts[3];
    int next = 0;
    kn::YuvFusedParams in_batch = f;
    in_batch.sums = parts;
    const std::string batched = timed(
        [&] {
          in_batch.dst = batch.data() + tensor.size() * (next++ % kBatch);
          kn::yuv_fused_cpu(in_batch, true);
        },
        runs);
    tensor_rows.push_back(fmt::format("{:<12} {:>22} {:>16} {:>16} {:>18}", l.name, before, simd, portable, batched));
  }
  fmt::print("\nto the {}x{} NCHW float32 tensor (bilinear stretch, mean/std), ms per frame, one thread; AVX2 rows: {}\n",
             out_width, out_height, kn::yuv_fused_has_simd() ? "yes" : "no");
  fmt::print("{:<12} {:>22} {:>16} {:>16} {:>18}\n", "layout", "BGR+resize+normalize", "one pass", "one pass portable",
             "in a batch, summed");
  for (const std::string& r : tensor_rows) fmt::print("{}\n", r);
  return 0;
}
