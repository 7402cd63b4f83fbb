// YUV test images for the kernel tests: sample values independent of their
// memory layout (Planes), and those samples laid out as a decoder or NVDEC
// would (pack_yuv: planar or interleaved, 1 or 2 bytes, padded rows).
#pragma once

#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

#include "kernels/resize.hpp"
#include "kernels/yuv.hpp"

namespace imgpipe::test {

using kernels::ColorMatrix;
using kernels::ColorRange;
using kernels::SrcYuv;
using kernels::YuvFormat;
using kernels::YuvImage;

// Sample values of one image, independent of how they lie in memory.
struct Planes {
  int width = 0, height = 0;
  int csx = 1, csy = 1;  // chroma shifts
  int bits = 8;
  bool mono = false;
  std::vector<int> y, u, v;  // row-major; chroma at the chroma size
  int cw() const { return (width + (1 << csx) - 1) >> csx; }
  int ch() const { return (height + (1 << csy) - 1) >> csy; }
};

// Uniform samples in [lo, hi] (luma) and [clo, chi] (chroma); -1: 0 .. 2^bits - 1.
inline Planes random_planes(int w, int h, int csx, int csy, int bits, std::uint64_t seed, bool mono = false, int lo = -1,
                     int hi = -1, int clo = -1, int chi = -1) {
  Planes p;
  p.width = w;
  p.height = h;
  p.csx = csx;
  p.csy = csy;
  p.bits = bits;
  p.mono = mono;
  const int max = (1 << bits) - 1;
  cv::RNG rng(seed);
  auto fill = [&](std::vector<int>& v, std::size_t n, int a, int b) {
    v.resize(n);
    for (int& s : v) s = rng.uniform(a < 0 ? 0 : a, (b < 0 ? max : b) + 1);
  };
  fill(p.y, static_cast<std::size_t>(w) * h, lo, hi);
  if (!mono) {
    fill(p.u, static_cast<std::size_t>(p.cw()) * p.ch(), clo, chi);
    fill(p.v, static_cast<std::size_t>(p.cw()) * p.ch(), clo, chi);
  }
  return p;
}

// How the samples lie in memory.
struct MemLayout {
  int bytes = 1;
  int shift = 0;             // 2-byte samples: value << shift
  bool interleaved = false;  // NV12 / P016
  std::size_t padding = 0;   // extra bytes per row (0: pitches left 0, i.e. dense)
  std::size_t lead = 0;      // bytes before plane 0 (plane 0 not aligned)
};

// One image's planes in one host buffer (plane offsets relative to its start).
struct HostYuv {
  std::vector<std::uint8_t> bytes;
  SrcYuv yuv;
  int width = 0, height = 0;
  // The YuvImage over `bytes` (pitches resolved).
  YuvImage image() const {
    YuvImage img;
    img.width = width;
    img.height = height;
    img.format = yuv.format;
    const std::size_t row = static_cast<std::size_t>(width) * yuv.format.bytes;
    const std::size_t crow = static_cast<std::size_t>(kernels::chroma_width(yuv.format, width)) * yuv.format.bytes;
    const std::size_t dense[3] = {row, yuv.format.uv_interleaved ? 2 * crow : crow, crow};
    for (int k = 0; k < 3; ++k) {
      img.plane[k] = bytes.data() + yuv.plane[k];
      img.pitch[k] = yuv.pitch[k] ? yuv.pitch[k] : dense[k];
    }
    return img;
  }
};

inline void put(std::uint8_t* row, int i, int value, const MemLayout& l) {
  if (l.bytes == 1) {
    row[i] = static_cast<std::uint8_t>(value);
  } else {
    const unsigned v = static_cast<unsigned>(value) << l.shift;
    row[2 * i] = static_cast<std::uint8_t>(v & 0xff);
    row[2 * i + 1] = static_cast<std::uint8_t>(v >> 8);
  }
}

inline HostYuv pack_yuv(const Planes& p, const MemLayout& l, ColorMatrix m = ColorMatrix::bt601,
                 ColorRange r = ColorRange::limited) {
  HostYuv h;
  h.width = p.width;
  h.height = p.height;
  YuvFormat& f = h.yuv.format;
  f.bits = p.bits;
  f.bytes = l.bytes;
  f.shift = l.shift;
  f.chroma_shift_x = p.csx;
  f.chroma_shift_y = p.csy;
  f.uv_interleaved = l.interleaved;
  f.monochrome = p.mono;
  f.matrix = m;
  f.range = r;
  const std::size_t row = static_cast<std::size_t>(p.width) * l.bytes;
  const std::size_t crow = static_cast<std::size_t>(p.cw()) * l.bytes;
  const int planes = p.mono ? 1 : (l.interleaved ? 2 : 3);
  const std::size_t pitch[3] = {row + l.padding, (l.interleaved ? 2 * crow : crow) + l.padding, crow + l.padding};
  const int rows[3] = {p.height, p.ch(), p.ch()};
  std::size_t off = l.lead;
  for (int k = 0; k < planes; ++k) {
    h.yuv.plane[k] = off;
    h.yuv.pitch[k] = l.padding ? pitch[k] : 0;
    off += pitch[k] * rows[k] + (k + 1 < planes ? 3 : 0);  // odd gaps between planes
  }
  // The last plane's last row ends the buffer exactly (a read past it is caught by ASan).
  off -= l.padding;
  h.bytes.assign(off, 0xA5);
  std::uint8_t* b = h.bytes.data();
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x) put(b + h.yuv.plane[0] + y * pitch[0], x, p.y[y * p.width + x], l);
  if (!p.mono)
    for (int y = 0; y < p.ch(); ++y)
      for (int x = 0; x < p.cw(); ++x) {
        const int u = p.u[y * p.cw() + x], v = p.v[y * p.cw() + x];
        if (l.interleaved) {
          put(b + h.yuv.plane[1] + y * pitch[1], 2 * x, u, l);
          put(b + h.yuv.plane[1] + y * pitch[1], 2 * x + 1, v, l);
        } else {
          put(b + h.yuv.plane[1] + y * pitch[1], x, u, l);
          put(b + h.yuv.plane[2] + y * pitch[2], x, v, l);
        }
      }
  return h;
}

}  // namespace imgpipe::test
