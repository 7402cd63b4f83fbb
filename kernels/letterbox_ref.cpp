#include "letterbox.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "resize_plan.hpp"

namespace imgpipe::kernels {

LetterboxGeometry letterbox_geometry(int src_width, int src_height, int dst_width, int dst_height) {
  if (src_width < 1 || src_height < 1) throw std::invalid_argument("letterbox: source width and height must be >= 1");
  if (dst_width < 1 || dst_height < 1) throw std::invalid_argument("letterbox: width and height must be >= 1");
  LetterboxGeometry g;
  g.scale = std::min(static_cast<double>(dst_width) / src_width, static_cast<double>(dst_height) / src_height);
  g.width = std::clamp(static_cast<int>(std::lround(src_width * g.scale)), 1, dst_width);
  g.height = std::clamp(static_cast<int>(std::lround(src_height * g.scale)), 1, dst_height);
  g.x0 = (dst_width - g.width) / 2;
  g.y0 = (dst_height - g.height) / 2;
  return g;
}

void letterbox_ref(const ResizeBatch& b, std::uint8_t* dst, LetterboxGeometry* geometry, bool parallel) {
  ResizeBatch lb = b;
  lb.fit = Fit::letterbox;
  validate(lb);
  if (!dst) throw std::invalid_argument("letterbox: dst is null");
  if (geometry)
    for (int i = 0; i < lb.batch; ++i)
      geometry[i] = letterbox_geometry(lb.images[i].width, lb.images[i].height, lb.width, lb.height);
  detail::resample_batch_ref(lb, dst, parallel);
}

}  // namespace imgpipe::kernels
