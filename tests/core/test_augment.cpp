// The random augmentations' draws (imgpipe/augment.hpp): torchvision's
// RandomResizedCrop rule, checked by the distributions it must give, its
// fallback, the flips' rates, and the key (seed, epoch, item, frame).
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "imgpipe/augment.hpp"

using imgpipe::Augment;
using imgpipe::SampleRandom;

namespace {

// Pearson's chi-square of counts against equal expectations.
double chi_square(const std::vector<int>& counts, double expected) {
  double x = 0;
  for (const int c : counts) x += (c - expected) * (c - expected) / expected;
  return x;
}

}  // namespace

TEST_CASE("augment: random_resized_crop's area share and log aspect ratio are uniform, as torchvision draws them") {
  // A 4000 x 4000 image with scale [0.08, 0.5]: every first draw fits
  // (the widest box is sqrt(0.5 * 4/3) of the side), so the boxes show the
  // draw itself: area share uniform in the scale range, log(w / h) uniform
  // in [log 3/4, log 4/3]. A sampler that draws the sides uniformly (or the
  // ratio itself uniformly) fails the same test.
  constexpr int kDraws = 20000, kBins = 10;
  const std::array<float, 2> scale{0.08f, 0.5f}, ratio{3.0f / 4.0f, 4.0f / 3.0f};
  std::vector<int> by_area(kBins, 0), by_ratio(kBins, 0), by_side(kBins, 0);
  const double lo = std::log(3.0 / 4.0), hi = std::log(4.0 / 3.0);
  for (int i = 0; i < kDraws; ++i) {
    SampleRandom r(7, 0, static_cast<std::uint64_t>(i), -1);
    const Augment a = imgpipe::random_resized_crop(4000, 4000, scale, ratio, r);
    REQUIRE(a.x >= 0);
    REQUIRE(a.y >= 0);
    REQUIRE(a.x + a.width <= 4000);
    REQUIRE(a.y + a.height <= 4000);
    const double share = static_cast<double>(a.width) * a.height / (4000.0 * 4000.0);
    const double lr = std::log(static_cast<double>(a.width) / a.height);
    const auto bin = [](double v, double a0, double a1) {
      return std::min(kBins - 1, std::max(0, static_cast<int>((v - a0) / (a1 - a0) * kBins)));
    };
    ++by_area[static_cast<std::size_t>(bin(share, 0.08, 0.5))];
    ++by_ratio[static_cast<std::size_t>(bin(lr, lo, hi))];
    // The side of the square of the same area: not uniform when the area is.
    ++by_side[static_cast<std::size_t>(bin(std::sqrt(share), std::sqrt(0.08), std::sqrt(0.5)))];
  }
  // 9 degrees of freedom: 27.88 is the 0.1% critical value.
  const double expected = static_cast<double>(kDraws) / kBins;
  CHECK(chi_square(by_area, expected) < 27.88);
  CHECK(chi_square(by_ratio, expected) < 27.88);
  CHECK(chi_square(by_side, expected) > 100);  // the uniform-side alternative is far off
}

TEST_CASE("augment: a box that cannot fit in 10 draws falls back to the central box of the nearest ratio") {
  const std::array<float, 2> scale{0.9f, 1.0f}, ratio{3.0f / 4.0f, 4.0f / 3.0f};
  // 1000 x 100 (ratio 10): 90% of the area at ratio <= 4/3 is never 100 rows high or less.
  SampleRandom r(1, 2, 3, -1);
  const Augment wide = imgpipe::random_resized_crop(1000, 100, scale, ratio, r);
  CHECK(wide == Augment{433, 0, 133, 100, false, false});  // h = 100, w = round(100 * 4/3)
  SampleRandom r2(1, 2, 3, -1);
  const Augment tall = imgpipe::random_resized_crop(100, 1000, scale, ratio, r2);
  CHECK(tall == Augment{0, 433, 100, 133, false, false});  // w = 100, h = round(100 / (3/4))
  // A ratio range around the image's own: the whole image.
  SampleRandom r3(1, 2, 3, -1);
  CHECK(imgpipe::random_resized_crop(50, 40, {2.0f, 3.0f}, {1.0f, 1.5f}, r3) == Augment{0, 0, 50, 40, false, false});
}

TEST_CASE("augment: the draws are keyed by seed, epoch, item and frame, and flips come at their rates") {
  imgpipe::TransformConfig t;
  t.resize.mode = imgpipe::ResizeMode::random_crop;
  t.flip.horizontal = 0.5f;
  t.flip.vertical = 0.1f;
  t.seed = 11;
  const Augment a = imgpipe::draw_augment(t, 3, 42, -1, 640, 480);
  CHECK(imgpipe::draw_augment(t, 3, 42, -1, 640, 480) == a);  // reproducible
  std::set<std::tuple<int, int, int, int>> boxes;
  for (const auto& [epoch, item, frame] : std::vector<std::tuple<std::uint64_t, std::uint64_t, std::int64_t>>{
           {3, 42, -1}, {4, 42, -1}, {3, 43, -1}, {3, 42, 0}}) {
    const Augment b = imgpipe::draw_augment(t, epoch, item, frame, 640, 480);
    boxes.insert({b.x, b.y, b.width, b.height});
  }
  CHECK(boxes.size() == 4);  // another epoch, item or frame: another box
  t.seed = 12;
  const Augment other_seed = imgpipe::draw_augment(t, 3, 42, -1, 640, 480);
  CHECK(std::make_tuple(other_seed.x, other_seed.y, other_seed.width) != std::make_tuple(a.x, a.y, a.width));
  // Rates over many items: within 4 standard deviations.
  int h = 0, v = 0;
  constexpr int kItems = 20000;
  for (int i = 0; i < kItems; ++i) {
    const Augment b = imgpipe::draw_augment(t, 0, static_cast<std::uint64_t>(i), -1, 64, 64);
    h += b.flip_x ? 1 : 0;
    v += b.flip_y ? 1 : 0;
  }
  CHECK(std::abs(h - 0.5 * kItems) < 4 * std::sqrt(kItems * 0.25));
  CHECK(std::abs(v - 0.1 * kItems) < 4 * std::sqrt(kItems * 0.09));
  // Nothing drawn without random_crop: the whole image.
  imgpipe::TransformConfig plain;
  CHECK(imgpipe::draw_augment(plain, 0, 1, -1, 64, 48) == Augment{0, 0, 64, 48, false, false});
  // integer() stays in its bounds and reaches both.
  SampleRandom r(0, 0, 0, -1);
  std::set<std::int64_t> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(r.integer(-2, 2));
  CHECK(seen == std::set<std::int64_t>{-2, -1, 0, 1, 2});
}

TEST_CASE("augment: center_box is torchvision's Resize(S) then CenterCrop as a box of the original") {
  // 500 x 375, Resize(256): 341 x 256 (scale 256 / 375); CenterCrop(224):
  // a 224 x 224 window, which is 328.125 original pixels: 328, centred
  // ((500 - 328) / 2 = 86, (375 - 328) / 2 = 23.5, rounded half to even: 24).
  const Augment a = imgpipe::center_box(500, 375, 224, 224, 256);
  CHECK(a.width == 328);
  CHECK(a.height == 328);
  CHECK(a.x == 86);
  CHECK(a.y == 24);
  // Portrait, a non-square target: the short side is the width.
  const Augment p = imgpipe::center_box(300, 800, 160, 120, 200);
  CHECK(p.width == 240);   // 160 * 300 / 200
  CHECK(p.height == 180);  // 120 * 300 / 200
  CHECK(p.x == 30);
  CHECK(p.y == 310);
  // No flips, no draws: the same box whatever the epoch.
  imgpipe::TransformConfig t;
  t.resize = {224, 224, imgpipe::ResizeMode::center_crop};
  t.resize.short_side = 256;
  CHECK(imgpipe::draw_augment(t, 0, 7, -1, 500, 375) == a);
  CHECK(imgpipe::draw_augment(t, 9, 7, -1, 500, 375) == a);
  // short_side equal to the image's short side and the target's: the whole short side.
  const Augment s = imgpipe::center_box(256, 256, 256, 256, 256);
  CHECK(s == Augment{0, 0, 256, 256});
}
