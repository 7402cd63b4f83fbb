// Fused resize + normalise twins.
//
// References and tolerances:
// - CPU twin vs cv::resize followed by the normalize twin: bit-exact on
//   OpenCV's generic path (else the u8 may differ by 1 before normalising).
// - CPU twin vs cv::dnn::blobFromImage (resize + swapRB + mean + scalefactor,
//   planes divided by std here, since OpenCV 4.6 has no per-channel std):
//   blobFromImage computes (v - mean) * scalefactor, the twin
//   (v * scale - mean') / std: |diff| <= 1e-5 + 1e-6 |x| on float32 (a few
//   ulps), plus one u8 step where OpenCV's resize is not the generic path.
// - GPU twin vs CPU twin, and GPU fused vs GPU resize then GPU normalize:
//   bit-exact for every dtype, layout, channel count, swap, fit and interpolation.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <opencv2/dnn.hpp>

#include "kernel_test_util.hpp"
#include "kernels/fused.hpp"
#include "kernels/half.hpp"
#include "kernels/normalize.hpp"

namespace {

using imgpipe::DType;
using imgpipe::Layout;
using imgpipe::kernels::FusedParams;
using imgpipe::kernels::Fit;
using imgpipe::kernels::Interp;
namespace test = imgpipe::test;

const std::array<float, 4> kMean{0.485f, 0.456f, 0.406f, 0.5f};
const std::array<float, 4> kStd{0.229f, 0.224f, 0.225f, 0.25f};

FusedParams params(const test::PackedBatch& p, const std::uint8_t* base, int W, int H, void* dst, DType dt, Layout l,
                   bool swap, Interp interp = Interp::linear, Fit fit = Fit::stretch) {
  FusedParams f;
  f.in = test::batch_of(p, base, W, H, interp, fit, 114);
  f.dst = dst;
  f.dtype = dt;
  f.layout = l;
  f.swap_rb = swap;
  f.scale = 1.0f / 255.0f;
  f.mean = kMean;
  f.std = kStd;
  return f;
}

const char* dname(DType t) { return t == DType::float32 ? "f32" : t == DType::float16 ? "f16" : "u8"; }

}  // namespace

TEST_CASE("fused: CPU twin equals cv::resize then the normalize twin") {
  std::uint64_t seed = 500;
  for (int c : {1, 3, 4})
    for (Interp interp : {Interp::linear, Interp::nearest}) {
      const std::vector<cv::Mat> mats = {test::random_image(1920, 1080, c, seed++), test::sample_photo(5, c),
                                         test::random_roi(129, 33, c, seed++), test::random_image(1, 1, c, seed++)};
      const test::PackedBatch p = test::pack(mats, 4);
      for (DType dt : {DType::float32, DType::float16, DType::uint8})
        for (Layout l : {Layout::nchw, Layout::nhwc})
          for (bool swap : {false, true}) {
            if (swap && c == 1) continue;
            const int W = 320, H = 224;
            FusedParams f = params(p, p.bytes.data(), W, H, nullptr, dt, l, swap, interp);
            std::vector<std::uint8_t> got(imgpipe::kernels::output_bytes(f));
            f.dst = got.data();
            imgpipe::kernels::fused_ref(f);
            // Independent path: OpenCV's resize, then normalize_ref on the u8 batch.
            std::vector<std::uint8_t> canvas;
            for (const cv::Mat& m : mats) {
              cv::Mat r;
              cv::resize(m, r, cv::Size(W, H), 0, 0, interp == Interp::linear ? cv::INTER_LINEAR : cv::INTER_NEAREST);
              const std::vector<std::uint8_t> d = test::dense(r);
              canvas.insert(canvas.end(), d.begin(), d.end());
            }
            std::vector<std::uint8_t> want(got.size());
            imgpipe::kernels::NormalizeParams n = imgpipe::kernels::normalize_params(f, canvas.data());
            n.dst = want.data();
            imgpipe::kernels::normalize_ref(n);
            INFO("channels " << c << " " << dname(dt) << " " << imgpipe::to_string(l) << " swap " << swap);
            if (test::opencv_u8_tolerance() == 0) CHECK(std::memcmp(got.data(), want.data(), got.size()) == 0);
            // The parallel twin gives the same bytes.
            std::vector<std::uint8_t> par(got.size());
            f.dst = par.data();
            imgpipe::kernels::fused_ref(f, true);
            CHECK(par == got);
          }
    }
}

TEST_CASE("fused: CPU twin matches cv::dnn::blobFromImage on the sample photos") {
  const auto paths = test::sample_images();
  const double u8_step = test::opencv_u8_tolerance() / (255.0 * 0.224);
  for (std::size_t i = 0; i < std::min<std::size_t>(paths.size(), 6); ++i) {
    const cv::Mat img = test::sample_photo(i, 3);
    for (auto [W, H] : {std::pair{640, 640}, std::pair{224, 224}})
      for (bool crop : {false, true}) {
        // (v - mean * 255) / 255 per channel, mean in output (RGB) order.
        const cv::Scalar mean(kMean[0] * 255.0, kMean[1] * 255.0, kMean[2] * 255.0);
        cv::Mat blob = cv::dnn::blobFromImage(img, 1.0 / 255.0, cv::Size(W, H), mean, true, crop, CV_32F);
        const test::PackedBatch p = test::pack({img});
        std::vector<float> got(static_cast<std::size_t>(3) * W * H);
        FusedParams f = params(p, p.bytes.data(), W, H, got.data(), DType::float32, Layout::nchw, true, Interp::linear,
                               crop ? Fit::center_crop : Fit::stretch);
        imgpipe::kernels::fused_ref(f);
        const float* b = blob.ptr<float>();
        double worst = 0;
        for (int c = 0; c < 3; ++c)
          for (int k = 0; k < W * H; ++k) {
            const std::size_t idx = static_cast<std::size_t>(c) * W * H + k;
            const double want = b[idx] / kStd[c];
            worst = std::max(worst, std::abs(got[idx] - want) - (1e-5 + 1e-6 * std::abs(want) + u8_step));
          }
        INFO(paths[i].filename().string() << " -> " << W << "x" << H << " crop " << crop);
        CHECK(worst <= 0.0);
      }
  }
}

TEST_CASE("fused: GPU twin equals the CPU twin and GPU resize + GPU normalize, bit for bit") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  std::uint64_t seed = 700;
  for (int c : {1, 3, 4}) {
    const std::vector<cv::Mat> mats = {test::random_image(1920, 1080, c, seed++), test::sample_photo(6, c),
                                       test::random_image(1, 1, c, seed++),      test::random_image(1280, 1283, c, seed++),
                                       test::random_image(129, 33, c, seed++),   test::random_image(31, 700, c, seed++)};
    const test::PackedBatch p = test::pack(mats, 3);
    const test::DeviceCopy d_src(p.bytes.data(), p.bytes.size(), s);
    for (Interp interp : {Interp::linear, Interp::nearest})
      for (Fit fit : {Fit::stretch, Fit::letterbox, Fit::center_crop})
        for (auto [W, H] : {std::pair{640, 640}, std::pair{129, 31}, std::pair{1, 1}})
          for (DType dt : {DType::float32, DType::float16, DType::uint8})
            for (Layout l : {Layout::nchw, Layout::nhwc})
              for (bool swap : {false, true}) {
                if (swap && c == 1) continue;
                FusedParams f = params(p, p.bytes.data(), W, H, nullptr, dt, l, swap, interp, fit);
                const std::size_t bytes = imgpipe::kernels::output_bytes(f);
                std::vector<std::uint8_t> want(bytes);
                f.dst = want.data();
                imgpipe::kernels::fused_ref(f);
                imgpipe::gpu::DeviceBuffer d_out(0, bytes);
                f.in.src = d_src.get();
                f.dst = d_out.get();
                imgpipe::kernels::fused_gpu(f, s.get());
                const std::vector<std::uint8_t> got = test::download(d_out, bytes, s);
                INFO("channels " << c << " interp " << static_cast<int>(interp) << " fit " << static_cast<int>(fit)
                                 << " " << W << "x" << H << " " << dname(dt) << " " << imgpipe::to_string(l)
                                 << " swap " << swap);
                CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
                // Two GPU kernels: resize to the u8 canvas, then normalize.
                if (W == 640) {
                  imgpipe::gpu::DeviceBuffer d_canvas(0, imgpipe::kernels::output_bytes(f.in));
                  imgpipe::gpu::DeviceBuffer d_two(0, bytes);
                  imgpipe::kernels::resize_gpu(f.in, static_cast<std::uint8_t*>(d_canvas.get()), s.get());
                  imgpipe::kernels::NormalizeParams n =
                      imgpipe::kernels::normalize_params(f, static_cast<const std::uint8_t*>(d_canvas.get()));
                  n.dst = d_two.get();
                  imgpipe::kernels::normalize_gpu(n, s.get());
                  const std::vector<std::uint8_t> two = test::download(d_two, bytes, s);
                  CHECK(std::memcmp(two.data(), got.data(), bytes) == 0);
                }
              }
  }
}

TEST_CASE("fused: validation names the offending field") {
  const test::PackedBatch p = test::pack({test::random_image(8, 8, 3, 1)});
  std::vector<float> out(16 * 16 * 3);
  FusedParams good = params(p, p.bytes.data(), 16, 16, out.data(), DType::float32, Layout::nchw, true);
  CHECK_NOTHROW(imgpipe::kernels::fused_ref(good));
  auto expect = [](const FusedParams& f, const char* field) {
    try {
      imgpipe::kernels::fused_ref(f);
      FAIL("no exception for " << field);
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  FusedParams f = good;
  f.dst = nullptr;
  expect(f, "dst");
  f = good;
  f.std[1] = 0.0f;
  expect(f, "std[1]");
  f = good;
  f.in.channels = 1;
  f.in.src = p.bytes.data();
  expect(f, "swap_rb");
  f = good;
  f.in.height = 0;
  expect(f, "height");
#if !IMGPIPE_HAS_CUDA
  CHECK_THROWS_AS(imgpipe::kernels::fused_gpu(good, nullptr), std::logic_error);
#endif
}

TEST_CASE("fused: an image given by its own pointer (SrcImage::data) reads as one at src + offset") {
  // GPU-decoded frames lie in the device's frame area, not in the staged
  // batch: the kernels take them by pointer, mixed with staged images.
  const std::vector<cv::Mat> mats = {test::random_image(333, 211, 3, 901), test::sample_photo(2, 3),
                                     test::random_image(64, 48, 3, 902)};
  const test::PackedBatch p = test::pack(mats, 0);
  test::PackedBatch moved = p;  // image 1 also copied elsewhere, then named by pointer
  const imgpipe::kernels::SrcImage& one = p.images[1];
  const std::size_t pitch = one.pitch ? one.pitch : static_cast<std::size_t>(one.width) * 3;
  std::vector<std::uint8_t> elsewhere(p.bytes.begin() + static_cast<std::ptrdiff_t>(one.offset),
                                      p.bytes.begin() + static_cast<std::ptrdiff_t>(one.offset + pitch * one.height));
  std::fill(moved.bytes.begin() + static_cast<std::ptrdiff_t>(one.offset),
            moved.bytes.begin() + static_cast<std::ptrdiff_t>(one.offset + pitch * one.height), 0);  // not read
  moved.images[1].offset = 0;
  moved.images[1].data = elsewhere.data();
  FusedParams want = params(p, p.bytes.data(), 160, 96, nullptr, DType::float32, Layout::nchw, true);
  FusedParams got = params(moved, moved.bytes.data(), 160, 96, nullptr, DType::float32, Layout::nchw, true);
  const std::size_t bytes = imgpipe::kernels::output_bytes(want);
  std::vector<std::uint8_t> a(bytes), b(bytes);
  want.dst = a.data();
  got.dst = b.data();
  imgpipe::kernels::fused_ref(want);
  imgpipe::kernels::fused_ref(got);
  CHECK(std::memcmp(a.data(), b.data(), bytes) == 0);
  if (!test::have_gpu()) {
    MESSAGE("no CUDA device: GPU twin not run");
    return;
  }
  imgpipe::gpu::Stream s(0);
  const test::DeviceCopy d_src(moved.bytes.data(), moved.bytes.size(), s);
  const test::DeviceCopy d_one(elsewhere.data(), elsewhere.size(), s);
  moved.images[1].data = static_cast<const std::uint8_t*>(d_one.get());
  FusedParams g = params(moved, static_cast<const std::uint8_t*>(d_src.get()), 160, 96, nullptr, DType::float32,
                         Layout::nchw, true);
  imgpipe::gpu::DeviceBuffer d_out(0, bytes);
  g.dst = d_out.get();
  imgpipe::kernels::fused_gpu(g, s.get());
  const std::vector<std::uint8_t> gpu = test::download(d_out, bytes, s);
  CHECK(std::memcmp(gpu.data(), a.data(), bytes) == 0);
}
