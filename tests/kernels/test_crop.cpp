// Centre-crop twins. References: hand-computed geometry;
// cv::dnn::blobFromImage(crop = true) (u8 blob: resize by f then centre cut);
// the pipeline's OpenCV code (cv::resize(img, tmp, Size(), f, f) + Rect),
// which also covers INTER_NEAREST. CPU twin vs OpenCV: bit-exact on OpenCV's
// generic path, else +-1. GPU twin vs CPU twin: bit-exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <opencv2/dnn.hpp>

#include "kernel_test_util.hpp"
#include "kernels/crop.hpp"

namespace {

using imgpipe::kernels::CropGeometry;
using imgpipe::kernels::Interp;
using imgpipe::kernels::ResizeBatch;
namespace test = imgpipe::test;

std::vector<std::uint8_t> crop_ref(const cv::Mat& img, int W, int H, Interp interp = Interp::linear) {
  const test::PackedBatch p = test::pack({img}, 2);
  const ResizeBatch b = test::batch_of(p, p.bytes.data(), W, H, interp);
  std::vector<std::uint8_t> out(imgpipe::kernels::output_bytes(b));
  imgpipe::kernels::center_crop_ref(b, out.data());
  return out;
}

// HWC copy of image 0 of an N x C x H x W u8 blob.
std::vector<std::uint8_t> blob_to_hwc(const cv::Mat& blob) {
  const int C = blob.size[1], H = blob.size[2], W = blob.size[3];
  std::vector<std::uint8_t> v(static_cast<std::size_t>(C) * H * W);
  const auto* b = blob.ptr<std::uint8_t>();
  for (int c = 0; c < C; ++c)
    for (int i = 0; i < H * W; ++i) v[static_cast<std::size_t>(i) * C + c] = b[static_cast<std::size_t>(c) * H * W + i];
  return v;
}

}  // namespace

TEST_CASE("center_crop: geometry on hand-computed cases") {
  struct Case {
    int w, h, W, H;
    int tw, th, x, y;
  };
  const Case cases[] = {
      {640, 480, 224, 224, 299, 224, 37, 0},     // f = 0.46666667f; 298.67 -> 299
      {480, 640, 224, 224, 224, 299, 0, 37},
      {1920, 1080, 640, 640, 1138, 640, 249, 0},  // f = 0.5925926f
      {1280, 1283, 640, 640, 640, 642, 0, 1},     // f = 0.5: 641.5 rounds to even 642
      {100, 50, 64, 64, 128, 64, 32, 0},          // f = 1.28f (upscale)
      {1, 1, 3, 2, 3, 3, 0, 0},
  };
  for (const Case& c : cases) {
    const CropGeometry g = imgpipe::kernels::center_crop_geometry(c.w, c.h, c.W, c.H);
    INFO(c.w << "x" << c.h << " -> " << c.W << "x" << c.H);
    CHECK(g.resized_width == c.tw);
    CHECK(g.resized_height == c.th);
    CHECK(g.x == c.x);
    CHECK(g.y == c.y);
  }
  CHECK(imgpipe::kernels::center_crop_geometry(1280, 1283, 640, 640).factor == 0.5f);
}

TEST_CASE("center_crop: CPU twin equals cv::dnn::blobFromImage(crop = true)") {
  std::vector<cv::Mat> imgs;
  for (int c : {1, 3, 4}) {
    imgs.push_back(test::sample_photo(static_cast<std::size_t>(c), c));
    imgs.push_back(test::random_image(1920, 1080, c, 40 + c));
    imgs.push_back(test::random_image(1280, 1283, c, 50 + c));  // f == 0.5: OpenCV's INTER_AREA path, cut last row
    imgs.push_back(test::random_image(1283, 1280, c, 60 + c));  // ... cut last column
    imgs.push_back(test::random_roi(100, 50, c, 70 + c));
    imgs.push_back(test::random_image(33, 129, c, 80 + c));
  }
  for (const cv::Mat& img : imgs)
    for (auto [W, H] : {std::pair{224, 224}, std::pair{640, 640}, std::pair{300, 200}, std::pair{1, 1}}) {
      const cv::Mat blob = cv::dnn::blobFromImage(img, 1.0, cv::Size(W, H), cv::Scalar(), false, true, CV_8U);
      const std::vector<std::uint8_t> want = blob_to_hwc(blob);
      const std::vector<std::uint8_t> got = crop_ref(img, W, H);
      REQUIRE(got.size() == want.size());
      const test::Diff d = test::diff_u8(got.data(), want.data(), got.size());
      INFO(img.cols << "x" << img.rows << "x" << img.channels() << " -> " << W << "x" << H << ": " << d.count
                    << " differ, max " << d.max);
      CHECK(d.max <= test::opencv_u8_tolerance());
    }
}

TEST_CASE("center_crop: CPU twin equals the pipeline's OpenCV centre crop (linear and nearest)") {
  std::uint64_t seed = 90;
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (int c : {1, 3, 4})
      for (auto [w, h] : {std::pair{640, 480}, std::pair{1283, 1280}, std::pair{7, 9}, std::pair{129, 33}})
        for (auto [W, H] : {std::pair{224, 224}, std::pair{128, 32}, std::pair{5, 11}}) {
          const cv::Mat img = test::random_roi(w, h, c, seed++);
          const float f = std::max(static_cast<float>(W) / img.cols, static_cast<float>(H) / img.rows);
          cv::Mat tmp;
          cv::resize(img, tmp, cv::Size(), f, f, interp == Interp::linear ? cv::INTER_LINEAR : cv::INTER_NEAREST);
          const cv::Rect crop(static_cast<int>(0.5 * (tmp.cols - W)), static_cast<int>(0.5 * (tmp.rows - H)), W, H);
          const std::vector<std::uint8_t> want = test::dense(tmp(crop));
          const std::vector<std::uint8_t> got = crop_ref(img, W, H, interp);
          const test::Diff d = test::diff_u8(got.data(), want.data(), got.size());
          INFO(w << "x" << h << "x" << c << " -> " << W << "x" << H << ": " << d.count << " differ, max " << d.max);
          CHECK(d.max <= test::opencv_u8_tolerance());
        }
}

TEST_CASE("center_crop: GPU twin equals the CPU twin bit for bit") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  std::uint64_t seed = 300;
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (int c : {1, 3, 4}) {
      const std::vector<cv::Mat> mats = {test::random_image(1920, 1080, c, seed++), test::random_image(1280, 1283, c, seed++),
                                         test::random_image(1283, 1280, c, seed++), test::sample_photo(4, c),
                                         test::random_image(1, 1, c, seed++),       test::random_image(100, 50, c, seed++)};
      const test::PackedBatch p = test::pack(mats, 7);
      const test::DeviceCopy d_src(p.bytes.data(), p.bytes.size(), s);
      for (auto [W, H] : {std::pair{640, 640}, std::pair{224, 224}, std::pair{129, 33}, std::pair{1, 1}}) {
        ResizeBatch b = test::batch_of(p, p.bytes.data(), W, H, interp);
        std::vector<std::uint8_t> want(imgpipe::kernels::output_bytes(b));
        imgpipe::kernels::center_crop_ref(b, want.data());
        b.src = d_src.get();
        imgpipe::gpu::DeviceBuffer d_out(0, want.size());
        imgpipe::kernels::center_crop_gpu(b, static_cast<std::uint8_t*>(d_out.get()), s.get());
        const std::vector<std::uint8_t> got = test::download(d_out, want.size(), s);
        const test::Diff d = test::diff_u8(got.data(), want.data(), want.size());
        INFO("channels " << c << " -> " << W << "x" << H << ": " << d.count << " differ, first at " << d.first);
        CHECK(d.count == 0);
      }
    }
}
