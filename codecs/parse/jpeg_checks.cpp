#include "codecs/parse/jpeg_checks.hpp"

#include <algorithm>
#include <cstring>

namespace imgpipe::codecs {

std::string_view jpeg_refusal_name(JpegRefusal r) noexcept {
  switch (r) {
    case JpegRefusal::none: return "none";
    case JpegRefusal::not_jpeg: return "not_jpeg";
    case JpegRefusal::segment_length: return "segment_length";
    case JpegRefusal::huffman_table: return "huffman_table";
    case JpegRefusal::huffman_oversubscribed: return "huffman_oversubscribed";
    case JpegRefusal::dc_symbol_range: return "dc_symbol_range";
    case JpegRefusal::dc_category_large: return "dc_category_large";
    case JpegRefusal::table_missing: return "table_missing";
    case JpegRefusal::frame: return "frame";
    case JpegRefusal::component_ids: return "component_ids";
    case JpegRefusal::sampling: return "sampling";
    case JpegRefusal::scan_components: return "scan_components";
    case JpegRefusal::colour_transform: return "colour_transform";
    case JpegRefusal::coarse_quantisation: return "coarse_quantisation";
    case JpegRefusal::extreme_aspect: return "extreme_aspect";
    case JpegRefusal::marker_in_scan: return "marker_in_scan";
    case JpegRefusal::restart_without_dri: return "restart_without_dri";
    case JpegRefusal::restart_sequence: return "restart_sequence";
    case JpegRefusal::no_eoi: return "no_eoi";
    case JpegRefusal::empty_scan: return "empty_scan";
    case JpegRefusal::count_: break;
  }
  return "unknown";
}

bool huffman_table_ok(const JpegHuffmanTable& t, bool dc) noexcept {
  std::uint32_t code = 0;
  std::size_t n = 0;
  for (int l = 1; l <= 16; ++l) {
    code += t.bits[static_cast<std::size_t>(l)];
    n += t.bits[static_cast<std::size_t>(l)];
    // After the codes of length l, `code` is one past the last: it must fit
    // in l bits, so the last code is never all ones (jdhuff.c).
    if (code >= (1u << l)) return false;
    code <<= 1;
  }
  if (n > 256 || n != t.vals.size()) return false;
  if (dc)
    for (const std::uint8_t v : t.vals)
      if (v > 15) return false;
  return true;
}

namespace {

using R = JpegRefusal;

// DHT body [i, end): one or more tables.
R read_dht(std::span<const unsigned char> b, std::size_t i, std::size_t end, JpegStructure& s) {
  while (i < end) {
    if (end - i < 17) return R::segment_length;
    const int tc = b[i] >> 4, th = b[i] & 15;
    if (tc > 1 || th > 3) return R::huffman_table;
    JpegHuffmanTable t;
    t.defined = true;
    std::size_t n = 0;
    for (int l = 1; l <= 16; ++l) n += t.bits[static_cast<std::size_t>(l)] = b[i + static_cast<std::size_t>(l)];
    if (n > 256) return R::huffman_table;
    i += 17;
    if (end - i < n) return R::segment_length;
    t.vals.assign(b.begin() + static_cast<std::ptrdiff_t>(i), b.begin() + static_cast<std::ptrdiff_t>(i + n));
    i += n;
    if (!huffman_table_ok(t, false)) return R::huffman_oversubscribed;
    if (tc == 0 && !huffman_table_ok(t, true)) return R::dc_symbol_range;
    s.huffman[static_cast<std::size_t>(tc)][static_cast<std::size_t>(th)] = std::move(t);
  }
  return R::none;
}

R read_dqt(std::span<const unsigned char> b, std::size_t i, std::size_t end, JpegStructure& s) {
  while (i < end) {
    const int pq = b[i] >> 4, tq = b[i] & 15;
    if (pq > 1 || tq > 3) return R::frame;
    const std::size_t need = 1 + 64 * static_cast<std::size_t>(pq + 1);
    if (end - i < need) return R::segment_length;
    JpegQuantTable& q = s.quant[static_cast<std::size_t>(tq)];
    q.defined = true;
    q.precision = pq;
    for (std::size_t k = 0; k < 64; ++k)
      q.q[k] = static_cast<std::uint16_t>(pq ? be16(&b[i + 1 + 2 * k]) : b[i + 1 + k]);
    i += need;
  }
  return R::none;
}

R read_sof(std::span<const unsigned char> b, std::size_t i, std::size_t len, int marker, JpegStructure& s) {
  if (s.sof >= 0) return R::frame;  // a second frame
  s.sof = marker - 0xC0;
  if (len < 8) return R::segment_length;
  s.precision = b[i];
  s.height = static_cast<int>(be16(&b[i + 1]));
  s.width = static_cast<int>(be16(&b[i + 3]));
  const int nf = b[i + 5];
  if (len != 8 + 3 * static_cast<std::size_t>(nf)) return R::segment_length;
  for (int c = 0; c < nf; ++c) {
    const unsigned char* p = &b[i + 6 + 3 * static_cast<std::size_t>(c)];
    s.frame.push_back({p[0], p[1] >> 4, p[1] & 15, p[2]});
  }
  return R::none;
}

R read_sos(std::span<const unsigned char> b, std::size_t i, std::size_t len, JpegStructure& s) {
  if (len < 3) return R::segment_length;
  const int ns = b[i];
  if (len != 6 + 2 * static_cast<std::size_t>(ns)) return R::segment_length;
  for (int c = 0; c < ns; ++c) {
    const unsigned char* p = &b[i + 1 + 2 * static_cast<std::size_t>(c)];
    s.scan.push_back({p[0], p[1] >> 4, p[1] & 15});
  }
  const unsigned char* p = &b[i + 1 + 2 * static_cast<std::size_t>(ns)];
  s.ss = p[0];
  s.se = p[1];
  s.ah = p[2] >> 4;
  s.al = p[2] & 15;
  return R::none;
}

// The frame and scan headers against each other and against what the engines
// decode as libjpeg does.
R check_headers(const JpegStructure& s) {
  if (s.sof != 0 && s.sof != 1) return R::frame;  // the probe's layout check names the others
  if (s.precision != 8 || s.width <= 0 || s.height <= 0) return R::frame;
  const std::size_t nf = s.frame.size();
  if (nf != 1 && nf != 3) return R::frame;
  for (std::size_t a = 0; a < nf; ++a)
    for (std::size_t c = a + 1; c < nf; ++c)
      if (s.frame[a].id == s.frame[c].id) return R::component_ids;
  for (const JpegFrameComponent& f : s.frame) {
    if (f.h < 1 || f.h > 4 || f.v < 1 || f.v > 4) return R::sampling;
    if (f.tq > 3 || !s.quant[static_cast<std::size_t>(f.tq)].defined) return R::table_missing;
  }
  // Grey must be 1x1; colour: chroma 1x1, luma at most 2x2.
  if (nf == 1 && (s.frame[0].h != 1 || s.frame[0].v != 1)) return R::sampling;
  if (nf == 3) {
    if (s.frame[0].h > 2 || s.frame[0].v > 2) return R::sampling;
    for (std::size_t c = 1; c < 3; ++c)
      if (s.frame[c].h != 1 || s.frame[c].v != 1) return R::sampling;
  }
  // One interleaved scan of every frame component, in frame order, once each.
  if (s.scan.size() != nf) return R::scan_components;
  for (std::size_t c = 0; c < nf; ++c) {
    if (s.scan[c].id != s.frame[c].id) return R::scan_components;
    const int limit = s.sof == 0 ? 1 : 3;
    if (s.scan[c].td > limit || s.scan[c].ta > limit) return R::scan_components;
    if (!s.huffman[0][static_cast<std::size_t>(s.scan[c].td)].defined ||
        !s.huffman[1][static_cast<std::size_t>(s.scan[c].ta)].defined)
      return R::table_missing;
  }
  if (s.ss != 0 || s.se != 63 || s.ah != 0 || s.al != 0) return R::scan_components;
  // Colour: libjpeg takes 3 components as RGB with an Adobe transform of 0,
  // or without JFIF and Adobe markers when the ids are 'R','G','B'; the
  // engines always convert from YCbCr.
  if (nf == 3) {
    if (s.adobe_transform == 0 || (s.adobe_transform > 1)) return R::colour_transform;
    if (s.frame[0].id == 'R' && s.frame[1].id == 'G' && s.frame[2].id == 'B') return R::colour_transform;
  }
  for (const JpegScanComponent& c : s.scan)
    for (const std::uint8_t v : s.huffman[0][static_cast<std::size_t>(c.td)].vals)
      if (v > 11) return R::dc_category_large;
  for (const JpegFrameComponent& f : s.frame)
    if (s.quant[static_cast<std::size_t>(f.tq)].q[0] >= 128) return R::coarse_quantisation;
  const int lo = std::min(s.width, s.height), hi = std::max(s.width, s.height);
  if (lo < 8 || hi > 64 * lo) return R::extreme_aspect;
  return R::none;
}

// The entropy-coded segment from s.scan_at: every FF must be followed by 00,
// by the expected RSTn when DRI is set, or by EOI (which ends it).
R check_scan(std::span<const unsigned char> b, JpegStructure& s) {
  const std::size_t n = b.size();
  std::size_t i = s.scan_at;
  int expect = 0;
  while (true) {
    const void* hit = i < n ? std::memchr(&b[i], 0xFF, n - i) : nullptr;
    if (!hit) return R::no_eoi;
    i = static_cast<std::size_t>(static_cast<const unsigned char*>(hit) - b.data());
    std::size_t j = i + 1;
    while (j < n && b[j] == 0xFF) ++j;  // fill bytes before a marker
    if (j >= n) return R::no_eoi;
    const unsigned char m = b[j];
    if (m == 0x00) {
      if (j != i + 1) return R::marker_in_scan;  // FF FF 00 is no stuffed byte
      i = j + 1;
      continue;
    }
    if (m >= 0xD0 && m <= 0xD7) {
      if (s.restart_interval == 0) return R::restart_without_dri;
      if (m - 0xD0 != expect) return R::restart_sequence;
      expect = (expect + 1) & 7;
      ++s.restarts;
      i = j + 1;
      continue;
    }
    if (m == 0xD9) {
      s.eoi_at = j - 1;
      s.scan_size = s.eoi_at - s.scan_at;  // fill bytes before EOI included
      if (s.scan_size == 0) return R::empty_scan;
      break;
    }
    return R::marker_in_scan;
  }
  if (s.restart_interval > 0) {
    int hmax = 1, vmax = 1;
    for (const JpegFrameComponent& f : s.frame) {
      hmax = std::max(hmax, f.h);
      vmax = std::max(vmax, f.v);
    }
    const long long mcus = static_cast<long long>((s.width + 8 * hmax - 1) / (8 * hmax)) *
                           ((s.height + 8 * vmax - 1) / (8 * vmax));
    const long long want = (mcus + s.restart_interval - 1) / s.restart_interval - 1;
    if (s.restarts != want) return R::restart_sequence;
  }
  return R::none;
}

}  // namespace

JpegRefusal check_jpeg(std::span<const unsigned char> b, const JpegSegments& segments, JpegStructure& s) noexcept {
  const std::size_t n = b.size();
  if (n < 4 || !segments.markers.soi) return R::not_jpeg;
  for (const JpegSegment& seg : segments.list) {
    const unsigned char marker = seg.marker;
    if (seg.standalone() || marker == 0xD9 || marker == 0x00) return R::not_jpeg;
    if (!seg.whole(n)) return R::segment_length;
    const std::size_t len = seg.length, body = seg.body(), end = seg.end();
    R r = R::none;
    if (marker == 0xC4) {
      r = read_dht(b, body, end, s);
    } else if (marker == 0xDB) {
      r = read_dqt(b, body, end, s);
    } else if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC8 && marker != 0xCC) {
      r = read_sof(b, body, len, marker, s);
    } else if (marker == 0xCC || marker == 0xC8) {
      r = R::frame;  // arithmetic conditioning / reserved: not for the engines
    } else if (marker == 0xDD) {
      if (len != 4) return R::segment_length;
      s.restart_interval = static_cast<int>(be16(&b[body]));
    } else if (marker == 0xE0 && len >= 7 && std::memcmp(&b[body], "JFIF\0", 5) == 0) {
      s.jfif = true;
    } else if (marker == 0xEE && len >= 14 && std::memcmp(&b[body], "Adobe", 5) == 0) {
      s.adobe_transform = b[body + 11];
    } else if (marker == 0xDA) {
      if (s.sof < 0) return R::frame;
      r = read_sos(b, body, len, s);
      if (r != R::none) return r;
      s.scan_at = end;
      if (const R h = check_headers(s); h != R::none) return h;
      return check_scan(b, s);
    }
    if (r != R::none) return r;
  }
  return R::not_jpeg;  // no scan: the walk stopped at a byte that is no marker, or at the end
}

}  // namespace imgpipe::codecs
