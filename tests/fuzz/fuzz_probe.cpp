// libFuzzer target: the JPEG marker parser (codecs/parse/jpeg_markers.hpp) as
// the routing probe reads it, to decide what may go to the GPU's JPEG engines
// (SOF type, precision, components, subsampling, restart interval). It must
// never crash or read out of bounds, its result must be self-consistent, it
// must agree with the image header sniffer (codecs/parse/image_header.hpp)
// where both read the same frame header, and the one parse the probe makes
// (parse_jpeg_segments) must give the layout, the structural checks and the
// entropy walk what their own parses give them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "codecs/parse/image_header.hpp"
#include "codecs/parse/jpeg_checks.hpp"
#include "codecs/parse/jpeg_entropy.hpp"
#include "codecs/parse/jpeg_markers.hpp"

// The structural checks (codecs/parse/jpeg_checks.hpp): a JPEG they pass is one
// the engines may take, so what they kept must hold together.
static void check_structure(std::span<const unsigned char> bytes) {
  using namespace imgpipe::codecs;
  JpegStructure s;
  const JpegRefusal r = check_jpeg(bytes, s);
  if (jpeg_refusal_name(r) == "unknown") std::abort();
  if (r != JpegRefusal::none) return;
  if (s.precision != 8 || (s.sof != 0 && s.sof != 1) || s.width < 8 || s.height < 8) std::abort();
  if ((s.frame.size() != 1 && s.frame.size() != 3) || s.scan.size() != s.frame.size()) std::abort();
  for (std::size_t c = 0; c < s.frame.size(); ++c) {
    if (s.scan[c].id != s.frame[c].id || !s.quant[static_cast<std::size_t>(s.frame[c].tq)].defined) std::abort();
    const JpegHuffmanTable& dc = s.huffman[0][static_cast<std::size_t>(s.scan[c].td)];
    const JpegHuffmanTable& ac = s.huffman[1][static_cast<std::size_t>(s.scan[c].ta)];
    if (!huffman_table_ok(dc, true) || !huffman_table_ok(ac, false)) std::abort();
  }
  if (s.scan_size == 0 || s.scan_at + s.scan_size != s.eoi_at || s.eoi_at + 2 > bytes.size()) std::abort();
  if (bytes[s.eoi_at] != 0xFF || bytes[s.eoi_at + 1] != 0xD9) std::abort();
  if (s.restart_interval == 0 && s.restarts != 0) std::abort();
  // No marker but RSTn inside the scan.
  for (std::size_t i = s.scan_at; i + 1 < s.eoi_at; ++i)
    if (bytes[i] == 0xFF && bytes[i + 1] != 0x00 && bytes[i + 1] != 0xFF && (bytes[i + 1] < 0xD0 || bytes[i + 1] > 0xD7))
      std::abort();
}

// The probe's one parse against each reader's own.
static void check_one_parse(std::span<const unsigned char> bytes) {
  using namespace imgpipe::codecs;
  const JpegSegments seg = parse_jpeg_segments(bytes);
  const JpegMarkers m = read_jpeg_markers(bytes);
  if (seg.markers.sos != m.sos || seg.markers.irregular != m.irregular || seg.markers.sof_marker != m.sof_marker ||
      seg.markers.exif_at != m.exif_at || seg.markers.exif_size != m.exif_size)
    std::abort();
  if (seg.reached_scan() && (seg.list.empty() || seg.list.back().marker != 0xDA || seg.list.back().at != m.sos))
    std::abort();
  for (const JpegSegment& g : seg.list)
    if (g.at + 4 > bytes.size() || bytes[g.at] != 0xFF || bytes[g.at + 1] != g.marker) std::abort();
  JpegStructure a, b;
  if (check_jpeg(bytes, seg, a) != check_jpeg(bytes, b) || a.scan_at != b.scan_at || a.eoi_at != b.eoi_at) std::abort();
  const EntropyCheck e1 = check_entropy(bytes, seg), e2 = check_entropy(bytes);
  if (e1.clean != e2.clean || e1.reason != e2.reason || e1.mcus != e2.mcus) std::abort();
  const ImageHeader h1 = sniff_header(bytes, seg.markers), h2 = sniff_header(bytes);
  if (h1.format != h2.format || h1.width != h2.width || h1.height != h2.height || h1.orientation != h2.orientation)
    std::abort();
  if (jpeg_has_eoi(bytes, seg.markers) != jpeg_has_eoi(bytes)) std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  check_structure(bytes);
  check_one_parse(bytes);
  const imgpipe::codecs::JpegLayout j = imgpipe::codecs::parse_jpeg_layout(bytes);
  const std::string refusal = imgpipe::codecs::gpu_route_refusal(j);
  if (!j.valid) {
    if (refusal != "header not understood") std::abort();
    return 0;
  }
  if (j.width <= 0 || j.height <= 0 || j.components <= 0 || j.subsampling.empty()) std::abort();
  // What the engines are offered: baseline or extended 8-bit Huffman, 1 or 3
  // components, a subsampling they take.
  if (refusal.empty() &&
      ((j.sof != 0 && j.sof != 1) || j.precision != 8 || (j.components != 1 && j.components != 3) ||
       j.subsampling == "411" || j.subsampling == "410" || j.subsampling == "other"))
    std::abort();
  const imgpipe::codecs::ImageHeader h = imgpipe::codecs::sniff_header(bytes);
  if (h.format != "jpeg") std::abort();  // a valid layout starts with SOI
  if (h.jpeg_sof == 0xC0 + j.sof && h.width > 0 && (h.width != j.width || h.height != j.height)) std::abort();
  return 0;
}
