// The per-sample geometry (imgpipe/geometry.hpp) as the stages make it: the
// decode stage (or the probe, for a JPEG the GPU decodes) says what was
// decoded — the original's stored and displayed size, the orientation
// applied, the DCT reduction — and the stage that knows the frame the resize
// starts from completes it with the resize's own placement, from the
// functions the kernels and their CPU twins use (kernels::placement), so the
// geometry is the one the pixels went through on either backend.
#pragma once

#include "imgpipe/config.hpp"
#include "imgpipe/geometry.hpp"

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
void complete_geometry(SampleGeometry& g, int frame_width, int frame_height, const ResizeConfig& resize);

}  // namespace imgpipe::stages
