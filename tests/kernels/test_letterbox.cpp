// Letterbox twins. References: hand-computed geometry; the CPU pipeline's
// OpenCV implementation (cv::resize into the canvas ROI, borders set to the
// pad value), which the CPU twin must equal (bit-exact on OpenCV's generic
// path, else +-1 inside the image area; the pad is always exact); the GPU
// twin must equal the CPU twin bit for bit, geometry included.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_util.hpp"
#include "kernels/letterbox.hpp"

namespace {

using imgpipe::kernels::Interp;
using imgpipe::kernels::LetterboxGeometry;
using imgpipe::kernels::ResizeBatch;
namespace test = imgpipe::test;

// What stages/transform.cpp does for resize.mode: letterbox.
cv::Mat opencv_letterbox(const cv::Mat& in, int W, int H, int pad, int interp) {
  cv::Mat out(H, W, in.type(), cv::Scalar::all(pad));
  const double s = std::min(static_cast<double>(W) / in.cols, static_cast<double>(H) / in.rows);
  const int nw = std::clamp(static_cast<int>(std::lround(in.cols * s)), 1, W);
  const int nh = std::clamp(static_cast<int>(std::lround(in.rows * s)), 1, H);
  cv::Mat roi = out(cv::Rect((W - nw) / 2, (H - nh) / 2, nw, nh));
  if (nw == in.cols && nh == in.rows) in.copyTo(roi);
  else cv::resize(in, roi, roi.size(), 0, 0, interp);
  return out;
}

}  // namespace

TEST_CASE("letterbox: geometry on hand-computed cases") {
  struct Case {
    int w, h, W, H;
    int nw, nh, x0, y0;
  };
  const Case cases[] = {
      {1920, 1080, 640, 640, 640, 360, 0, 140},  // landscape
      {1080, 1920, 640, 640, 360, 640, 140, 0},  // portrait
      {640, 480, 640, 640, 640, 480, 0, 80},     // fits in width: copy, no resize
      {100, 100, 640, 480, 480, 480, 80, 0},     // upscale
      {3, 1000, 64, 64, 1, 64, 31, 0},           // nw = lround(0.192) = 0, clamped to 1
      {641, 480, 640, 640, 640, 479, 0, 80},     // 480 * 640/641 = 479.25 -> 479; (640-479)/2 = 80
      {1, 1, 1, 1, 1, 1, 0, 0},
  };
  for (const Case& c : cases) {
    const LetterboxGeometry g = imgpipe::kernels::letterbox_geometry(c.w, c.h, c.W, c.H);
    INFO(c.w << "x" << c.h << " -> " << c.W << "x" << c.H);
    CHECK(g.width == c.nw);
    CHECK(g.height == c.nh);
    CHECK(g.x0 == c.x0);
    CHECK(g.y0 == c.y0);
    CHECK(g.scale == doctest::Approx(std::min(double(c.W) / c.w, double(c.H) / c.h)));
  }
  // Mapping a canvas point back: the image's bottom-right corner is the source's.
  const LetterboxGeometry g = imgpipe::kernels::letterbox_geometry(1920, 1080, 640, 640);
  double sx = 0, sy = 0;
  imgpipe::kernels::letterbox_to_source(g, 1920, 1080, g.x0 + g.width, g.y0 + g.height, &sx, &sy);
  CHECK(sx == doctest::Approx(1920.0));
  CHECK(sy == doctest::Approx(1080.0));
  CHECK_THROWS_AS(imgpipe::kernels::letterbox_geometry(0, 5, 10, 10), std::invalid_argument);
}

TEST_CASE("letterbox: CPU twin equals the pipeline's OpenCV letterbox") {
  struct Case {
    int w, h, W, H;
  };
  const Case cases[] = {{1920, 1080, 640, 640}, {1080, 1920, 640, 640}, {640, 480, 640, 640}, {100, 100, 640, 480},
                        {3, 1000, 64, 64},      {641, 480, 640, 640},   {1, 1, 7, 5},         {1280, 1280, 640, 640},
                        {129, 33, 128, 32}};
  std::uint64_t seed = 7;
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (int c : {1, 3, 4}) {
      std::vector<cv::Mat> mats;
      for (const Case& k : cases) mats.push_back(test::random_roi(k.w, k.h, c, seed++));
      mats.push_back(test::sample_photo(2, c));
      for (int W : {640, 224})
        for (int H : {640, 160}) {
          const test::PackedBatch p = test::pack(mats, 5);
          const ResizeBatch b = test::batch_of(p, p.bytes.data(), W, H, interp, imgpipe::kernels::Fit::stretch, 114);
          std::vector<std::uint8_t> out(imgpipe::kernels::output_bytes(b));
          std::vector<LetterboxGeometry> geo(mats.size());
          imgpipe::kernels::letterbox_ref(b, out.data(), geo.data());
          const std::size_t image = static_cast<std::size_t>(W) * H * c;
          for (std::size_t i = 0; i < mats.size(); ++i) {
            const cv::Mat want = opencv_letterbox(mats[i], W, H, 114,
                                                  interp == Interp::linear ? cv::INTER_LINEAR : cv::INTER_NEAREST);
            const test::Diff d = test::diff_u8(out.data() + i * image, test::dense(want).data(), image);
            INFO("image " << i << " " << mats[i].cols << "x" << mats[i].rows << "x" << c << " -> " << W << "x" << H
                          << ": " << d.count << " differ, max " << d.max);
            CHECK(d.max <= test::opencv_u8_tolerance());
            const LetterboxGeometry g = imgpipe::kernels::letterbox_geometry(mats[i].cols, mats[i].rows, W, H);
            CHECK(geo[i].width == g.width);
            CHECK(geo[i].x0 == g.x0);
            CHECK(geo[i].y0 == g.y0);
            // The padding is exactly the pad value, outside the image only.
            const std::uint8_t* img = out.data() + i * image;
            if (g.y0 > 0) CHECK(img[0] == 114);
            if (g.x0 > 0) CHECK(img[(static_cast<std::size_t>(H / 2) * W) * c] == 114);
          }
        }
    }
}

TEST_CASE("letterbox: GPU twin equals the CPU twin bit for bit") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  std::uint64_t seed = 70;
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (int c : {1, 3, 4}) {
      const std::vector<cv::Mat> mats = {test::random_image(1920, 1080, c, seed++), test::random_image(1080, 1920, c, seed++),
                                         test::random_image(1, 1, c, seed++),      test::sample_photo(3, c),
                                         test::random_image(3, 1000, c, seed++),   test::random_image(640, 640, c, seed++)};
      const test::PackedBatch p = test::pack(mats, 1);
      const test::DeviceCopy d_src(p.bytes.data(), p.bytes.size(), s);
      for (auto [W, H] : {std::pair{640, 640}, std::pair{129, 33}, std::pair{1, 1}, std::pair{300, 500}}) {
        ResizeBatch b = test::batch_of(p, p.bytes.data(), W, H, interp, imgpipe::kernels::Fit::stretch, 3);
        std::vector<std::uint8_t> want(imgpipe::kernels::output_bytes(b));
        std::vector<LetterboxGeometry> g_cpu(mats.size()), g_gpu(mats.size());
        imgpipe::kernels::letterbox_ref(b, want.data(), g_cpu.data());
        b.src = d_src.get();
        imgpipe::gpu::DeviceBuffer d_out(0, want.size());
        imgpipe::kernels::letterbox_gpu(b, static_cast<std::uint8_t*>(d_out.get()), g_gpu.data(), s.get());
        const std::vector<std::uint8_t> got = test::download(d_out, want.size(), s);
        INFO("channels " << c << " -> " << W << "x" << H);
        CHECK(std::memcmp(got.data(), want.data(), want.size()) == 0);
        for (std::size_t i = 0; i < mats.size(); ++i) {
          CHECK(g_gpu[i].x0 == g_cpu[i].x0);
          CHECK(g_gpu[i].y0 == g_cpu[i].y0);
          CHECK(g_gpu[i].width == g_cpu[i].width);
          CHECK(g_gpu[i].height == g_cpu[i].height);
          CHECK(g_gpu[i].scale == g_cpu[i].scale);
        }
      }
    }
}
