#include "crop.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "resize_plan.hpp"

namespace imgpipe::kernels {

CropGeometry center_crop_geometry(int src_width, int src_height, int dst_width, int dst_height) {
  if (src_width < 1 || src_height < 1) throw std::invalid_argument("center_crop: source width and height must be >= 1");
  if (dst_width < 1 || dst_height < 1) throw std::invalid_argument("center_crop: width and height must be >= 1");
  CropGeometry g;
  // float division, as blobFromImage and stages/transform.cpp compute it.
  g.factor = std::max(static_cast<float>(dst_width) / static_cast<float>(src_width),
                      static_cast<float>(dst_height) / static_cast<float>(src_height));
  // cv::resize with an empty dsize: Size(saturate_cast<int>(w * fx), ...),
  // fx a double; saturate_cast rounds half to even (cvRound).
  g.resized_width = static_cast<int>(std::lrint(src_width * static_cast<double>(g.factor)));
  g.resized_height = static_cast<int>(std::lrint(src_height * static_cast<double>(g.factor)));
  // Rect(int(0.5 * (tw - W)), ...): truncation.
  g.x = static_cast<int>(0.5 * (g.resized_width - dst_width));
  g.y = static_cast<int>(0.5 * (g.resized_height - dst_height));
  return g;
}

void center_crop_ref(const ResizeBatch& b, std::uint8_t* dst, bool parallel) {
  ResizeBatch cc = b;
  cc.fit = Fit::center_crop;
  validate(cc);
  if (!dst) throw std::invalid_argument("center_crop: dst is null");
  detail::resample_batch_ref(cc, dst, parallel);
}

}  // namespace imgpipe::kernels
