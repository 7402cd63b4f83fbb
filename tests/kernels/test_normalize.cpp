// Normalize twins.
//
// References and tolerances:
// - CPU twin vs cv::dnn::blobFromImage on the sample photos (no resize):
//   blobFromImage computes (v - mean) * scalefactor in float; the twin
//   (v * scale - mean') / std. With scale 1 and std 1 both are v - mean in
//   float: exact. With scale 1/255 (mean' = mean / 255) and per-channel std
//   (blob planes divided by std here): |diff| <= 1e-5 + 1e-6 |x|.
// - float16 output == float_to_half_rn(float32 output): exact.
// - GPU twin vs CPU twin: bit-exact for every dtype, layout, channel count,
//   swap, pitch and image stride.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <opencv2/dnn.hpp>

#include "kernel_test_util.hpp"
#include "kernels/half.hpp"
#include "kernels/normalize.hpp"

namespace {

using imgpipe::DType;
using imgpipe::Layout;
using imgpipe::kernels::NormalizeParams;
namespace test = imgpipe::test;

NormalizeParams over(const cv::Mat& img, void* dst, DType dt, Layout l, bool swap) {
  NormalizeParams p;
  p.batch = 1;
  p.height = img.rows;
  p.width = img.cols;
  p.channels = img.channels();
  p.src = img.ptr<std::uint8_t>();
  p.src_pitch = img.step[0];
  p.dst = dst;
  p.dtype = dt;
  p.layout = l;
  p.swap_rb = swap;
  return p;
}

}  // namespace

TEST_CASE("normalize: CPU twin matches cv::dnn::blobFromImage on the sample photos") {
  const auto paths = test::sample_images();
  for (std::size_t i = 0; i < std::min<std::size_t>(paths.size(), 6); ++i) {
    for (int c : {1, 3, 4}) {
      const cv::Mat img = test::sample_photo(i, c);
      const std::size_t plane = img.total();
      for (bool swap : {false, true}) {
        if (swap && c == 1) continue;
        // Caffe style: scale 1, mean in output channel order, std 1 -> exact.
        const cv::Scalar mean(104.0, 117.0, 123.0, 0.0);
        const cv::Mat blob = cv::dnn::blobFromImage(img, 1.0, cv::Size(), mean, swap, false, CV_32F);
        std::vector<float> got(plane * c);
        NormalizeParams p = over(img, got.data(), DType::float32, Layout::nchw, swap);
        for (int k = 0; k < c; ++k) p.mean[k] = static_cast<float>(mean[k]);
        imgpipe::kernels::normalize_ref(p);
        INFO(paths[i].filename().string() << " channels " << c << " swap " << swap);
        CHECK(std::memcmp(got.data(), blob.ptr<float>(), got.size() * sizeof(float)) == 0);

        // ImageNet style: (v / 255 - mean) / std per channel.
        const float m[4] = {0.485f, 0.456f, 0.406f, 0.5f}, sd[4] = {0.229f, 0.224f, 0.225f, 0.25f};
        const cv::Scalar mean255(m[0] * 255.0, m[1] * 255.0, m[2] * 255.0, m[3] * 255.0);
        const cv::Mat blob2 = cv::dnn::blobFromImage(img, 1.0 / 255.0, cv::Size(), mean255, swap, false, CV_32F);
        p.scale = 1.0f / 255.0f;
        for (int k = 0; k < c; ++k) {
          p.mean[k] = m[k];
          p.std[k] = sd[k];
        }
        imgpipe::kernels::normalize_ref(p);
        double worst = 0;
        for (int k = 0; k < c; ++k)
          for (std::size_t j = 0; j < plane; ++j) {
            const double want = blob2.ptr<float>()[k * plane + j] / sd[k];
            worst = std::max(worst, std::abs(got[k * plane + j] - want) - (1e-5 + 1e-6 * std::abs(want)));
          }
        CHECK(worst <= 0.0);
      }
    }
  }
}

TEST_CASE("normalize: float16 output is the float32 output rounded to nearest-even") {
  const cv::Mat img = test::random_roi(131, 37, 3, 5);
  for (Layout l : {Layout::nchw, Layout::nhwc}) {
    std::vector<float> f32(img.total() * 3);
    std::vector<std::uint16_t> f16(img.total() * 3);
    NormalizeParams p = over(img, f32.data(), DType::float32, l, true);
    p.scale = 1.0f / 255.0f;
    p.mean = {0.485f, 0.456f, 0.406f, 0};
    p.std = {0.229f, 0.224f, 0.225f, 1};
    imgpipe::kernels::normalize_ref(p);
    p.dtype = DType::float16;
    p.dst = f16.data();
    imgpipe::kernels::normalize_ref(p);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < f32.size(); ++i) bad += f16[i] != imgpipe::kernels::float_to_half_rn(f32[i]);
    CHECK(bad == 0);
    // And the values are what the formula says, to float16 precision.
    const float v = img.ptr<std::uint8_t>(0)[2];  // output channel 0 of pixel (0,0) is input channel 2
    CHECK(imgpipe::kernels::half_to_float(f16[0]) == doctest::Approx((v / 255.0 - 0.485) / 0.229).epsilon(1e-3));
  }
}

TEST_CASE("normalize: GPU twin equals the CPU twin bit for bit") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  struct Size {
    int w, h;
  };
  const Size sizes[] = {{1, 1}, {7, 5}, {127, 33}, {128, 32}, {129, 31}, {640, 480}, {1920, 1080}};
  std::uint64_t seed = 900;
  for (int c : {1, 3, 4})
    for (const Size& sz : sizes)
      for (int pad : {0, 11}) {
        // Three images one after another, each row padded, plus a gap between images.
        const int batch = 3;
        const std::size_t row = static_cast<std::size_t>(sz.w) * c, pitch = row + pad;
        const std::size_t stride = pitch * sz.h + (pad ? 5 : 0);
        std::vector<std::uint8_t> src(stride * batch);
        cv::RNG rng(seed++);
        rng.fill(src, cv::RNG::UNIFORM, 0, 256);
        const test::DeviceCopy d_src(src.data(), src.size(), s);
        for (DType dt : {DType::float32, DType::float16, DType::uint8})
          for (Layout l : {Layout::nchw, Layout::nhwc})
            for (bool swap : {false, true}) {
              if (swap && c == 1) continue;
              NormalizeParams p;
              p.batch = batch;
              p.height = sz.h;
              p.width = sz.w;
              p.channels = c;
              p.src = src.data();
              p.src_pitch = pad ? pitch : 0;
              p.src_image_stride = pad ? stride : 0;
              p.layout = l;
              p.dtype = dt;
              p.swap_rb = swap;
              p.scale = 0.0173f;
              p.mean = {0.3f, -1.25f, 2.0f, 0.5f};
              p.std = {0.229f, 3.0f, -0.5f, 1.7f};
              const std::size_t bytes = imgpipe::kernels::output_bytes(p);
              std::vector<std::uint8_t> want(bytes);
              p.dst = want.data();
              imgpipe::kernels::normalize_ref(p, true);
              imgpipe::gpu::DeviceBuffer d_out(0, bytes);
              p.src = d_src.get();
              p.dst = d_out.get();
              imgpipe::kernels::normalize_gpu(p, s.get());
              const std::vector<std::uint8_t> got = test::download(d_out, bytes, s);
              INFO(sz.w << "x" << sz.h << "x" << c << " pad " << pad << " dtype " << imgpipe::to_string(dt) << " "
                        << imgpipe::to_string(l) << " swap " << swap);
              CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
            }
      }
}

#if !IMGPIPE_HAS_CUDA
TEST_CASE("normalize: GPU launcher throws std::logic_error in builds without CUDA") {
  const cv::Mat img = test::random_image(4, 4, 3, 1);
  std::vector<float> out(48);
  CHECK_THROWS_AS(imgpipe::kernels::normalize_gpu(over(img, out.data(), DType::float32, Layout::nchw, false), nullptr),
                  std::logic_error);
}
#endif
