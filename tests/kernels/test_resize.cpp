// Resize twins: CPU twin against cv::resize (independent reference), GPU twin
// against the CPU twin.
//
// Tolerances: CPU twin vs cv::resize INTER_LINEAR / INTER_NEAREST on u8:
// bit-exact when OpenCV runs its generic path (no IPP, no custom HAL; OpenCV
// 4.6.0 x86-64 here), else max |diff| <= 1. GPU twin vs CPU twin: bit-exact
// (both integer arithmetic).
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_test_util.hpp"
#include "kernels/resize.hpp"

namespace {

using imgpipe::kernels::Fit;
using imgpipe::kernels::Interp;
using imgpipe::kernels::ResizeBatch;
namespace test = imgpipe::test;

struct SizeCase {
  int sw, sh, dw, dh;
};

// 1x1, odd sizes, the kernel's 128-column strip and 32-row multiples +-1, exact 2x (OpenCV's
// INTER_AREA path), upscales, strong and mixed scales, the copy case, large.
const std::vector<SizeCase> kSizes = {
    {1, 1, 1, 1},       {1, 1, 5, 3},       {7, 5, 1, 1},      {3, 3, 7, 9},        {127, 31, 128, 32},
    {128, 32, 129, 33}, {129, 33, 127, 31}, {64, 48, 32, 24},  {130, 66, 65, 33},   {131, 67, 65, 33},
    {13, 17, 200, 300}, {1000, 3, 10, 999}, {300, 200, 299, 201}, {200, 200, 200, 200}, {640, 480, 640, 640},
    {1920, 1080, 640, 640}, {1920, 1080, 1280, 720}, {17, 400, 333, 5},
};

int cv_interp(Interp i) { return i == Interp::linear ? cv::INTER_LINEAR : cv::INTER_NEAREST; }
const char* name(Interp i) { return i == Interp::linear ? "linear" : "nearest"; }

std::vector<std::uint8_t> run_ref(const cv::Mat& src, int dw, int dh, Interp interp) {
  const test::PackedBatch p = test::pack({src});
  const ResizeBatch b = test::batch_of(p, p.bytes.data(), dw, dh, interp);
  std::vector<std::uint8_t> out(imgpipe::kernels::output_bytes(b));
  imgpipe::kernels::resize_ref(b, out.data());
  return out;
}

// The twin on an image given as a view (pitch and offset of its parent).
std::vector<std::uint8_t> run_ref_view(const cv::Mat& view, int dw, int dh, Interp interp) {
  imgpipe::kernels::SrcImage im;
  im.width = view.cols;
  im.height = view.rows;
  im.pitch = view.step[0];
  ResizeBatch b;
  b.channels = view.channels();
  b.src = view.ptr();
  b.images = &im;
  b.batch = 1;
  b.width = dw;
  b.height = dh;
  b.interp = interp;
  std::vector<std::uint8_t> out(imgpipe::kernels::output_bytes(b));
  imgpipe::kernels::resize_ref(b, out.data());
  return out;
}

void check_against_opencv(const cv::Mat& src, int dw, int dh, Interp interp, const std::string& what) {
  cv::Mat expected;
  cv::resize(src, expected, cv::Size(dw, dh), 0, 0, cv_interp(interp));
  const std::vector<std::uint8_t> want = test::dense(expected);
  const std::vector<std::uint8_t> got = run_ref_view(src, dw, dh, interp);
  REQUIRE(got.size() == want.size());
  const test::Diff d = test::diff_u8(got.data(), want.data(), got.size());
  INFO(what << " " << name(interp) << " " << src.cols << "x" << src.rows << "x" << src.channels() << " -> " << dw
            << "x" << dh << ": " << d.count << " differ, max " << d.max << ", first at " << d.first);
  CHECK(d.max <= test::opencv_u8_tolerance());
}

}  // namespace

TEST_CASE("resize: CPU twin matches cv::resize on random images (exact, +-1 with IPP/HAL)") {
  std::uint64_t seed = 1;
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (int c : {1, 3, 4})
      for (const SizeCase& s : kSizes) {
        check_against_opencv(test::random_image(s.sw, s.sh, c, seed++), s.dw, s.dh, interp, "dense");
        check_against_opencv(test::random_roi(s.sw, s.sh, c, seed++), s.dw, s.dh, interp, "roi");
      }
}

TEST_CASE("resize: CPU twin matches cv::resize on the sample photos") {
  const std::vector<SizeCase> sizes = {{0, 0, 224, 224}, {0, 0, 640, 640}, {0, 0, 320, 240},
                                       {0, 0, 1280, 960}, {0, 0, 301, 199}, {0, 0, 639, 481}};
  std::size_t i = 0;
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (int c : {1, 3, 4})
      for (const SizeCase& s : sizes) {
        const cv::Mat photo = test::sample_photo(i++, c);
        check_against_opencv(photo, s.dw, s.dh, interp, "photo");
        // A sub-region of the photo, with the photo's pitch.
        check_against_opencv(photo(cv::Rect(31, 17, 401, 299)), s.dw, s.dh, interp, "photo roi");
      }
}

TEST_CASE("resize: a batch of mixed sizes packed in one buffer equals resizing each image") {
  for (int c : {1, 3, 4}) {
    std::vector<cv::Mat> mats = {test::random_image(1920, 1080, c, 11), test::random_image(1, 1, c, 12),
                                 test::random_image(129, 33, c, 13),   test::sample_photo(0, c),
                                 test::random_image(7, 501, c, 14),    test::random_image(1280, 640, c, 15)};
    for (int padding : {0, 13}) {
      const test::PackedBatch p = test::pack(mats, padding);
      for (Interp interp : {Interp::linear, Interp::nearest}) {
        const ResizeBatch b = test::batch_of(p, p.bytes.data(), 640, 640, interp);
        std::vector<std::uint8_t> out(imgpipe::kernels::output_bytes(b)), out_par(out.size());
        imgpipe::kernels::resize_ref(b, out.data(), false);
        imgpipe::kernels::resize_ref(b, out_par.data(), true);
        CHECK(out == out_par);
        const std::size_t image = 640 * 640 * c;
        for (std::size_t i = 0; i < mats.size(); ++i) {
          const std::vector<std::uint8_t> one = run_ref(mats[i], 640, 640, interp);
          INFO("image " << i << " channels " << c << " padding " << padding << " " << name(interp));
          CHECK(std::memcmp(out.data() + i * image, one.data(), image) == 0);
        }
      }
    }
  }
}

TEST_CASE("resize: GPU twin equals the CPU twin bit for bit") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  auto run_both = [&](const test::PackedBatch& p, int W, int H, Interp interp, Fit fit, const std::string& what) {
    const test::DeviceCopy d_src(p.bytes.data(), p.bytes.size(), s);
    ResizeBatch b = test::batch_of(p, p.bytes.data(), W, H, interp, fit, 77);
    std::vector<std::uint8_t> want(imgpipe::kernels::output_bytes(b));
    imgpipe::kernels::resize_ref(b, want.data());
    b.src = d_src.get();
    imgpipe::gpu::DeviceBuffer d_out(0, want.size());
    imgpipe::kernels::resize_gpu(b, static_cast<std::uint8_t*>(d_out.get()), s.get());
    const std::vector<std::uint8_t> got = test::download(d_out, want.size(), s);
    const test::Diff diff = test::diff_u8(got.data(), want.data(), want.size());
    INFO(what << " " << name(interp) << " fit " << static_cast<int>(fit) << " -> " << W << "x" << H << ": "
              << diff.count << " differ, first at " << diff.first);
    CHECK(diff.count == 0);
  };
  std::uint64_t seed = 100;
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (int c : {1, 3, 4}) {
      for (const SizeCase& sc : kSizes) {
        // Dense and pitched single images.
        run_both(test::pack({test::random_image(sc.sw, sc.sh, c, seed++)}), sc.dw, sc.dh, interp, Fit::stretch,
                 "single");
        run_both(test::pack({test::random_image(sc.sw, sc.sh, c, seed++)}, 9), sc.dw, sc.dh, interp, Fit::stretch,
                 "pitched");
      }
      // Mixed batch, every fit, canvas sizes around the tile.
      const std::vector<cv::Mat> mats = {test::random_image(1920, 1080, c, seed++), test::random_image(1, 1, c, seed++),
                                         test::sample_photo(1, c), test::random_image(129, 33, c, seed++),
                                         test::random_image(33, 129, c, seed++), test::random_image(1280, 1280, c, seed++)};
      const test::PackedBatch p = test::pack(mats, 3);
      for (Fit fit : {Fit::stretch, Fit::letterbox, Fit::center_crop})
        for (auto [W, H] : {std::pair{640, 640}, std::pair{127, 31}, std::pair{128, 32}, std::pair{129, 33},
                            std::pair{1, 1}, std::pair{224, 224}})
          run_both(p, W, H, interp, fit, "mixed batch");
    }
  // More images than one launch takes (32), with sizes that all differ.
  std::vector<cv::Mat> many;
  for (int i = 0; i < 37; ++i) many.push_back(test::random_image(20 + 17 * i, 300 - 7 * i, 3, 1000 + i));
  run_both(test::pack(many), 96, 80, Interp::linear, Fit::letterbox, "37 images");
}

TEST_CASE("resize: validation names the offending field") {
  const test::PackedBatch p = test::pack({test::random_image(8, 8, 3, 1), test::random_image(4, 4, 3, 2)});
  std::vector<std::uint8_t> out(64 * 64 * 3 * 2);
  auto expect = [&](ResizeBatch b, const std::string& field) {
    try {
      imgpipe::kernels::resize_ref(b, out.data());
      FAIL("no exception for " << field);
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  const ResizeBatch good = test::batch_of(p, p.bytes.data(), 64, 64);
  CHECK_NOTHROW(imgpipe::kernels::resize_ref(good, out.data()));
  ResizeBatch b = good;
  b.channels = 2;
  expect(b, "channels");
  b = good;
  b.batch = 0;
  expect(b, "batch");
  b = good;
  b.src = nullptr;
  expect(b, "src");
  b = good;
  b.images = nullptr;
  expect(b, "images");
  b = good;
  b.width = 0;
  expect(b, "width");
  std::vector<imgpipe::kernels::SrcImage> bad = p.images;
  bad[1].pitch = 5;
  b = good;
  b.images = bad.data();
  expect(b, "images[1].pitch");
  bad = p.images;
  bad[0].height = 0;
  b.images = bad.data();
  expect(b, "images[0].width and .height");
  CHECK_THROWS_AS(imgpipe::kernels::resize_ref(good, nullptr), std::invalid_argument);
}

#if !IMGPIPE_HAS_CUDA
TEST_CASE("resize: GPU launchers throw std::logic_error in builds without CUDA") {
  const test::PackedBatch p = test::pack({test::random_image(8, 8, 3, 1)});
  std::vector<std::uint8_t> out(16 * 16 * 3);
  const ResizeBatch b = test::batch_of(p, p.bytes.data(), 16, 16);
  CHECK_THROWS_AS(imgpipe::kernels::resize_gpu(b, out.data(), nullptr), std::logic_error);
}
#endif
