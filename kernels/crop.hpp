// Centre crop after a shorter-side resize, with the geometry of
// cv::dnn::blobFromImage(..., crop = true) and of the CPU pipeline's
// center_crop mode (stages/transform.cpp):
//
//   f  = max(float(W) / w, float(H) / h)                    (float)
//   tw = saturate_cast<int>(w * double(f)), th likewise      (cv::resize(img, tmp, Size(), f, f);
//                                                             round half to even)
//   crop = Rect(int(0.5 * (tw - W)), int(0.5 * (th - H)), W, H)   (truncation)
//
// The resize samples with step 1 / f (not w / tw), as cv::resize does with an
// explicit scale, and is a plain copy when tw == w and th == h. Rounding and
// OpenCV agreement as stated in resize.hpp (bit-exact, f == 0.5 included:
// resize_math.hpp explains why OpenCV's INTER_AREA edge blocks never reach
// the crop window).
#pragma once

#include <cstdint>

#include "resize.hpp"

namespace imgpipe::kernels {

struct CropGeometry {
  float factor = 0.0f;                        // f
  int resized_width = 0, resized_height = 0;  // tw, th
  int x = 0, y = 0;                           // crop origin in the resized image
};

// The formula above. Throws std::invalid_argument for sizes < 1.
CropGeometry center_crop_geometry(int src_width, int src_height, int dst_width, int dst_height);

// CPU twin. b.fit is ignored (centre crop). Output as resize_ref.
void center_crop_ref(const ResizeBatch& b, std::uint8_t* dst, bool parallel = false);

// GPU twin: enqueues on `stream`. Throws as resize_gpu.
void center_crop_gpu(const ResizeBatch& b, std::uint8_t* d_dst, CUstream_st* stream);

}  // namespace imgpipe::kernels
