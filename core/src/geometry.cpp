#include "imgpipe/geometry.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace imgpipe {

namespace {

void check(const SampleGeometry& g) {
  if (!(g.scale_x != 0) || !(g.scale_y != 0))
    throw std::invalid_argument("SampleGeometry: no scale (scale_x and scale_y must not be 0; a default geometry?)");
  if (g.orientation < 1 || g.orientation > 8)
    throw std::invalid_argument("SampleGeometry: orientation must be 1..8, got " + std::to_string(g.orientation));
}

// The two opposite corners of a box, mapped by f, as a box again (the maps
// here are per-axis monotone, possibly swapping or mirroring the axes).
template <class F>
Box map_corners(const Box& b, F f) {
  const Point a = f(Point{b.x, b.y}), c = f(Point{b.x + b.width, b.y + b.height});
  const double x0 = std::min(a.x, c.x), x1 = std::max(a.x, c.x);
  const double y0 = std::min(a.y, c.y), y1 = std::max(a.y, c.y);
  return {x0, y0, x1 - x0, y1 - y0};
}

Point clip(const SampleGeometry& g, Point p) {
  return {std::clamp(p.x, 0.0, static_cast<double>(g.width)), std::clamp(p.y, 0.0, static_cast<double>(g.height))};
}

}  // namespace

// The stored pixel a displayed one shows: apply_exif_orientation (stages/
// jpeg_decode.cpp) makes the displayed image from the stored one by
// transposing and/or flipping; this is its inverse, in continuous coordinates.
Point displayed_to_stored(const SampleGeometry& g, Point p) {
  const double ws = g.stored_width, hs = g.stored_height;
  switch (g.orientation) {
    case 2: return {ws - p.x, p.y};
    case 3: return {ws - p.x, hs - p.y};
    case 4: return {p.x, hs - p.y};
    case 5: return {p.y, p.x};
    case 6: return {p.y, hs - p.x};
    case 7: return {ws - p.y, hs - p.x};
    case 8: return {ws - p.y, p.x};
    default: return p;
  }
}

Point stored_to_displayed(const SampleGeometry& g, Point s) {
  const double ws = g.stored_width, hs = g.stored_height;
  switch (g.orientation) {
    case 2: return {ws - s.x, s.y};
    case 3: return {ws - s.x, hs - s.y};
    case 4: return {s.x, hs - s.y};
    case 5: return {s.y, s.x};
    case 6: return {hs - s.y, s.x};
    case 7: return {hs - s.y, ws - s.x};
    case 8: return {s.y, ws - s.x};
    default: return s;
  }
}

Point tensor_to_image(const SampleGeometry& g, Point p, ImageCoords to) {
  check(g);
  const Point d = clip(g, {(p.x - g.offset_x) / g.scale_x, (p.y - g.offset_y) / g.scale_y});
  return to == ImageCoords::stored ? displayed_to_stored(g, d) : d;
}

Box tensor_to_image(const SampleGeometry& g, const Box& b, ImageCoords to) {
  check(g);
  const Box d = map_corners(b, [&](Point p) { return tensor_to_image(g, p, ImageCoords::displayed); });
  if (to == ImageCoords::displayed) return d;
  return map_corners(d, [&](Point p) { return displayed_to_stored(g, p); });
}

Point image_to_tensor(const SampleGeometry& g, Point p, ImageCoords from) {
  check(g);
  const Point d = from == ImageCoords::stored ? stored_to_displayed(g, p) : p;
  return {g.offset_x + g.scale_x * d.x, g.offset_y + g.scale_y * d.y};
}

Box image_to_tensor(const SampleGeometry& g, const Box& b, ImageCoords from) {
  check(g);
  return map_corners(b, [&](Point p) { return image_to_tensor(g, p, from); });
}

}  // namespace imgpipe
