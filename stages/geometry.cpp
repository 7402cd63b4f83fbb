#include "geometry.hpp"

#include "kernels/resize.hpp"

namespace imgpipe::stages {

SampleGeometry decoded_geometry(int stored_width, int stored_height, int orientation, int scale) {
  SampleGeometry g;
  g.stored_width = stored_width;
  g.stored_height = stored_height;
  g.orientation = orientation >= 1 && orientation <= 8 ? orientation : 1;
  const bool turned = g.orientation >= 5;  // 5..8 transpose
  g.width = turned ? stored_height : stored_width;
  g.height = turned ? stored_width : stored_height;
  g.decode_scale = scale > 0 ? scale : 1;
  return g;
}

namespace {

kernels::Fit fit_of(ResizeMode m) {
  switch (m) {
    case ResizeMode::letterbox: return kernels::Fit::letterbox;
    case ResizeMode::center_crop: return kernels::Fit::center_crop;
    default: return kernels::Fit::stretch;
  }
}

// Whether orientation o reverses the displayed x (or y) axis against the
// stored axis it comes from (stored_to_displayed in core/src/geometry.cpp).
bool reverses_x(int o) { return o == 2 || o == 3 || o == 6 || o == 7; }
bool reverses_y(int o) { return o == 3 || o == 4 || o == 7 || o == 8; }

// Displayed full-size coordinate x of a reduced frame's coordinate u along
// one axis of displayed length n: x = r * u + shift. libjpeg's scaled IDCT
// turns each r x r block of stored pixels into one, so a stored coordinate is
// r times the reduced one; the last block of an axis that is not a multiple
// of r reaches past the image, which matters when the orientation reverses
// the axis: x = n - r * (ceil(n / r) - u).
double reduction_shift(int n, int r, bool reversed) {
  if (!reversed || r == 1) return 0;
  return n - static_cast<double>(r) * ((n + r - 1) / r);
}

}  // namespace

std::optional<Augment> augment_of(const TransformConfig& t, std::uint64_t epoch, std::uint64_t item,
                                  std::int64_t frame, const SampleGeometry& g, int frame_width, int frame_height) {
  if (!t.resize.boxed() && !(t.flip.horizontal > 0) && !(t.flip.vertical > 0)) return {};
  // The box is drawn on the original as displayed (a boxed resize decodes
  // at full size: the frame is the original, or the box alone).
  const int w = g.width > 0 ? g.width : frame_width, h = g.height > 0 ? g.height : frame_height;
  return draw_augment(t, epoch, item, frame, w, h);
}

void complete_geometry(SampleGeometry& g, int frame_width, int frame_height, const ResizeConfig& resize,
                       const Augment* augment) {
  if (g.width <= 0 || g.height <= 0) g = decoded_geometry(frame_width, frame_height, 1, 1);
  const bool boxed = augment != nullptr && resize.boxed();
  kernels::SrcImage im;
  im.width = boxed ? augment->width : frame_width;
  im.height = boxed ? augment->height : frame_height;
  kernels::ResizeBatch b;
  b.images = &im;
  b.batch = 1;
  b.width = resize.width;
  b.height = resize.height;
  b.fit = boxed ? kernels::Fit::stretch : fit_of(resize.mode);
  const kernels::Placement p = kernels::placement(b, 0);
  // cv::resize (and the kernels, detail::plan_image) copy when the resized
  // size is the frame's, whatever the factor says.
  const bool copy = p.width == im.width && p.height == im.height;
  const double kx = copy ? 1.0 : p.inv_scale_x, ky = copy ? 1.0 : p.inv_scale_y;
  const int r = g.decode_scale;
  g.resize = resize.mode;
  g.scale_x = kx / r;
  g.scale_y = ky / r;
  g.offset_x = p.x0 - g.scale_x * reduction_shift(g.width, r, reverses_x(g.orientation));
  g.offset_y = p.y0 - g.scale_y * reduction_shift(g.height, r, reverses_y(g.orientation));
  g.box_x = boxed ? augment->x : 0;
  g.box_y = boxed ? augment->y : 0;
  g.box_width = boxed ? augment->width : g.width;
  g.box_height = boxed ? augment->height : g.height;
  g.offset_x -= g.scale_x * g.box_x;  // the box's origin is the resize's (r is 1 with a box)
  g.offset_y -= g.scale_y * g.box_y;
  g.resized_width = p.width;
  g.resized_height = p.height;
  const bool letterbox = resize.mode == ResizeMode::letterbox, crop = resize.mode == ResizeMode::center_crop && !boxed;
  g.pad_left = letterbox ? p.x0 : 0;
  g.pad_top = letterbox ? p.y0 : 0;
  g.crop_x = crop ? -p.x0 : 0;
  g.crop_y = crop ? -p.y0 : 0;
  g.tensor_width = resize.width;
  g.tensor_height = resize.height;
  // A flip mirrors the tensor: x -> W - x (continuous coordinates).
  g.flip_x = augment != nullptr && augment->flip_x;
  g.flip_y = augment != nullptr && augment->flip_y;
  if (g.flip_x) {
    g.scale_x = -g.scale_x;
    g.offset_x = resize.width - g.offset_x;
    if (letterbox) g.pad_left = resize.width - p.x0 - p.width;
    if (crop) g.crop_x = p.width - resize.width + p.x0;
  }
  if (g.flip_y) {
    g.scale_y = -g.scale_y;
    g.offset_y = resize.height - g.offset_y;
    if (letterbox) g.pad_top = resize.height - p.y0 - p.height;
    if (crop) g.crop_y = p.height - resize.height + p.y0;
  }
}

kernels::ResizeBatch resize_batch_of(const ResizeConfig& r) {
  kernels::ResizeBatch k;
  k.channels = 3;
  k.width = r.width;
  k.height = r.height;
  k.interp = r.interpolation == Interpolation::nearest ? kernels::Interp::nearest : kernels::Interp::linear;
  k.fit = r.boxed()                           ? kernels::Fit::stretch  // the box (SrcImage's window), stretched
          : r.mode == ResizeMode::letterbox   ? kernels::Fit::letterbox
          : r.mode == ResizeMode::center_crop ? kernels::Fit::center_crop
                                              : kernels::Fit::stretch;
  k.pad_value = static_cast<std::uint8_t>(r.pad_value);
  return k;
}

}  // namespace imgpipe::stages
