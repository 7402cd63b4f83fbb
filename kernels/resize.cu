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
//
// YUV images (SrcImage::yuv, resize.hpp) take a second kernel of the same
// work layout, launched by the same call for the batch's YUV images (each
// image's output position is its own, so a mixed batch is two sets of
// launches into one output): it converts each source tap with yuv.hpp's
// arithmetic and resamples as above. A batch without YUV images launches
// exactly what it did before (one pass over the descriptors on the host).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "core/cuda_check.hpp"
#include "resize_math.hpp"
#include "resize_plan.hpp"
#include "yuv.hpp"
#include "device_common.cuh"

namespace imgpipe::kernels {
namespace detail {
namespace {

constexpr int kThreads = 256;       // 8 warps
constexpr int kCols = 4;            // columns per thread (strided by 32)
constexpr int kTileW = 32 * kCols;  // 128
constexpr int kMaxImages = 32;      // images per launch (kernel-argument array, < 4 KiB)
constexpr int kMinBlocks = 4;       // 64 registers, no spills (ptxas -v), 32 warps per SM

// What every launch of the family's kernels shares: the output and the work split.
struct OutArgs {
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

struct Args : OutArgs {
  ImageArg img[kMaxImages];
};
static_assert(sizeof(Args) <= 4000, "kernel arguments must stay under 4 KiB");

// A YUV image of a launch: its geometry (ImageArg; src, size and pitch
// unused), planes and coefficients.
struct YuvArg {
  ImageArg g;
  YuvImage img;
  YuvCoeffs coef;
};
constexpr int kMaxYuvImages = 16;  // YUV images per launch (< 4 KiB of arguments)

struct YuvArgs : OutArgs {
  YuvArg img[kMaxYuvImages];
};
static_assert(sizeof(YuvArgs) <= 4000, "kernel arguments must stay under 4 KiB");

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

// The table's entries for channels 0..C-1 (float outputs); the block syncs.
template <int C, typename OutT, int N>
__device__ __forceinline__ void build_table(OutTable<OutT, N>& table, const OutArgs& a) {
  for (int k = threadIdx.x; k < C * 256; k += kThreads) {
    const int c = k >> 8;
    table.v[k] = convert<OutT>(normalized(k & 255, a.scale, a.mean[c], a.stdv[c]));
  }
  __syncthreads();
}

// Writes one canvas pixel's C u8 values v (input channel order) at o, output
// channel c at o[c * cs]: output channel c takes input channel 2 - c for
// c < 3 when swapping; float outputs through the table.
template <int C, bool kU8, typename OutT, int N>
__device__ __forceinline__ void store_pixel(OutT* o, const int (&v)[C], int cs, bool swap,
                                            const OutTable<OutT, N>& table) {
#pragma unroll
  for (int c = 0; c < C; ++c) {
    int vin = v[c];
    if constexpr (C >= 3) {
      if (swap && c == 0) vin = v[2];
      if (swap && c == 2) vin = v[0];
    }
    if constexpr (kU8) o[c * cs] = static_cast<unsigned char>(vin);
    else o[c * cs] = table.v[(c << 8) + vin];
  }
}

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
      const int rx = ((im.flip & 1) ? W - 1 - X : X) - im.x0;  // a mirrored canvas reads its column W-1-X
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
  if constexpr (!kU8) build_table<C>(table, a);

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
    const int ry = ((im.flip & 2) ? H - 1 - Y : Y) - im.y0;
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
      store_pixel<C, kU8>(dst + (row + X) * xs, v, cs, swap, table);
    }
  }
}

// The YUV kernel: the work layout of resample_kernel (3 channels), each
// source tap converted to BGR with yuv.hpp's integer arithmetic
// (detail::yuv_at, the function the CPU twin's yuv_to_bgr_ref applies), then
// resampled with the same integer arithmetic, so that a YUV image gives the
// bits of its BGR conversion. A tap is its samples read in place (Y, and U/V
// or the UV pair): lane l's taps are next to lane l+1's, so a warp's loads of
// one plane touch one or two consecutive spans, served by L1. Taps that are
// one pixel (edge clamp, or the two rows of a clamped row pair) are converted
// once.
template <bool kLinear, typename OutT>
__global__ void __launch_bounds__(kThreads, kMinBlocks) resample_yuv_kernel(const __grid_constant__ YuvArgs a) {
  constexpr int C = 3;
  constexpr bool kU8 = std::is_same_v<OutT, unsigned char>;
  __shared__ OutTable<OutT, kU8 ? 1 : C> table;
  if constexpr (!kU8) build_table<C>(table, a);

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
  int s0[kCols], s1[kCols];  // source columns of the taps; s0 = -1: pad (or beyond the canvas)
  int w0[kCols], w1[kCols];

#pragma unroll 1
  for (int r = r_begin + warp; r < r_end; r += kThreads / 32) {
    const int n = r / H, Y = r - n * H;  // warp-uniform
    const YuvArg& im = a.img[n];         // read in place (constant bank)
    if (n != current) {
      current = n;
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const int X = xbase + 32 * j;
        const int rx = ((im.g.flip & 1) ? W - 1 - X : X) - im.g.x0;
        const bool inside = X < W && rx >= 0 && rx < im.g.rw;
        if constexpr (kLinear) {
          const LinearTap t = linear_tap(rx, im.g.scale_x, im.g.sw, true);
          s0[j] = inside ? t.s0 : -1;
          s1[j] = t.s1;
          w0[j] = t.w0;
          w1[j] = t.w1;
        } else {
          s0[j] = inside ? nearest_index(rx, im.g.scale_x, im.g.sw) : -1;
          s1[j] = s0[j];
          w0[j] = w1[j] = 0;
        }
      }
    }
    const int ry = ((im.g.flip & 2) ? H - 1 - Y : Y) - im.g.y0;
    const bool row_in = ry >= 0 && ry < im.g.rh;
    int y0 = 0, y1 = 0, b0 = 0, b1 = 0;
    if (row_in) {
      if constexpr (kLinear) {
        const LinearTap t = linear_tap(ry, im.g.scale_y, im.g.sh, false);
        y0 = t.s0;
        y1 = t.s1;
        b0 = t.w0;
        b1 = t.w1;
      } else {
        y0 = y1 = nearest_index(ry, im.g.scale_y, im.g.sh);
      }
    }

    OutT* const dst = static_cast<OutT*>(a.dst) + im.g.index * a.image_stride;
    const int row = Y * W;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const int X = xbase + 32 * j;
      if (X >= W) continue;
      int v[C];
      if (!row_in || s0[j] < 0) {
#pragma unroll
        for (int c = 0; c < C; ++c) v[c] = a.pad;
      } else {
        unsigned char p00[C];
        yuv_at(im.img, im.coef, s0[j], y0, p00);
        if constexpr (kLinear) {
          unsigned char p01[C], p10[C], p11[C];
          if (s1[j] != s0[j]) yuv_at(im.img, im.coef, s1[j], y0, p01);
          else for (int c = 0; c < C; ++c) p01[c] = p00[c];
          if (y1 != y0) {
            yuv_at(im.img, im.coef, s0[j], y1, p10);
            if (s1[j] != s0[j]) yuv_at(im.img, im.coef, s1[j], y1, p11);
            else for (int c = 0; c < C; ++c) p11[c] = p10[c];
          } else {
#pragma unroll
            for (int c = 0; c < C; ++c) {
              p10[c] = p00[c];
              p11[c] = p01[c];
            }
          }
#pragma unroll
          for (int c = 0; c < C; ++c)
            v[c] = vlinear(p00[c] * w0[j] + p01[c] * w1[j], p10[c] * w0[j] + p11[c] * w1[j], b0, b1);
        } else {
#pragma unroll
          for (int c = 0; c < C; ++c) v[c] = p00[c];
        }
      }
      store_pixel<C, kU8>(dst + (row + X) * xs, v, cs, swap, table);
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

// The output fields of a launch.
void fill_output(OutArgs& a, const ResizeBatch& b, const OutputSpec& out) {
  const int C = b.channels, W = b.width, H = b.height;
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
}

// One wave: as many blocks as fit at once, each strip's rows split evenly
// (to within a row) over its blocks, at least 8 rows (one per warp) each.
dim3 one_wave(OutArgs& a) {
  const int resident = sm_count() * kMinBlocks;
  const long long rows = static_cast<long long>(a.images) * a.H;
  a.parts = static_cast<int>(std::max<long long>(1, std::min<long long>(resident / a.strips, (rows + 7) / 8)));
  return dim3(static_cast<unsigned>(a.strips * a.parts));
}

template <typename OutT>
void launch_yuv(const YuvArgs& a, bool linear, dim3 grid, cudaStream_t s) {
  if (linear) resample_yuv_kernel<true, OutT><<<grid, kThreads, 0, s>>>(a);
  else resample_yuv_kernel<false, OutT><<<grid, kThreads, 0, s>>>(a);
}

// The YUV images `idx` of b.
void resample_yuv_gpu(const ResizeBatch& b, const OutputSpec& out, const std::vector<int>& idx, cudaStream_t stream) {
  YuvArgs a{};
  fill_output(a, b, out);
  const bool linear = b.interp == Interp::linear;
  for (std::size_t first = 0; first < idx.size(); first += kMaxYuvImages) {
    const int n = static_cast<int>(std::min<std::size_t>(kMaxYuvImages, idx.size() - first));
    for (int k = 0; k < n; ++k) {
      const int i = idx[first + k];
      const ImagePlan q = plan_image(b, i);
      YuvArg& y = a.img[k];
      y.g = ImageArg{};
      y.g.scale_x = q.scale_x;
      y.g.scale_y = q.scale_y;
      y.g.sw = q.sw;
      y.g.sh = q.sh;
      y.g.x0 = q.x0;
      y.g.y0 = q.y0;
      y.g.rw = q.rw;
      y.g.rh = q.rh;
      y.g.index = i;
      y.g.flip = (q.flip_x ? 1 : 0) | (q.flip_y ? 2 : 0);
      y.img = q.yuv;
      y.coef = make_coeffs(q.yuv.format.matrix, q.yuv.format.range, q.yuv.format.bits);
    }
    a.images = n;
    const dim3 grid = one_wave(a);
    switch (out.dtype) {
      case DType::float32: launch_yuv<float>(a, linear, grid, stream); break;
      case DType::float16: launch_yuv<__half>(a, linear, grid, stream); break;
      case DType::uint8: launch_yuv<unsigned char>(a, linear, grid, stream); break;
    }
    IMGPIPE_CUDA_TRY(cudaGetLastError());
  }
}

}  // namespace

void resample_gpu(const ResizeBatch& b, const OutputSpec& out, CUstream_st* stream, Images which) {
  // The images each kernel takes (a batch without YUV images: all, in order).
  std::vector<int> bgr, yuv;
  for (int i = 0; i < b.batch; ++i) {
    if (b.images[i].yuv) {
      if (which != Images::bgr) yuv.push_back(i);
    } else if (which != Images::yuv) {
      bgr.push_back(i);
    }
  }
  if (!yuv.empty()) resample_yuv_gpu(b, out, yuv, stream);
  const int C = b.channels;
  Args a{};
  fill_output(a, b, out);
  const bool linear = b.interp == Interp::linear;
  for (std::size_t first = 0; first < bgr.size(); first += kMaxImages) {
    const int n = static_cast<int>(std::min<std::size_t>(kMaxImages, bgr.size() - first));
    for (int k = 0; k < n; ++k) {
      a.img[k] = image_arg(b, bgr[first + k], C);
    }
    a.images = n;
    const dim3 grid = one_wave(a);
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
