// The CPU one pass from YUV (kernels/yuv_fused.hpp) against its definition:
// the frame's yuv_to_bgr_ref conversion, cut to the box, through fused_ref
// (resize, mirror, normalise), bit for bit, on the AVX2 rows and the portable
// ones, over every sample layout the video routes meet; and the checksum
// parts it sums as it writes, against the output's own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernel_test_util.hpp"
#include "kernels/fused.hpp"
#include "kernels/yuv_fused.hpp"
#include "yuv_test_util.hpp"

namespace {

using imgpipe::DType;
using imgpipe::Layout;
using imgpipe::kernels::Fit;
using imgpipe::kernels::Interp;
using imgpipe::kernels::YuvFusedParams;
namespace kn = imgpipe::kernels;
namespace test = imgpipe::test;

struct Named {
  std::string name;
  test::HostYuv yuv;
};

std::vector<Named> frames() {
  std::vector<Named> v;
  test::MemLayout dense;
  v.push_back({"I420 960x540 BT.709", test::pack_yuv(test::random_planes(960, 540, 1, 1, 8, 1), dense,
                                                     kn::ColorMatrix::bt709)});
  test::MemLayout nv12;
  nv12.interleaved = true;
  nv12.padding = 20;
  v.push_back({"NV12 333x211", test::pack_yuv(test::random_planes(333, 211, 1, 1, 8, 2), nv12, kn::ColorMatrix::bt709)});
  test::MemLayout lead;
  lead.lead = 3;
  v.push_back({"I420 odd 31x70", test::pack_yuv(test::random_planes(31, 70, 1, 1, 8, 3), lead)});
  test::MemLayout padded;
  padded.padding = 7;
  v.push_back({"I444 full 64x47", test::pack_yuv(test::random_planes(64, 47, 0, 0, 8, 4), padded,
                                                 kn::ColorMatrix::bt601, kn::ColorRange::full)});
  v.push_back({"I422 95x61", test::pack_yuv(test::random_planes(95, 61, 1, 0, 8, 5), dense, kn::ColorMatrix::smpte240m)});
  v.push_back({"grey 50x50", test::pack_yuv(test::random_planes(50, 50, 1, 1, 8, 6, true), dense)});
  test::MemLayout p016;
  p016.bytes = 2;
  p016.shift = 6;
  p016.interleaved = true;
  v.push_back({"P010 129x33", test::pack_yuv(test::random_planes(129, 33, 1, 1, 10, 7), p016, kn::ColorMatrix::bt2020)});
  test::MemLayout le10;
  le10.bytes = 2;
  le10.padding = 2;
  v.push_back({"yuv420p10le 1x1", test::pack_yuv(test::random_planes(1, 1, 1, 1, 10, 8), le10, kn::ColorMatrix::bt709,
                                                 kn::ColorRange::full)});
  // Legal-range samples (a real decoder's) besides the random ones, which clamp often.
  v.push_back({"I420 legal 200x120", test::pack_yuv(test::random_planes(200, 120, 1, 1, 8, 9, false, 16, 235, 16, 240),
                                                    dense, kn::ColorMatrix::bt709)});
  return v;
}

const char* fit_name(Fit f) { return f == Fit::stretch ? "stretch" : f == Fit::letterbox ? "letterbox" : "center_crop"; }
const char* dtype_name(DType t) { return t == DType::float32 ? "f32" : t == DType::float16 ? "f16" : "u8"; }

// The definition: fused_ref over the BGR conversion cut to the box.
std::vector<std::uint8_t> definition(const cv::Mat& bgr, const YuvFusedParams& p) {
  const cv::Rect box = p.box_width > 0 ? cv::Rect(p.box_x, p.box_y, p.box_width, p.box_height)
                                       : cv::Rect(0, 0, bgr.cols, bgr.rows);
  const cv::Mat roi = bgr(box);
  kn::SrcImage img;
  img.width = roi.cols;
  img.height = roi.rows;
  img.pitch = roi.step[0];
  img.flip_x = p.flip_x;
  img.flip_y = p.flip_y;
  kn::FusedParams f;
  f.in.channels = 3;
  f.in.src = roi.data;
  f.in.images = &img;
  f.in.batch = 1;
  f.in.width = p.width;
  f.in.height = p.height;
  f.in.interp = p.interp;
  f.in.fit = p.fit;
  f.in.pad_value = p.pad_value;
  f.layout = p.layout;
  f.dtype = p.dtype;
  f.swap_rb = p.swap_rb;
  f.scale = p.scale;
  for (int c = 0; c < 3; ++c) {
    f.mean[c] = p.mean[c];
    f.std[c] = p.std[c];
  }
  std::vector<std::uint8_t> out(kn::output_bytes(f));
  f.dst = out.data();
  kn::fused_ref(f);
  return out;
}

}  // namespace

TEST_CASE("yuv fused cpu: one pass from YUV equals the conversion cut to the box, resized, mirrored, normalised, bit for bit") {
  MESSAGE("AVX2 rows on this CPU: " << std::string(kn::yuv_fused_has_simd() ? "yes" : "no (both runs take the portable rows)"));
  cv::RNG rng(2026);
  int calls = 0;
  for (const Named& fr : frames()) {
    const kn::YuvImage src = fr.yuv.image();
    cv::Mat bgr(src.height, src.width, CV_8UC3);
    kn::yuv_to_bgr_ref(src, bgr.data, bgr.step);
    // Canvas sizes: down, up, exactly half, exactly a third, the frame's own
    // (a copy); a large frame is not scaled up (the sanitizer steps' time).
    const bool large = src.width >= 640;
    std::vector<cv::Size> sizes = {{37, 23}, {src.width, src.height}};
    if (!large) sizes.push_back({src.width * 2 + 3, src.height + 5});
    if (src.width % 2 == 0 && src.height % 2 == 0) sizes.push_back({src.width / 2, src.height / 2});
    if (src.width >= 3 && src.height >= 3) sizes.push_back({src.width / 3, src.height / 3});
    if (src.width >= 640) sizes.push_back({640, 640});
    for (const cv::Size& size : sizes)
      for (Fit fit : {Fit::stretch, Fit::letterbox, Fit::center_crop})
        for (int variant = large ? 2 : 0; variant < 6; ++variant) {
          YuvFusedParams p;
          p.src = src;
          p.width = size.width;
          p.height = size.height;
          p.fit = fit;
          p.interp = rng.uniform(0, 4) == 0 ? Interp::nearest : Interp::linear;
          p.pad_value = static_cast<std::uint8_t>(rng.uniform(0, 256));
          p.flip_x = variant & 1;
          p.flip_y = variant & 2;
          if (variant >= 4 && src.width > 4 && src.height > 4) {  // a box at odd places (chroma not aligned)
            p.box_x = rng.uniform(0, src.width / 3) | 1;
            p.box_y = rng.uniform(0, src.height / 3) | 1;
            p.box_width = rng.uniform(1, src.width - p.box_x + 1);
            p.box_height = rng.uniform(1, src.height - p.box_y + 1);
          }
          const DType dtypes[] = {DType::float32, DType::float16, DType::uint8};
          p.dtype = dtypes[rng.uniform(0, 3)];
          p.layout = rng.uniform(0, 3) == 0 ? Layout::nhwc : Layout::nchw;
          p.swap_rb = rng.uniform(0, 2) == 1;
          p.scale = 1.0f / 255.0f;
          p.mean = {0.485f, 0.456f, 0.406f};
          p.std = {0.229f, 0.224f, 0.225f};
          const std::vector<std::uint8_t> want = definition(bgr, p);
          // The output at a 32-byte boundary (whole float32 rows take the
          // non-temporal stores there) or 4 bytes past one (the plain stores).
          const std::size_t misalign = rng.uniform(0, 2) == 0 ? 0 : 4;
          for (bool simd : {true, false}) {
            std::vector<std::uint8_t> buffer(want.size() + 64, 0xCD);
            const auto base = reinterpret_cast<std::uintptr_t>(buffer.data());
            const std::span<std::uint8_t> got(buffer.data() + ((base + 31) / 32 * 32 - base) + misalign, want.size());
            p.dst = got.data();
            kn::ChecksumPart sums[3];
            for (auto& s : sums) s = {0xABCD, 0x1234};  // left alone unless the thirds are whole words
            p.sums = sums;
            kn::yuv_fused_cpu(p, simd);
            p.sums = nullptr;
            ++calls;
            std::size_t first = 0;
            while (first < got.size() && got[first] == want[first]) ++first;
            INFO(fmt::format("{} -> {}x{} {} {} flips {}{} box {}x{}@{},{} {} {} swap {} simd {} misaligned by {}", fr.name,
                             size.width, size.height, fit_name(fit), p.interp == Interp::linear ? "linear" : "nearest",
                             p.flip_x ? "x" : "-", p.flip_y ? "y" : "-", p.box_width, p.box_height, p.box_x, p.box_y,
                             dtype_name(p.dtype), p.layout == Layout::nchw ? "nchw" : "nhwc", p.swap_rb, simd, misalign));
            INFO("first differing byte: " << first << " of " << got.size());
            REQUIRE(first == got.size());
            const auto untouched = [](auto from, auto to) { return std::all_of(from, to, [](auto b) { return b == 0xCD; }); };
            CHECK(untouched(buffer.data(), got.data()));  // nothing written around the output
            CHECK(untouched(got.data() + got.size(), buffer.data() + buffer.size()));
            // The checksum parts summed as the rows were written: the thirds' own.
            const std::size_t third = got.size() / 3;
            for (std::size_t k = 0; k < 3; ++k) {
              const kn::ChecksumPart want_sum =
                  got.size() % 12 == 0 ? kn::checksum_part(got.data() + k * third, third) : kn::ChecksumPart{0xABCD, 0x1234};
              CHECK(sums[k].sum == want_sum.sum);
              CHECK(sums[k].weighted == want_sum.weighted);
            }
          }
        }
  }
  MESSAGE(calls << " calls compared");
}

TEST_CASE("yuv fused cpu: validation names the offending field") {
  test::MemLayout dense;
  const test::HostYuv h = test::pack_yuv(test::random_planes(64, 48, 1, 1, 8, 1), dense);
  std::vector<float> out(3 * 32 * 32);
  YuvFusedParams p;
  p.src = h.image();
  p.width = p.height = 32;
  p.dst = out.data();
  CHECK_NOTHROW(kn::yuv_fused_cpu(p));
  auto fails = [&](YuvFusedParams q, const std::string& what) {
    try {
      kn::yuv_fused_cpu(q);
      FAIL("no error for " << what);
    } catch (const std::invalid_argument& e) {
      CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  YuvFusedParams q = p;
  q.box_x = 40, q.box_y = 0, q.box_width = 30, q.box_height = 10;
  fails(q, "the box 30x10 at (40, 0) is not inside the 64x48 frame");
  q = p;
  q.dst = nullptr;
  fails(q, "dst is null");
  q = p;
  q.std = {1, 0, 1};
  fails(q, "std[1] is zero");
  q = p;
  q.width = 0;
  fails(q, "width and height must be >= 1");
  q = p;
  q.src.plane[0] = nullptr;
  fails(q, "plane[0] is null");
}
