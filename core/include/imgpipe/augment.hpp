// The random augmentations of a training run, drawn per sample and epoch:
// torchvision's RandomResizedCrop box (transform.resize.mode random_crop,
// with its scale and ratio) and the flips (transform.flip). Every draw comes
// from (transform.seed, epoch, the sample's place in the looped input list
// before the shuffle, its frame), so the same sample gets the same box and
// flips whatever route, thread, batch or rank handles it, and each epoch
// new ones. The pipeline records them in each sample's SampleGeometry; a
// user can draw them again with draw_augment().
#pragma once

#include <cstdint>

#include "imgpipe/config.hpp"

namespace imgpipe {

// A box of the image as displayed (full size, orientation applied): columns
// [x, x + width), rows [y, y + height); and the flips applied after resizing it.
struct Augment {
  int x = 0, y = 0, width = 0, height = 0;
  bool flip_x = false, flip_y = false;
  bool operator==(const Augment&) const = default;
};

// A stream of uniform draws for one sample (SplitMix64 over a key mixed from
// the four numbers): the same on every platform.
class SampleRandom {
 public:
  SampleRandom(std::uint64_t seed, std::uint64_t epoch, std::uint64_t item, std::int64_t frame) noexcept;
  std::uint64_t next() noexcept;
  double uniform() noexcept;                        // [0, 1), 53 bits
  double uniform(double lo, double hi) noexcept;    // [lo, hi)
  std::int64_t integer(std::int64_t lo, std::int64_t hi) noexcept;  // [lo, hi], unbiased

 private:
  std::uint64_t state_;
};

// torchvision's RandomResizedCrop.get_params on a width x height image:
// up to 10 draws of (area share uniform in scale, log ratio uniform in
// log ratio), each rounded half to even; the first whose box fits is placed
// uniformly; else the largest central box whose ratio is clamped into the
// range. Draws from `r` in that order.
Augment random_resized_crop(int width, int height, const std::array<float, 2>& scale,
                            const std::array<float, 2>& ratio, SampleRandom& r);

// torchvision's Resize(short_side) then CenterCrop(target_height,
// target_width) on a width x height image, as a box of the image: its centre,
// target x min(width, height) / short_side (transform.resize.mode
// center_crop with short_side). Draws nothing.
Augment center_box(int width, int height, int target_width, int target_height, int short_side);

// The sample's augmentations under `t`: the box (random_crop's, or
// center_box under center_crop with short_side; else the whole image) and
// the flips (each drawn when its probability is > 0, after the box).
Augment draw_augment(const TransformConfig& t, std::uint64_t epoch, std::uint64_t item, std::int64_t frame,
                     int width, int height);

}  // namespace imgpipe
