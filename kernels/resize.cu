// GPU twin of resize_ref.cpp / fused_ref.cpp: one kernel resamples a batch of
// u8 HWC images of any sizes into the canvas (stretch, letterbox, centre crop;
// bilinear or nearest) and writes u8, float16 or float32 in NHWC or NCHW,
// normalising float outputs as normalize.cu does. The arithmetic is
// resize_math.hpp, shared with the CPU twin.
//
// Work layout. The grid is one wave of blocks (4 per SM). Each block owns a
// 128-column strip of the canvas and an equal contiguous share (to within a
// row) of the launch's rows, image after image, interleaved over its 8 warps;
// so every block does the same work and there is no ragged last wave. Lane l
// owns columns strip * 128 + l + 32 j (j < 4): a warp's loads and stores for
// one j cover 32 consecutive output pixels, so stores are full 128-byte lines
// per channel plane (NCHW float32) and a load instruction touches only the
// source span of those 32 pixels. A thread computes its 4 columns' taps once
// per image it meets and reuses them for every row. A source pixel pair
// (2 x C bytes) is fetched as one or two aligned 8-byte words through the
// read-only cache and split with shifts; near the first and last bytes of an
// image (where an aligned word could leave it) the bytes are loaded one by
// one, so no byte outside [pixel (0,0), end of last row] is read.
// Float outputs come from a per-block table of the C x 256 normalised values,
// built with normalize.cu's operations (__fmul_rn, __fsub_rn, __fdiv_rn), so
// the hot loop has no division.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "resize_math.hpp"
#include "resize_plan.hpp"
#include "device_common.cuh"

namespace imgpipe::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;       // 8 warps
constexpr int kCols = 4;            // columns per thread (strided by 32)
constexpr int kTileW = 32 * kCols;  // 128
constexpr int kMaxImages = 32;      // images per launch (kernel-argument array, < 4 KiB)
constexpr int kMinBlocks = 4;       // 64 registers, no spills (ptxas -v), 32 warps per SM

struct Args {
  ImageArg img[kMaxImages];
  void* dst;
  long long image_stride;  // output elements per image
  int cstride;             // output elements between channels of a pixel (an image has < 2^31, validated)
  int xstride;             // output elements between pixels of a row
  int W, H;
  int images;  // in this launch
  int strips;  // 128-column strips: ceil(W / 128)
  int parts;   // blocks per strip; the grid is strips * parts
  int pad;
  int swap_rb;
  float scale;
  float mean[4];
  float stdv[4];
};
static_assert(sizeof(Args) <= 4000, "kernel arguments must stay under 4 KiB");

// Bytes [o, o + need) of an image (offsets from its pixel (0, 0) at src, whose
// address is `mis` past an 8-byte boundary; the image has `size` bytes),
// returned in the low bytes (the rest unspecified).
__device__ __forceinline__ unsigned long long fetch(const unsigned char* src, int o, int need, int size, int mis) {
  const int shift = (mis + o) & 7;
  const int aligned = o - shift;  // 8-byte aligned in memory
  if (aligned >= 0 && aligned + 16 <= size) {
    const auto* w = reinterpret_cast<const unsigned long long*>(src + aligned);
    unsigned long long v = __ldg(w);
    if (shift == 0) return v;
    v >>= 8 * shift;
    if (shift + need > 8) v |= __ldg(w + 1) << (64 - 8 * shift);
    return v;
  }
  unsigned long long v = 0;
  for (int k = 0; k < need; ++k) v |= static_cast<unsigned long long>(__ldg(src + o + k)) << (8 * k);
  return v;
}

__device__ __forceinline__ int byte_of(unsigned long long v, int k) { return static_cast<int>((v >> (8 * k)) & 0xffu); }

// normalize_value(): three IEEE float32 operations rounded to nearest, as in normalize.cu.
__device__ __forceinline__ float normalized(int v, float scale, float mean, float stdv) {
  return __fdiv_rn(__fsub_rn(__fmul_rn(static_cast<float>(v), scale), mean), stdv);
}

// Output values per (channel, u8 value): a table built by each block (float
// outputs) or the value itself (uint8 outputs).
template <typename OutT, int C>
struct OutTable {
  OutT v[C * 256];
};

// Per-thread column taps of one image (recomputed when a block's rows cross
// into the next image). Packed: the kernel is register-bound at 4 blocks of
// 256 threads per SM.
template <int C, bool kLinear>
struct ColumnTaps {
  int off[kCols];       // byte offset of tap 0 in a source row; -1: pad (or beyond the canvas)
  unsigned wts[kCols];  // w0 | w1 << 16
  unsigned dup = 0;     // bit j: both taps are one pixel (edge clamp)

  __device__ __forceinline__ void compute(const ImageArg& im, int xbase, int W) {
    dup = 0;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const int X = xbase + 32 * j;
      const int rx = X - im.x0;
      const bool inside = X < W && rx >= 0 && rx < im.rw;
      if constexpr (kLinear) {
        const LinearTap t = linear_tap(rx, im.scale_x, im.sw, true);
        off[j] = inside ? t.s0 * C : -1;
        wts[j] = static_cast<unsigned>(t.w0) | (static_cast<unsigned>(t.w1) << 16);
        if (t.s1 == t.s0) dup |= 1u << j;
      } else {
        off[j] = inside ? nearest_index(rx, im.scale_x, im.sw) * C : -1;
        wts[j] = 0;
        dup |= 1u << j;
      }
    }
  }
};

template <int C, bool kLinear, typename OutT>
__global__ void __launch_bounds__(kThreads, kMinBlocks) resample_kernel(const __grid_constant__ Args a) {
  // First, while nothing else is live (__fdiv_rn's slow path is a call).
  constexpr bool kU8 = std::is_same_v<OutT, unsigned char>;
  __shared__ OutTable<OutT, kU8 ? 1 : C> table;
  if constexpr (!kU8) {
    for (int k = threadIdx.x; k < C * 256; k += kThreads) {
      const int c = k >> 8;
      table.v[k] = convert<OutT>(normalized(k & 255, a.scale, a.mean[c], a.stdv[c]));
    }
    __syncthreads();
  }

  // This block: one 128-column strip, and an equal contiguous share of the
  // launch's rows (image n row Y is row n * H + Y), interleaved over its warps.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int W = a.W, H = a.H;
  const int strip = static_cast<int>(blockIdx.x) % a.strips;
  const int part = static_cast<int>(blockIdx.x) / a.strips;
  const long long rows = static_cast<long long>(a.images) * H;
  const int r_begin = static_cast<int>(rows * part / a.parts);
  const int r_end = static_cast<int>(rows * (part + 1) / a.parts);
  const int xbase = strip * kTileW + lane;
  const int cs = a.cstride, xs = a.xstride;
  const bool swap = a.swap_rb != 0;

  int current = -1;
  ImageArg im{};  // a copy: indexing the argument array in place spills
  ColumnTaps<C, kLinear> taps;
  int mis = 0;

#pragma unroll 1
  for (int r = r_begin + warp; r < r_end; r += kThreads / 32) {
    const int n = r / H, Y = r - n * H;  // warp-uniform
    if (n != current) {
      current = n;
      im = a.img[n];
      taps.compute(im, xbase, W);
      mis = static_cast<int>(reinterpret_cast<std::uintptr_t>(im.src) & 7);
    }
    const unsigned char* const src = im.src;
    const int ry = Y - im.y0;
    const bool row_in = ry >= 0 && ry < im.rh;
    int r0 = 0, r1 = 0;  // byte offsets of the two source rows
    int b0 = 0, b1 = 0;
    if (row_in) {
      if constexpr (kLinear) {
        const LinearTap t = linear_tap(ry, im.scale_y, im.sh, false);
        r0 = t.s0 * im.pitch;
        r1 = t.s1 * im.pitch;
        b0 = t.w0;
        b1 = t.w1;
      } else {
        r0 = nearest_index(ry, im.scale_y, im.sh) * im.pitch;
      }
    }

    // Issue every load of the row before using any.
    unsigned long long q0[kCols], q1[kCols];
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      q0[j] = q1[j] = 0;
      if (row_in && taps.off[j] >= 0) {
        const int need = (taps.dup >> j) & 1u ? C : 2 * C;
        q0[j] = fetch(src, r0 + taps.off[j], need, im.size, mis);
        if constexpr (kLinear) q1[j] = fetch(src, r1 + taps.off[j], need, im.size, mis);
      }
    }

    OutT* const dst = static_cast<OutT*>(a.dst) + im.index * a.image_stride;
    const int row = Y * W;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const int X = xbase + 32 * j;
      if (X >= W) continue;
      int v[C];
      if (!row_in || taps.off[j] < 0) {
#pragma unroll
        for (int c = 0; c < C; ++c) v[c] = a.pad;
      } else if constexpr (kLinear) {
        const bool dup = (taps.dup >> j) & 1u;
        const int w0 = static_cast<int>(taps.wts[j] & 0xffffu), w1 = static_cast<int>(taps.wts[j] >> 16);
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int p00 = byte_of(q0[j], c), p10 = byte_of(q1[j], c);
          const int p01 = dup ? p00 : byte_of(q0[j], C + c);
          const int p11 = dup ? p10 : byte_of(q1[j], C + c);
          v[c] = vlinear(p00 * w0 + p01 * w1, p10 * w0 + p11 * w1, b0, b1);
        }
      } else {
#pragma unroll
        for (int c = 0; c < C; ++c) v[c] = byte_of(q0[j], c);
      }
      OutT* const o = dst + (row + X) * xs;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        // Output channel c takes input channel 2 - c for c < 3 when swapping.
        int vin = v[c];
        if constexpr (C >= 3) {
          if (swap && c == 0) vin = v[2];
          if (swap && c == 2) vin = v[0];
        }
        if constexpr (kU8) o[c * cs] = static_cast<unsigned char>(vin);
        else o[c * cs] = table.v[(c << 8) + vin];
      }
    }
  }
}

template <typename OutT, int C>
void launch_c(const Args& a, bool linear, dim3 grid, cudaStream_t s) {
  if (linear) resample_kernel<C, true, OutT><<<grid, kThreads, 0, s>>>(a);
  else resample_kernel<C, false, OutT><<<grid, kThreads, 0, s>>>(a);
}

template <typename OutT>
void launch_t(const Args& a, int channels, bool linear, dim3 grid, cudaStream_t s) {
  switch (channels) {
    case 1: launch_c<OutT, 1>(a, linear, grid, s); break;
    case 3: launch_c<OutT, 3>(a, linear, grid, s); break;
    default: launch_c<OutT, 4>(a, linear, grid, s); break;
  }
}

}  // namespace

void resample_gpu(const ResizeBatch& b, const OutputSpec& out, CUstream_st* stream) {
  const int C = b.channels, W = b.width, H = b.height;
  Args a{};
  a.dst = out.dst;
  a.W = W;
  a.H = H;
  a.image_stride = static_cast<long long>(H) * W * C;
  if (out.layout == Layout::nchw) {
    a.cstride = H * W;
    a.xstride = 1;
  } else {
    a.cstride = 1;
    a.xstride = C;
  }
  a.pad = b.pad_value;
  a.swap_rb = out.swap_rb ? 1 : 0;
  a.scale = out.scale;
  for (int c = 0; c < 4; ++c) {
    a.mean[c] = out.mean[c];
    a.stdv[c] = out.std[c];
  }
  a.strips = (W + kTileW - 1) / kTileW;
  const int resident = sm_count() * kMinBlocks;
  for (int first = 0; first < b.batch; first += kMaxImages) {
    const int n = std::min(kMaxImages, b.batch - first);
    for (int k = 0; k < n; ++k) {
      a.img[k] = image_arg(b, first + k, C);
    }
    a.images = n;
    // One wave: as many blocks as fit at once, each strip's rows split evenly
    // (to within a row) over its blocks, at least 8 rows (one per warp) each.
    const long long rows = static_cast<long long>(n) * H;
    a.parts = static_cast<int>(std::max<long long>(1, std::min<long long>(resident / a.strips, (rows + 7) / 8)));
    const dim3 grid(static_cast<unsigned>(a.strips * a.parts));
    const bool linear = b.interp == Interp::linear;
    switch (out.dtype) {
      case DType::float32: launch_t<float>(a, C, linear, grid, stream); break;
      case DType::float16: launch_t<__half>(a, C, linear, grid, stream); break;
      case DType::uint8: launch_t<unsigned char>(a, C, linear, grid, stream); break;
    }
    IMGPIPE_CUDA_TRY(cudaGetLastError());
  }
}

}  // namespace detail

void resize_gpu(const ResizeBatch& b, std::uint8_t* d_dst, CUstream_st* stream) {
  validate(b);
  if (!d_dst) throw std::invalid_argument("resize: dst is null");
  detail::resample_gpu(b, detail::u8_hwc_output(d_dst), stream);
}

}  // namespace imgpipe::kernels
