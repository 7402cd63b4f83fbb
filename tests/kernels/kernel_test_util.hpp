// Helpers for the kernel twin tests: random and sample images, packing a
// batch of images of different sizes into one buffer, running a GPU launcher
// on device copies, and comparing outputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common.hpp"
#include "memory/gpu.hpp"
#include "kernels/resize.hpp"

namespace imgpipe::test {

// True when this OpenCV's u8 resize is its generic C++/universal-intrinsics
// path (no IPP, no custom HAL), the one the CPU twins reproduce bit for bit.
// Elsewhere the tests accept +-1 on u8 (resize.hpp).
inline std::string build_info_value(const std::string& info, const std::string& key) {
  const auto k = info.find(key);
  if (k == std::string::npos) return {};
  auto b = info.find_first_not_of(' ', k + key.size());
  const auto e = info.find('\n', k);
  return b == std::string::npos || b >= e ? std::string() : info.substr(b, e - b);
}
inline bool opencv_resize_is_reference() {
  const std::string info = cv::getBuildInformation();
  const std::string ipp = build_info_value(info, "Intel IPP:");
  const std::string hal = build_info_value(info, "Custom HAL:");
  return (ipp.empty() || ipp.rfind("NO", 0) == 0) && (hal.empty() || hal.rfind("NO", 0) == 0);
}

// The tolerance on u8 resize results against OpenCV (0: bit-exact).
inline int opencv_u8_tolerance() { return opencv_resize_is_reference() ? 0 : 1; }

inline cv::Mat random_image(int w, int h, int channels, std::uint64_t seed) {
  cv::Mat m(h, w, CV_8UC(channels));
  cv::RNG rng(seed);
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  return m;
}

// A w x h view at (3, 2) inside a larger image: row pitch > w * channels and a
// first pixel that is not 8-byte aligned.
inline cv::Mat random_roi(int w, int h, int channels, std::uint64_t seed) {
  cv::Mat big = random_image(w + 7, h + 4, channels, seed);
  return big(cv::Rect(3, 2, w, h));
}

// Sample photo i (cycled) as 1, 3 or 4 channels.
inline cv::Mat sample_photo(std::size_t i, int channels) {
  const auto paths = sample_images();
  REQUIRE_FALSE(paths.empty());
  cv::Mat bgr = cv::imread(paths[i % paths.size()].string(), cv::IMREAD_COLOR);
  REQUIRE_FALSE(bgr.empty());
  if (channels == 3) return bgr;
  cv::Mat out;
  cv::cvtColor(bgr, out, channels == 1 ? cv::COLOR_BGR2GRAY : cv::COLOR_BGR2BGRA);
  return out;
}

// Images of a batch copied one after another into one byte buffer. Each
// image keeps a pitch of its own (row bytes + `row_padding`), so
// descriptors carry offsets and pitches as the pipeline's will.
struct PackedBatch {
  std::vector<std::uint8_t> bytes;
  std::vector<kernels::SrcImage> images;
  int channels = 3;
};

inline PackedBatch pack(const std::vector<cv::Mat>& mats, int row_padding = 0) {
  PackedBatch p;
  REQUIRE_FALSE(mats.empty());
  p.channels = mats.front().channels();
  std::size_t total = 0;
  for (const cv::Mat& m : mats) total += static_cast<std::size_t>(m.rows) * (m.cols * m.channels() + row_padding) + 5;
  p.bytes.assign(total, 0xA5);
  std::size_t off = 0;
  for (const cv::Mat& m : mats) {
    REQUIRE(m.channels() == p.channels);
    REQUIRE(m.depth() == CV_8U);
    kernels::SrcImage d;
    d.offset = off;
    d.width = m.cols;
    d.height = m.rows;
    const std::size_t row = static_cast<std::size_t>(m.cols) * m.channels();
    d.pitch = row_padding ? row + row_padding : 0;
    const std::size_t pitch = row + row_padding;
    for (int y = 0; y < m.rows; ++y) std::memcpy(p.bytes.data() + off + y * pitch, m.ptr(y), row);
    off += m.rows * pitch + 5;  // odd gaps: images start at unaligned offsets
    p.images.push_back(d);
  }
  return p;
}

inline kernels::ResizeBatch batch_of(const PackedBatch& p, const std::uint8_t* base, int width, int height,
                                     kernels::Interp interp = kernels::Interp::linear,
                                     kernels::Fit fit = kernels::Fit::stretch, std::uint8_t pad = 114) {
  kernels::ResizeBatch b;
  b.channels = p.channels;
  b.src = base;
  b.images = p.images.data();
  b.batch = static_cast<int>(p.images.size());
  b.width = width;
  b.height = height;
  b.interp = interp;
  b.fit = fit;
  b.pad_value = pad;
  return b;
}

// Device copy of a host byte vector (device 0).
struct DeviceCopy {
  gpu::DeviceBuffer buf;
  DeviceCopy(const void* host, std::size_t bytes, const gpu::Stream& s) : buf(0, std::max<std::size_t>(bytes, 1)) {
    if (bytes) gpu::copy_h2d_async(buf.get(), host, bytes, s);
  }
  std::uint8_t* get() const { return static_cast<std::uint8_t*>(buf.get()); }
};

inline std::vector<std::uint8_t> download(const gpu::DeviceBuffer& d, std::size_t bytes, const gpu::Stream& s) {
  std::vector<std::uint8_t> h(bytes);
  gpu::copy_d2h_async(h.data(), d.get(), bytes, s);
  s.synchronize();
  return h;
}

// Largest absolute difference between two u8 buffers, and how many differ.
struct Diff {
  int max = 0;
  std::size_t count = 0;
  std::size_t first = 0;
};
inline Diff diff_u8(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) {
  Diff d;
  for (std::size_t i = 0; i < n; ++i) {
    const int e = std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
    if (e) {
      if (!d.count) d.first = i;
      ++d.count;
      d.max = std::max(d.max, e);
    }
  }
  return d;
}

// A dense HWC copy of a (possibly non-continuous) Mat.
inline std::vector<std::uint8_t> dense(const cv::Mat& m) {
  std::vector<std::uint8_t> v(m.total() * m.elemSize());
  const std::size_t row = static_cast<std::size_t>(m.cols) * m.elemSize();
  for (int y = 0; y < m.rows; ++y) std::memcpy(v.data() + y * row, m.ptr(y), row);
  return v;
}

}  // namespace imgpipe::test
