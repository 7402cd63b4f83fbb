// GPU twin of fused_ref.cpp. Bilinear batches whose strip spans fit the
// shared-memory budget (below: downscales up to about 7x for 3 channels) take
// a dedicated kernel; everything else (nearest, larger downscales) goes
// through the resize family's kernel (resize.cu), which writes normalised
// float32/float16 (or u8) in NCHW/NHWC directly, without the u8 canvas. The
// YUV images of a batch (SrcImage::yuv) always take resize.cu's YUV kernel,
// in the same call: the dedicated kernel takes the batch's u8 images only. All
// compute every canvas value with resize_math.hpp's integer arithmetic,
// shared with the CPU twin, and normalise through a per-block table of the
// C x 256 values built with normalize.cu's operations (__fmul_rn, __fsub_rn,
// __fdiv_rn), so the hot loop has no division.
//
// The bilinear kernel. The grid is one wave of blocks; each block owns a
// 128-column strip of the canvas and an equal contiguous share (to within a
// row) of the launch's rows, image after image, interleaved over its 8 warps.
// Lane l owns the 4 consecutive columns strip * 128 + 4 l .. + 3, so a warp
// covers the strip's 128 columns of one row and writes them with 16-byte
// (float32), 8-byte (float16) or 4-byte (u8) stores per channel plane (NCHW)
// or C such stores (NHWC). For each row the warp first stages the two source
// rows' byte span that its 128 columns need (taps are monotonic, so it is one
// contiguous span per row) into its own shared-memory buffer with coalesced,
// 16-byte aligned asynchronous copies, then every lane reads its taps from
// there. Chunks that would leave the image (its first bytes, when pixel (0, 0)
// is not 16-byte aligned, and its last) are read byte by byte, so no byte
// outside [pixel (0,0), end of last row] is read. Column taps are computed
// once per image a warp meets; a 2C-byte tap pair is read from shared memory
// as three (C = 1: two) 32-bit words and funnel-shifted into place. When the
// two taps are one pixel (edge clamp), w1 is 0 (resize_math.hpp's clamp sets
// f = 0), so the second pixel's bytes, whatever they are, contribute nothing.
// The arithmetic is resize_math.hpp's in fewer instructions (the kernel is
// issue-bound): the horizontal pass p0 * w0 + p1 * w1 is one dp2a (16-bit
// weights times bytes, exact), and vlinear()'s ((h >> 4) * b) >> 16 is the
// high word of (h >> 4) * (b << 16).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/cuda_check.hpp"
#include "fused.hpp"
#include "resize_math.hpp"
#include "resize_plan.hpp"
#include "device_common.cuh"

namespace imgpipe::kernels {
namespace {
using detail::bits16;
using detail::convert;
using detail::current_device;
using detail::ImageArg;
using detail::sm_count;
using detail::store4;

using detail::linear_tap;
using detail::LinearTap;

constexpr int kThreads = 256;       // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kPix = 4;             // consecutive columns per lane
constexpr int kTileW = 32 * kPix;   // 128 columns per strip
constexpr int kMaxImages = 32;      // images per launch (kernel-argument array)
constexpr int kMaxSmem = 48 * 1024;  // dynamic shared memory per block (no opt-in needed)
// 4 blocks of 8 warps per SM: the kernel is issue-bound, not latency-bound, so
// more resident blocks do not help, and 6 or 8 make it spill
// (docs/benchmarks.md#fused-kernel-occupancy).
constexpr int kMinBlocks = 4;

struct Args {
  ImageArg img[kMaxImages];
  void* dst;
  long long image_stride;  // output elements per image
  int W, H;
  int images;  // in this launch
  int strips;  // ceil(W / 128)
  int parts;   // blocks per strip; the grid is strips * parts
  int span;    // bytes of one staged source row buffer (multiple of 16)
  int pad;
  int swap_rb;
  int vec;     // W % 4 == 0 and dst aligned: vector stores
  float scale;
  float mean[4];
  float stdv[4];
};
static_assert(sizeof(Args) <= 4000, "kernel arguments must stay under 4 KiB");

// normalize_value(): three IEEE float32 operations rounded to nearest, as in normalize.cu.
__device__ __forceinline__ float normalized(int v, float scale, float mean, float stdv) {
  return __fdiv_rn(__fsub_rn(__fmul_rn(static_cast<float>(v), scale), mean), stdv);
}

// Copies the 16 bytes of an image at image offset o (16-byte aligned in
// memory) to dst (shared memory): one asynchronous copy (sm_80+; a vector
// load before) when the chunk lies inside [0, size), else the bytes inside it
// one by one (the others 0).
__device__ __forceinline__ void stage_chunk(unsigned char* dst, const unsigned char* src, int o, int size) {
  if (o >= 0 && o + 16 <= size) {
#if __CUDA_ARCH__ >= 800
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src + o) : "memory");
#else
    *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(src + o));
#endif
    return;
  }
  unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const int b = o + k;
    if (b >= 0 && b < size) w[k >> 2] |= static_cast<unsigned>(__ldg(src + b)) << (8 * (k & 3));
  }
  *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
}

// Waits for this thread's stage_chunk() copies.
__device__ __forceinline__ void stage_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Bytes [p, p + 2C) of a staged row (shared memory, 4-byte aligned base) as
// two words: bytes 0..3 in lo, 4..7 in hi.
template <int C>
__device__ __forceinline__ void tap_bytes(const unsigned char* buf, int p, unsigned& lo, unsigned& hi) {
  const unsigned* w = reinterpret_cast<const unsigned*>(buf) + (p >> 2);
  const unsigned sh = 8u * static_cast<unsigned>(p & 3);
  const unsigned w0 = w[0], w1 = w[1];
  lo = __funnelshift_r(w0, w1, sh);
  if constexpr (C > 1) hi = __funnelshift_r(w1, w[2], sh);
  else hi = 0;
}

// Horizontal pass of channel c of a tap pair (bytes c and C + c of lo:hi):
// p0 * w0 + p1 * w1 as one 16 x 8-bit dot product (wts = w0 | w1 << 16).
template <int C>
__device__ __forceinline__ unsigned hpass(unsigned lo, unsigned hi, unsigned wts, int c) {
  unsigned pair;
  if constexpr (C == 1) pair = lo;  // bytes 0 and 1
  else pair = __byte_perm(lo, hi, static_cast<unsigned>(c | ((C + c) << 4)));
  return __dp2a_lo(wts, pair, 0u);
}

// vlinear() with the row weights pre-shifted (B = b << 16): for h, b >= 0,
// ((h >> 4) * b) >> 16 is the high word of (h >> 4) * (b << 16) ((h >> 4) * b < 2^27).
__device__ __forceinline__ int vpass(unsigned h0, unsigned h1, unsigned B0, unsigned B1) {
  return static_cast<int>((__umulhi(h0 >> 4, B0) + __umulhi(h1 >> 4, B1) + 2u) >> 2);
}

template <int C, typename OutT, bool kNchw>
__global__ void __launch_bounds__(kThreads, kMinBlocks) fused_linear_kernel(const __grid_constant__ Args a) {
  constexpr bool kU8 = std::is_same_v<OutT, unsigned char>;
  constexpr int kTableBytes = kU8 ? 0 : ((C * 256 * static_cast<int>(sizeof(OutT)) + 15) & ~15);
  extern __shared__ __align__(16) unsigned char smem[];
  OutT* const table = reinterpret_cast<OutT*>(smem);
  if constexpr (!kU8) {
    for (int k = threadIdx.x; k < C * 256; k += kThreads) {
      const int c = k >> 8;
      table[k] = convert<OutT>(normalized(k & 255, a.scale, a.mean[c], a.stdv[c]));
    }
    __syncthreads();
  }

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned char* const buf0 = smem + kTableBytes + warp * 2 * a.span;
  unsigned char* const buf1 = buf0 + a.span;

  const int W = a.W, H = a.H;
  const int strip = static_cast<int>(blockIdx.x) % a.strips;
  const int part = static_cast<int>(blockIdx.x) / a.strips;
  const long long rows = static_cast<long long>(a.images) * H;
  const int r_begin = static_cast<int>(rows * part / a.parts);
  const int r_end = static_cast<int>(rows * (part + 1) / a.parts);
  const int xs = strip * kTileW;     // first column of the strip
  const int xl = xs + kPix * lane;   // this lane's first column
  const bool swap = a.swap_rb != 0;
  const bool full = a.vec != 0 && xl + kPix <= W;  // vector stores for this lane

  int current = -1;
  int lo = 0, nbytes = 0;  // the strip's source byte span in a row: [lo, lo + nbytes)
  int off[kPix];           // tap 0 byte offset relative to lo; -1: pad (or beyond the canvas)
  unsigned wts[kPix];      // w0 | w1 << 16

#pragma unroll 1
  for (int r = r_begin + warp; r < r_end; r += kWarps) {
    const int n = r / H, Y = r - n * H;  // warp-uniform
    if (n != current) {
      current = n;
      const ImageArg& im = a.img[n];  // read in place (constant bank): a register copy spills
      const int first = max(xs, im.x0);
      const int last = min(min(xs + kTileW, W), im.x0 + im.rw) - 1;
      if (first <= last) {
        lo = linear_tap(first - im.x0, im.scale_x, im.sw, true).s0 * C;
        nbytes = (linear_tap(last - im.x0, im.scale_x, im.sw, true).s1 + 1) * C - lo;
      } else {
        lo = 0;
        nbytes = 0;
      }
#pragma unroll
      for (int j = 0; j < kPix; ++j) {
        const int X = xl + j;
        const int rx = X - im.x0;
        const bool inside = X < W && rx >= 0 && rx < im.rw;
        const LinearTap t = linear_tap(rx, im.scale_x, im.sw, true);
        off[j] = inside ? t.s0 * C - lo : -1;
        wts[j] = static_cast<unsigned>(t.w0) | (static_cast<unsigned>(t.w1) << 16);
      }
    }
    const ImageArg& im = a.img[n];
    const unsigned char* const src = im.src;
    const int ry = Y - im.y0;
    const bool row_in = ry >= 0 && ry < im.rh;
    unsigned B0 = 0, B1 = 0;  // row weights << 16
    int mis0 = 0, mis1 = 0;
    if (row_in) {
      const LinearTap t = linear_tap(ry, im.scale_y, im.sh, false);
      B0 = static_cast<unsigned>(t.w0) << 16;
      B1 = static_cast<unsigned>(t.w1) << 16;
      // Stage both rows' spans: chunk k of row i is the aligned 16 bytes at g_i - mis_i + 16 k.
      const int g0 = t.s0 * im.pitch + lo, g1 = t.s1 * im.pitch + lo;
      mis0 = static_cast<int>((reinterpret_cast<std::uintptr_t>(src) + static_cast<unsigned>(g0)) & 15u);
      mis1 = static_cast<int>((reinterpret_cast<std::uintptr_t>(src) + static_cast<unsigned>(g1)) & 15u);
      const int a0 = g0 - mis0, a1 = g1 - mis1;
      const int n0 = nbytes > 0 ? (mis0 + nbytes + 15) >> 4 : 0;
      const int n1 = nbytes > 0 ? (mis1 + nbytes + 15) >> 4 : 0;
#pragma unroll 1
      for (int k = lane; k < n0; k += 32) stage_chunk(buf0 + 16 * k, src, a0 + 16 * k, im.size);
#pragma unroll 1
      for (int k = lane; k < n1; k += 32) stage_chunk(buf1 + 16 * k, src, a1 + 16 * k, im.size);
      stage_wait();
    }
    __syncwarp();

    // The u8 values, output channel c of column j in byte j of packed[c].
    unsigned packed[C];
#pragma unroll
    for (int c = 0; c < C; ++c) packed[c] = 0;
#pragma unroll
    for (int j = 0; j < kPix; ++j) {
      int v[C];
      if (!row_in || off[j] < 0) {
#pragma unroll
        for (int c = 0; c < C; ++c) v[c] = a.pad;
      } else {
        unsigned l0, h0, l1, h1;
        tap_bytes<C>(buf0, mis0 + off[j], l0, h0);
        tap_bytes<C>(buf1, mis1 + off[j], l1, h1);
#pragma unroll
        for (int c = 0; c < C; ++c) v[c] = vpass(hpass<C>(l0, h0, wts[j], c), hpass<C>(l1, h1, wts[j], c), B0, B1);
      }
      if constexpr (C >= 3) {
        if (swap) {
          const int t = v[0];
          v[0] = v[2];
          v[2] = t;
        }
      }
#pragma unroll
      for (int c = 0; c < C; ++c) packed[c] |= static_cast<unsigned>(v[c]) << (8 * j);
    }
    __syncwarp();  // the buffers are restaged next row

    // Output value of column j, channel c.
    auto value = [&](int j, int c) -> OutT {
      const int v = static_cast<int>((packed[c] >> (8 * j)) & 0xffu);
      if constexpr (kU8) return static_cast<OutT>(v);
      else return table[(c << 8) + v];
    };
    OutT* const dst = static_cast<OutT*>(a.dst) + im.index * a.image_stride;
    if constexpr (kNchw) {
      const int plane = H * W;
      OutT* const p = dst + Y * W + xl;
      if (full) {
#pragma unroll
        for (int c = 0; c < C; ++c) store4(p + c * plane, value(0, c), value(1, c), value(2, c), value(3, c));
      } else {
#pragma unroll
        for (int j = 0; j < kPix; ++j)
          if (xl + j < W) {
#pragma unroll
            for (int c = 0; c < C; ++c) p[c * plane + j] = value(j, c);
          }
      }
    } else {
      OutT* const p = dst + (Y * W + xl) * C;
      if (full) {
#pragma unroll
        for (int q = 0; q < C; ++q)
          store4(p + 4 * q, value((4 * q) / C, (4 * q) % C), value((4 * q + 1) / C, (4 * q + 1) % C),
                 value((4 * q + 2) / C, (4 * q + 2) % C), value((4 * q + 3) / C, (4 * q + 3) % C));
      } else {
#pragma unroll
        for (int j = 0; j < kPix; ++j)
          if (xl + j < W) {
#pragma unroll
            for (int c = 0; c < C; ++c) p[j * C + c] = value(j, c);
          }
      }
    }
  }
}

// Streaming multiprocessors of the current device and resident blocks of a
// kernel at a shared-memory size (both cached).
template <typename Kernel>
int blocks_per_sm(Kernel k, int smem) {
  // Per instantiation: the last shared-memory size asked for and its answer.
  static std::atomic<long long> cache{0};
  const long long c = cache.load(std::memory_order_relaxed);
  if (c != 0 && static_cast<int>(c >> 32) == smem) return static_cast<int>(c & 0xffffffff);
  int n = 0;
  IMGPIPE_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, kThreads, static_cast<std::size_t>(smem)));
  n = std::max(n, 1);
  cache.store((static_cast<long long>(smem) << 32) | n, std::memory_order_relaxed);
  return n;
}

template <int C, typename OutT, bool kNchw>
void launch(Args& a, int smem, cudaStream_t s) {
  auto* k = fused_linear_kernel<C, OutT, kNchw>;
  const int resident = sm_count(current_device()) * blocks_per_sm(k, smem);
  // One wave: as many blocks as fit at once, each strip's rows split evenly
  // (to within a row) over its blocks, at least 8 rows (one per warp) each.
  const long long rows = static_cast<long long>(a.images) * a.H;
  a.parts = static_cast<int>(std::max<long long>(1, std::min<long long>(resident / a.strips, (rows + 7) / 8)));
  const dim3 grid(static_cast<unsigned>(a.strips * a.parts));
  k<<<grid, kThreads, static_cast<std::size_t>(smem), s>>>(a);
}

template <int C, typename OutT>
void launch_l(Args& a, Layout l, int smem, cudaStream_t s) {
  if (l == Layout::nchw) launch<C, OutT, true>(a, smem, s);
  else launch<C, OutT, false>(a, smem, s);
}

template <typename OutT>
void launch_c(Args& a, int channels, Layout l, int smem, cudaStream_t s) {
  switch (channels) {
    case 1: launch_l<1, OutT>(a, l, smem, s); break;
    case 3: launch_l<3, OutT>(a, l, smem, s); break;
    default: launch_l<4, OutT>(a, l, smem, s); break;
  }
}

// The bilinear kernel for the u8 (BGR) images of the batch, when every such
// image's strip span fits the shared-memory budget and none is mirrored
// (true also when there are none); false (nothing enqueued) otherwise. YUV
// images are not its.
bool fused_linear_gpu(const FusedParams& p, cudaStream_t stream) {
  const ResizeBatch& b = p.in;
  if (b.interp != Interp::linear) return false;
  std::vector<int> bgr;
  for (int i = 0; i < b.batch; ++i) {
    if (b.images[i].yuv) continue;
    // Mirrored images (transform.flip) go to resize.cu's kernels, which
    // mirror as the CPU twin does; this one reads strips unmirrored.
    if (b.images[i].flip_x || b.images[i].flip_y) return false;
    bgr.push_back(i);
  }
  if (bgr.empty()) return true;
  const int C = b.channels, W = b.width, H = b.height;
  const int elem = static_cast<int>(dtype_size(p.dtype));
  const int table = p.dtype == DType::uint8 ? 0 : (C * 256 * elem + 15) & ~15;

  Args a{};
  a.dst = p.dst;
  a.W = W;
  a.H = H;
  a.image_stride = static_cast<long long>(H) * W * C;
  a.strips = (W + kTileW - 1) / kTileW;
  a.pad = b.pad_value;
  a.swap_rb = p.swap_rb ? 1 : 0;
  a.vec = W % 4 == 0 && reinterpret_cast<std::uintptr_t>(p.dst) % (4 * static_cast<std::uintptr_t>(elem)) == 0;
  a.scale = p.scale;
  for (int c = 0; c < 4; ++c) {
    a.mean[c] = p.mean[c];
    a.stdv[c] = p.std[c];
  }
  // Every launch of the call must be able to take this path: the largest
  // strip span of a row over the batch's images decides. Over 128
  // consecutive columns tap 0 moves by at most floor(127 * scale) + 1 pixels
  // (one more for float rounding) and tap 1 is tap 0 + 1: 127 * scale + 4 pixels.
  int span_bytes = 0;
  for (const int i : bgr) {
    const detail::ImagePlan q = detail::plan_image(b, i);
    const double px = std::min(static_cast<double>(q.sw), std::ceil(127.0 * q.scale_x) + 4.0);
    span_bytes = std::max(span_bytes, static_cast<int>(std::min(px * C, 1e9)));
  }
  // Room for the alignment shift (< 16) and the tap reads' overrun (< 12 bytes).
  const int span = ((span_bytes + 15 + 15) & ~15) + 16;
  const long long smem = table + 2LL * kWarps * span;
  if (smem > kMaxSmem) return false;
  a.span = span;

  for (std::size_t first = 0; first < bgr.size(); first += kMaxImages) {
    const int n = static_cast<int>(std::min<std::size_t>(kMaxImages, bgr.size() - first));
    for (int k = 0; k < n; ++k) {
      a.img[k] = detail::image_arg(b, bgr[first + k], C);
    }
    a.images = n;
    switch (p.dtype) {
      case DType::float32: launch_c<float>(a, C, p.layout, static_cast<int>(smem), stream); break;
      case DType::float16: launch_c<__half>(a, C, p.layout, static_cast<int>(smem), stream); break;
      case DType::uint8: launch_c<unsigned char>(a, C, p.layout, static_cast<int>(smem), stream); break;
    }
    IMGPIPE_CUDA_TRY(cudaGetLastError());
  }
  return true;
}

}  // namespace

void fused_gpu(const FusedParams& p, CUstream_st* stream) {
  validate(p);
  const bool bgr_done = fused_linear_gpu(p, stream);
  detail::OutputSpec out;
  out.dst = p.dst;
  out.layout = p.layout;
  out.dtype = p.dtype;
  out.swap_rb = p.swap_rb;
  out.scale = p.scale;
  out.mean = p.mean;
  out.std = p.std;
  // YUV images (and the u8 ones the bilinear kernel did not take) through
  // the resize family's kernels.
  detail::resample_gpu(p.in, out, stream, bgr_done ? detail::Images::yuv : detail::Images::all);
}

}  // namespace imgpipe::kernels
