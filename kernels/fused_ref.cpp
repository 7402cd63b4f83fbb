#include "fused.hpp"

#include <stdexcept>
#include <string>
#include <vector>


#include "resize_plan.hpp"
#include "core/tsan.hpp"

namespace imgpipe::kernels {

void validate(const FusedParams& p) {
  validate(p.in);
  auto fail = [](const std::string& what) { throw std::invalid_argument("fused: " + what); };
  if (!p.dst) fail("dst is null");
  if (p.layout != Layout::nchw && p.layout != Layout::nhwc) fail("layout must be nchw or nhwc");
  if (p.dtype != DType::float32 && p.dtype != DType::float16 && p.dtype != DType::uint8)
    fail("dtype must be float32, float16 or uint8");
  if (p.dtype != DType::uint8) {
    for (int c = 0; c < p.in.channels; ++c)
      if (!(p.std[c] != 0.0f)) fail("std[" + std::to_string(c) + "] is zero");
  }
  if (p.swap_rb && p.in.channels < 3) fail("swap_rb needs 3 or 4 channels");
}

std::size_t output_bytes(const FusedParams& p) noexcept {
  return static_cast<std::size_t>(p.in.batch) * p.in.height * p.in.width * p.in.channels * dtype_size(p.dtype);
}

NormalizeParams normalize_params(const FusedParams& p, const std::uint8_t* canvas) noexcept {
  NormalizeParams n;
  n.batch = p.in.batch;
  n.height = p.in.height;
  n.width = p.in.width;
  n.channels = p.in.channels;
  n.src = canvas;
  n.dst = p.dst;
  n.layout = p.layout;
  n.dtype = p.dtype;
  n.swap_rb = p.swap_rb;
  n.scale = p.scale;
  n.mean = p.mean;
  n.std = p.std;
  return n;
}

void fused_ref(const FusedParams& p, bool parallel) {
  validate(p);
  // The definition, literally: the u8 canvas of each image, then normalize.
  const std::size_t canvas_bytes = static_cast<std::size_t>(p.in.height) * p.in.width * p.in.channels;
  const std::size_t out_image_bytes = canvas_bytes * dtype_size(p.dtype);
  auto one = [&](int i) {
    std::vector<std::uint8_t> canvas(canvas_bytes);
    detail::resample_image_ref(p.in, detail::plan_image(p.in, i), canvas.data());
    NormalizeParams n = normalize_params(p, canvas.data());
    n.dst = static_cast<unsigned char*>(p.dst) + i * out_image_bytes;
    normalize_image_ref(n);
  };
  if (parallel) {
    imgpipe::detail::annotated_parallel_for(0, p.in.batch, one);
  } else {
    for (int i = 0; i < p.in.batch; ++i) one(i);
  }
}

}  // namespace imgpipe::kernels
