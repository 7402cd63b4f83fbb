// GPU twin of normalize_ref.cpp. Two kernels:
// - the quad kernel (dense rows of a multiple of 4 pixels, 4-byte aligned
//   rows, aligned dst): a thread converts 4 consecutive pixels of a row at a
//   time, reading their 4C bytes as C aligned 32-bit words and writing 4
//   consecutive outputs per store (16 bytes for float32) per channel plane
//   (NCHW) or C such stores (NHWC); the normalised values come from a
//   per-block table of the C x 256 values, built with the same three
//   operations (__fmul_rn, __fsub_rn, __fdiv_rn), so the bits are those of
//   the per-pixel formula;
// - the general kernel: one thread per output pixel, all channels.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "normalize.hpp"
#include "device_common.cuh"

namespace imgpipe::kernels {
namespace {
using detail::convert;
using detail::sm_count;
using detail::store4;

struct Coeffs {
  float scale;
  float mean[4];
  float std[4];
  int map[4];
};


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

constexpr int kQuadThreads = 256;
// Blocks per SM the quad kernel is compiled for (<= 32 registers on sm_80/90):
// the most the architecture holds at 256 threads.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
constexpr int kQuadMinBlocks = 4;
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
constexpr int kQuadMinBlocks = 6;
#else
constexpr int kQuadMinBlocks = 8;
#endif

// Grid: x = blocks per image (grid-stride over the image's quads), y = image.
// NHWC: a full warp's 32 quads are one contiguous run of 32 x 4C outputs;
// they go through shared memory so that each store instruction of the warp
// writes 32 consecutive 4-element chunks (512 bytes for float32). Storing
// each lane's 4C outputs directly (C strided chunks per instruction) is far
// slower (docs/benchmarks.md#nhwc-stores-through-shared-memory).
template <typename T, int C, bool NCHW>
__global__ void __launch_bounds__(kQuadThreads, kQuadMinBlocks) normalize_quad_kernel(const unsigned char* __restrict__ src,
                                                                     size_t pitch, size_t stride,
                                                                     T* __restrict__ dst, int H, int W, Coeffs k) {
  constexpr bool kU8 = sizeof(T) == 1;
  __shared__ T table[kU8 ? 1 : C * 256];
  __shared__ __align__(16) T xpose[NCHW ? 4 : kQuadThreads * 4 * C];
  if constexpr (!kU8) {
    for (int e = threadIdx.x; e < C * 256; e += kQuadThreads) {
      const int c = e >> 8;
      table[e] = convert<T>(__fdiv_rn(__fsub_rn(__fmul_rn(static_cast<float>(e & 255), k.scale), k.mean[c]), k.std[c]));
    }
    __syncthreads();
  }
  const int n = blockIdx.y;
  const int lane = threadIdx.x & 31;
  const int Q = W >> 2;  // quads per row
  const int quads = H * Q;
  const bool swap = k.map[0] != 0;
  const unsigned char* const img = src + n * stride;
  T* const out = dst + static_cast<size_t>(n) * H * W * C;
  const size_t plane = static_cast<size_t>(H) * W;
  T* const xw = xpose + (threadIdx.x & ~31) * 4 * C;  // this warp's transpose buffer
  // Quad i: pixels 4 q .. 4 q + 3 of row y (i = y * Q + q); in NHWC its
  // outputs are elements 4 C i .. 4 C i + 4 C - 1 (W = 4 Q). Two quads per
  // iteration, both loaded before either is converted.
  auto load = [&](int i, unsigned (&w)[C]) {
    const int y = i / Q, q = i - y * Q;
    const unsigned* const in = reinterpret_cast<const unsigned*>(img + y * pitch) + q * C;
#pragma unroll
    for (int e = 0; e < C; ++e) w[e] = __ldg(in + e);
  };
  // wb: the warp's first quad (warp-uniform); the lane's quad is wb + lane.
  auto convert_store = [&](int wb, const unsigned (&w)[C]) {
    const int i = wb + lane;
    int v[4][C];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int b = j * C + c;
        v[j][c] = static_cast<int>((w[b >> 2] >> (8 * (b & 3))) & 0xffu);
      }
      if constexpr (C >= 3) {
        if (swap) {
          const int t = v[j][0];
          v[j][0] = v[j][2];
          v[j][2] = t;
        }
      }
    }
    auto value = [&](int j, int c) -> T {
      if constexpr (kU8) return static_cast<T>(v[j][c]);
      else return table[(c << 8) + v[j][c]];
    };
    if constexpr (NCHW) {
      if (i >= quads) return;
      const int y = i / Q, q = i - y * Q;
      const int pix = y * W + 4 * q;
#pragma unroll
      for (int c = 0; c < C; ++c) store4(out + c * plane + pix, value(0, c), value(1, c), value(2, c), value(3, c));
    } else if (wb + 32 <= quads) {
#pragma unroll
      for (int e = 0; e < C; ++e)
        store4(xw + lane * 4 * C + 4 * e, value((4 * e) / C, (4 * e) % C), value((4 * e + 1) / C, (4 * e + 1) % C),
               value((4 * e + 2) / C, (4 * e + 2) % C), value((4 * e + 3) / C, (4 * e + 3) % C));
      __syncwarp();
      T* const p = out + static_cast<size_t>(wb) * 4 * C;
#pragma unroll
      for (int e = 0; e < C; ++e) {
        const int kk = 4 * (e * 32 + lane);
        store4(p + kk, xw[kk], xw[kk + 1], xw[kk + 2], xw[kk + 3]);
      }
      __syncwarp();
    } else {
      if (i >= quads) return;
      T* const p = out + static_cast<size_t>(i) * 4 * C;
#pragma unroll
      for (int e = 0; e < C; ++e)
        store4(p + 4 * e, value((4 * e) / C, (4 * e) % C), value((4 * e + 1) / C, (4 * e + 1) % C),
               value((4 * e + 2) / C, (4 * e + 2) % C), value((4 * e + 3) / C, (4 * e + 3) % C));
    }
  };
  const int step = gridDim.x * kQuadThreads;
#pragma unroll 1
  for (int wb = blockIdx.x * kQuadThreads + (threadIdx.x & ~31); wb < quads; wb += 2 * step) {  // warp-uniform
    const bool second = wb + step < quads;
    unsigned w0[C], w1[C];
    if (wb + lane < quads) load(wb + lane, w0);
    if (second && wb + step + lane < quads) load(wb + step + lane, w1);
    convert_store(wb, w0);
    if (second) convert_store(wb + step, w1);
  }
}

template <typename T, int C>
void launch(const NormalizeParams& p, T* dst, const Coeffs& k, cudaStream_t s) {
  const size_t row = static_cast<size_t>(p.width) * p.channels;
  const size_t pitch = p.src_pitch ? p.src_pitch : row;
  const size_t stride = p.src_image_stride ? p.src_image_stride : pitch * p.height;
  const long long pixels = static_cast<long long>(p.height) * p.width;
  const bool quad = p.width % 4 == 0 && pixels < (1LL << 29) && reinterpret_cast<std::uintptr_t>(p.src) % 4 == 0 &&
                    pitch % 4 == 0 && stride % 4 == 0 &&
                    reinterpret_cast<std::uintptr_t>(dst) % (4 * sizeof(T)) == 0;
  if (quad) {
    // About 8 blocks of 256 threads per SM in all, spread over the images.
    const long long quads = pixels / 4;
    const long long per_image = std::max<long long>(1, (8LL * sm_count() + p.batch - 1) / p.batch);
    const long long blocks = std::min<long long>(per_image, (quads + 2 * kQuadThreads - 1) / (2 * kQuadThreads));
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(p.batch));
    if (p.layout == Layout::nchw)
      normalize_quad_kernel<T, C, true><<<grid, kQuadThreads, 0, s>>>(p.src, pitch, stride, dst, p.height, p.width, k);
    else
      normalize_quad_kernel<T, C, false><<<grid, kQuadThreads, 0, s>>>(p.src, pitch, stride, dst, p.height, p.width, k);
    return;
  }
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
