// The geometry the stages record (stages/geometry.hpp): the resize part
// against the kernels' own placement formulas, reduced decode (the part of
// the last DCT block beyond an axis the orientation reverses), and the decode
// part the decode stage reports for JPEG (EXIF, reduced), PNG (eXIf chunk)
// and TIFF (orientation tag), each checked against the frame really decoded.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "kernels/crop.hpp"
#include "kernels/letterbox.hpp"
#include "stages/decode.hpp"
#include "stages/geometry.hpp"

using namespace imgpipe;
using imgpipe::stages::complete_geometry;
using imgpipe::stages::decoded_geometry;
using Bytes = std::vector<unsigned char>;

namespace {

ResizeConfig target(int w, int h, ResizeMode mode) {
  ResizeConfig r;
  r.width = w;
  r.height = h;
  r.mode = mode;
  return r;
}

void put16(Bytes& b, unsigned v, bool le = true) {
  b.push_back(static_cast<unsigned char>(le ? v : v >> 8));
  b.push_back(static_cast<unsigned char>(le ? v >> 8 : v));
}
void put32(Bytes& b, std::uint32_t v, bool le = true) {
  if (le) {
    put16(b, v & 0xFFFF);
    put16(b, v >> 16);
  } else {
    put16(b, v >> 16, false);
    put16(b, v & 0xFFFF, false);
  }
}

// A little-endian TIFF structure whose IFD0 holds only Orientation = o.
Bytes exif_tiff(int o) {
  Bytes t{'I', 'I'};
  put16(t, 42);
  put32(t, 8);
  put16(t, 1);
  put16(t, 0x0112);
  put16(t, 3);
  put32(t, 1);
  put16(t, static_cast<unsigned>(o));
  put16(t, 0);
  put32(t, 0);
  return t;
}

// `jpeg` with an APP1 Exif segment (orientation o) right after SOI.
Bytes jpeg_with_orientation(const Bytes& jpeg, int o) {
  const Bytes tiff = exif_tiff(o);
  Bytes seg{0xFF, 0xE1};
  put16(seg, static_cast<unsigned>(2 + 6 + tiff.size()), false);
  for (char c : {'E', 'x', 'i', 'f', '\0', '\0'}) seg.push_back(static_cast<unsigned char>(c));
  seg.insert(seg.end(), tiff.begin(), tiff.end());
  Bytes out{0xFF, 0xD8};
  out.insert(out.end(), seg.begin(), seg.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// `png` with an eXIf chunk (orientation o) right after IHDR.
Bytes png_with_orientation(const Bytes& png, int o) {
  const Bytes tiff = exif_tiff(o);
  Bytes chunk;
  put32(chunk, static_cast<std::uint32_t>(tiff.size()), false);
  for (char c : {'e', 'X', 'I', 'f'}) chunk.push_back(static_cast<unsigned char>(c));
  chunk.insert(chunk.end(), tiff.begin(), tiff.end());
  put32(chunk, crc32(chunk.data() + 4, chunk.size() - 4), false);
  Bytes out = png;
  out.insert(out.begin() + 33, chunk.begin(), chunk.end());  // after the signature and IHDR
  return out;
}

// An uncompressed 8-bit grey TIFF of w x h with Orientation = o.
Bytes tiff_with_orientation(int w, int h, int o) {
  Bytes t{'I', 'I'};
  put16(t, 42);
  put32(t, 8);
  const int entries = 9;
  const std::uint32_t data_at = 8 + 2 + 12 * entries + 4;
  put16(t, entries);
  auto entry = [&](unsigned tag, unsigned type, std::uint32_t value) {
    put16(t, tag);
    put16(t, type);
    put32(t, 1);
    if (type == 3) {
      put16(t, value);
      put16(t, 0);
    } else {
      put32(t, value);
    }
  };
  entry(256, 3, w);                                      // ImageWidth
  entry(257, 3, h);                                      // ImageLength
  entry(258, 3, 8);                                      // BitsPerSample
  entry(259, 3, 1);                                      // no compression
  entry(262, 3, 1);                                      // BlackIsZero
  entry(273, 4, data_at);                                // StripOffsets
  entry(274, 3, static_cast<std::uint32_t>(o));          // Orientation
  entry(278, 3, h);                                      // RowsPerStrip
  entry(279, 4, static_cast<std::uint32_t>(w * h));      // StripByteCounts
  put32(t, 0);
  for (int i = 0; i < w * h; ++i) t.push_back(static_cast<unsigned char>(i));
  return t;
}

Bytes encode(const std::string& ext, const cv::Mat& m) {
  Bytes b;
  REQUIRE(cv::imencode(ext, m, b));
  return b;
}

}  // namespace

TEST_CASE("stage geometry: the resize part is the kernels' placement (stretch, letterbox, center_crop, odd sizes)") {
  for (const auto& [w, h] : {std::pair{301, 187}, std::pair{97, 203}, std::pair{640, 640}, std::pair{33, 17}}) {
    CAPTURE(w);
    CAPTURE(h);
    SampleGeometry s = decoded_geometry(w, h, 1, 1);
    complete_geometry(s, w, h, target(96, 64, ResizeMode::stretch));
    CHECK(s.resize == ResizeMode::stretch);
    CHECK(s.scale_x == doctest::Approx(96.0 / w));
    CHECK(s.scale_y == doctest::Approx(64.0 / h));
    CHECK(s.offset_x == 0);
    CHECK(s.resized_width == 96);
    CHECK(s.tensor_height == 64);

    SampleGeometry l = decoded_geometry(w, h, 1, 1);
    complete_geometry(l, w, h, target(96, 64, ResizeMode::letterbox));
    const kernels::LetterboxGeometry lg = kernels::letterbox_geometry(w, h, 96, 64);
    CHECK(l.pad_left == lg.x0);
    CHECK(l.pad_top == lg.y0);
    CHECK(l.offset_x == lg.x0);
    CHECK(l.offset_y == lg.y0);
    CHECK(l.resized_width == lg.width);
    CHECK(l.resized_height == lg.height);
    CHECK(l.scale_x == doctest::Approx(static_cast<double>(lg.width) / w));
    CHECK(l.scale_y == doctest::Approx(static_cast<double>(lg.height) / h));
    CHECK(l.crop_x == 0);

    SampleGeometry c = decoded_geometry(w, h, 1, 1);
    complete_geometry(c, w, h, target(96, 64, ResizeMode::center_crop));
    const kernels::CropGeometry cg = kernels::center_crop_geometry(w, h, 96, 64);
    CHECK(c.crop_x == cg.x);
    CHECK(c.crop_y == cg.y);
    CHECK(c.offset_x == -cg.x);
    CHECK(c.offset_y == -cg.y);
    CHECK(c.resized_width == cg.resized_width);
    CHECK(c.pad_left == 0);
    // cv::resize(Size(), f, f) samples with step 1 / f (a copy when the size stays).
    const bool copy = cg.resized_width == w && cg.resized_height == h;
    CHECK(c.scale_x == doctest::Approx(copy ? 1.0 : static_cast<double>(cg.factor)));
  }
}

TEST_CASE("stage geometry: a frame without a decode part (a video frame) is its own original") {
  SampleGeometry g;
  complete_geometry(g, 320, 240, target(160, 160, ResizeMode::letterbox));
  CHECK(g.width == 320);
  CHECK(g.stored_width == 320);
  CHECK(g.height == 240);
  CHECK(g.orientation == 1);
  CHECK(g.decode_scale == 1);
  CHECK(g.scale_x == doctest::Approx(0.5));
  CHECK(g.pad_top == 20);
}

TEST_CASE("stage geometry: reduced decode scales by 1/r and shifts an axis the orientation reverses") {
  // 1203 x 805 stored, orientation 3 (both axes reversed), 1/8: the frame is
  // 151 x 101, whose last block reaches 5 and 3 pixels past the image.
  SampleGeometry g = decoded_geometry(1203, 805, 3, 8);
  CHECK(g.width == 1203);
  complete_geometry(g, 151, 101, target(151, 101, ResizeMode::stretch));
  CHECK(g.scale_x == doctest::Approx(1.0 / 8));
  CHECK(g.offset_x == doctest::Approx(5.0 / 8));
  CHECK(g.offset_y == doctest::Approx(3.0 / 8));
  // Displayed x = 1203 (the right edge) is stored x = 0, the reduced frame's u = 151.
  CHECK(image_to_tensor(g, Point{1203, 805}).x == doctest::Approx(151));
  // Orientation 6: displayed x reverses stored y (805 = 8 * 101 - 3), displayed y does not.
  SampleGeometry t = decoded_geometry(1203, 805, 6, 8);
  CHECK(t.width == 805);
  CHECK(t.height == 1203);
  complete_geometry(t, 101, 151, target(101, 151, ResizeMode::stretch));
  CHECK(t.offset_x == doctest::Approx(3.0 / 8));
  CHECK(t.offset_y == 0);
}

TEST_CASE("stage geometry: the decode stage reports the original, orientation and reduction of what it decoded") {
  cv::Mat m(203, 301, CV_8UC3, cv::Scalar(40, 80, 120));
  const Bytes jpeg = encode(".jpg", m);
  TransformConfig t;
  t.resize = target(32, 24, ResizeMode::stretch);
  for (int o = 1; o <= 8; ++o) {
    CAPTURE(o);
    for (bool apply : {true, false}) {
      DecodeConfig d;
      d.exif_orientation = apply;
      const stages::Decode dec(d, t);
      cv::Mat out;
      SampleGeometry g;
      int scale = 0;
      REQUIRE(dec.decode(jpeg_with_orientation(jpeg, o), out, &scale, &g).empty());
      CHECK(g.stored_width == 301);
      CHECK(g.stored_height == 203);
      CHECK(g.orientation == (apply ? o : 1));
      CHECK(g.decode_scale == scale);
      CHECK(scale == ((apply && o >= 5) ? 4 : 8));  // turned: 203 wide, 1/8 would be too narrow
      // The frame is the displayed original reduced: ceil(side / r).
      CHECK(out.cols == (g.width + scale - 1) / scale);
      CHECK(out.rows == (g.height + scale - 1) / scale);
    }
  }
  // PNG: OpenCV applies the eXIf orientation (unless told not to); TIFF: always.
  const stages::Decode dec(DecodeConfig{}, t);
  for (int o : {1, 3, 6, 8}) {
    CAPTURE(o);
    cv::Mat out;
    SampleGeometry g;
    REQUIRE(dec.decode(png_with_orientation(encode(".png", m), o), out, nullptr, &g).empty());
    CHECK(g.orientation == o);
    CHECK(g.stored_width == 301);
    CHECK(out.cols == g.width);
    CHECK(out.rows == g.height);
    REQUIRE(dec.decode(tiff_with_orientation(7, 3, o), out, nullptr, &g).empty());
    CHECK(g.orientation == o);
    CHECK(g.stored_width == 7);
    CHECK(out.cols == g.width);
    CHECK(out.rows == g.height);
    CHECK(g.decode_scale == 1);
  }
  DecodeConfig keep;
  keep.exif_orientation = false;
  const stages::Decode as_stored(keep, t);
  cv::Mat out;
  SampleGeometry g;
  REQUIRE(as_stored.decode(png_with_orientation(encode(".png", m), 6), out, nullptr, &g).empty());
  CHECK(g.orientation == 1);
  CHECK(out.cols == 301);
}
