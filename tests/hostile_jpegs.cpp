#include "hostile_jpegs.hpp"

#include <algorithm>
#include <cstddef>
#include <random>
#include <stdexcept>

#include "codecs/parse/jpeg_markers.hpp"
#include "jpeg_writer.hpp"

namespace imgpipe::test {

namespace {

using Bytes = std::vector<unsigned char>;
using codecs::JpegRefusal;

// A smooth pattern with edges, so the scan uses many codes.
Bytes encode(int w, int h, JpegWriteOptions o) {
  const int c = o.components;
  std::vector<unsigned char> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * static_cast<std::size_t>(c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        px[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * static_cast<std::size_t>(c) + static_cast<std::size_t>(k)] =
            static_cast<unsigned char>(((x * (3 + k)) ^ (y * (5 - k))) + ((x / 9 + y / 7) & 1) * 60);
  return write_jpeg(px.data(), w, h, static_cast<std::size_t>(w) * static_cast<std::size_t>(c), o);
}
Bytes encode(int w, int h) { return encode(w, h, JpegWriteOptions{}); }

// The offset of the first segment with `marker` (at its FF), before the scan
// data; throws when there is none (the encoder's output changed).
std::size_t find_segment(const Bytes& b, unsigned char marker) {
  std::size_t i = 2;
  while (i + 4 <= b.size() && b[i] == 0xFF) {
    if (b[i + 1] == marker) return i;
    if (b[i + 1] == 0xDA) break;
    i += 2 + codecs::be16(&b[i + 2]);
  }
  throw std::logic_error("hostile_jpegs: no segment FF " + std::to_string(marker));
}
std::size_t scan_start(const Bytes& b) {
  const std::size_t sos = find_segment(b, 0xDA);
  return sos + 2 + codecs::be16(&b[sos + 2]);
}
std::size_t eoi(const Bytes& b) { return b.size() - 2; }  // the encoder ends with FF D9

// Offset of the first DHT table of class `tc` (its Tc/Th byte).
std::size_t find_table(const Bytes& b, int tc) {
  std::size_t i = 2;
  while (i + 4 <= b.size() && b[i] == 0xFF && b[i + 1] != 0xDA) {
    const std::size_t end = i + 2 + codecs::be16(&b[i + 2]);
    if (b[i + 1] == 0xC4)
      for (std::size_t t = i + 4; t + 17 <= end;) {
        if ((b[t] >> 4) == tc) return t;
        std::size_t n = 0;
        for (int l = 1; l <= 16; ++l) n += b[t + static_cast<std::size_t>(l)];
        t += 17 + n;
      }
    i = end;
  }
  throw std::logic_error("hostile_jpegs: no Huffman table");
}

// Component ids in SOF and SOS set to `ids` (3 components).
void set_ids(Bytes& b, const int (&sof)[3], const int (&sos)[3]) {
  const std::size_t f = find_segment(b, 0xC0), s = find_segment(b, 0xDA);
  for (std::size_t c = 0; c < 3; ++c) {
    b[f + 10 + 3 * c] = static_cast<unsigned char>(sof[c]);
    b[s + 5 + 2 * c] = static_cast<unsigned char>(sos[c]);
  }
}

Bytes splice(const Bytes& b, std::size_t at, const Bytes& insert) {
  Bytes out(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(at));
  out.insert(out.end(), insert.begin(), insert.end());
  out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(at), b.end());
  return out;
}
// An offset in the scan near `frac` whose byte and the one before are not FF.
std::size_t scan_point(const Bytes& b, double frac) {
  const std::size_t s = scan_start(b), e = eoi(b);
  std::size_t i = s + static_cast<std::size_t>(static_cast<double>(e - s) * frac);
  while (i < e && (b[i] == 0xFF || b[i - 1] == 0xFF)) ++i;
  return i;
}
Bytes truncated(const Bytes& b, std::size_t at) {
  Bytes out(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(at));
  out.push_back(0xFF);
  out.push_back(0xD9);
  return out;
}

}  // namespace

std::vector<HostileJpeg> hostile_jpegs() {
  std::vector<HostileJpeg> v;
  auto add = [&](std::string name, Bytes b, JpegRefusal r = JpegRefusal::none, bool entropy = false) {
    v.push_back({std::move(name), std::move(b), r, entropy});
  };
  const Bytes base = encode(96, 64);
  JpegWriteOptions o444;
  o444.h_samp = o444.v_samp = 1;
  JpegWriteOptions grey;
  grey.components = 1;
  JpegWriteOptions restart;
  restart.restart_interval = 2;
  JpegWriteOptions exif;
  exif.exif_orientation = 1;

  // Valid files the engines take.
  add("valid_420", base);
  add("valid_444", encode(64, 48, o444));
  add("valid_grey", encode(64, 48, grey));
  add("valid_odd_97x61", encode(97, 61));
  add("valid_restart_2", encode(96, 64, restart));
  add("valid_exif", encode(96, 64, exif));
  {
    Bytes icc = {0xFF, 0xE2, 0x00, 0x20, 'I', 'C', 'C', '_', 'P', 'R', 'O', 'F', 'I', 'L', 'E', 0, 1, 1};
    icc.resize(2 + 0x20, 0);
    add("valid_icc", splice(base, 2, icc));
  }
  {
    Bytes t = base;
    t.insert(t.end(), {0x00, 0x11, 0xFF, 0xD8, 0x22});
    add("valid_trailing_data", t);
  }

  // Huffman tables libjpeg rejects.
  {
    Bytes b = base;  // one more 1-bit code, one fewer of the longest: Kraft sum over 1
    const std::size_t t = find_table(b, 0);
    int last = 16;
    while (b[t + static_cast<std::size_t>(last)] == 0) --last;
    ++b[t + 1];
    --b[t + static_cast<std::size_t>(last)];
    add("huffman_oversubscribed", b, JpegRefusal::huffman_oversubscribed);
  }
  {
    Bytes b = base;  // libjpeg's standard DC table without its gap: the all-ones code
    const std::size_t t = find_table(b, 0);
    int last = 16;
    while (b[t + static_cast<std::size_t>(last)] == 0) --last;
    ++b[t + static_cast<std::size_t>(last - 1)];
    --b[t + static_cast<std::size_t>(last)];
    add("huffman_all_ones", b, JpegRefusal::huffman_oversubscribed);
  }
  {
    Bytes b = base;  // the DC table's last symbol 16
    const std::size_t t = find_table(b, 0);
    std::size_t n = 0;
    for (int l = 1; l <= 16; ++l) n += b[t + static_cast<std::size_t>(l)];
    b[t + 16 + n] = 16;
    add("dc_symbol_16", b, JpegRefusal::dc_symbol_range);
  }
  {
    Bytes b = base;  // the DC table's last symbol (category 11, unused) as 15: valid
    const std::size_t t = find_table(b, 0);
    std::size_t n = 0;
    for (int l = 1; l <= 16; ++l) n += b[t + static_cast<std::size_t>(l)];
    b[t + 16 + n] = 15;
    add("dc_category_15", b, JpegRefusal::dc_category_large);
  }

  // Frame and scan headers.
  {
    Bytes b = base;
    set_ids(b, {1, 2, 3}, {1, 7, 3});
    add("sos_component_not_in_sof", b, JpegRefusal::scan_components);
    b = base;
    set_ids(b, {1, 2, 3}, {1, 1, 3});
    add("sos_component_twice", b, JpegRefusal::scan_components);
    b = base;
    set_ids(b, {1, 2, 3}, {1, 3, 2});
    add("sos_out_of_order", b, JpegRefusal::scan_components);
    b = base;
    set_ids(b, {1, 1, 1}, {1, 1, 1});
    add("sof_ids_111", b, JpegRefusal::component_ids);
  }
  {
    Bytes b = base;  // SOS length 4 bytes longer: it eats the scan's first bytes
    const std::size_t s = find_segment(b, 0xDA);
    b[s + 3] = static_cast<unsigned char>(b[s + 3] + 4);
    add("sos_length_eats_scan", b, JpegRefusal::segment_length);
  }
  {
    const std::size_t f = find_segment(base, 0xC0);
    const Bytes sof(base.begin() + static_cast<std::ptrdiff_t>(f),
                    base.begin() + static_cast<std::ptrdiff_t>(f + 2 + codecs::be16(&base[f + 2])));
    add("sof_inside_scan", splice(base, scan_point(base, 0.5), sof), JpegRefusal::marker_in_scan);
  }
  {
    const std::size_t s = find_segment(base, 0xDA);
    Bytes b(base.begin(), base.end() - 2);
    b.insert(b.end(), base.begin() + static_cast<std::ptrdiff_t>(s), base.end());
    add("scan_repeated", b, JpegRefusal::marker_in_scan);
  }
  {
    std::mt19937 rng(28);
    Bytes b(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(scan_start(base)));
    for (int i = 0; i < 3000; ++i) b.push_back(static_cast<unsigned char>(rng()));
    const Bytes stray = {0xFF, 0xC4, 0xFF, 0xDB, 0xFF, 0xE1};
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(b.size() - 100), stray.begin(), stray.end());
    b.push_back(0xFF);
    b.push_back(0xD9);
    add("random_scan_stray_markers", b, JpegRefusal::marker_in_scan);
  }

  // Entropy-coded data damaged, markers in order.
  for (const auto& [name, frac] : {std::pair{"truncated_10", 0.1}, {"truncated_50", 0.5}, {"truncated_90", 0.9}})
    add(name, truncated(base, scan_point(base, frac)), JpegRefusal::none, true);
  {
    const Bytes big = encode(256, 256);
    std::size_t at = scan_point(big, 0.5);
    while (at < eoi(big) && big[at - 1] != 0xFF) ++at;  // just after an FF (of FF 00)
    add("truncated_at_ff", truncated(big, at), JpegRefusal::none, true);
    add("truncated_one_byte", truncated(base, scan_start(base) + 1), JpegRefusal::none, true);
  }
  {
    Bytes b = base;
    for (double f : {0.2, 0.4, 0.6, 0.8}) {
      const std::size_t i = scan_point(b, f);
      const unsigned char x = static_cast<unsigned char>(b[i] ^ 0x5A);
      if (x != 0xFF && b[i + 1] != 0x00) b[i] = x;
    }
    add("flipped_bytes", b, JpegRefusal::none, true);
  }
  {
    Bytes b = base;
    std::fill(b.begin() + static_cast<std::ptrdiff_t>(scan_start(b)), b.end() - 2, 0);
    add("zeroed_scan", b, JpegRefusal::none, true);
  }
  add("eoi_inside_scan", splice(base, scan_point(base, 0.5), {0xFF, 0xD9}), JpegRefusal::none, true);
  add("rst_without_dri", splice(base, scan_point(base, 0.5), {0xFF, 0xD0}), JpegRefusal::restart_without_dri);
  {
    Bytes b = encode(96, 64, restart);
    for (std::size_t i = scan_start(b); i + 1 < b.size(); ++i)
      if (b[i] == 0xFF && b[i + 1] == 0xD1) {
        b[i + 1] = 0xD3;
        break;
      }
    add("rst_out_of_sequence", b, JpegRefusal::restart_sequence);
  }
  add("one_byte", Bytes{0xFF}, JpegRefusal::not_jpeg);

  // Valid files whose colours or sizes the engines get wrong.
  {
    JpegWriteOptions rgb;
    rgb.colour = JpegColour::rgb;
    add("adobe_transform_0_rgb", encode(64, 48, rgb), JpegRefusal::colour_transform);
    Bytes b = encode(64, 48, rgb);  // 'R','G','B' ids, the Adobe segment dropped
    const std::size_t a = find_segment(b, 0xEE);
    b.erase(b.begin() + static_cast<std::ptrdiff_t>(a),
            b.begin() + static_cast<std::ptrdiff_t>(a + 2 + codecs::be16(&b[a + 2])));
    set_ids(b, {'R', 'G', 'B'}, {'R', 'G', 'B'});
    add("ids_rgb", b, JpegRefusal::colour_transform);
  }
  {
    Bytes b = encode(64, 48, grey);
    b[find_segment(b, 0xC0) + 11] = 0x22;  // one component: a single block per MCU either way
    add("grey_2x2_sampling", b, JpegRefusal::sampling);
  }
  {
    JpegWriteOptions q1;
    q1.quality = 1;
    add("quality_1", encode(96, 64, q1), JpegRefusal::coarse_quantisation);
  }
  add("size_1x4000", encode(1, 4000), JpegRefusal::extreme_aspect);
  add("size_4000x1", encode(4000, 1), JpegRefusal::extreme_aspect);
  return v;
}

}  // namespace imgpipe::test
