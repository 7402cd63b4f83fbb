// FNV-1a over a decoded video frame's visible bytes (every plane, row by
// row, without the padding): to compare frames decoded two ways
// (imgpipe_bench_damage, imgpipe_bench_frames, the frame pool's tests).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/video/frame.hpp"

namespace imgpipe::codecs {

inline std::uint64_t frame_hash(const VideoFrame& f) {
  kernels::YuvImage y;
  std::uint64_t h = 1469598103934665603ull;
  if (!f.yuv(y)) return h;
  const auto& fm = y.format;
  for (int p = 0; p < 3; ++p) {
    if (p > 0 && fm.monochrome) break;
    if (p == 2 && fm.uv_interleaved) break;
    const int w = (p == 0 ? y.width : kernels::chroma_width(fm, y.width) * (fm.uv_interleaved ? 2 : 1)) * fm.bytes;
    const int rows = p == 0 ? y.height : kernels::chroma_height(fm, y.height);
    for (int r = 0; r < rows; ++r) {
      const auto* row = static_cast<const unsigned char*>(y.plane[p]) + static_cast<std::size_t>(r) * y.pitch[p];
      for (int x = 0; x < w; ++x) h = (h ^ row[x]) * 1099511628211ull;
    }
  }
  return h;
}

}  // namespace imgpipe::codecs
