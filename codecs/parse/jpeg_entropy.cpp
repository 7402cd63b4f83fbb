#include "codecs/parse/jpeg_entropy.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace imgpipe::codecs {

namespace {

using Bytes = std::span<const unsigned char>;

unsigned be16_at(Bytes b, std::size_t i) noexcept { return (static_cast<unsigned>(b[i]) << 8) | b[i + 1]; }

// One Huffman table, derived as libjpeg derives it (jdhuff.c:
// jpeg_make_d_derived_tbl), with a 9-bit lookup for the short codes and, for
// AC tables, a 12-bit table that takes a whole (code, extra bits) step at once.
struct Huffman {
  bool defined = false;
  std::array<std::uint8_t, 17> bits{};  // bits[l]: codes of length l
  std::array<std::uint8_t, 256> vals{};
  int count = 0;
  std::array<std::int32_t, 18> maxcode{};    // the largest code of length l, -1 when none
  std::array<std::int32_t, 17> valoffset{};  // vals index = code + valoffset[l]
  std::array<std::uint16_t, 512> look{};     // 9-bit prefix -> length << 8 | symbol; 0: longer code
  // AC only, 12-bit prefix -> kFast | EOB << 10 | advance << 5 | total bits;
  // 0: no whole step within 12 bits (or a size the check refuses).
  std::array<std::uint16_t, 4096> fast{};
};
constexpr std::uint16_t kFast = 0x8000;
constexpr std::uint16_t kEob = 1u << 10;

// Derives the decoding tables; false when libjpeg would refuse the table
// (oversubscribed, a DC symbol above 15) or when it holds a code of all ones,
// which the standard forbids (stricter than libjpeg).
bool derive(Huffman& h, bool dc, bool ac_fast) noexcept {
  std::array<std::uint8_t, 257> size{};
  int p = 0;
  for (int l = 1; l <= 16; ++l)
    for (int i = 0; i < h.bits[l]; ++i) size[p++] = static_cast<std::uint8_t>(l);
  std::array<std::uint16_t, 256> code{};
  std::uint32_t c = 0;
  int si = p > 0 ? size[0] : 0;
  for (int q = 0; q < p;) {
    while (q < p && size[q] == si) {
      if (c == (1u << si) - 1) return false;  // all ones
      code[q++] = static_cast<std::uint16_t>(c++);
    }
    if (c > (1u << si)) return false;  // oversubscribed
    c <<= 1;
    ++si;
  }
  p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (h.bits[l] == 0) {
      h.maxcode[l] = -1;
      continue;
    }
    h.valoffset[l] = p - code[p];
    p += h.bits[l];
    h.maxcode[l] = code[p - 1];
  }
  h.maxcode[17] = 0x7FFFFFFF;
  if (dc)
    for (int i = 0; i < h.count; ++i)
      if (h.vals[i] > 15) return false;
  h.look.fill(0);
  for (int q = 0, l = 1; l <= 9; ++l)
    for (int i = 0; i < h.bits[l]; ++i, ++q) {
      const int first = code[q] << (9 - l), n = 1 << (9 - l);
      for (int e = 0; e < n; ++e) h.look[first + e] = static_cast<std::uint16_t>(l << 8 | h.vals[q]);
    }
  if (!ac_fast) return true;
  for (int x = 0; x < 4096; ++x) {
    const std::uint16_t e = h.look[x >> 3];
    h.fast[x] = 0;
    if (e == 0) continue;
    const int len = e >> 8, sym = e & 0xFF, r = sym >> 4, s = sym & 15;
    if (s > 10 || len + s > 12) continue;
    if (s == 0 && r != 15)
      h.fast[x] = static_cast<std::uint16_t>(kFast | kEob | len);
    else
      h.fast[x] = static_cast<std::uint16_t>(kFast | (s == 0 ? 16 : r + 1) << 5 | (len + s));
  }
  return true;
}

struct Component {
  int id = 0, h = 1, v = 1, tq = 0;
  int dc = -1, ac = -1;  // table numbers from SOS
};

// What the walk to the scan found.
struct Layout {
  std::array<Component, 4> comp{};
  int ncomp = 0, width = 0, height = 0, restart = 0;
  std::size_t scan = 0;  // the first byte of the entropy-coded data
};

// The bit reader over the entropy-coded segment, as libjpeg reads it: FF 00 is
// a data byte FF, FF fill bytes before a marker are skipped, and a marker (or
// the end of the bytes) stops the reading; past it come zero bits, which the
// check never consumes (libjpeg would warn "premature end of data segment").
struct Bits {
  Bytes b;
  std::size_t pos = 0;
  std::uint64_t acc = 0;  // left-aligned; bits below the top `n` are zero
  int n = 0;
  bool stopped = false;  // at a marker or the end
  int marker = -1;       // the marker's code, -1 at the end of the bytes
  std::size_t after_marker = 0;

  void refill() noexcept {
    // Fast: eight bytes at once when none of them is 0xFF (no stuffing, no
    // marker), taking the whole bytes that fit.
    if (n <= 56 && !stopped && pos + 8 <= b.size()) {
      std::uint64_t w = 0;
      for (int i = 0; i < 8; ++i) w = w << 8 | b[pos + static_cast<std::size_t>(i)];
      const std::uint64_t inv = ~w;
      if (((inv - 0x0101010101010101ULL) & ~inv & 0x8080808080808080ULL) == 0) {
        const int take = (64 - n) >> 3;
        const int low = 64 - n - 8 * take;
        acc |= (w >> n) & (~0ULL << low);
        n += 8 * take;
        pos += static_cast<std::size_t>(take);
        return;
      }
    }
    while (n <= 56 && !stopped) {
      if (pos >= b.size()) {
        stopped = true;
        break;
      }
      unsigned c = b[pos];
      if (c == 0xFF) {
        std::size_t q = pos + 1;
        while (q < b.size() && b[q] == 0xFF) ++q;
        if (q >= b.size()) {
          stopped = true;
          break;
        }
        if (b[q] != 0) {
          stopped = true;
          marker = b[q];
          after_marker = q + 1;
          break;
        }
        pos = q + 1;
      } else {
        ++pos;
      }
      acc |= static_cast<std::uint64_t>(c) << (56 - n);
      n += 8;
    }
  }
  void skip(int k) noexcept {
    acc <<= k;
    n -= k;
  }
  // The reset at a restart marker or at the scan's end: true when the reader
  // stands at `expected` with nothing but padding bits (< 8) left before it.
  bool at_marker(int expected) noexcept {
    refill();
    if (!stopped || marker != expected || n >= 8) return false;
    pos = after_marker;
    acc = 0;
    n = 0;
    stopped = false;
    marker = -1;
    return true;
  }
};

// The segment readers below take one segment's body [p, end) and return a
// reason, or empty when they read it whole.

// DHT: one or more Huffman tables, derived as they are read.
std::string_view read_huffman_tables(Bytes b, std::size_t p, std::size_t end, std::array<Huffman, 8>& tables) noexcept {
  while (p < end) {
    if (p + 17 > end) return "bad Huffman table";
    const int cls = b[p] >> 4, id = b[p] & 15;
    if (cls > 1 || id > 3) return "bad Huffman table";
    Huffman& h = tables[cls * 4 + id];
    int count = 0;
    for (int l = 1; l <= 16; ++l) count += h.bits[l] = b[p + l];
    p += 17;
    if (count > 256 || p + count > end) return "bad Huffman table";
    for (int k = 0; k < count; ++k) h.vals[k] = b[p + k];
    p += count;
    h.count = count;
    h.defined = derive(h, cls == 0, cls == 1);
    if (!h.defined) return "bad Huffman table";
  }
  return {};
}

// DQT: which quantisation tables are defined (their values do not matter here).
std::string_view read_quant_tables(Bytes b, std::size_t p, std::size_t end, std::array<bool, 4>& quant) noexcept {
  while (p < end) {
    const int prec = b[p] >> 4, id = b[p] & 15;
    if (prec > 1 || id > 3 || p + 1 + 64u * (prec + 1) > end) return "bad quantisation table";
    quant[id] = true;
    p += 1 + 64u * (prec + 1);
  }
  return {};
}

// SOF0 / SOF1 of `len` bytes (its length field): the size and components.
std::string_view read_frame_header(Bytes b, std::size_t body, std::size_t len, Layout& lay) noexcept {
  if (len < 8 || b[body] != 8) return "not 8-bit";
  lay.height = static_cast<int>(be16_at(b, body + 1));
  lay.width = static_cast<int>(be16_at(b, body + 3));
  lay.ncomp = b[body + 5];
  if (lay.width == 0 || lay.height == 0) return "no frame size";
  if (lay.width > 65500 || lay.height > 65500) return "larger than libjpeg's 65500 pixels";
  if (lay.ncomp < 1 || lay.ncomp > 4 || len != 8 + 3u * static_cast<unsigned>(lay.ncomp)) return "bad frame header";
  for (int c = 0; c < lay.ncomp; ++c) {
    const std::size_t q = body + 6 + 3u * static_cast<unsigned>(c);
    Component& k = lay.comp[c];
    k = {b[q], b[q + 1] >> 4, b[q + 1] & 15, b[q + 2]};
    if (k.h < 1 || k.h > 4 || k.v < 1 || k.v > 4 || k.tq > 3) return "bad frame header";
    for (int d = 0; d < c; ++d)
      if (lay.comp[d].id == k.id) return "duplicate component id";
  }
  return {};
}

// SOS of `len` bytes: one sequential scan of every frame component, in frame
// order, with its tables defined.
std::string_view read_scan_header(Bytes b, std::size_t body, std::size_t len, const std::array<Huffman, 8>& tables,
                                  const std::array<bool, 4>& quant, Layout& lay) noexcept {
  const int ns = b[body];
  if (len != 6 + 2u * static_cast<unsigned>(ns)) return "bad scan header";
  if (ns != lay.ncomp) return "more than one scan";
  for (int s = 0; s < ns; ++s) {
    Component& k = lay.comp[s];  // in frame order, as the standard asks
    if (b[body + 1 + 2 * s] != k.id) return "scan components differ from the frame's";
    k.dc = b[body + 2 + 2 * s] >> 4;
    k.ac = b[body + 2 + 2 * s] & 15;
    if (k.dc > 3 || k.ac > 3 || !tables[k.dc].defined || !tables[4 + k.ac].defined) return "Huffman table missing";
    if (!quant[k.tq]) return "quantisation table missing";
  }
  const std::size_t q = body + 1 + 2u * static_cast<unsigned>(ns);
  if (b[q] != 0 || b[q + 1] != 63 || b[q + 2] != 0) return "not a sequential scan";
  return {};
}

// Reads the marker segments from SOI to SOS, as the parser listed them.
// Empty reason: `lay` is complete.
std::string_view walk(Bytes b, const JpegSegments& segments, Layout& lay, std::array<Huffman, 8>& tables) noexcept {
  if (b.size() < 4 || !segments.markers.soi) return "no SOI";
  std::array<bool, 4> quant{};
  bool sof = false;
  for (const JpegSegment& seg : segments.list) {
    const int m = seg.marker;
    const std::size_t len = seg.length;
    if (!seg.whole(b.size())) return "segment length past the end";
    const std::size_t body = seg.body(), end = seg.end();
    std::string_view why;
    if (m == 0xC4) {  // DHT
      why = read_huffman_tables(b, body, end, tables);
    } else if (m == 0xDB) {  // DQT
      why = read_quant_tables(b, body, end, quant);
    } else if (m == 0xC0 || m == 0xC1) {  // baseline, extended sequential Huffman
      if (sof) return "two frame headers";
      sof = true;
      why = read_frame_header(b, body, len, lay);
    } else if (m == 0xDD) {  // DRI
      if (len != 4) return "bad restart interval";
      lay.restart = static_cast<int>(be16_at(b, body));
    } else if (m == 0xDA) {  // SOS
      if (!sof) return "scan before the frame header";
      if (why = read_scan_header(b, body, len, tables, quant, lay); !why.empty()) return why;
      lay.scan = end;
      return {};
    } else if ((m >= 0xC2 && m <= 0xCF) || m == 0xDC) {
      return "not a baseline Huffman JPEG";
    } else if (!((m >= 0xE0 && m <= 0xEF) || m == 0xFE)) {
      // libjpeg skips APPn and COM by their length and refuses what it
      // does not know (jdmarker.c: read_markers); standalone markers before
      // the scan are taken as damage here.
      return "unknown or misplaced marker";
    }
    if (!why.empty()) return why;
  }
  // No scan: the walk stopped at a byte that is no marker, or with too few
  // bytes left for one.
  const std::size_t i = segments.stop_at;
  return i >= b.size() || b[i] != 0xFF ? "bytes between marker segments" : "headers cut short";
}

// Peeks a symbol of `h` (16 bits at most); 0 length: no such code.
inline void decode_symbol(const Huffman& h, std::uint64_t acc, int& len, int& sym) noexcept {
  const std::uint16_t e = h.look[acc >> 55];
  if (e != 0) {
    len = e >> 8;
    sym = e & 0xFF;
    return;
  }
  const auto peek = static_cast<std::int32_t>(acc >> 48);
  for (int l = 10; l <= 16; ++l) {
    const std::int32_t code = peek >> (16 - l);
    if (code <= h.maxcode[l]) {
      len = l;
      sym = h.vals[static_cast<std::size_t>(code + h.valoffset[l]) & 0xFF];
      return;
    }
  }
  len = 0;
}

struct Block {
  const Huffman* dc;
  const Huffman* ac;
  int comp;
};

// The scan's MCU: its blocks, in order, and how many MCUs cover the frame.
struct Mcu {
  std::array<Block, 10> blocks{};
  int nblocks = 0;
  std::uint64_t count = 0;
};

// Sets the MCU up from the frame's sampling factors: one block for a
// one-component scan, else each component's h x v. Empty reason: `mcu` is
// complete.
std::string_view mcu_layout(const Layout& lay, const std::array<Huffman, 8>& tables, Mcu& mcu) noexcept {
  int hmax = 1, vmax = 1;
  for (int c = 0; c < lay.ncomp; ++c) {
    hmax = std::max(hmax, lay.comp[c].h);
    vmax = std::max(vmax, lay.comp[c].v);
  }
  for (int c = 0; c < lay.ncomp; ++c)
    if (hmax % lay.comp[c].h != 0 || vmax % lay.comp[c].v != 0) return "fractional sampling factors";
  std::uint64_t mcus_x, mcus_y;
  const auto ceil_div = [](std::uint64_t a, std::uint64_t d) { return (a + d - 1) / d; };
  if (lay.ncomp == 1) {
    const Component& k = lay.comp[0];
    mcus_x = ceil_div(ceil_div(static_cast<std::uint64_t>(lay.width) * k.h, hmax), 8);
    mcus_y = ceil_div(ceil_div(static_cast<std::uint64_t>(lay.height) * k.v, vmax), 8);
    mcu.blocks[mcu.nblocks++] = {&tables[k.dc], &tables[4 + k.ac], 0};
  } else {
    mcus_x = ceil_div(static_cast<std::uint64_t>(lay.width), 8u * static_cast<unsigned>(hmax));
    mcus_y = ceil_div(static_cast<std::uint64_t>(lay.height), 8u * static_cast<unsigned>(vmax));
    for (int c = 0; c < lay.ncomp; ++c) {
      const Component& k = lay.comp[c];
      for (int n = 0; n < k.h * k.v; ++n) {
        if (mcu.nblocks == 10) return "more than 10 blocks per MCU";
        mcu.blocks[mcu.nblocks++] = {&tables[k.dc], &tables[4 + k.ac], c};
      }
    }
  }
  mcu.count = mcus_x * mcus_y;
  return {};
}

// One block's codes: the DC difference (its category and extra bits, kept
// within libjpeg's range through the component's predictor), then the AC
// run/size codes up to EOB or the last coefficient. Null: the block is
// whole; else the reason (a pointer, not a string_view: this runs for every
// block, and the null test is the cheapest).
inline const char* walk_block(Bits& in, const Block& blk, std::array<int, 4>& pred) noexcept {
  if (in.n < 32) in.refill();
  int len = 0, sym = 0;
  decode_symbol(*blk.dc, in.acc, len, sym);
  if (len == 0 || len + sym > in.n) return len == 0 ? "bad Huffman code" : "entropy-coded data ends early";
  if (sym > 11) return "DC difference category above 11";
  in.skip(len);
  if (sym > 0) {
    const int raw = static_cast<int>(in.acc >> (64 - sym));
    const int diff = raw < (1 << (sym - 1)) ? raw - (1 << sym) + 1 : raw;
    in.skip(sym);
    int& p = pred[blk.comp];
    p += diff;
    if (p < -2048 || p > 2047) return "DC value out of range";
  }
  const Huffman& ac = *blk.ac;
  for (int k = 1; k < 64;) {
    if (in.n < 26) in.refill();
    const std::uint16_t f = ac.fast[in.acc >> 52];
    if (f != 0) {
      const int bits = f & 31;
      if (bits > in.n) return "entropy-coded data ends early";
      in.skip(bits);
      if (f & kEob) break;
      k += (f >> 5) & 31;
    } else {
      decode_symbol(ac, in.acc, len, sym);
      const int s = sym & 15, r = sym >> 4;
      if (len == 0 || len + s > in.n) return len == 0 ? "bad Huffman code" : "entropy-coded data ends early";
      if (s > 10) return "AC coefficient size above 10";
      in.skip(len + s);
      if (s == 0 && r != 15) break;  // EOB
      k += s == 0 ? 16 : r + 1;
    }
    if (k > 64) return "coefficient index past 63";
  }
  return nullptr;
}

EntropyCheck failed(std::string_view why, std::uint64_t mcus) noexcept {
  EntropyCheck out;
  out.reason = why;
  out.mcus = mcus;
  return out;
}

// The scan walk: every MCU's blocks, the restart markers between intervals,
// then EOI right after the last MCU.
EntropyCheck walk_scan(Bytes b, const Layout& lay, const Mcu& mcu) noexcept {
  Bits in{b.subspan(0), lay.scan};
  std::array<int, 4> pred{};
  int next_rst = 0;
  for (std::uint64_t m = 0; m < mcu.count; ++m) {
    if (lay.restart > 0 && m > 0 && m % static_cast<unsigned>(lay.restart) == 0) {
      if (!in.at_marker(0xD0 + next_rst)) return failed("restart marker missing or out of place", m);
      next_rst = (next_rst + 1) & 7;
      pred.fill(0);
    }
    for (int bl = 0; bl < mcu.nblocks; ++bl)
      if (const char* why = walk_block(in, mcu.blocks[bl], pred)) return failed(why, m);
  }
  if (!in.at_marker(0xD9)) return failed("bytes or markers between the last MCU and EOI", mcu.count);
  EntropyCheck out;
  out.mcus = mcu.count;
  out.clean = true;
  return out;
}

}  // namespace

EntropyCheck check_entropy(Bytes b, const JpegSegments& segments) noexcept {
  Layout lay;
  std::array<Huffman, 8> tables;  // DC 0-3, AC 0-3
  if (const std::string_view why = walk(b, segments, lay, tables); !why.empty()) return failed(why, 0);
  Mcu mcu;
  if (const std::string_view why = mcu_layout(lay, tables, mcu); !why.empty()) return failed(why, 0);
  return walk_scan(b, lay, mcu);
}

EntropyCheck check_entropy(Bytes b) noexcept { return check_entropy(b, parse_jpeg_segments(b)); }

}  // namespace imgpipe::codecs
