#include "imgpipe/augment.hpp"

#include <algorithm>
#include <cmath>

namespace imgpipe {

namespace {

std::uint64_t mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// Python's round(): half to even (the default rounding mode of nearbyint).
int round_half_even(double v) noexcept { return static_cast<int>(std::nearbyint(v)); }

}  // namespace

SampleRandom::SampleRandom(std::uint64_t seed, std::uint64_t epoch, std::uint64_t item, std::int64_t frame) noexcept
    : state_(mix(mix(mix(mix(seed + kGolden) ^ epoch) ^ item) ^ static_cast<std::uint64_t>(frame))) {}

std::uint64_t SampleRandom::next() noexcept {
  state_ += kGolden;
  return mix(state_);
}

double SampleRandom::uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SampleRandom::uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }

std::int64_t SampleRandom::integer(std::int64_t lo, std::int64_t hi) noexcept {
  if (hi <= lo) return lo;
  const std::uint64_t bound = static_cast<std::uint64_t>(hi - lo) + 1;
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  std::uint64_t x;
  do x = next(); while (x >= limit);
  return lo + static_cast<std::int64_t>(x % bound);
}

Augment random_resized_crop(int width, int height, const std::array<float, 2>& scale,
                            const std::array<float, 2>& ratio, SampleRandom& r) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(static_cast<double>(ratio[0])), log_hi = std::log(static_cast<double>(ratio[1]));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * r.uniform(scale[0], scale[1]);
    const double aspect = std::exp(r.uniform(log_lo, log_hi));
    const int w = round_half_even(std::sqrt(target * aspect));
    const int h = round_half_even(std::sqrt(target / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      Augment a;
      a.y = static_cast<int>(r.integer(0, height - h));
      a.x = static_cast<int>(r.integer(0, width - w));
      a.width = w;
      a.height = h;
      return a;
    }
  }
  // The fallback: the whole image, cut to the nearest ratio in the range.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < std::min(ratio[0], ratio[1])) {
    h = round_half_even(w / static_cast<double>(std::min(ratio[0], ratio[1])));
  } else if (in_ratio > std::max(ratio[0], ratio[1])) {
    w = round_half_even(h * static_cast<double>(std::max(ratio[0], ratio[1])));
  }
  w = std::clamp(w, 1, width);
  h = std::clamp(h, 1, height);
  Augment a;
  a.y = (height - h) / 2;
  a.x = (width - w) / 2;
  a.width = w;
  a.height = h;
  return a;
}

Augment center_box(int width, int height, int target_width, int target_height, int short_side) {
  // Resize(S) scales by S / min(width, height); CenterCrop's window of the
  // scaled image, mapped back, is target x (min side / S), rounded half to even.
  const double back = static_cast<double>(std::min(width, height)) / short_side;
  Augment a;
  a.width = std::clamp(round_half_even(target_width * back), 1, width);
  a.height = std::clamp(round_half_even(target_height * back), 1, height);
  // torchvision's CenterCrop: offset int(round((size - crop) / 2)).
  a.x = round_half_even((width - a.width) / 2.0);
  a.y = round_half_even((height - a.height) / 2.0);
  return a;
}

Augment draw_augment(const TransformConfig& t, std::uint64_t epoch, std::uint64_t item, std::int64_t frame,
                     int width, int height) {
  SampleRandom r(static_cast<std::uint64_t>(t.seed), epoch, item, frame);
  Augment a;
  if (t.resize.mode == ResizeMode::random_crop) {
    a = random_resized_crop(width, height, t.resize.scale, t.resize.ratio, r);
  } else if (t.resize.boxed()) {
    a = center_box(width, height, t.resize.width, t.resize.height, t.resize.short_side);
  } else {
    a.width = width;
    a.height = height;
  }
  if (t.flip.horizontal > 0) a.flip_x = r.uniform() < t.flip.horizontal;
  if (t.flip.vertical > 0) a.flip_y = r.uniform() < t.flip.vertical;
  return a;
}

}  // namespace imgpipe
