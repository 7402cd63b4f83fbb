// Internal to kernels/*.cu: device helpers the kernels share (conversion of a
// float result to the output type, 4-element vector stores), the per-launch
// image descriptor of the resize family, and the cached SM count.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "resize_plan.hpp"

namespace imgpipe::kernels::detail {

// float -> the output type (float16: round to nearest even).
template <typename T>
__device__ __forceinline__ T convert(float v);
template <>
__device__ __forceinline__ float convert<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half convert<__half>(float v) { return __float2half_rn(v); }

template <typename T>
__device__ __forceinline__ unsigned bits16(T v) {
  return static_cast<unsigned>(__half_as_ushort(v));
}

// Four consecutive output values at p (aligned to 4 elements) in one store.
template <typename T>
__device__ __forceinline__ void store4(T* p, T v0, T v1, T v2, T v3) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float4*>(p) = make_float4(v0, v1, v2, v3);
  } else if constexpr (std::is_same_v<T, __half>) {
    uint2 v;
    v.x = bits16(v0) | (bits16(v1) << 16);
    v.y = bits16(v2) | (bits16(v3) << 16);
    *reinterpret_cast<uint2*>(p) = v;
  } else {
    *reinterpret_cast<unsigned*>(p) = static_cast<unsigned>(v0) | (static_cast<unsigned>(v1) << 8) |
                                      (static_cast<unsigned>(v2) << 16) | (static_cast<unsigned>(v3) << 24);
  }
}

// One image of a resize-family launch, as the kernels read it.
struct ImageArg {
  const unsigned char* src;  // pixel (0, 0)
  int size;                  // bytes from pixel (0, 0) to the end of the last row (< 1 GiB, validated)
  int pitch;
  double scale_x, scale_y;
  int sw, sh;
  int x0, y0, rw, rh;
  int index;  // position in the output batch
  int flip;   // bit 0: mirrored left to right, bit 1: top to bottom (SrcImage::flip_x / flip_y)
};

// The descriptor of image i of b (validated) with C channels.
inline ImageArg image_arg(const ResizeBatch& b, int i, int C) {
  const ImagePlan q = plan_image(b, i);
  ImageArg g;
  g.src = q.src;
  g.size = static_cast<int>(static_cast<std::size_t>(q.sh - 1) * q.pitch + static_cast<std::size_t>(q.sw) * C);
  g.pitch = static_cast<int>(q.pitch);
  g.scale_x = q.scale_x;
  g.scale_y = q.scale_y;
  g.sw = q.sw;
  g.sh = q.sh;
  g.x0 = q.x0;
  g.y0 = q.y0;
  g.rw = q.rw;
  g.rh = q.rh;
  g.index = i;
  g.flip = (q.flip_x ? 1 : 0) | (q.flip_y ? 2 : 0);
  return g;
}

inline int current_device() {
  int dev = 0;
  IMGPIPE_CUDA_TRY(cudaGetDevice(&dev));
  return dev;
}

// Streaming multiprocessors of device `dev` (cached per device).
inline int sm_count(int dev = current_device()) {
  static std::atomic<int> cache[64] = {};
  if (dev >= 0 && dev < 64) {
    const int v = cache[dev].load(std::memory_order_relaxed);
    if (v > 0) return v;
  }
  int n = 0;
  IMGPIPE_CUDA_TRY(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  n = std::max(n, 1);
  if (dev >= 0 && dev < 64) cache[dev].store(n, std::memory_order_relaxed);
  return n;
}

}  // namespace imgpipe::kernels::detail
