// CPU twin of the resize family (resize.cu), plus the host-side geometry both
// twins share. Compiled with -ffp-contract=off (kernels/CMakeLists.txt): the
// double/float coefficient arithmetic in resize_math.hpp must not fuse.
#include "resize.hpp"

#include <algorithm>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>


#include "crop.hpp"
#include "letterbox.hpp"
#include "resize_math.hpp"
#include "resize_plan.hpp"
#include "core/tsan.hpp"

namespace imgpipe::kernels {

namespace {
// Dimensions are kept well inside int arithmetic (x * channels, grid sizes).
constexpr int kMaxDim = 1 << 20;

// Image i of b, a YUV image (its width and height already checked).
template <typename Fail>
void validate_yuv(const ResizeBatch& b, int i, const std::string& name, Fail fail) {
  const SrcImage& im = b.images[i];
  if (b.channels != 3) fail(name + ".yuv: a YUV image needs channels == 3 (it converts to BGR)");
  if (im.pitch != 0) fail(name + ".pitch must be 0 for a YUV image (its planes' pitches are in .yuv->pitch)");
  const YuvFormat& f = im.yuv->format;
  if (f.chroma_shift_x < 0 || f.chroma_shift_x > 1 || f.chroma_shift_y < 0 || f.chroma_shift_y > 1)
    fail(name + ".yuv: format.chroma_shift_x and format.chroma_shift_y must be 0 or 1");
  const YuvImage y = detail::yuv_image(b, i);
  try {
    validate(y);
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    if (what.rfind("yuv: ", 0) == 0) what.erase(0, 5);
    fail(name + ".yuv: " + what);
  }
  const int planes = y.format.monochrome ? 1 : (y.format.uv_interleaved ? 2 : 3);
  for (int k = 0; k < planes; ++k) {
    const int rows = k == 0 ? im.height : chroma_height(y.format, im.height);
    if (static_cast<double>(rows) * static_cast<double>(y.pitch[k]) >= 1073741824.0)
      fail(name + ".yuv plane " + std::to_string(k) + " spans 1 GiB or more (rows * pitch)");
  }
}
}  // namespace

void validate(const ResizeBatch& b) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("resize: " + what); };
  if (b.channels != 1 && b.channels != 3 && b.channels != 4) fail("channels must be 1, 3 or 4");
  if (b.batch < 1) fail("batch must be >= 1");
  if (!b.images) fail("images is null");
  if (!b.src) fail("src is null");
  if (b.width < 1 || b.height < 1) fail("width and height (the output canvas) must be >= 1");
  if (b.width > kMaxDim || b.height > kMaxDim) fail("width and height must be <= " + std::to_string(kMaxDim));
  if (b.interp != Interp::linear && b.interp != Interp::nearest) fail("interp must be linear or nearest");
  if (b.fit != Fit::stretch && b.fit != Fit::letterbox && b.fit != Fit::center_crop)
    fail("fit must be stretch, letterbox or center_crop");
  for (int i = 0; i < b.batch; ++i) {
    const SrcImage& im = b.images[i];
    const std::string name = "images[" + std::to_string(i) + "]";
    if (im.width < 1 || im.height < 1) fail(name + ".width and .height must be >= 1");
    if (im.width > kMaxDim || im.height > kMaxDim) fail(name + ".width and .height must be <= " + std::to_string(kMaxDim));
    if (im.yuv) {
      validate_yuv(b, i, name, fail);
      continue;
    }
    if (im.pitch != 0 && im.pitch < static_cast<std::size_t>(im.width) * b.channels)
      fail(name + ".pitch is smaller than width * channels");
    const std::size_t pitch = im.pitch ? im.pitch : static_cast<std::size_t>(im.width) * b.channels;
    if (static_cast<double>(im.height) * static_cast<double>(pitch) >= 1073741824.0)
      fail(name + " spans 1 GiB or more (height * pitch)");
  }
  if (static_cast<double>(b.width) * b.height * b.channels >= 2147483647.0)
    fail("width * height * channels (one output image) must be < 2^31");
}

std::size_t output_bytes(const ResizeBatch& b) noexcept {
  return static_cast<std::size_t>(b.batch) * b.height * b.width * b.channels;
}

Placement placement(const ResizeBatch& b, int i) {
  const SrcImage& im = b.images[i];
  Placement p;
  switch (b.fit) {
    case Fit::stretch:
      p.width = b.width;
      p.height = b.height;
      break;
    case Fit::letterbox: {
      const LetterboxGeometry g = letterbox_geometry(im.width, im.height, b.width, b.height);
      p.x0 = g.x0;
      p.y0 = g.y0;
      p.width = g.width;
      p.height = g.height;
      break;
    }
    case Fit::center_crop: {
      const CropGeometry g = center_crop_geometry(im.width, im.height, b.width, b.height);
      p.x0 = -g.x;
      p.y0 = -g.y;
      p.width = g.resized_width;
      p.height = g.resized_height;
      // cv::resize(img, tmp, Size(), f, f): the scale is f itself, not tw / w.
      p.inv_scale_x = p.inv_scale_y = static_cast<double>(g.factor);
      return p;
    }
  }
  // cv::resize(img, out, dsize): inv_scale = dsize / ssize.
  p.inv_scale_x = static_cast<double>(p.width) / im.width;
  p.inv_scale_y = static_cast<double>(p.height) / im.height;
  return p;
}

namespace detail {

YuvImage yuv_image(const ResizeBatch& b, int i) {
  const SrcImage& im = b.images[i];
  const SrcYuv& s = *im.yuv;
  const std::uint8_t* base = (im.data ? im.data : b.src) + im.offset;
  const std::size_t row = static_cast<std::size_t>(im.width) * s.format.bytes;
  const std::size_t crow = static_cast<std::size_t>(chroma_width(s.format, im.width)) * s.format.bytes;
  const std::size_t dense[3] = {row, s.format.uv_interleaved ? 2 * crow : crow, crow};
  YuvImage y;
  y.width = im.width;
  y.height = im.height;
  y.format = s.format;
  const int planes = s.format.monochrome ? 1 : (s.format.uv_interleaved ? 2 : 3);
  for (int k = 0; k < planes; ++k) {
    y.plane[k] = base + s.plane[k];
    y.pitch[k] = s.pitch[k] ? s.pitch[k] : dense[k];
  }
  return y;
}

ImagePlan plan_image(const ResizeBatch& b, int i) {
  const SrcImage& im = b.images[i];
  const Placement pl = placement(b, i);
  ImagePlan p;
  p.src = (im.data ? im.data : b.src) + im.offset;
  p.flip_x = im.flip_x;
  p.flip_y = im.flip_y;
  p.pitch = im.pitch ? im.pitch : static_cast<std::size_t>(im.width) * b.channels;
  if (im.yuv) {
    p.is_yuv = true;
    p.yuv = yuv_image(b, i);
  }
  p.sw = im.width;
  p.sh = im.height;
  p.x0 = pl.x0;
  p.y0 = pl.y0;
  p.rw = pl.width;
  p.rh = pl.height;
  if (pl.width == im.width && pl.height == im.height) {
    // cv::resize copies when dsize == ssize, whatever the scale says.
    p.scale_x = p.scale_y = 1.0;
  } else {
    p.scale_x = 1.0 / pl.inv_scale_x;
    p.scale_y = 1.0 / pl.inv_scale_y;
  }
  return p;
}

namespace {

struct XTap {
  int o0 = -1, o1 = -1;  // byte offsets of the two taps in a source row; -1: pad column
  int w0 = 0, w1 = 0;
};

std::vector<XTap> x_taps(const ResizeBatch& b, const ImagePlan& p) {
  const int C = b.channels;
  std::vector<XTap> xt(static_cast<std::size_t>(b.width));
  for (int X = 0; X < b.width; ++X) {
    const int rx = X - p.x0;
    if (rx < 0 || rx >= p.rw) continue;
    XTap& t = xt[static_cast<std::size_t>(X)];
    if (b.interp == Interp::linear) {
      const LinearTap lt = linear_tap(rx, p.scale_x, p.sw, true);
      t.o0 = lt.s0 * C;
      t.o1 = lt.s1 * C;
      t.w0 = lt.w0;
      t.w1 = lt.w1;
    } else {
      t.o0 = t.o1 = nearest_index(rx, p.scale_x, p.sw) * C;
    }
  }
  return xt;
}

}  // namespace

namespace {

// A dense W x H canvas of C channels mirrored in place.
void mirror(std::uint8_t* canvas, int W, int H, int C, bool flip_x, bool flip_y) {
  const std::size_t row = static_cast<std::size_t>(W) * C;
  if (flip_x) {
    for (int Y = 0; Y < H; ++Y) {
      std::uint8_t* r = canvas + Y * row;
      for (int a = 0, z = W - 1; a < z; ++a, --z)
        for (int c = 0; c < C; ++c) std::swap(r[a * C + c], r[z * C + c]);
    }
  }
  if (flip_y)
    for (int a = 0, z = H - 1; a < z; ++a, --z) std::swap_ranges(canvas + a * row, canvas + (a + 1) * row, canvas + z * row);
}

}  // namespace

void resample_image_ref(const ResizeBatch& b, const ImagePlan& p, std::uint8_t* canvas) {
  if (p.is_yuv) {
    // The definition (resize.hpp): the BGR conversion, resampled as any image.
    std::vector<std::uint8_t> bgr(static_cast<std::size_t>(p.sw) * p.sh * 3);
    yuv_to_bgr_ref(p.yuv, bgr.data());
    ImagePlan q = p;
    q.is_yuv = false;
    q.src = bgr.data();
    q.pitch = static_cast<std::size_t>(p.sw) * 3;
    return resample_image_ref(b, q, canvas);
  }
  const int C = b.channels, W = b.width, H = b.height;
  const std::vector<XTap> xt = x_taps(b, p);
  const std::size_t row_bytes = static_cast<std::size_t>(W) * C;
  for (int Y = 0; Y < H; ++Y) {
    std::uint8_t* out = canvas + Y * row_bytes;
    const int ry = Y - p.y0;
    if (ry < 0 || ry >= p.rh) {
      std::fill(out, out + row_bytes, b.pad_value);
      continue;
    }
    if (b.interp == Interp::nearest) {
      const std::uint8_t* r = p.src + static_cast<std::size_t>(nearest_index(ry, p.scale_y, p.sh)) * p.pitch;
      for (int X = 0; X < W; ++X) {
        const XTap& t = xt[static_cast<std::size_t>(X)];
        for (int c = 0; c < C; ++c) out[X * C + c] = t.o0 < 0 ? b.pad_value : r[t.o0 + c];
      }
      continue;
    }
    const LinearTap ty = linear_tap(ry, p.scale_y, p.sh, false);
    const std::uint8_t* r0 = p.src + static_cast<std::size_t>(ty.s0) * p.pitch;
    const std::uint8_t* r1 = p.src + static_cast<std::size_t>(ty.s1) * p.pitch;
    for (int X = 0; X < W; ++X) {
      const XTap& t = xt[static_cast<std::size_t>(X)];
      for (int c = 0; c < C; ++c) {
        int v;
        if (t.o0 < 0) {
          v = b.pad_value;
        } else {
          const int h0 = r0[t.o0 + c] * t.w0 + r0[t.o1 + c] * t.w1;
          const int h1 = r1[t.o0 + c] * t.w0 + r1[t.o1 + c] * t.w1;
          v = vlinear(h0, h1, ty.w0, ty.w1);
        }
        out[X * C + c] = static_cast<std::uint8_t>(v);
      }
    }
  }
  mirror(canvas, W, H, C, p.flip_x, p.flip_y);
}

void resample_batch_ref(const ResizeBatch& b, std::uint8_t* dst, bool parallel) {
  const std::size_t image_bytes = static_cast<std::size_t>(b.height) * b.width * b.channels;
  auto one = [&](int i) { resample_image_ref(b, plan_image(b, i), dst + i * image_bytes); };
  if (parallel) {
    imgpipe::detail::annotated_parallel_for(0, b.batch, one);
  } else {
    for (int i = 0; i < b.batch; ++i) one(i);
  }
}

}  // namespace detail

void resize_ref(const ResizeBatch& b, std::uint8_t* dst, bool parallel) {
  validate(b);
  if (!dst) throw std::invalid_argument("resize: dst is null");
  detail::resample_batch_ref(b, dst, parallel);
}

}  // namespace imgpipe::kernels
