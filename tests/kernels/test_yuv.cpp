// YUV -> BGR (kernels/yuv.hpp) and YUV images in the resize family
// (SrcImage::yuv, resize.hpp).
//
// References and tolerances:
// - make_coeffs: the textbook coefficients of BT.601 / BT.709 (R = Y' + 1.402 V'
//   ...) scaled for the range, within one 2^-16 step.
// - yuv_to_bgr_ref: a double-precision evaluation of the same matrix, rounded
//   and clamped: within +-1 level (the integer coefficients are rounded to
//   2^-16); exact at the range anchors (black, white).
// - cv::cvtColor(COLOR_YUV2BGR_I420) (BT.601 limited, nearest chroma; legal
//   samples only: OpenCV clamps Y - 16 at 0): within +-1.
// - Layouts of the same samples (NV12 vs I420, P016 vs yuv420p10le, pitches):
//   bit-exact.
// - yuv_to_bgr_ref (SIMD rows, scalar tail, destination pitch, parallel) vs a
//   per-pixel loop over detail::yuv_at, every layout, matrix and range:
//   bit-exact.
// - Resize family with YUV images vs the same calls over the images'
//   yuv_to_bgr_ref conversions: bit-exact, CPU twin and GPU twin.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernel_test_util.hpp"
#include "yuv_test_util.hpp"
#include "kernels/crop.hpp"
#include "kernels/fused.hpp"
#include "kernels/letterbox.hpp"
#include "kernels/yuv.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using imgpipe::DType;
using imgpipe::Layout;
using imgpipe::kernels::ColorMatrix;
using imgpipe::kernels::ColorRange;
using imgpipe::kernels::Fit;
using imgpipe::kernels::FusedParams;
using imgpipe::kernels::Interp;
using imgpipe::kernels::ResizeBatch;
using imgpipe::kernels::SrcImage;
using imgpipe::kernels::SrcYuv;
using imgpipe::kernels::YuvCoeffs;
using imgpipe::kernels::YuvFormat;
using imgpipe::kernels::YuvImage;
namespace kn = imgpipe::kernels;
namespace test = imgpipe::test;
using test::HostYuv;
using test::MemLayout;
using test::Planes;
using test::pack_yuv;
using test::random_planes;

cv::Mat to_bgr(const HostYuv& h) {
  cv::Mat m(h.height, h.width, CV_8UC3);
  kn::yuv_to_bgr_ref(h.image(), m.data, m.step);
  return m;
}

// Textbook Kr, Kb.
void kr_kb(ColorMatrix m, double& kr, double& kb) {
  switch (m) {
    case ColorMatrix::bt601: kr = 0.299, kb = 0.114; break;
    case ColorMatrix::bt709: kr = 0.2126, kb = 0.0722; break;
    case ColorMatrix::bt2020: kr = 0.2627, kb = 0.0593; break;
    case ColorMatrix::smpte240m: kr = 0.212, kb = 0.087; break;
  }
}

// The conversion in double precision: B, G, R rounded and clamped.
void reference_pixel(ColorMatrix m, ColorRange r, int bits, int Y, int U, int V, int* bgr) {
  double kr = 0, kb = 0;
  kr_kb(m, kr, kb);
  const double kg = 1 - kr - kb;
  const double unit = std::ldexp(1.0, bits - 8);
  double y, u, v;
  if (r == ColorRange::limited) {
    y = (Y - 16 * unit) / (219 * unit);
    u = (U - 128 * unit) / (224 * unit);
    v = (V - 128 * unit) / (224 * unit);
  } else {
    const double max = std::ldexp(1.0, bits) - 1;
    y = Y / max;
    u = (U - 128 * unit) / max;
    v = (V - 128 * unit) / max;
  }
  const double R = y + 2 * (1 - kr) * v;
  const double B = y + 2 * (1 - kb) * u;
  const double G = (y - kr * R - kb * B) / kg;
  auto q = [](double x) { return std::clamp(static_cast<int>(std::lround(x * 255.0)), 0, 255); };
  bgr[0] = q(B);
  bgr[1] = q(G);
  bgr[2] = q(R);
}

const char* mname(ColorMatrix m) { return kn::name(m).data(); }
const char* rname(ColorRange r) { return kn::name(r).data(); }

}  // namespace

TEST_CASE("yuv: make_coeffs gives the textbook BT.601 and BT.709 coefficients within 2^-16") {
  struct Book {
    ColorMatrix m;
    double rv, gu, gv, bu;  // full-range R = Y + rv V, G = Y - gu U - gv V, B = Y + bu U (Y, U, V in 0..1, +-0.5)
  };
  const Book books[] = {{ColorMatrix::bt601, 1.402, 0.344136, 0.714136, 1.772},
                        {ColorMatrix::bt709, 1.5748, 0.187324, 0.468124, 1.8556}};
  const double step = 1.0 / 65536.0;
  for (const Book& bk : books)
    for (ColorRange r : {ColorRange::limited, ColorRange::full})
      for (int bits : {8, 10}) {
        const YuvCoeffs c = kn::make_coeffs(bk.m, r, bits);
        const double unit = std::ldexp(1.0, bits - 8);
        const double ys = r == ColorRange::limited ? 255.0 / (219 * unit) : 255.0 / (std::ldexp(1.0, bits) - 1);
        const double cs = r == ColorRange::limited ? 255.0 / (224 * unit) : 255.0 / (std::ldexp(1.0, bits) - 1);
        INFO(mname(bk.m) << " " << rname(r) << " " << bits << " bits");
        CHECK(std::abs(c.y * step - ys) <= step);
        CHECK(std::abs(c.rv * step - cs * bk.rv) <= step);
        CHECK(std::abs(c.gu * step - cs * bk.gu) <= step);
        CHECK(std::abs(c.gv * step - cs * bk.gv) <= step);
        CHECK(std::abs(c.bu * step - cs * bk.bu) <= step);
        CHECK(c.y_offset == (r == ColorRange::limited ? 16 << (bits - 8) : 0));
        CHECK(c.c_offset == 128 << (bits - 8));
      }
  CHECK_THROWS_AS(kn::make_coeffs(ColorMatrix::bt601, ColorRange::limited, 7), std::invalid_argument);
  CHECK_THROWS_AS(kn::make_coeffs(ColorMatrix::bt601, ColorRange::limited, 17), std::invalid_argument);
}

TEST_CASE("yuv: yuv_to_bgr_ref is within 1 level of the double-precision conversion") {
  std::uint64_t seed = 40;
  for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020, ColorMatrix::smpte240m})
    for (ColorRange r : {ColorRange::limited, ColorRange::full})
      for (int bits : {8, 10, 12, 16}) {
        const Planes p = random_planes(97, 61, 0, 0, bits, seed++);
        MemLayout l;
        l.bytes = bits == 8 ? 1 : 2;
        const HostYuv h = pack_yuv(p, l, m, r);
        const cv::Mat bgr = to_bgr(h);
        int worst = 0;
        for (int y = 0; y < p.height; ++y)
          for (int x = 0; x < p.width; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * p.width + x;
            int want[3];
            reference_pixel(m, r, bits, p.y[i], p.u[i], p.v[i], want);
            for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(bgr.at<cv::Vec3b>(y, x)[c] - want[c]));
          }
        INFO(mname(m) << " " << rname(r) << " " << bits << " bits");
        CHECK(worst <= 1);
      }
}

TEST_CASE("yuv: range anchors convert exactly (black and white and clamped)") {
  for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020, ColorMatrix::smpte240m})
    for (int bits : {8, 10, 16}) {
      const int unit = 1 << (bits - 8);
      const int max = (1 << bits) - 1;
      struct Anchor {
        ColorRange r;
        int y;
        int want;
      };
      const Anchor anchors[] = {{ColorRange::limited, 16 * unit, 0},
                                {ColorRange::limited, 235 * unit, 255},
                                {ColorRange::limited, 0, 0},        // below black: clamped
                                {ColorRange::limited, max, 255},    // above white: clamped
                                {ColorRange::full, 0, 0},
                                {ColorRange::full, max, 255}};
      for (const Anchor& a : anchors) {
        const YuvCoeffs c = kn::make_coeffs(m, a.r, bits);
        std::uint8_t bgr[3];
        kn::detail::yuv_pixel(c, a.y, 128 * unit, 128 * unit, bgr);
        INFO(mname(m) << " " << rname(a.r) << " " << bits << " bits Y " << a.y);
        CHECK(bgr[0] == a.want);
        CHECK(bgr[1] == a.want);
        CHECK(bgr[2] == a.want);
      }
    }
}

TEST_CASE("yuv: BT.601 limited I420 matches cv::cvtColor(COLOR_YUV2BGR_I420) within 1") {
  std::uint64_t seed = 60;
  for (auto [w, h] : {std::pair{64, 48}, std::pair{320, 242}, std::pair{2, 2}}) {
    // Legal samples only (OpenCV clamps Y - 16 at 0, this conversion does not).
    const Planes p = random_planes(w, h, 1, 1, 8, seed++, false, 16, 235, 16, 240);
    const HostYuv hy = pack_yuv(p, MemLayout{});
    // OpenCV's I420: one w x (h * 3 / 2) 8-bit image, Y then U then V.
    cv::Mat i420(h * 3 / 2, w, CV_8UC1);
    std::uint8_t* d = i420.data;
    for (int v : p.y) *d++ = static_cast<std::uint8_t>(v);
    for (int v : p.u) *d++ = static_cast<std::uint8_t>(v);
    for (int v : p.v) *d++ = static_cast<std::uint8_t>(v);
    cv::Mat want;
    cv::cvtColor(i420, want, cv::COLOR_YUV2BGR_I420);
    const cv::Mat got = to_bgr(hy);
    const test::Diff diff = test::diff_u8(got.data, want.data, got.total() * 3);
    INFO(w << "x" << h << ": " << diff.count << " differ");
    CHECK(diff.max <= 1);
  }
}

TEST_CASE("yuv: memory layouts of the same samples convert to the same pixels") {
  std::uint64_t seed = 80;
  for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 5}, std::pair{64, 33}, std::pair{331, 210}}) {
    INFO(w << "x" << h);
    // NV12 (interleaved UV) == I420 (planar), dense and pitched.
    const Planes p8 = random_planes(w, h, 1, 1, 8, seed++);
    const cv::Mat i420 = to_bgr(pack_yuv(p8, MemLayout{}));
    MemLayout nv12;
    nv12.interleaved = true;
    CHECK(test::diff_u8(to_bgr(pack_yuv(p8, nv12)).data, i420.data, i420.total() * 3).count == 0);
    nv12.padding = 13;
    nv12.lead = 5;
    CHECK(test::diff_u8(to_bgr(pack_yuv(p8, nv12)).data, i420.data, i420.total() * 3).count == 0);
    // The parallel twin gives the same bytes.
    cv::Mat par(h, w, CV_8UC3);
    kn::yuv_to_bgr_ref(pack_yuv(p8, nv12).image(), par.data, par.step, true);
    CHECK(test::diff_u8(par.data, i420.data, i420.total() * 3).count == 0);
    // P016 holding 10 bits (shift 6) == yuv420p10le (shift 0) == P010-style planar.
    const Planes p10 = random_planes(w, h, 1, 1, 10, seed++);
    MemLayout le10;
    le10.bytes = 2;
    const cv::Mat planar10 = to_bgr(pack_yuv(p10, le10, ColorMatrix::bt709));
    MemLayout p016;
    p016.bytes = 2;
    p016.shift = 6;
    p016.interleaved = true;
    p016.padding = 6;
    CHECK(test::diff_u8(to_bgr(pack_yuv(p10, p016, ColorMatrix::bt709)).data, planar10.data, planar10.total() * 3)
              .count == 0);
    // and each pixel is yuv_pixel of its luma and nearest chroma sample (odd
    // sizes: the last chroma column/row serves one luma column/row).
    const YuvCoeffs c = kn::make_coeffs(ColorMatrix::bt709, ColorRange::limited, 10);
    int bad = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const int ci = (y >> 1) * p10.cw() + (x >> 1);
        std::uint8_t want[3];
        kn::detail::yuv_pixel(c, p10.y[y * w + x], p10.u[ci], p10.v[ci], want);
        for (int k = 0; k < 3; ++k) bad += planar10.at<cv::Vec3b>(y, x)[k] != want[k];
      }
    CHECK(bad == 0);
    // 4:2:2 and 4:4:4, 8 bits, pitched: per pixel likewise.
    for (auto [csx, csy] : {std::pair{1, 0}, std::pair{0, 0}}) {
      const Planes q = random_planes(w, h, csx, csy, 8, seed++);
      MemLayout pl;
      pl.padding = 9;
      const cv::Mat got = to_bgr(pack_yuv(q, pl, ColorMatrix::bt601, ColorRange::full));
      const YuvCoeffs c8 = kn::make_coeffs(ColorMatrix::bt601, ColorRange::full, 8);
      int bad8 = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const int ci = (y >> csy) * q.cw() + (x >> csx);
          std::uint8_t want[3];
          kn::detail::yuv_pixel(c8, q.y[y * w + x], q.u[ci], q.v[ci], want);
          for (int k = 0; k < 3; ++k) bad8 += got.at<cv::Vec3b>(y, x)[k] != want[k];
        }
      INFO("chroma shifts " << csx << "," << csy);
      CHECK(bad8 == 0);
    }
  }
}

TEST_CASE("yuv: a monochrome image converts as grey (u = v = 0)") {
  for (int bits : {8, 10}) {
    Planes p = random_planes(45, 17, 1, 1, bits, 90 + bits, true);
    MemLayout l;
    l.bytes = bits == 8 ? 1 : 2;
    l.padding = 4;
    const cv::Mat mono = to_bgr(pack_yuv(p, l, ColorMatrix::bt709));
    // The same luma with neutral chroma planes.
    p.mono = false;
    p.u.assign(static_cast<std::size_t>(p.cw()) * p.ch(), 128 << (bits - 8));
    p.v = p.u;
    const cv::Mat neutral = to_bgr(pack_yuv(p, l, ColorMatrix::bt709));
    INFO(bits << " bits");
    CHECK(test::diff_u8(mono.data, neutral.data, mono.total() * 3).count == 0);
    int grey = 0;
    for (int y = 0; y < mono.rows; ++y)
      for (int x = 0; x < mono.cols; ++x) {
        const cv::Vec3b v = mono.at<cv::Vec3b>(y, x);
        grey += v[0] == v[1] && v[1] == v[2];
      }
    CHECK(grey == mono.rows * mono.cols);
  }
}

TEST_CASE("yuv: yuv_to_bgr_ref (SIMD rows and scalar tail) equals a per-pixel yuv_at loop byte for byte") {
  struct Case {
    const char* name;
    int bits, csx, csy;
    MemLayout mem;
    bool mono = false;
  };
  const MemLayout u8{}, nv{1, 0, true}, le16{2, 0, false}, p01x{2, 6, true}, p016{2, 0, true};
  const Case cases[] = {{"I420", 8, 1, 1, u8},        {"I422", 8, 1, 0, u8},          {"I444", 8, 0, 0, u8},
                        {"NV12", 8, 1, 1, nv},        {"NV16", 8, 1, 0, nv},          {"NV24", 8, 0, 0, nv},
                        {"grey", 8, 1, 1, u8, true},  {"yuv420p10le", 10, 1, 1, le16}, {"yuv444p12le", 12, 0, 0, le16},
                        {"P010", 10, 1, 1, p01x},     {"P016", 16, 1, 1, p016},       {"grey16", 16, 1, 1, le16, true}};
  // Widths around the SIMD block (16, 32 or 64 pixels) and a 1080p row and one.
  const std::pair<int, int> sizes[] = {{1, 1},  {2, 2},  {3, 3},  {15, 2}, {16, 1},  {17, 3},  {31, 5},
                                       {32, 2}, {33, 3}, {64, 4}, {65, 3}, {130, 3}, {1921, 3}};
  std::uint64_t seed = 300;
  for (const Case& cs : cases)
    for (ColorMatrix m : {ColorMatrix::bt601, ColorMatrix::bt709, ColorMatrix::bt2020, ColorMatrix::smpte240m})
      for (ColorRange r : {ColorRange::limited, ColorRange::full})
        for (auto [w, h] : sizes) {
          Planes p = random_planes(w, h, cs.csx, cs.csy, cs.bits, seed++, cs.mono);
          // Half the samples at the values that hit the clamps and the range ends.
          const int unit = 1 << (cs.bits - 8), max = (1 << cs.bits) - 1;
          const int extremes[] = {0, max, 16 * unit, 235 * unit, 240 * unit, 128 * unit, 1, max - 1};
          cv::RNG rng(seed);
          for (std::vector<int>* plane : {&p.y, &p.u, &p.v})
            for (int& v : *plane)
              if (rng.uniform(0, 2)) v = extremes[rng.uniform(0, 8)];
          MemLayout mem = cs.mem;
          if (w % 2) {  // odd sizes also pitched, the planes at odd addresses
            mem.padding = 7;
            mem.lead = 3;
          }
          const HostYuv hy = pack_yuv(p, mem, m, r);
          const YuvImage img = hy.image();
          const YuvCoeffs c = kn::make_coeffs(m, r, cs.bits);
          cv::Mat want(h, w, CV_8UC3);
          for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) kn::detail::yuv_at(img, c, x, y, want.ptr<std::uint8_t>(y) + 3 * x);
          const cv::Mat got = to_bgr(hy);
          const test::Diff d = test::diff_u8(got.data, want.data, want.total() * 3);
          INFO(cs.name << " " << mname(m) << " " << rname(r) << " " << w << "x" << h << ": " << d.count
                       << " bytes differ, first at byte " << d.first);
          CHECK(d.count == 0);
          // Into rows 5 bytes longer than the image's, in parallel.
          cv::Mat wide(h, w * 3 + 5, CV_8U, cv::Scalar(0));
          kn::yuv_to_bgr_ref(img, wide.data, wide.step, true);
          CHECK(cv::countNonZero(wide(cv::Rect(0, 0, w * 3, h)) != want.reshape(1)) == 0);
        }
}

namespace {

// A batch mixing u8 BGR images and YUV images, and the same batch with each
// YUV image replaced by its yuv_to_bgr_ref conversion.
struct MixedBatch {
  test::PackedBatch mixed;                  // bytes: BGR images, then YUV images given by offset
  std::vector<std::vector<std::uint8_t>> own;  // YUV images given by pointer (SrcImage::data)
  std::vector<HostYuv> yuv;                 // per YUV image (index into images: yuv_at[k])
  std::vector<int> yuv_index;
  test::PackedBatch converted;              // every image as u8 BGR
};

// `order`: for each batch position, 'b' (the next BGR mat) or 'y' (the next YUV image).
MixedBatch mixed_batch(const std::vector<cv::Mat>& bgr, const std::vector<HostYuv>& yuv, const std::string& order,
                       int row_padding) {
  MixedBatch m;
  m.yuv = yuv;
  m.mixed = test::pack(bgr, row_padding);
  std::vector<SrcImage> bgr_images = m.mixed.images;
  m.mixed.images.clear();
  std::vector<cv::Mat> all;
  std::size_t nb = 0, ny = 0;
  for (char o : order) {
    if (o == 'b') {
      m.mixed.images.push_back(bgr_images.at(nb));
      all.push_back(bgr.at(nb++));
      continue;
    }
    const HostYuv& h = m.yuv.at(ny);
    SrcImage s;
    s.width = h.width;
    s.height = h.height;
    s.yuv = h.yuv;
    if (ny % 2 == 0) {  // in the batch buffer, at an odd offset
      m.mixed.bytes.push_back(0x11);
      s.offset = m.mixed.bytes.size();
      m.mixed.bytes.insert(m.mixed.bytes.end(), h.bytes.begin(), h.bytes.end());
    } else {  // by pointer (set below, once `own` stops growing)
      m.own.push_back(h.bytes);
    }
    m.yuv_index.push_back(static_cast<int>(m.mixed.images.size()));
    m.mixed.images.push_back(s);
    all.push_back(to_bgr(h));
    ++ny;
  }
  std::size_t k = 0;
  for (std::size_t j = 0; j < m.yuv_index.size(); ++j)
    if (j % 2 == 1) m.mixed.images[m.yuv_index[j]].data = m.own[k++].data();
  m.converted = test::pack(all, row_padding + 1);
  return m;
}

std::vector<HostYuv> some_yuv_images(std::uint64_t seed) {
  std::vector<HostYuv> v;
  MemLayout nv12;
  nv12.interleaved = true;
  nv12.padding = 20;
  v.push_back(pack_yuv(random_planes(333, 211, 1, 1, 8, seed++), nv12, ColorMatrix::bt709));
  MemLayout p016;
  p016.bytes = 2;
  p016.shift = 6;
  p016.interleaved = true;
  v.push_back(pack_yuv(random_planes(129, 33, 1, 1, 10, seed++), p016, ColorMatrix::bt2020));
  MemLayout i420;
  i420.lead = 3;
  v.push_back(pack_yuv(random_planes(31, 700, 1, 1, 8, seed++), i420));
  MemLayout i444;
  i444.padding = 7;
  v.push_back(pack_yuv(random_planes(64, 47, 0, 0, 8, seed++), i444, ColorMatrix::bt601, ColorRange::full));
  MemLayout le10;
  le10.bytes = 2;
  le10.padding = 2;
  v.push_back(pack_yuv(random_planes(1, 1, 1, 1, 10, seed++), le10, ColorMatrix::bt709, ColorRange::full));
  v.push_back(pack_yuv(random_planes(95, 61, 1, 0, 8, seed++), MemLayout{}, ColorMatrix::smpte240m));  // I422
  v.push_back(pack_yuv(random_planes(50, 50, 1, 1, 8, seed++, true), MemLayout{}));                     // grey
  return v;
}

const char* dname(DType t) { return t == DType::float32 ? "f32" : t == DType::float16 ? "f16" : "u8"; }

FusedParams fused_params(const test::PackedBatch& p, const std::uint8_t* base, int W, int H, Interp interp, Fit fit,
                         DType dt, Layout l, bool swap) {
  FusedParams f;
  f.in = test::batch_of(p, base, W, H, interp, fit, 114);
  f.dtype = dt;
  f.layout = l;
  f.swap_rb = swap;
  f.scale = 1.0f / 255.0f;
  f.mean = {0.485f, 0.456f, 0.406f, 0.5f};
  f.std = {0.229f, 0.224f, 0.225f, 0.25f};
  return f;
}

}  // namespace

TEST_CASE("yuv: the resize family CPU twins resample a YUV image as its BGR conversion bit for bit") {
  const std::vector<cv::Mat> bgr = {test::random_image(200, 150, 3, 1), test::random_roi(17, 9, 3, 2)};
  const MixedBatch m = mixed_batch(bgr, some_yuv_images(100), "ybyyybyyy", 3);
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (Fit fit : {Fit::stretch, Fit::letterbox, Fit::center_crop})
      for (auto [W, H] : {std::pair{224, 224}, std::pair{129, 31}, std::pair{1, 1}}) {
        INFO("interp " << static_cast<int>(interp) << " fit " << static_cast<int>(fit) << " " << W << "x" << H);
        const ResizeBatch got_b = test::batch_of(m.mixed, m.mixed.bytes.data(), W, H, interp, fit);
        const ResizeBatch want_b = test::batch_of(m.converted, m.converted.bytes.data(), W, H, interp, fit);
        std::vector<std::uint8_t> got(kn::output_bytes(got_b)), want(got.size());
        switch (fit) {
          case Fit::stretch:
            kn::resize_ref(got_b, got.data());
            kn::resize_ref(want_b, want.data());
            break;
          case Fit::letterbox:
            kn::letterbox_ref(got_b, got.data());
            kn::letterbox_ref(want_b, want.data());
            break;
          case Fit::center_crop:
            kn::center_crop_ref(got_b, got.data());
            kn::center_crop_ref(want_b, want.data());
            break;
        }
        CHECK(got == want);
        for (DType dt : {DType::float32, DType::float16, DType::uint8})
          for (Layout l : {Layout::nchw, Layout::nhwc}) {
            const bool swap = l == Layout::nchw;
            FusedParams fg = fused_params(m.mixed, m.mixed.bytes.data(), W, H, interp, fit, dt, l, swap);
            FusedParams fw = fused_params(m.converted, m.converted.bytes.data(), W, H, interp, fit, dt, l, swap);
            std::vector<std::uint8_t> a(kn::output_bytes(fg)), b(a.size()), c(a.size());
            fg.dst = a.data();
            fw.dst = b.data();
            kn::fused_ref(fg);
            kn::fused_ref(fw);
            INFO(dname(dt) << " " << imgpipe::to_string(l));
            CHECK(a == b);
            fg.dst = c.data();
            kn::fused_ref(fg, true);
            CHECK(c == b);
          }
      }
}

TEST_CASE("yuv: validation names the YUV image's offending field") {
  const HostYuv good_yuv = pack_yuv(random_planes(16, 12, 1, 1, 8, 7), MemLayout{});
  SrcImage im;
  im.width = 16;
  im.height = 12;
  im.data = good_yuv.bytes.data();
  im.yuv = good_yuv.yuv;
  const cv::Mat bgr = test::random_image(8, 8, 3, 3);
  std::vector<SrcImage> images = {test::pack({bgr}).images[0], im};
  std::vector<std::uint8_t> base(8 * 8 * 3);
  std::vector<std::uint8_t> out(2 * 32 * 32 * 3);
  ResizeBatch good;
  good.channels = 3;
  good.src = base.data();
  good.batch = 2;
  good.width = good.height = 32;
  auto expect = [&](std::vector<SrcImage> imgs, int channels, const char* field) {
    ResizeBatch b = good;
    b.images = imgs.data();
    b.channels = channels;
    try {
      kn::resize_ref(b, out.data());
      FAIL("no exception for " << field);
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  {
    ResizeBatch b = good;
    b.images = images.data();
    CHECK_NOTHROW(kn::resize_ref(b, out.data()));
  }
  std::vector<SrcImage> v = images;
  expect(v, 1, "images[1].yuv: a YUV image needs channels == 3");
  v = images;
  v[1].pitch = 48;
  expect(v, 3, "images[1].pitch must be 0 for a YUV image");
  v = images;
  v[1].yuv->pitch[0] = 15;
  expect(v, 3, "images[1].yuv: pitch[0] is shorter than a row");
  v = images;
  v[1].yuv->pitch[1] = 7;
  expect(v, 3, "images[1].yuv: pitch[1] is shorter than a chroma row");
  v = images;
  v[1].yuv->format.uv_interleaved = true;
  v[1].yuv->pitch[1] = 8;  // an I420 U row is 8 bytes; interleaved needs 16
  expect(v, 3, "images[1].yuv: pitch[1] is shorter than a chroma row");
  v = images;
  v[1].yuv->format.bits = 7;
  expect(v, 3, "images[1].yuv: format.bits must be 8..16");
  v = images;
  v[1].yuv->format.bytes = 2;
  v[1].yuv->format.bits = 10;
  v[1].yuv->format.shift = 8;
  expect(v, 3, "images[1].yuv: format.shift + format.bits exceeds 16");
  v = images;
  v[1].yuv->format.bits = 10;
  expect(v, 3, "images[1].yuv: 1-byte samples are 8 bits");
  v = images;
  v[1].yuv->format.chroma_shift_y = 2;
  expect(v, 3, "images[1].yuv: format.chroma_shift_x and format.chroma_shift_y must be 0 or 1");
  v = images;
  v[1].yuv->format.chroma_shift_x = -1;
  expect(v, 3, "images[1].yuv: format.chroma_shift_x and format.chroma_shift_y must be 0 or 1");
  v = images;
  v[1].width = 0;
  expect(v, 3, "images[1].width and .height must be >= 1");
  // The fused launcher validates through the same function.
  FusedParams f;
  f.in = good;
  v = images;
  v[1].pitch = 48;
  f.in.images = v.data();
  f.dst = out.data();
  f.dtype = DType::uint8;
  CHECK_THROWS_WITH_AS(kn::fused_ref(f), doctest::Contains("images[1].pitch"), std::invalid_argument);
}

#if IMGPIPE_HAS_CUDA

namespace {

#define YUV_CUDA(expr) \
  REQUIRE_MESSAGE((expr) == cudaSuccess, #expr " failed: " << cudaGetErrorName(cudaGetLastError()))

// A YUV image in one cudaMallocPitch allocation, as NVDEC delivers its
// frames: every plane with the allocation's pitch, chroma after the luma rows
// (plus a gap of `gap` rows).
struct DeviceFrame {
  void* p = nullptr;
  SrcYuv yuv;
  DeviceFrame(const HostYuv& h, int gap) {
    const YuvImage img = h.image();
    const YuvFormat& f = img.format;
    const int planes = f.monochrome ? 1 : (f.uv_interleaved ? 2 : 3);
    const int ch = kn::chroma_height(f, h.height);
    const std::size_t row = static_cast<std::size_t>(h.width) * f.bytes;
    const std::size_t crow = static_cast<std::size_t>(kn::chroma_width(f, h.width)) * f.bytes;
    const std::size_t rowb[3] = {row, f.uv_interleaved ? 2 * crow : crow, crow};
    const int rows[3] = {h.height, ch, ch};
    std::size_t pitch = 0;
    const auto all_rows = static_cast<std::size_t>(h.height + gap + 2 * (ch + gap));
    YUV_CUDA(cudaMallocPitch(&p, &pitch, std::max(row, rowb[1]), all_rows));
    YUV_CUDA(cudaMemset(p, 0x5A, pitch * all_rows));
    yuv = h.yuv;
    std::size_t at = 0;
    for (int k = 0; k < planes; ++k) {
      yuv.plane[k] = at;
      yuv.pitch[k] = pitch;
      YUV_CUDA(cudaMemcpy2D(static_cast<std::uint8_t*>(p) + at, pitch, img.plane[k], img.pitch[k], rowb[k], rows[k],
                            cudaMemcpyHostToDevice));
      at += pitch * static_cast<std::size_t>(rows[k] + gap);
    }
  }
  ~DeviceFrame() { (void)cudaFree(p); }
  DeviceFrame(const DeviceFrame&) = delete;
  DeviceFrame& operator=(const DeviceFrame&) = delete;
};

// The mixed batch on the device: the batch buffer copied, the images given by
// pointer as pitched device frames. Returns the device descriptors.
struct DeviceMixed {
  test::DeviceCopy bytes;
  std::vector<std::unique_ptr<DeviceFrame>> frames;
  std::vector<SrcImage> images;
  DeviceMixed(const MixedBatch& m, const imgpipe::gpu::Stream& s)
      : bytes(m.mixed.bytes.data(), m.mixed.bytes.size(), s), images(m.mixed.images) {
    s.synchronize();
    for (std::size_t j = 0; j < m.yuv_index.size(); ++j) {
      SrcImage& im = images[m.yuv_index[j]];
      if (!im.data) continue;
      frames.push_back(std::make_unique<DeviceFrame>(m.yuv[j], static_cast<int>(j % 3)));
      im.data = static_cast<const std::uint8_t*>(frames.back()->p);
      im.yuv = frames.back()->yuv;
    }
  }
};

}  // namespace

TEST_CASE("yuv fused (GPU): a mixed batch of NV12 P016 I420 I422 I444 grey and BGR equals the CPU twin") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  const std::vector<cv::Mat> bgr = {test::random_image(1920, 1080, 3, 11), test::random_roi(129, 33, 3, 12),
                                    test::random_image(1, 1, 3, 13)};
  std::vector<HostYuv> yuv = some_yuv_images(200);
  MemLayout nv12;
  nv12.interleaved = true;
  yuv.push_back(pack_yuv(random_planes(1280, 720, 1, 1, 8, 300), nv12, ColorMatrix::bt709));
  MemLayout p016;
  p016.bytes = 2;
  p016.shift = 6;
  p016.interleaved = true;
  yuv.push_back(pack_yuv(random_planes(1919, 1081, 1, 1, 10, 301), p016, ColorMatrix::bt709));
  const MixedBatch m = mixed_batch(bgr, yuv, "yybyyybyyyb", 5);
  const DeviceMixed d(m, s);
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (Fit fit : {Fit::stretch, Fit::letterbox, Fit::center_crop})
      for (auto [W, H] : {std::pair{640, 640}, std::pair{129, 31}, std::pair{1, 1}})
        for (DType dt : {DType::float32, DType::float16, DType::uint8})
          for (Layout l : {Layout::nchw, Layout::nhwc})
            for (bool swap : {false, true}) {
              FusedParams f = fused_params(m.mixed, m.mixed.bytes.data(), W, H, interp, fit, dt, l, swap);
              const std::size_t bytes = kn::output_bytes(f);
              std::vector<std::uint8_t> want(bytes);
              f.dst = want.data();
              kn::fused_ref(f);
              imgpipe::gpu::DeviceBuffer d_out(0, bytes);
              f.in.src = d.bytes.get();
              f.in.images = d.images.data();
              f.dst = d_out.get();
              kn::fused_gpu(f, s.get());
              const std::vector<std::uint8_t> got = test::download(d_out, bytes, s);
              INFO("interp " << static_cast<int>(interp) << " fit " << static_cast<int>(fit) << " " << W << "x" << H
                             << " " << dname(dt) << " " << imgpipe::to_string(l) << " swap " << swap);
              const test::Diff diff = test::diff_u8(got.data(), want.data(), bytes);
              INFO(diff.count << " bytes differ, first at " << diff.first);
              CHECK(diff.count == 0);
            }
}

TEST_CASE("yuv fused (GPU): resize letterbox and centre crop of a mixed batch equal their CPU twins") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  const std::vector<cv::Mat> bgr = {test::random_image(300, 200, 3, 21), test::random_roi(17, 9, 3, 22)};
  // More YUV images than one launch takes (16), so that a call makes several.
  std::vector<HostYuv> yuv = some_yuv_images(400);
  const std::vector<HostYuv> more = some_yuv_images(500);
  yuv.insert(yuv.end(), more.begin(), more.end());
  yuv.insert(yuv.end(), more.begin(), more.begin() + 5);
  std::string order;
  for (std::size_t k = 0; k < yuv.size(); ++k) order += k == 3 || k == 15 ? "yb" : "y";
  const MixedBatch m = mixed_batch(bgr, yuv, order, 1);
  const DeviceMixed d(m, s);
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (Fit fit : {Fit::stretch, Fit::letterbox, Fit::center_crop})
      for (auto [W, H] : {std::pair{320, 240}, std::pair{33, 65}}) {
        ResizeBatch b = test::batch_of(m.mixed, m.mixed.bytes.data(), W, H, interp, fit);
        const std::size_t bytes = kn::output_bytes(b);
        std::vector<std::uint8_t> want(bytes);
        imgpipe::gpu::DeviceBuffer d_out(0, bytes);
        ResizeBatch db = b;
        db.src = d.bytes.get();
        db.images = d.images.data();
        auto* out = static_cast<std::uint8_t*>(d_out.get());
        switch (fit) {
          case Fit::stretch:
            kn::resize_ref(b, want.data());
            kn::resize_gpu(db, out, s.get());
            break;
          case Fit::letterbox:
            kn::letterbox_ref(b, want.data());
            kn::letterbox_gpu(db, out, nullptr, s.get());
            break;
          case Fit::center_crop:
            kn::center_crop_ref(b, want.data());
            kn::center_crop_gpu(db, out, s.get());
            break;
        }
        const std::vector<std::uint8_t> got = test::download(d_out, bytes, s);
        INFO("interp " << static_cast<int>(interp) << " fit " << static_cast<int>(fit) << " " << W << "x" << H);
        const test::Diff diff = test::diff_u8(got.data(), want.data(), bytes);
        INFO(diff.count << " bytes differ, first at " << diff.first);
        CHECK(diff.count == 0);
        // And the fused kernel (u8 NHWC is the canvas itself).
        FusedParams f;
        f.in = db;
        f.dst = d_out.get();
        f.dtype = DType::uint8;
        f.layout = Layout::nhwc;
        YUV_CUDA(cudaMemset(d_out.get(), 0, bytes));
        kn::fused_gpu(f, s.get());
        CHECK(test::download(d_out, bytes, s) == want);
      }
}


TEST_CASE("yuv fused (GPU): mirrored images (SrcImage flip_x, flip_y) equal their CPU twins, which mirror the canvas") {
  IMGPIPE_SKIP_UNLESS(test::have_gpu(), "no CUDA device: GPU twin not run");
  imgpipe::gpu::Stream s(0);
  const std::vector<cv::Mat> bgr = {test::random_image(300, 200, 3, 31), test::random_roi(17, 9, 3, 32)};
  const std::vector<HostYuv> yuv = some_yuv_images(600);
  const MixedBatch m = mixed_batch(bgr, yuv, "ybyyby", 1);
  DeviceMixed d(m, s);
  std::vector<SrcImage> host = m.mixed.images;
  for (std::size_t i = 0; i < host.size(); ++i) {
    host[i].flip_x = d.images[i].flip_x = i % 2 == 0;
    host[i].flip_y = d.images[i].flip_y = i % 3 == 0;
  }
  for (Interp interp : {Interp::linear, Interp::nearest})
    for (Fit fit : {Fit::stretch, Fit::letterbox, Fit::center_crop})
      for (auto [W, H] : {std::pair{64, 48}, std::pair{33, 65}})
        for (DType dt : {DType::float32, DType::uint8}) {
          const Layout l = dt == DType::uint8 ? Layout::nhwc : Layout::nchw;
          FusedParams f = fused_params(m.mixed, m.mixed.bytes.data(), W, H, interp, fit, dt, l, false);
          f.in.images = host.data();
          const std::size_t bytes = kn::output_bytes(f);
          std::vector<std::uint8_t> want(bytes);
          f.dst = want.data();
          kn::fused_ref(f);
          if (dt == DType::uint8) {  // the twin mirrors: against the unmirrored canvas, flipped by OpenCV
            FusedParams plain = f;
            plain.in.images = m.mixed.images.data();
            std::vector<std::uint8_t> unflipped(bytes);
            plain.dst = unflipped.data();
            kn::fused_ref(plain);
            const std::size_t per = bytes / host.size();
            for (std::size_t i = 0; i < host.size(); ++i) {
              const cv::Mat a(H, W, CV_8UC3, unflipped.data() + i * per);
              cv::Mat mirrored = a.clone();
              if (host[i].flip_x || host[i].flip_y)
                cv::flip(a, mirrored, host[i].flip_x && host[i].flip_y ? -1 : host[i].flip_x ? 1 : 0);
              CHECK(std::memcmp(mirrored.data, want.data() + i * per, per) == 0);
            }
          }
          imgpipe::gpu::DeviceBuffer d_out(0, bytes);
          f.in.src = d.bytes.get();
          f.in.images = d.images.data();
          f.dst = d_out.get();
          kn::fused_gpu(f, s.get());
          const std::vector<std::uint8_t> got = test::download(d_out, bytes, s);
          INFO("interp " << static_cast<int>(interp) << " fit " << static_cast<int>(fit) << " " << W << "x" << H << " "
                         << dname(dt));
          const test::Diff diff = test::diff_u8(got.data(), want.data(), bytes);
          INFO(diff.count << " bytes differ, first at " << diff.first);
          CHECK(diff.count == 0);
        }
}

#endif  // IMGPIPE_HAS_CUDA
