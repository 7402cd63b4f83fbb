// CPU one pass from YUV to the output tensor (yuv_fused.hpp). Compiled with
// -ffp-contract=off like every CPU twin: the tap positions (double) and the
// normalisation (float) must round as the definition does.
//
// The work, per call:
//   plan      the output columns' taps (full-frame luma and chroma columns,
//             11-bit weights) and the canvas placement, once;
//   rows      each source row the vertical taps name, converted at the tap
//             columns only and resampled horizontally into 3 planar int32
//             rows (B, G, R), two kept (a row serves every output row that
//             reads it); the chroma terms of a chroma row computed once for
//             the luma rows that share it (4:2:0);
//   output    per output row the two int32 rows combined (OpenCV's vertical
//             rounding) into values 0..255, pad columns and rows at the pad
//             value, then normalised and stored in the layout.
// The x86-64 AVX2 rows (yuv_fused_avx2.cpp) do the same integer and float
// operations eight lanes at a time.
#include "yuv_fused.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "half.hpp"
#include "normalize.hpp"
#include "yuv_fused_rows.hpp"

#if IMGPIPE_YUV_AVX2
#include <immintrin.h>
#endif

namespace imgpipe::kernels {

namespace yuv_rows {

void make_plan(const YuvFusedParams& p, Plan& plan) {
  plan.W = p.width;
  plan.H = p.height;
  plan.bx = p.box_width > 0 ? p.box_x : 0;
  plan.by = p.box_width > 0 ? p.box_y : 0;
  plan.bw = p.box_width > 0 ? p.box_width : p.src.width;
  plan.bh = p.box_width > 0 ? p.box_height : p.src.height;
  SrcImage img;
  img.width = plan.bw;
  img.height = plan.bh;
  ResizeBatch b;
  b.images = &img;
  b.batch = 1;
  b.width = p.width;
  b.height = p.height;
  b.fit = p.fit;
  b.interp = p.interp;
  plan.pl = placement(b, 0);
  const Placement& pl = plan.pl;
  if (pl.width == plan.bw && pl.height == plan.bh) {  // cv::resize copies (resize_plan.hpp's plan_image)
    plan.scale_x = plan.scale_y = 1.0;
  } else {
    plan.scale_x = 1.0 / pl.inv_scale_x;
    plan.scale_y = 1.0 / pl.inv_scale_y;
  }
  const std::size_t W = static_cast<std::size_t>(p.width);
  for (auto* v : {&plan.l0, &plan.l1, &plan.c0, &plan.c1, &plan.w0, &plan.w1, &plan.wp}) v->assign(W + 8, 0);
  plan.oa = p.width;
  plan.ob = 0;
  plan.two = false;
  const int sx = p.src.format.monochrome ? 0 : p.src.format.chroma_shift_x;
  for (int X = 0; X < p.width; ++X) {
    const int col = p.flip_x ? p.width - 1 - X : X;  // the canvas column output column X shows
    const int rx = col - pl.x0;
    if (rx < 0 || rx >= pl.width) continue;
    plan.oa = std::min(plan.oa, X);
    plan.ob = std::max(plan.ob, X + 1);
    const detail::LinearTap t = axis_tap(p.interp, rx, plan.scale_x, plan.bw, true);
    const int s0 = t.s0, s1 = t.s1, w0 = t.w0, w1 = t.w1;
    if (w1 != 0) plan.two = true;
    plan.l0[X] = plan.bx + s0;
    plan.l1[X] = plan.bx + s1;
    plan.c0[X] = (plan.bx + s0) >> sx;
    plan.c1[X] = (plan.bx + s1) >> sx;
    plan.w0[X] = w0;
    plan.w1[X] = w1;
    plan.wp[X] = w0 | (w1 << 16);
  }
  // The covered columns are contiguous (a placement is one interval of the
  // canvas, mirrored or not).
  if (plan.ob < plan.oa) plan.oa = plan.ob = 0;
  // Windows of 8-bit rows: sample byte `index * mult + add` of a row of
  // `row_bytes` bytes.
  const YuvFormat& f = p.src.format;
  auto windows = [&](const std::vector<std::int32_t>& index, int mult, int add, int row_bytes,
                     std::vector<Plan::Window>& out) {
    out.clear();
    if (f.bytes != 1) return;
    for (int X = plan.oa; X + 8 <= plan.ob; X += 8) {
      Plan::Window w;
      int lo = INT32_MAX, hi = 0;
      for (int k = 0; k < 8; ++k) {
        lo = std::min(lo, index[X + k] * mult + add);
        hi = std::max(hi, index[X + k] * mult + add);
      }
      if (hi - lo < 32 && lo + 32 <= row_bytes) {  // no byte read past the row
        w.base = lo;
        for (int k = 0; k < 16; ++k) {
          const int at = k < 8 ? index[X + k] * mult + add - lo : -1;
          w.lo[k] = at >= 0 && at < 16 ? static_cast<std::uint8_t>(at) : 0x80;
          w.hi[k] = at >= 16 ? static_cast<std::uint8_t>(at - 16) : 0x80;
        }
      }
      out.push_back(w);
    }
  };
  const int cw = f.monochrome ? 0 : chroma_width(f, p.src.width);
  for (int t = 0; t < 2; ++t) {
    windows(t == 0 ? plan.l0 : plan.l1, 1, 0, p.src.width, plan.wl[t]);
    const std::vector<std::int32_t>& ci = t == 0 ? plan.c0 : plan.c1;
    if (f.monochrome) {
      plan.wu[t].clear(), plan.wv[t].clear();
    } else if (f.uv_interleaved) {
      windows(ci, 2, 0, 2 * cw, plan.wu[t]);
      windows(ci, 2, 1, 2 * cw, plan.wv[t]);
    } else {
      windows(ci, 1, 0, cw, plan.wu[t]);
      plan.wv[t].clear();
    }
  }
}

// ---- portable rows ---------------------------------------------------------


// Chroma terms of full-frame chroma row cy for the taps of [oa, ob).
void chroma_terms(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int cy, Scratch& sc, int from, int to) {
  const YuvFormat& f = s.format;
  const std::uint8_t* ur = s.plane[1] + static_cast<std::size_t>(cy) * s.pitch[1];
  const std::uint8_t* vr = f.uv_interleaved ? nullptr : s.plane[2] + static_cast<std::size_t>(cy) * s.pitch[2];
  for (int t = 0; t < (plan.two ? 2 : 1); ++t) {
    const std::int32_t* cx = t == 0 ? plan.c0.data() : plan.c1.data();
    for (int X = from; X < to; ++X) {
      std::int32_t U, V;
      if (f.uv_interleaved) {
        U = detail::sample(ur, 2 * cx[X], f.bytes, f.shift);
        V = detail::sample(ur, 2 * cx[X] + 1, f.bytes, f.shift);
      } else {
        U = detail::sample(ur, cx[X], f.bytes, f.shift);
        V = detail::sample(vr, cx[X], f.bytes, f.shift);
      }
      const std::int32_t u = U - c.c_offset, v = V - c.c_offset;
      sc.cr[t][X] = c.rv * v;
      sc.cg[t][X] = c.gu * u + c.gv * v;
      sc.cb[t][X] = c.bu * u;
    }
  }
}

// Source row fy resampled horizontally at columns [from, to).
void luma_pass(const YuvImage& s, const YuvCoeffs& c, const Plan& plan, int fy, Scratch& sc, Scratch::Row& out,
               int from, int to) {
  const YuvFormat& f = s.format;
  const std::uint8_t* yr = luma_row(s, fy);
  for (int X = from; X < to; ++X) {
    std::int32_t a[3], b[3] = {0, 0, 0};
    pixel(c, detail::sample(yr, plan.l0[X], f.bytes, f.shift), sc.cr[0][X], sc.cg[0][X], sc.cb[0][X], a);
    if (plan.two)
      pixel(c, detail::sample(yr, plan.l1[X], f.bytes, f.shift), sc.cr[1][X], sc.cg[1][X], sc.cb[1][X], b);
    for (int k = 0; k < 3; ++k) out.h[k][X] = a[k] * plan.w0[X] + b[k] * plan.w1[X];
  }
}

void vertical(const Scratch::Row& r0, const Scratch::Row& r1, int b0, int b1, Scratch& sc, int from,
              int to) {
  for (int k = 0; k < 3; ++k)
    for (int X = from; X < to; ++X) sc.v[k][X] = detail::vlinear(r0.h[k][X], r1.h[k][X], b0, b1);
}

// Output row Y from sc.v, by tables (every layout and dtype).
void emit(const YuvFusedParams& p, const Scratch& sc, int Y, int from, int to) {
  const std::size_t W = static_cast<std::size_t>(p.width), plane = W * static_cast<std::size_t>(p.height);
  for (int oc = 0; oc < 3; ++oc) {
    const int ic = p.swap_rb ? 2 - oc : oc;
    const std::int32_t* v = sc.v[ic].data();
    const std::size_t at = p.layout == Layout::nchw ? oc * plane + Y * W : Y * W * 3 + oc;
    const std::size_t step = p.layout == Layout::nchw ? 1 : 3;
    switch (p.dtype) {
      case DType::float32: {
        float* o = static_cast<float*>(p.dst) + at;
        for (int X = from; X < to; ++X) o[X * step] = sc.f32[oc][v[X]];
        break;
      }
      case DType::float16: {
        std::uint16_t* o = static_cast<std::uint16_t*>(p.dst) + at;
        for (int X = from; X < to; ++X) o[X * step] = sc.f16[oc][v[X]];
        break;
      }
      default: {
        std::uint8_t* o = static_cast<std::uint8_t*>(p.dst) + at;
        for (int X = from; X < to; ++X) o[X * step] = static_cast<std::uint8_t>(v[X]);
        break;
      }
    }
  }
}

}  // namespace yuv_rows

namespace {
constexpr int kMaxDim = 1 << 20;
}  // namespace

using namespace yuv_rows;

void validate(const YuvFusedParams& p) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("yuv_fused: " + what); };
  validate(p.src);
  if (p.width < 1 || p.height < 1) fail("width and height must be >= 1");
  if (p.width > kMaxDim || p.height > kMaxDim) fail("width and height must be <= " + std::to_string(kMaxDim));
  if (!p.dst) fail("dst is null");
  if (p.box_width != 0) {
    if (p.box_width < 1 || p.box_height < 1 || p.box_x < 0 || p.box_y < 0 || p.box_x + p.box_width > p.src.width ||
        p.box_y + p.box_height > p.src.height)
      fail("the box " + std::to_string(p.box_width) + "x" + std::to_string(p.box_height) + " at (" +
           std::to_string(p.box_x) + ", " + std::to_string(p.box_y) + ") is not inside the " +
           std::to_string(p.src.width) + "x" + std::to_string(p.src.height) + " frame");
  }
  if (p.interp != Interp::linear && p.interp != Interp::nearest) fail("interp must be linear or nearest");
  if (p.fit != Fit::stretch && p.fit != Fit::letterbox && p.fit != Fit::center_crop)
    fail("fit must be stretch, letterbox or center_crop");
  if (p.layout != Layout::nchw && p.layout != Layout::nhwc) fail("layout must be nchw or nhwc");
  if (p.dtype != DType::float32 && p.dtype != DType::float16 && p.dtype != DType::uint8)
    fail("dtype must be float32, float16 or uint8");
  if (p.dtype != DType::uint8)
    for (int c = 0; c < 3; ++c)
      if (!(p.std[c] != 0.0f)) fail("std[" + std::to_string(c) + "] is zero");
}

bool yuv_fused_has_simd() noexcept { return cpu_has_avx2(); }

namespace {

// YuvFusedParams::sums: the checksum parts row by row while the row is in
// the cache where an nchw row is whole words (part of one channel's third),
// else each third at the end.
class RowSums {
 public:
  explicit RowSums(const YuvFusedParams& p)
      : p_(p),
        row_bytes_(static_cast<std::size_t>(p.width) *
                   (p.dtype == DType::float32 ? 4 : p.dtype == DType::float16 ? 2 : 1)),
        plane_bytes_(row_bytes_ * static_cast<std::size_t>(p.height)),
        on_(p.sums != nullptr && (3 * plane_bytes_) % 12 == 0),
        rows_(on_ && p.layout == Layout::nchw && row_bytes_ % 4 == 0) {
    if (on_)
      for (int k = 0; k < 3; ++k) p.sums[k] = {};
  }
  // The row's parts where the caller summed them (`parts` set), else by reading the row.
  bool by_row() const { return rows_; }
  void row(int Y, const ChecksumPart* parts = nullptr) const {
    if (!rows_) return;
    const std::size_t at = static_cast<std::size_t>(Y) * row_bytes_;
    for (std::size_t k = 0; k < 3; ++k)
      p_.sums[k].add(parts != nullptr ? parts[k] : checksum_part(data() + k * plane_bytes_ + at, row_bytes_), at);
  }
  void finish() const {
    if (on_ && !rows_) checksum_thirds(data(), 3 * plane_bytes_, p_.sums);
  }

 private:
  const unsigned char* data() const { return static_cast<const unsigned char*>(p_.dst); }
  const YuvFusedParams& p_;
  const std::size_t row_bytes_, plane_bytes_;
  const bool on_, rows_;
};

// The scratch rows zeroed for a call of p's width, and p's normalisation
// tables.
void prepare(const YuvFusedParams& p, Scratch& sc) {
  const std::size_t W = static_cast<std::size_t>(p.width) + 8;
  for (auto& r : sc.rows) {
    r.row = -1;
    for (auto& h : r.h) h.assign(W, 0);
  }
  for (int t = 0; t < 2; ++t)
    for (auto* v : {&sc.cr[t], &sc.cg[t], &sc.cb[t]}) v->assign(W, 0);
  for (auto& v : sc.v) v.assign(W, 0);
  sc.chroma_row = p.src.format.monochrome ? -1 : -2;  // monochrome: the terms stay 0
  if (p.dtype != DType::uint8) {
    NormalizeParams n;
    n.scale = p.scale;
    for (int k = 0; k < 3; ++k) {
      n.mean[k] = p.mean[k];
      n.std[k] = p.std[k];
    }
    for (int k = 0; k < 3; ++k)
      for (int v = 0; v < 256; ++v) {
        sc.f32[k][v] = normalize_value(n, k, static_cast<std::uint8_t>(v));
        sc.f16[k][v] = float_to_half_rn(sc.f32[k][v]);
      }
  }
}

}  // namespace

void yuv_fused_cpu(const YuvFusedParams& p, bool simd) {
  validate(p);
  thread_local Scratch sc;
  Plan& plan = sc.plan;
  make_plan(p, plan);
  prepare(p, sc);
  const YuvImage& s = p.src;
  const YuvFormat& f = s.format;
  const YuvCoeffs c = make_coeffs(f.matrix, f.range, f.bits);
  const bool avx2 = simd && cpu_has_avx2();
  const int oa = plan.oa, ob = plan.ob;
  const int last_chroma = f.monochrome ? 0 : chroma_height(f, s.height) - 1;

  // Box row r resampled horizontally into one of the two kept rows (the one
  // that does not hold `keep`).
  auto row = [&](int r, int keep) -> Scratch::Row& {
    for (auto& k : sc.rows)
      if (k.row == r) return k;
    Scratch::Row& out = sc.rows[0].row == keep ? sc.rows[1] : sc.rows[0];
    const int fy = plan.by + r;
    if (!f.monochrome) {
      const int cy = fy >> f.chroma_shift_y;
      if (cy != sc.chroma_row) {
#if IMGPIPE_YUV_AVX2
        if (avx2 && cy < last_chroma) {
          chroma_terms_avx2(s, c, plan, cy, sc, oa, ob - (ob - oa) % 8);
          chroma_terms(s, c, plan, cy, sc, ob - (ob - oa) % 8, ob);
        } else
#endif
          chroma_terms(s, c, plan, cy, sc, oa, ob);
        sc.chroma_row = cy;
      }
    }
#if IMGPIPE_YUV_AVX2
    if (avx2 && fy < s.height - 1)
      luma_pass_avx2(s, c, plan, fy, sc, out, oa, ob);
    else
#endif
      luma_pass(s, c, plan, fy, sc, out, oa, ob);
    out.row = r;
    return out;
  };

  RowSums sums(p);
  const Placement& pl = plan.pl;
  // Whole rows of float32 NCHW output in one step (vertical_emit_f32_avx2).
  const bool fused_rows = avx2 && p.layout == Layout::nchw && p.dtype == DType::float32 && oa == 0 && ob == p.width;
  bool streamed = false;
  for (int Y = 0; Y < p.height; ++Y) {
    const int canvas_row = p.flip_y ? p.height - 1 - Y : Y;
    const int ry = canvas_row - pl.y0;
    const bool covered = ry >= 0 && ry < pl.height && ob > oa;
    for (auto& v : sc.v) {
      std::fill(v.begin(), v.begin() + (covered ? oa : p.width), p.pad_value);
      if (covered) std::fill(v.begin() + ob, v.begin() + p.width, p.pad_value);
    }
    if (covered) {
      const detail::LinearTap t = axis_tap(p.interp, ry, plan.scale_y, plan.bh, false);
      const int b0 = t.w0, b1 = t.w1;
      const Scratch::Row& r0 = row(t.s0, t.s1);
      const Scratch::Row& r1 = row(t.s1, t.s0);
#if IMGPIPE_YUV_AVX2
      if (fused_rows) {
        ChecksumPart parts[3];
        streamed = vertical_emit_f32_avx2(p, r0, r1, b0, b1, sc, Y, sums.by_row() ? parts : nullptr) || streamed;
        sums.row(Y, parts);
        continue;
      }
      if (avx2)
        vertical_avx2(r0, r1, b0, b1, sc, oa, ob);
      else
#endif
        vertical(r0, r1, b0, b1, sc, oa, ob);
    }
#if IMGPIPE_YUV_AVX2
    if (avx2 && p.layout == Layout::nchw && p.dtype != DType::uint8)
      emit_avx2(p, sc, Y);
    else
#endif
      emit(p, sc, Y, 0, p.width);
    sums.row(Y);
  }
#if IMGPIPE_YUV_AVX2
  if (streamed) _mm_sfence();  // the non-temporal stores before the output is handed on
#endif
  sums.finish();
}

}  // namespace imgpipe::kernels
