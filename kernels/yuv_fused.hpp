// One pass from a decoded video frame's YUV planes to the normalised tensor
// on the CPU: colour conversion, resize (stretch, letterbox, centre crop, a
// box of the frame), flips, normalise and layout, with no full-size BGR
// intermediate (docs/video.md, "The CPU route's one pass").
//
// Definition (what the tests hold it to, bit for bit):
//
//   yuv_fused_cpu(p) == normalize(flip(resize(yuv_to_bgr_ref(p.src)(box))))
//
// that is fused_ref (fused.hpp) over the BGR conversion of the frame cut to
// the box, with the same fit, interpolation, pad value, flips and output
// parameters; fused_ref in turn equals cv::resize and the normalise twin.
// Each source row the resize reads is converted once, only at the columns
// its taps read, and resampled at once into a few rows of integers; every
// output row is then combined, normalised and stored. The integer arithmetic
// is resize_math.hpp's and yuv.hpp's, the float arithmetic normalize.hpp's
// (three separately rounded operations); on x86-64 CPUs with AVX2 the rows run
// eight pixels at a time (the same operations, so the same bits).
#pragma once

#include <array>
#include <cstdint>

#include "checksum.hpp"
#include "imgpipe/types.hpp"
#include "resize.hpp"
#include "yuv.hpp"

namespace imgpipe::kernels {

struct YuvFusedParams {
  YuvImage src;                 // the whole decoded frame
  // The part of the frame resized (the transform's random or centre box);
  // width 0: the whole frame.
  int box_x = 0, box_y = 0, box_width = 0, box_height = 0;
  int width = 0, height = 0;    // output canvas
  Fit fit = Fit::stretch;
  Interp interp = Interp::linear;
  std::uint8_t pad_value = 0;   // canvas pixels the frame does not cover (letterbox)
  bool flip_x = false, flip_y = false;  // the canvas mirrored after the resize
  // Output: one dense image, C x H x W (nchw) or H x W x C (nhwc), 3 channels.
  void* dst = nullptr;
  Layout layout = Layout::nchw;
  DType dtype = DType::float32;
  bool swap_rb = false;         // output channel c is input channel 2 - c (BGR -> RGB)
  float scale = 1.0f;
  std::array<float, 3> mean{0, 0, 0};
  std::array<float, 3> std{1, 1, 1};
  // Set, and the output's bytes a multiple of 12: sums[k] becomes the
  // checksum part (checksum.hpp) of the output's k-th third, summed as the
  // rows are written where they are whole words (nchw), else after.
  ChecksumPart* sums = nullptr;
};

// Throws std::invalid_argument naming the offending field.
void validate(const YuvFusedParams& p);

// Writes the output image (p.dst, host memory). `simd` false: the portable
// rows even where the AVX2 ones would run (the tests compare the two).
void yuv_fused_cpu(const YuvFusedParams& p, bool simd = true);

// Whether this CPU runs the AVX2 rows (x86-64 with AVX2 and F16C).
bool yuv_fused_has_simd() noexcept;

}  // namespace imgpipe::kernels
