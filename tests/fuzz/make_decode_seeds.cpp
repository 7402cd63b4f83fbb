// Writes the generated seeds of the decode fuzzer (tests/fuzz/corpus_decode/gen_*):
// the image-format features real datasets have, each in a file of a few KB.
//
//   make_decode_seeds DIR          write every seed into DIR
//   make_decode_seeds --check DIR  compare DIR's gen_* files with what this
//                                  program writes (CTest: decode_seeds_reproducible)
//
// 8-bit JPEGs are written with libjpeg (the library the decode stage reads
// them with), through the tests' one writer (tests/jpeg_writer.cpp);
// everything else is assembled here byte by byte, so the output depends on no
// encoder's version:
//  - 12-bit JPEG: a baseline-style SOF1 stream of flat 8x8 tiles (DC only),
//    which libjpeg-turbo's 12-bit decoder reads and the 8-bit one refuses;
//  - PNG (16-bit RGB, 16-bit grey + alpha, 8-bit and 4-bit palette with tRNS):
//    zlib with stored (uncompressed) deflate blocks;
//  - BigTIFF (both byte orders): uncompressed RGB in one strip;
//  - animated WebP: RIFF/VP8X/ANIM/ANMF with VP8L frames of one colour each
//    (single-symbol prefix codes, so a frame is 7 bytes of bitstream).
// What the decoder does with each file is stated in tests/stages/test_decode_seeds.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "jpeg_writer.hpp"

namespace {

using Bytes = std::vector<unsigned char>;

// ------------------------------------------------------------------ byte helpers
void be16(Bytes& b, unsigned v) {
  b.push_back(static_cast<unsigned char>(v >> 8));
  b.push_back(static_cast<unsigned char>(v));
}
void be32(Bytes& b, std::uint32_t v) {
  be16(b, v >> 16);
  be16(b, v & 0xFFFF);
}
void le16(Bytes& b, unsigned v) {
  b.push_back(static_cast<unsigned char>(v));
  b.push_back(static_cast<unsigned char>(v >> 8));
}
void le24(Bytes& b, std::uint32_t v) {
  le16(b, v & 0xFFFF);
  b.push_back(static_cast<unsigned char>(v >> 16));
}
void le32(Bytes& b, std::uint32_t v) {
  le16(b, v & 0xFFFF);
  le16(b, v >> 16);
}
void put(Bytes& b, const char* s) { b.insert(b.end(), s, s + std::strlen(s)); }

// ------------------------------------------------------------------ 8-bit JPEG (libjpeg)
// A picture with distinct corners (any flip or turn changes it): gradients
// and a red block at the top left; RGB, row-major.
Bytes picture(int w, int h) {
  Bytes rgb(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      unsigned char* p = &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
      const bool block = x < w / 4 && y < h / 3;
      p[0] = block ? 230 : static_cast<unsigned char>(255 * x / (w - 1));
      p[1] = block ? 20 : static_cast<unsigned char>(255 * y / (h - 1));
      p[2] = block ? 30 : static_cast<unsigned char>(255 * (x + y) / (w + h - 2));
    }
  return rgb;
}

using JpegOptions = imgpipe::test::JpegWriteOptions;  // quality 90 unless set
using imgpipe::test::JpegColour;

// The samples (`o.components` per pixel) as a JPEG, stored as YCbCr unless
// `o.colour` says otherwise (tests/jpeg_writer.hpp).
Bytes write_jpeg(const Bytes& samples, int w, int h, JpegOptions o) {
  if (o.colour == JpegColour::automatic) o.colour = JpegColour::ycbcr;
  try {
    return imgpipe::test::write_jpeg(samples.data(), w, h, static_cast<std::size_t>(w) * o.components, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(2);
  }
}

// CMYK patches stored inverted, as Adobe/Photoshop writes them (255 = no ink).
Bytes cmyk_patches(int w, int h) {
  static const unsigned char ink[8][4] = {{255, 0, 0, 255},   {0, 255, 0, 255},   {0, 0, 255, 255},
                                          {255, 255, 255, 0}, {255, 255, 255, 255}, {0, 128, 255, 200},
                                          {128, 0, 64, 255},  {255, 255, 0, 128}};
  Bytes b(static_cast<std::size_t>(w) * h * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int k = (y / 8) * 4 + (x / 8);  // 8x8 patches, 4 across, 2 down
      std::memcpy(&b[(static_cast<std::size_t>(y) * w + x) * 4], ink[k % 8], 4);
    }
  return b;
}

// ------------------------------------------------------------------ 12-bit JPEG (by hand)
// Bits into bytes, most significant first, with JPEG's byte stuffing (FF 00).
struct JpegBits {
  Bytes out;
  std::uint32_t acc = 0;
  int n = 0;
  void bits(std::uint32_t v, int count) {
    for (int i = count - 1; i >= 0; --i) {
      acc = (acc << 1) | ((v >> i) & 1u);
      if (++n == 8) {
        out.push_back(static_cast<unsigned char>(acc));
        if (acc == 0xFF) out.push_back(0);
        acc = 0;
        n = 0;
      }
    }
  }
  void flush() {  // pad with ones
    while (n != 0) bits(1, 1);
  }
};

// A grey 12-bit JPEG (SOF1, extended sequential Huffman, sample precision 12)
// of 32x16 pixels: eight flat 8x8 tiles whose values span 0..4095. A flat
// tile has only a DC coefficient, 8 * (v - 2048); with a DC quantiser of 8
// the quantised DC is v - 2048 and the decoded tile is exactly v.
Bytes write_jpeg12() {
  static const int tiles[2][4] = {{0, 4095, 2048, 1000}, {3000, 17, 4000, 2500}};
  Bytes b{0xFF, 0xD8};
  // DQT: table 0, 8-bit entries, all 8.
  b.insert(b.end(), {0xFF, 0xDB});
  be16(b, 2 + 1 + 64);
  b.push_back(0x00);
  b.insert(b.end(), 64, 8);
  // SOF1: precision 12, 16 rows, 32 columns, one component (id 1, 1x1, table 0).
  b.insert(b.end(), {0xFF, 0xC1});
  be16(b, 8 + 3);
  b.push_back(12);
  be16(b, 16);
  be16(b, 32);
  b.insert(b.end(), {1, 1, 0x11, 0});
  // DHT DC table 0: categories 0..12 (12-bit differences), all 4-bit codes.
  b.insert(b.end(), {0xFF, 0xC4});
  be16(b, 2 + 1 + 16 + 13);
  b.push_back(0x00);
  for (int len = 1; len <= 16; ++len) b.push_back(len == 4 ? 13 : 0);
  for (int s = 0; s <= 12; ++s) b.push_back(static_cast<unsigned char>(s));
  // DHT AC table 0: end-of-block only, code "0".
  b.insert(b.end(), {0xFF, 0xC4});
  be16(b, 2 + 1 + 16 + 1);
  b.push_back(0x10);
  for (int len = 1; len <= 16; ++len) b.push_back(len == 1 ? 1 : 0);
  b.push_back(0x00);
  // SOS: one component, tables 0/0, spectral 0..63, no approximation.
  b.insert(b.end(), {0xFF, 0xDA});
  be16(b, 6 + 2);
  b.insert(b.end(), {1, 1, 0x00, 0, 63, 0});
  JpegBits e;
  int pred = 0;
  for (int by = 0; by < 2; ++by)
    for (int bx = 0; bx < 4; ++bx) {
      const int dc = tiles[by][bx] - 2048;
      const int diff = dc - pred;
      pred = dc;
      int cat = 0;
      for (int a = diff < 0 ? -diff : diff; a != 0; a >>= 1) ++cat;
      e.bits(static_cast<std::uint32_t>(cat), 4);  // canonical code of symbol `cat` is `cat` in 4 bits
      if (cat) e.bits(static_cast<std::uint32_t>(diff < 0 ? diff - 1 : diff) & ((1u << cat) - 1), cat);
      e.bits(0, 1);  // EOB
    }
  e.flush();
  b.insert(b.end(), e.out.begin(), e.out.end());
  b.insert(b.end(), {0xFF, 0xD9});
  return b;
}

// ------------------------------------------------------------------ PNG (by hand)
std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

void png_chunk(Bytes& b, const char* type, const Bytes& data) {
  be32(b, static_cast<std::uint32_t>(data.size()));
  const std::size_t at = b.size();
  put(b, type);
  b.insert(b.end(), data.begin(), data.end());
  be32(b, crc32(&b[at], b.size() - at));
}

// zlib stream of stored deflate blocks.
Bytes zlib_stored(const Bytes& raw) {
  Bytes z{0x78, 0x01};
  std::size_t i = 0;
  do {
    const std::size_t n = std::min<std::size_t>(raw.size() - i, 65535);
    z.push_back(i + n == raw.size() ? 1 : 0);  // BFINAL, BTYPE 00
    le16(z, static_cast<unsigned>(n));
    le16(z, static_cast<unsigned>(~n & 0xFFFF));
    z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(i), raw.begin() + static_cast<std::ptrdiff_t>(i + n));
    i += n;
  } while (i < raw.size());
  std::uint32_t a = 1, s = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    s = (s + a) % 65521;
  }
  be32(z, (s << 16) | a);
  return z;
}

// `rows` are the scanlines without filter bytes (filter 0 is added).
Bytes write_png(int w, int h, int depth, int colour_type, const std::vector<Bytes>& rows, const Bytes& plte = {},
                const Bytes& trns = {}) {
  Bytes b{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  be32(ihdr, static_cast<std::uint32_t>(w));
  be32(ihdr, static_cast<std::uint32_t>(h));
  ihdr.insert(ihdr.end(), {static_cast<unsigned char>(depth), static_cast<unsigned char>(colour_type), 0, 0, 0});
  png_chunk(b, "IHDR", ihdr);
  if (!plte.empty()) png_chunk(b, "PLTE", plte);
  if (!trns.empty()) png_chunk(b, "tRNS", trns);
  Bytes raw;
  for (const Bytes& r : rows) {
    raw.push_back(0);
    raw.insert(raw.end(), r.begin(), r.end());
  }
  png_chunk(b, "IDAT", zlib_stored(raw));
  png_chunk(b, "IEND", {});
  return b;
}

// 16-bit values around every rounding edge of v / 257 (257k + 128 and + 129).
const std::uint16_t kWide[16] = {0,     1,     128,   129,   385,   386,   32767, 32768,
                                 32896, 32897, 65279, 65407, 65408, 65534, 65535, 1000};

Bytes png16_rgb() {  // 16 x 4, colour type 2
  std::vector<Bytes> rows;
  for (int y = 0; y < 4; ++y) {
    Bytes r;
    for (int x = 0; x < 16; ++x) {
      be16(r, kWide[x]);
      be16(r, kWide[(x + 5 * y + 3) % 16]);
      be16(r, kWide[15 - x]);
    }
    rows.push_back(r);
  }
  return write_png(16, 4, 16, 2, rows);
}

Bytes png16_grey_alpha() {  // 16 x 4, colour type 4
  std::vector<Bytes> rows;
  for (int y = 0; y < 4; ++y) {
    Bytes r;
    for (int x = 0; x < 16; ++x) {
      be16(r, kWide[(x + y) % 16]);
      be16(r, static_cast<unsigned>(x * 4369));  // alpha 0..65535
    }
    rows.push_back(r);
  }
  return write_png(16, 4, 16, 4, rows);
}

Bytes palette(int n) {
  Bytes p;
  for (int i = 0; i < n; ++i) {
    p.push_back(static_cast<unsigned char>(i * 37 % 256));
    p.push_back(static_cast<unsigned char>(255 - i * 16));
    p.push_back(static_cast<unsigned char>(i * 101 % 256));
  }
  return p;
}

Bytes png_palette8() {  // 16 x 8, 8-bit indices into 40 colours
  std::vector<Bytes> rows;
  for (int y = 0; y < 8; ++y) {
    Bytes r;
    for (int x = 0; x < 16; ++x) r.push_back(static_cast<unsigned char>((x + 3 * y) % 40));
    rows.push_back(r);
  }
  return write_png(16, 8, 8, 3, rows, palette(40));
}

Bytes png_palette4_trns() {  // 16 x 8, 4-bit indices, entries 0 and 5 transparent
  std::vector<Bytes> rows;
  for (int y = 0; y < 8; ++y) {
    Bytes r;
    for (int x = 0; x < 16; x += 2)
      r.push_back(static_cast<unsigned char>((((x + y) % 16) << 4) | ((x + 1 + y) % 16)));
    rows.push_back(r);
  }
  return write_png(16, 8, 4, 3, rows, palette(16), Bytes{0, 255, 255, 255, 255, 0});
}

// ------------------------------------------------------------------ BigTIFF (by hand)
// 16 x 8 RGB, 8 bits, uncompressed, one strip; little- or big-endian.
Bytes write_bigtiff(bool le) {
  const int w = 16, h = 8;
  Bytes b;
  auto u16 = [&](unsigned v) { le ? le16(b, v) : be16(b, v); };
  auto u32 = [&](std::uint32_t v) { le ? le32(b, v) : be32(b, v); };
  auto u64 = [&](std::uint64_t v) {
    if (le) {
      u32(static_cast<std::uint32_t>(v));
      u32(static_cast<std::uint32_t>(v >> 32));
    } else {
      u32(static_cast<std::uint32_t>(v >> 32));
      u32(static_cast<std::uint32_t>(v));
    }
  };
  put(b, le ? "II" : "MM");
  u16(43);  // BigTIFF
  u16(8);   // offsets are 8 bytes
  u16(0);
  u64(16);  // IFD0 follows the header
  struct Entry {
    unsigned tag, type;
    std::uint64_t count, value;  // SHORT values left-justified in the 8-byte field
  };
  const std::uint64_t n_entries = 9;
  const std::uint64_t data_at = 16 + 8 + n_entries * 20 + 8;
  const Entry entries[] = {
      {256, 3, 1, w},                     // ImageWidth
      {257, 3, 1, h},                     // ImageLength
      {258, 3, 3, 0},                     // BitsPerSample 8, 8, 8 (in the field)
      {259, 3, 1, 1},                     // Compression: none
      {262, 3, 1, 2},                     // PhotometricInterpretation: RGB
      {273, 16, 1, data_at},              // StripOffsets (LONG8)
      {277, 3, 1, 3},                     // SamplesPerPixel
      {278, 3, 1, h},                     // RowsPerStrip
      {279, 16, 1, std::uint64_t{w} * h * 3},  // StripByteCounts (LONG8)
  };
  u64(n_entries);
  for (const Entry& e : entries) {
    u16(e.tag);
    u16(e.type);
    u64(e.count);
    if (e.tag == 258) {
      for (int k = 0; k < 3; ++k) u16(8);
      u16(0);
    } else if (e.type == 3) {
      u16(static_cast<unsigned>(e.value));
      u16(0);
      u32(0);
    } else {
      u64(e.value);
    }
  }
  u64(0);  // no next IFD
  const Bytes rgb = picture(w, h);
  b.insert(b.end(), rgb.begin(), rgb.end());
  return b;
}

// ------------------------------------------------------------------ animated WebP (by hand)
// Bits into bytes, least significant first (VP8L).
struct LsbBits {
  Bytes out;
  std::uint64_t acc = 0;
  int n = 0;
  void bits(std::uint32_t v, int count) {
    acc |= static_cast<std::uint64_t>(v) << n;
    n += count;
    while (n >= 8) {
      out.push_back(static_cast<unsigned char>(acc));
      acc >>= 8;
      n -= 8;
    }
  }
  void flush() {
    if (n > 0) out.push_back(static_cast<unsigned char>(acc));
    acc = 0;
    n = 0;
  }
};

// A VP8L bitstream of a w x h image of one ARGB colour: no transform, no
// colour cache, one prefix-code group whose five codes are "simple" codes of a
// single symbol (green, red, blue, alpha, distance 0), so each pixel takes
// zero bits.
Bytes vp8l_solid(int w, int h, unsigned char r, unsigned char g, unsigned char bl) {
  LsbBits s;
  s.bits(0x2F, 8);  // signature
  s.bits(static_cast<std::uint32_t>(w - 1), 14);
  s.bits(static_cast<std::uint32_t>(h - 1), 14);
  s.bits(0, 1);  // alpha not used
  s.bits(0, 3);  // version 0
  s.bits(0, 1);  // no transform
  s.bits(0, 1);  // no colour cache
  s.bits(0, 1);  // no meta prefix codes
  for (const unsigned char v : {g, r, bl, static_cast<unsigned char>(255)}) {
    s.bits(1, 1);  // simple code
    s.bits(0, 1);  // one symbol
    s.bits(1, 1);  // an 8-bit symbol
    s.bits(v, 8);
  }
  s.bits(1, 1);  // distance: simple code, one 1-bit symbol, 0
  s.bits(0, 1);
  s.bits(0, 1);
  s.bits(0, 1);
  s.flush();
  return s.out;
}

void riff_chunk(Bytes& b, const char* fourcc, const Bytes& data) {
  put(b, fourcc);
  le32(b, static_cast<std::uint32_t>(data.size()));
  b.insert(b.end(), data.begin(), data.end());
  if (data.size() % 2) b.push_back(0);
}

Bytes riff_webp(const Bytes& chunks) {
  Bytes b;
  put(b, "RIFF");
  le32(b, static_cast<std::uint32_t>(4 + chunks.size()));
  put(b, "WEBP");
  b.insert(b.end(), chunks.begin(), chunks.end());
  return b;
}

// A still WebP of one VP8L frame (the animated seed's first frame on its own).
Bytes webp_still_red() {
  Bytes chunks;
  riff_chunk(chunks, "VP8L", vp8l_solid(16, 16, 255, 0, 0));
  return riff_webp(chunks);
}

// 16 x 16 canvas, three frames (red, green, blue), 100 ms each, looping.
Bytes webp_animated() {
  Bytes chunks, vp8x, anim;
  vp8x.push_back(0x02);  // animation flag
  vp8x.insert(vp8x.end(), 3, 0);
  le24(vp8x, 16 - 1);
  le24(vp8x, 16 - 1);
  riff_chunk(chunks, "VP8X", vp8x);
  le32(anim, 0xFFFFFFFF);  // background: white, opaque
  le16(anim, 0);           // loop forever
  riff_chunk(chunks, "ANIM", anim);
  const unsigned char colours[3][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
  for (const auto& c : colours) {
    Bytes frame;
    le24(frame, 0);  // x / 2
    le24(frame, 0);  // y / 2
    le24(frame, 16 - 1);
    le24(frame, 16 - 1);
    le24(frame, 100);  // duration, ms
    frame.push_back(0x02);  // no blending, no disposal
    riff_chunk(frame, "VP8L", vp8l_solid(16, 16, c[0], c[1], c[2]));
    riff_chunk(chunks, "ANMF", frame);
  }
  return riff_webp(chunks);
}

// ------------------------------------------------------------------ the seeds
std::map<std::string, Bytes> seeds() {
  std::map<std::string, Bytes> s;
  const Bytes pic = picture(48, 32);
  JpegOptions o;
  o.progressive = true;
  s["gen_progressive.jpg"] = write_jpeg(pic, 48, 32, o);
  o = {};
  o.arithmetic = true;
  s["gen_arithmetic.jpg"] = write_jpeg(pic, 48, 32, o);
  o.progressive = true;
  s["gen_arithmetic_progressive.jpg"] = write_jpeg(pic, 48, 32, o);
  o = {};
  o.restart_interval = 1;  // RST after every MCU: six in all (3 x 2 MCUs)
  s["gen_restart.jpg"] = write_jpeg(pic, 48, 32, o);
  o = {};
  o.components = 4;
  o.colour = JpegColour::cmyk;
  s["gen_cmyk.jpg"] = write_jpeg(cmyk_patches(32, 16), 32, 16, o);
  o.colour = JpegColour::ycck;
  s["gen_ycck.jpg"] = write_jpeg(cmyk_patches(32, 16), 32, 16, o);
  const Bytes small = picture(24, 16);
  for (int k = 1; k <= 8; ++k) {
    o = {};
    o.exif_orientation = k;
    s["gen_exif_orientation_" + std::to_string(k) + ".jpg"] = write_jpeg(small, 24, 16, o);
  }
  s["gen_12bit.jpg"] = write_jpeg12();
  s["gen_16bit_rgb.png"] = png16_rgb();
  s["gen_16bit_grey_alpha.png"] = png16_grey_alpha();
  s["gen_palette8.png"] = png_palette8();
  s["gen_palette4_trns.png"] = png_palette4_trns();
  s["gen_bigtiff_le.tif"] = write_bigtiff(true);
  s["gen_bigtiff_be.tif"] = write_bigtiff(false);
  s["gen_animated.webp"] = webp_animated();
  s["gen_still_vp8l.webp"] = webp_still_red();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const bool check = argc == 3 && std::string(argv[1]) == "--check";
  if (!(argc == 2 || check)) {
    std::fprintf(stderr, "usage: %s DIR | --check DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[argc - 1];
  const auto all = seeds();
  if (!check) {
    fs::create_directories(dir);
    for (const auto& [name, bytes] : all) {
      std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                        static_cast<std::streamsize>(bytes.size()));
      std::printf("%6zu  %s\n", bytes.size(), name.c_str());
    }
    return 0;
  }
  int bad = 0;
  for (const auto& [name, bytes] : all) {
    std::ifstream in(dir / name, std::ios::binary);
    const Bytes have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (have != bytes) {
      std::printf("%s: %s\n", name.c_str(), in ? "differs from what the generator writes" : "missing");
      ++bad;
    }
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("gen_", 0) == 0 && !all.count(name)) {
      std::printf("%s: not written by the generator (stale?)\n", name.c_str());
      ++bad;
    }
  }
  if (bad) {
    std::printf("%d generated seed(s) out of date: run make_decode_seeds %s (from the build tree) and commit\n", bad,
                dir.string().c_str());
    return 1;
  }
  std::printf("%zu generated seeds match %s\n", all.size(), dir.string().c_str());
  return 0;
}
