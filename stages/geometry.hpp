// The per-sample geometry (imgpipe/geometry.hpp) as the stages make it: the
// decode stage (or the probe, for a JPEG the GPU decodes) says what was
// decoded — the original's stored and displayed size, the orientation
// applied, the DCT reduction — and the stage that knows the frame the resize
// starts from completes it with the resize's own placement, from the
// functions the kernels and their CPU twins use (kernels::placement), so the
// geometry is the one the pixels went through on either backend.
#pragma once

#include <cstdint>
#include <optional>

#include "imgpipe/augment.hpp"
#include "imgpipe/config.hpp"
#include "imgpipe/geometry.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

// What decoding a file of `stored_width` x `stored_height` (as its header
// says) with EXIF orientation `orientation` (1..8) applied, at 1/`scale`
// size, tells: the decode part of the geometry. The resize part is zero.
SampleGeometry decoded_geometry(int stored_width, int stored_height, int orientation, int scale);

// Completes `g` for a frame of frame_width x frame_height (as decoded,
// oriented and possibly reduced) resized under `resize`: the resize mode,
// scale, offset, padding or crop and tensor size. A `g` without a decode part
// (width 0: a video frame, a pushed frame) takes the frame itself as the
// original. The affine map is exact for interpolations that sample pixel
// centres (linear, cubic, area); nearest samples up to half a source pixel
// before the centre.
// `augment` (random_crop's box in the frame, which is then the full-size
// original, and the flips; null: the whole frame, no flip): the resize
// starts from the box, and the flips mirror the tensor after it.
void complete_geometry(SampleGeometry& g, int frame_width, int frame_height, const ResizeConfig& resize,
                       const Augment* augment = nullptr);

// The sample's draws under `t` for `epoch` (the whole frame and no flip when
// t draws nothing: null then), on the displayed original `g`.
// The window a GPU resize takes for `a` (the box under a boxed resize).
inline FrameView::Window gpu_window(const Augment& a, const ResizeConfig& resize) {
  FrameView::Window w;
  if (resize.boxed()) {
    w.x = a.x;
    w.y = a.y;
    w.width = a.width;
    w.height = a.height;
  }
  w.flip_x = a.flip_x;
  w.flip_y = a.flip_y;
  return w;
}

// The kernels' resize for `resize` (no images yet): canvas, interpolation,
// pad value, and the fit (a boxed resize stretches its box).
kernels::ResizeBatch resize_batch_of(const ResizeConfig& resize);

std::optional<Augment> augment_of(const TransformConfig& t, std::uint64_t epoch, std::uint64_t item,
                                  std::int64_t frame, const SampleGeometry& g, int frame_width, int frame_height);

}  // namespace imgpipe::stages
