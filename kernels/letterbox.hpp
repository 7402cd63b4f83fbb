// Letterbox: resize each image of a batch keeping its aspect ratio so that it
// fits the canvas, centred, the rest padded with ResizeBatch::pad_value. The
// geometry is the CPU pipeline's (stages/transform.cpp), exactly:
//
//   s  = min(W / w, H / h)                      (double)
//   nw = clamp(lround(w * s), 1, W),  nh = clamp(lround(h * s), 1, H)
//   x0 = (W - nw) / 2,                y0 = (H - nh) / 2   (integer division)
//
// and the image area is cv::resize(img, canvas(Rect(x0, y0, nw, nh)), Size(nw, nh))
// (a plain copy when nw == w and nh == h), with the interpolation, rounding
// and OpenCV agreement stated in resize.hpp.
//
// To map a canvas point (x, y) back to the source image, use the per-axis
// factors of the actual resize: sx = (x - x0) * w / nw, sy = (y - y0) * h / nh
// (letterbox_to_source); s is the nominal scale, within 0.5 / w of nw / w.
#pragma once

#include <cstdint>

#include "resize.hpp"

namespace imgpipe::kernels {

struct LetterboxGeometry {
  double scale = 0.0;         // s
  int x0 = 0, y0 = 0;         // top-left of the image in the canvas
  int width = 0, height = 0;  // nw, nh
};

// The formula above. Throws std::invalid_argument for sizes < 1.
LetterboxGeometry letterbox_geometry(int src_width, int src_height, int dst_width, int dst_height);

// Canvas coordinates -> source image coordinates (continuous, pixel corners at integers).
inline void letterbox_to_source(const LetterboxGeometry& g, int src_width, int src_height, double x, double y,
                                double* sx, double* sy) noexcept {
  *sx = (x - g.x0) * src_width / g.width;
  *sy = (y - g.y0) * src_height / g.height;
}

// CPU twin. b.fit is ignored (letterbox). When `geometry` is not null it
// receives b.batch entries, one per image. Output as resize_ref.
void letterbox_ref(const ResizeBatch& b, std::uint8_t* dst, LetterboxGeometry* geometry = nullptr,
                   bool parallel = false);

// GPU twin: enqueues on `stream`; the geometry is computed on the host and is
// valid when the call returns. Throws as resize_gpu.
void letterbox_gpu(const ResizeBatch& b, std::uint8_t* d_dst, LetterboxGeometry* geometry, CUstream_st* stream);

}  // namespace imgpipe::kernels
