#include "normalize.hpp"

#include <stdexcept>
#include <string>


#include "half.hpp"
#include "core/tsan.hpp"

namespace imgpipe::kernels {

void validate(const NormalizeParams& p) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("normalize: " + what); };
  if (p.batch < 1) fail("batch must be >= 1");
  if (p.height < 1 || p.width < 1) fail("height and width must be >= 1");
  if (p.channels != 1 && p.channels != 3 && p.channels != 4) fail("channels must be 1, 3 or 4");
  if (!p.src) fail("src is null");
  if (!p.dst) fail("dst is null");
  const std::size_t row = static_cast<std::size_t>(p.width) * p.channels;
  if (p.src_pitch != 0 && p.src_pitch < row) fail("src_pitch is smaller than width * channels");
  const std::size_t pitch = p.src_pitch ? p.src_pitch : row;
  if (p.src_image_stride != 0 && p.src_image_stride < pitch * (p.height - 1) + row)
    fail("src_image_stride is smaller than one image");
  if (p.dtype != DType::uint8) {
    for (int c = 0; c < p.channels; ++c)
      if (!(p.std[c] != 0.0f)) fail("std[" + std::to_string(c) + "] is zero");
  }
  if (p.swap_rb && p.channels < 3) fail("swap_rb needs 3 or 4 channels");
}

std::size_t output_bytes(const NormalizeParams& p) noexcept {
  return static_cast<std::size_t>(p.batch) * p.height * p.width * p.channels * dtype_size(p.dtype);
}

float normalize_value(const NormalizeParams& p, int c, std::uint8_t v) noexcept {
  // Compiled with -ffp-contract=off (see kernels/CMakeLists.txt): three
  // separately rounded operations, as in the kernel's __fmul_rn/__fsub_rn/__fdiv_rn.
  volatile float scaled = static_cast<float>(v) * p.scale;
  volatile float centred = scaled - p.mean[c];
  return centred / p.std[c];
}

namespace {

struct Tables {
  float f32[4][256];
  std::uint16_t f16[4][256];
};

void build_tables(const NormalizeParams& p, Tables& t) {
  for (int c = 0; c < p.channels; ++c)
    for (int v = 0; v < 256; ++v) {
      t.f32[c][v] = normalize_value(p, c, static_cast<std::uint8_t>(v));
      t.f16[c][v] = float_to_half_rn(t.f32[c][v]);
    }
}

// One output row of image n, row y.
void convert_row(const NormalizeParams& p, const Tables& t, int n, int y) {
  const int C = p.channels, W = p.width, H = p.height;
  const std::size_t pitch = p.src_pitch ? p.src_pitch : static_cast<std::size_t>(W) * C;
  const std::size_t stride = p.src_image_stride ? p.src_image_stride : pitch * H;
  const std::uint8_t* in = p.src + n * stride + y * pitch;
  int map[4] = {0, 1, 2, 3};
  if (p.swap_rb) { map[0] = 2; map[2] = 0; }
  const std::size_t plane = static_cast<std::size_t>(H) * W;
  const std::size_t image = plane * C;

  auto run = [&](auto* out, auto&& value) {
    if (p.layout == Layout::nchw) {
      for (int c = 0; c < C; ++c) {
        auto* o = out + n * image + c * plane + static_cast<std::size_t>(y) * W;
        const std::uint8_t* s = in + map[c];
        for (int x = 0; x < W; ++x) o[x] = value(c, s[x * C]);
      }
    } else {
      auto* o = out + n * image + static_cast<std::size_t>(y) * W * C;
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < C; ++c) o[x * C + c] = value(c, in[x * C + map[c]]);
    }
  };
  switch (p.dtype) {
    case DType::float32:
      run(static_cast<float*>(p.dst), [&](int c, std::uint8_t v) { return t.f32[c][v]; });
      break;
    case DType::float16:
      run(static_cast<std::uint16_t*>(p.dst), [&](int c, std::uint8_t v) { return t.f16[c][v]; });
      break;
    case DType::uint8:
      run(static_cast<std::uint8_t*>(p.dst), [](int, std::uint8_t v) { return v; });
      break;
  }
}

}  // namespace

void normalize_ref(const NormalizeParams& p, bool parallel) {
  validate(p);
  Tables t;
  if (p.dtype != DType::uint8) build_tables(p, t);
  const int rows = p.batch * p.height;
  if (parallel) {
    imgpipe::detail::annotated_parallel_for(tbb::blocked_range<int>(0, rows, 16), [&](const tbb::blocked_range<int>& r) {
      for (int i = r.begin(); i < r.end(); ++i) convert_row(p, t, i / p.height, i % p.height);
    });
  } else {
    for (int i = 0; i < rows; ++i) convert_row(p, t, i / p.height, i % p.height);
  }
}

void normalize_image_ref(const NormalizeParams& p) {
  NormalizeParams one = p;
  one.batch = 1;
  normalize_ref(one, false);
}

}  // namespace imgpipe::kernels
