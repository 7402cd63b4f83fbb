#include <algorithm>
#include <stdexcept>

#include "stand_in_model.hpp"

namespace detect {

namespace {
bool red(float r, float g, float b) noexcept { return r > 0.6f && g < 0.35f && b < 0.35f; }
float pixel(float v, const Normalization& n, int c) noexcept { return (v * n.std[c] + n.mean[c]) / (255 * n.scale); }
}  // namespace

std::vector<TensorBox> red_boxes_cpu(const float* data, int n, int height, int width, const Normalization& norm) {
  std::vector<TensorBox> out(n);
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  for (int s = 0; s < n; ++s) {
    const float* r = data + static_cast<std::size_t>(s) * 3 * plane;
    const float* g = r + plane;
    const float* b = g + plane;
    TensorBox box{width, height, 0, 0};
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * width + x;
        if (!red(pixel(r[i], norm, 0), pixel(g[i], norm, 1), pixel(b[i], norm, 2))) continue;
        box.x0 = std::min(box.x0, x);
        box.y0 = std::min(box.y0, y);
        box.x1 = std::max(box.x1, x + 1);
        box.y1 = std::max(box.y1, y + 1);
      }
    out[s] = box;
  }
  return out;
}

#ifndef DETECT_WITH_CUDA
std::vector<TensorBox> red_boxes_gpu(const float*, int, int, int, const Normalization&, CUstream_st*) {
  throw std::runtime_error("this build of the sample has no CUDA");
}
bool built_with_cuda() noexcept { return false; }
#endif

}  // namespace detect
