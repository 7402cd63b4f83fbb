// GPU twin of normalize_ref.cpp: one thread per output pixel, all channels.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "normalize.hpp"

namespace imgpipe::kernels {
namespace {

struct Coeffs {
  float scale;
  float mean[4];
  float std[4];
  int map[4];
};

template <typename T>
__device__ __forceinline__ T convert(float v);
template <>
__device__ __forceinline__ float convert<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half convert<__half>(float v) { return __float2half_rn(v); }

template <typename T, int C, bool NCHW>
__global__ void normalize_kernel(const unsigned char* __restrict__ src, size_t pitch, size_t stride,
                                 T* __restrict__ dst, int H, int W, Coeffs k) {
  const int n = blockIdx.y;
  const long long pixels = static_cast<long long>(H) * W;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < pixels;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(i / W), x = static_cast<int>(i % W);
    const unsigned char* px = src + n * stride + y * pitch + static_cast<size_t>(x) * C;
    T* out = dst + static_cast<size_t>(n) * pixels * C;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const unsigned char v = px[k.map[c]];
      T o;
      if constexpr (sizeof(T) == 1) {
        o = v;
      } else {
        const float r = __fdiv_rn(__fsub_rn(__fmul_rn(static_cast<float>(v), k.scale), k.mean[c]), k.std[c]);
        o = convert<T>(r);
      }
      if constexpr (NCHW) out[c * pixels + i] = o;
      else out[i * C + c] = o;
    }
  }
}

template <typename T, int C>
void launch(const NormalizeParams& p, T* dst, const Coeffs& k, cudaStream_t s) {
  const size_t row = static_cast<size_t>(p.width) * p.channels;
  const size_t pitch = p.src_pitch ? p.src_pitch : row;
  const size_t stride = p.src_image_stride ? p.src_image_stride : pitch * p.height;
  const long long pixels = static_cast<long long>(p.height) * p.width;
  const int threads = 256;
  const long long blocks = (pixels + threads - 1) / threads;
  dim3 grid(static_cast<unsigned>(blocks < 65535 ? blocks : 65535), static_cast<unsigned>(p.batch));
  if (p.layout == Layout::nchw)
    normalize_kernel<T, C, true><<<grid, threads, 0, s>>>(p.src, pitch, stride, dst, p.height, p.width, k);
  else
    normalize_kernel<T, C, false><<<grid, threads, 0, s>>>(p.src, pitch, stride, dst, p.height, p.width, k);
}

template <typename T>
void dispatch_channels(const NormalizeParams& p, const Coeffs& k, cudaStream_t s) {
  T* dst = static_cast<T*>(p.dst);
  switch (p.channels) {
    case 1: launch<T, 1>(p, dst, k, s); break;
    case 3: launch<T, 3>(p, dst, k, s); break;
    default: launch<T, 4>(p, dst, k, s); break;
  }
}

}  // namespace

void normalize_gpu(const NormalizeParams& p, CUstream_st* stream) {
  validate(p);
  if (p.batch > 65535) throw std::invalid_argument("normalize: batch must be <= 65535 on the GPU");
  Coeffs k{};
  k.scale = p.scale;
  for (int c = 0; c < 4; ++c) {
    k.mean[c] = p.mean[c];
    k.std[c] = p.std[c];
    k.map[c] = c;
  }
  if (p.swap_rb) { k.map[0] = 2; k.map[2] = 0; }
  switch (p.dtype) {
    case DType::float32: dispatch_channels<float>(p, k, stream); break;
    case DType::float16: dispatch_channels<__half>(p, k, stream); break;
    case DType::uint8: dispatch_channels<unsigned char>(p, k, stream); break;
  }
  IMGPIPE_CUDA_TRY(cudaGetLastError());
}

}  // namespace imgpipe::kernels
