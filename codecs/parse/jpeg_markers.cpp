#include "codecs/parse/jpeg_markers.hpp"

#include <algorithm>
#include <cstring>

namespace imgpipe::codecs {

namespace {

// The walk itself: `m` receives the summary, `visit(segment)` each marker
// met (fill bytes skipped). Returns where it stopped when it ran out of
// bytes or met a byte that is not FF (0 when it stopped at a segment).
template <class Visit>
std::size_t walk_markers(std::span<const unsigned char> b, JpegMarkers& m, Visit&& visit) {
  const std::size_t n = b.size();
  m.soi = n >= 2 && b[0] == 0xFF && b[1] == 0xD8;
  std::size_t i = 2;
  while (i + 4 <= n) {
    if (b[i] != 0xFF) return i;  // not at a marker: damaged
    const unsigned char marker = b[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    const JpegSegment seg{marker, i, be16(&b[i + 2])};
    visit(seg);
    if (seg.standalone()) {
      m.irregular = true;
      i += 2;
      continue;
    }
    // An EOI before the scan: irregular, and read as a segment like any other.
    if (marker == 0xD9) m.irregular = true;
    const std::size_t len = seg.length;
    const bool whole = seg.whole(n);
    if (marker == 0xDA) {
      m.sos = i;
      if (!whole) m.irregular = true;
      return 0;
    }
    if (len < 2) return 0;
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof && m.sof_marker == 0) {
      m.sof_marker = marker;
      m.frame_at = i + 4;
      m.frame_length = len;
      m.frame_complete = whole;
    } else if (marker == 0xDD && whole && len >= 4) {
      m.restart_interval = static_cast<int>(be16(&b[i + 4]));
    } else if (marker == 0xE1 && whole && m.exif_size == 0 && len >= 8 && std::memcmp(&b[i + 4], "Exif", 4) == 0) {
      m.exif_at = i + 4;
      m.exif_size = len - 2;
    }
    if (!whole) {  // runs past the end: nothing after it to walk
      m.irregular = true;
      return 0;
    }
    i += 2 + len;
  }
  return i;
}

}  // namespace

JpegSegments parse_jpeg_segments(std::span<const unsigned char> b) {
  JpegSegments s;
  s.list.reserve(16);  // a camera's JPEG has about a dozen segments before its scan
  s.stop_at = walk_markers(b, s.markers, [&s](const JpegSegment& seg) { s.list.push_back(seg); });
  return s;
}

JpegMarkers read_jpeg_markers(std::span<const unsigned char> b) noexcept {
  JpegMarkers m;
  walk_markers(b, m, [](const JpegSegment&) noexcept {});
  return m;
}

namespace {

std::string classify_subsampling(const JpegLayout& j, const unsigned char* factors) {
  if (j.components == 1) return "gray";
  if (j.components != 3) return "other";
  // Chroma components must share one sampling (1x1) and luma holds the maximum.
  const int h0 = factors[0] >> 4, v0 = factors[0] & 15;
  for (int c = 1; c < 3; ++c)
    if ((factors[c] >> 4) != 1 || (factors[c] & 15) != 1) return "other";
  if (h0 == 1 && v0 == 1) return "444";
  if (h0 == 2 && v0 == 1) return "422";
  if (h0 == 2 && v0 == 2) return "420";
  if (h0 == 1 && v0 == 2) return "440";
  if (h0 == 4 && v0 == 1) return "411";
  if (h0 == 4 && v0 == 2) return "410";
  return "other";
}

// Reads a whole frame header (SOFn) whose body (after the 2 length bytes)
// starts at `i` and whose length field says `len`: P, Y (2), X (2), Nf, then
// Nf x (id, H << 4 | V, Tq).
void read_frame(std::span<const unsigned char> b, std::size_t i, std::size_t len, int marker, JpegLayout& j) {
  if (len < 8) return;
  j.sof = marker - 0xC0;
  j.precision = b[i];
  j.height = static_cast<int>(be16(&b[i + 1]));
  j.width = static_cast<int>(be16(&b[i + 3]));
  j.components = b[i + 5];
  if (j.components < 1 || len < 8 + 3u * static_cast<unsigned>(j.components)) {
    j.components = 0;
    return;
  }
  unsigned char factors[4] = {0x11, 0x11, 0x11, 0x11};
  for (int c = 0; c < j.components; ++c) {
    const unsigned char f = b[i + 6 + 3 * static_cast<std::size_t>(c) + 1];
    if (c < 4) factors[c] = f;
    j.h_max = std::max(j.h_max, f >> 4);
    j.v_max = std::max(j.v_max, f & 15);
  }
  j.subsampling = classify_subsampling(j, factors);
}

}  // namespace

JpegLayout jpeg_layout(std::span<const unsigned char> b, const JpegMarkers& m) {
  JpegLayout j;
  if (!m.soi || b.size() < 4) return j;
  if (m.sof_marker != 0 && m.frame_complete) read_frame(b, m.frame_at, m.frame_length, m.sof_marker, j);
  j.restart_interval = m.restart_interval;
  j.valid = m.sos != 0 && !m.irregular && m.sof_marker != 0 && j.components > 0 && j.width > 0 && j.height > 0;
  return j;
}

std::string gpu_route_refusal(const JpegLayout& j) {
  if (!j.valid) return "header not understood";
  if (j.sof == 2 || j.sof == 6 || j.sof == 10 || j.sof == 14) return "progressive";
  if (j.sof == 3 || j.sof == 7 || j.sof == 11 || j.sof == 15) return "lossless";
  if (j.sof >= 9) return "arithmetic coding";
  if (j.sof != 0 && j.sof != 1) return "hierarchical";
  if (j.precision != 8) return std::to_string(j.precision) + "-bit samples";
  if (j.components == 4) return "4 components (CMYK/YCCK)";
  if (j.components != 1 && j.components != 3) return std::to_string(j.components) + " components";
  if (j.subsampling == "411" || j.subsampling == "410" || j.subsampling == "other")
    return "chroma subsampling " + j.subsampling;
  // The engines' upsampling at the image's edges departs from libjpeg's by
  // more than a level on images this thin (a 1x300 4:2:0 JPEG by 2 on the
  // H200; tests/pipeline/test_gpu_decode.cpp).
  if (j.width < 16 || j.height < 16) return "thinner than 16 pixels";
  return {};
}

}  // namespace imgpipe::codecs
