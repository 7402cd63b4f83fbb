// How a delivered sample's tensor relates to the image it came from, and the
// mapping of boxes and points between the two (as OpenCV's
// cv::dnn::Image2BlobParams::blobRectToImageRect does for blobFromImage).
//
// Coordinates are continuous pixel coordinates: pixel (i, j) of an image is
// the unit square [i, i + 1) x [j, j + 1), so its centre is (i + 0.5, j + 0.5)
// and an image of width x height spans [0, width] x [0, height]. A box is
// [x, x + width) x [y, y + height) in those coordinates.
//
// "Displayed" coordinates are those of the original image at full size as a
// viewer shows it, i.e. after the EXIF orientation was applied (what
// cv::imread returns); "stored" coordinates are those of the pixels as the
// file stores them, before the orientation. The two differ only for a JPEG
// whose EXIF orientation (2..8) the pipeline applied.
#pragma once

#include <cstdint>

#include "imgpipe/config.hpp"

namespace imgpipe {

// One sample's geometry, filled in by the pipeline for every delivered sample
// (SampleId::geometry). The mapping from displayed coordinates (x, y) of the
// original to tensor coordinates (u, v) is, per axis, affine:
//
//   u = offset_x + scale_x * x,   v = offset_y + scale_y * y
//
// and it is the mapping the resize actually applied, reduced decode
// included: a JPEG decoded at 1/r size (decode.reduced) has scale_x =
// (tensor pixels per decoded pixel) / r, and where the orientation reverses
// an axis whose length is not a multiple of r, offset_x also holds the part
// of the last 1/r block that lies beyond the image. Tensor pixels outside
// [pad_left, pad_left + resized_width) x [pad_top, pad_top + resized_height)
// are letterbox padding.
struct SampleGeometry {
  // The original at full size, as displayed (after the orientation applied),
  // whatever size it was decoded at.
  int width = 0, height = 0;
  // The same image as stored, before the orientation: equal to width/height,
  // or swapped for orientations 5..8.
  int stored_width = 0, stored_height = 0;
  // The EXIF orientation the pipeline applied (1..8; 1 = none): the file's tag
  // for a JPEG decoded on the CPU with decode.exif_orientation true, else 1
  // (then displayed == stored coordinates). PNG, BMP, WebP, TIFF, live video
  // frames and pushed frames: 1. A video file's frames: the code of its
  // container's display rotation (6: 90 degrees clockwise, 3: 180, 8: 270;
  // 2, 4, 5, 7 mirrored) when input.video.orientation, else 1.
  int orientation = 1;
  // The DCT reduction the JPEG was decoded at (1, 2, 4 or 8; 1 for every
  // other format and for the GPU's JPEG engines, which decode at full size).
  int decode_scale = 1;
  ResizeMode resize = ResizeMode::stretch;  // the mode applied (transform.resize.mode)
  double scale_x = 0, scale_y = 0;    // tensor pixels per original (displayed) pixel; < 0 when flipped
  double offset_x = 0, offset_y = 0;  // tensor coordinate of the original's (0, 0)
  // The image's size in the tensor after resizing, before padding or cropping:
  // the tensor size for stretch, smaller (padded) for letterbox, larger (cut)
  // for center_crop.
  int resized_width = 0, resized_height = 0;
  int pad_left = 0, pad_top = 0;  // letterbox: padding columns left / rows above the image (else 0)
  int crop_x = 0, crop_y = 0;     // center_crop: the tensor's origin in the resized image (else 0)
  int tensor_width = 0, tensor_height = 0;  // transform.resize.width / height
  // The box of the original (displayed, full size) the tensor was made
  // from: random_crop's (imgpipe/augment.hpp), else the whole image; and the
  // flips applied after the resize (transform.flip). A flip makes that
  // axis's scale negative: image_to_tensor maps it as it does the others.
  int box_x = 0, box_y = 0, box_width = 0, box_height = 0;
  bool flip_x = false, flip_y = false;
  std::uint64_t epoch = 0;  // the run's epoch, whose draws these are

  bool operator==(const SampleGeometry&) const = default;
};

struct Point {
  double x = 0, y = 0;
  bool operator==(const Point&) const = default;
};

// [x, x + width) x [y, y + height); width and height >= 0.
struct Box {
  double x = 0, y = 0, width = 0, height = 0;
  bool operator==(const Box&) const = default;
};

enum class ImageCoords : std::uint8_t {
  displayed,  // the original as oriented (cv::imread), full size
  stored,     // the original's pixels as the file stores them (before the EXIF orientation)
};

// A point of the tensor (u, v) in the original image, clipped to
// [0, width] x [0, height] (a point in the letterbox padding lands on the
// nearest edge). For a pixel's centre pass (i + 0.5, j + 0.5). Throws
// std::invalid_argument when g has no scale (a default SampleGeometry) or an
// orientation outside 1..8.
Point tensor_to_image(const SampleGeometry& g, Point p, ImageCoords to = ImageCoords::displayed);

// A box of the tensor in the original image, clipped to it (an empty box,
// width or height 0, when it lies wholly in the padding). In stored
// coordinates the box is the stored pixels the displayed box shows (the
// orientation only permutes and mirrors the axes, so it stays a box).
// Throws as tensor_to_image.
Box tensor_to_image(const SampleGeometry& g, const Box& b, ImageCoords to = ImageCoords::displayed);

// The inverse, unclipped: a point / box of the original (displayed or
// stored coordinates) in tensor coordinates (outside [0, tensor_width] for
// what center_crop cut away). Throws as tensor_to_image.
Point image_to_tensor(const SampleGeometry& g, Point p, ImageCoords from = ImageCoords::displayed);
Box image_to_tensor(const SampleGeometry& g, const Box& b, ImageCoords from = ImageCoords::displayed);

// Between the two image coordinate systems of g (orientation, width, height).
Point displayed_to_stored(const SampleGeometry& g, Point p);
Point stored_to_displayed(const SampleGeometry& g, Point p);

}  // namespace imgpipe
