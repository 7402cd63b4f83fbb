// Decode stage on the decode fuzzer's generated seeds (tests/fuzz/corpus_decode/gen_*,
// written by tests/fuzz/make_decode_seeds.cpp): what happens to each format
// feature real datasets have. Decoded ones are compared with cv::imdecode
// (the same libraries underneath); the others are reported with a reason that
// names the feature, before any decoder runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "codecs/parse/image_header.hpp"
#include "common.hpp"
#include "stages/decode.hpp"
#include "codecs/image/libjpeg/jpeg_decode.hpp"

using imgpipe::DecodeConfig;
using imgpipe::stages::Decode;
using imgpipe::codecs::sniff_header;
using Bytes = std::vector<unsigned char>;

namespace {

Bytes seed(const std::string& name) {
  const auto path = imgpipe::test::source_dir() / "tests" / "fuzz" / "corpus_decode" / name;
  const Bytes b = imgpipe::test::read_bytes(path);
  REQUIRE_MESSAGE(!b.empty(), path.string() << " missing: run make_decode_seeds");
  CHECK(b.size() <= 4096);  // seeds stay small
  return b;
}

// The decode stage's verdict: the reason, empty when `out` holds the image.
std::string run_decode(const Bytes& b, cv::Mat& out, DecodeConfig cfg = {}) {
  const Decode d(cfg, imgpipe::TransformConfig{});
  return d.decode(b, out);
}

cv::Mat decoded(const Bytes& b, DecodeConfig cfg = {}) {
  cv::Mat out;
  const std::string err = run_decode(b, out, cfg);
  CAPTURE(err);
  REQUIRE(err.empty());
  REQUIRE(out.type() == CV_8UC3);
  return out;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

bool has_marker(const Bytes& b, unsigned char m) {
  for (std::size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == m) return true;
  return false;
}

cv::Vec3b px(const cv::Mat& m, int x, int y) { return m.at<cv::Vec3b>(y, x); }

}  // namespace

TEST_CASE("decode seeds: progressive, arithmetic-coded and restart-marker JPEGs decode as cv::imdecode to the same pixels") {
  // One picture and one quantisation, coded four ways: only the entropy coding
  // differs, so the pixels must not.
  const Bytes progressive = seed("gen_progressive.jpg"), arithmetic = seed("gen_arithmetic.jpg"),
              arith_prog = seed("gen_arithmetic_progressive.jpg"), restart = seed("gen_restart.jpg");
  CHECK(sniff_header(progressive).jpeg_sof == 0xC2);  // progressive, Huffman
  CHECK(sniff_header(arithmetic).jpeg_sof == 0xC9);   // sequential, arithmetic
  CHECK(sniff_header(arith_prog).jpeg_sof == 0xCA);   // progressive, arithmetic
  CHECK(sniff_header(restart).jpeg_sof == 0xC0);      // baseline
  CHECK(has_marker(arithmetic, 0xCC));                // DAC: arithmetic conditioning
  CHECK(has_marker(restart, 0xDD));                   // DRI: restart interval
  for (unsigned char rst = 0xD0; rst <= 0xD4; ++rst) CHECK(has_marker(restart, rst));  // 6 MCUs: RST0..RST4
  const cv::Mat ref = decoded(progressive);
  CHECK(ref.size() == cv::Size(48, 32));
  for (const Bytes* b : {&progressive, &arithmetic, &arith_prog, &restart}) {
    CAPTURE(sniff_header(*b).jpeg_sof);
    const cv::Mat out = decoded(*b);
    CHECK(same(out, cv::imdecode(*b, cv::IMREAD_COLOR)));
    CHECK(same(out, ref));
  }
  // The picture's red block at the top left (BGR), within JPEG's error.
  const cv::Vec3b red = px(ref, 2, 2);
  CHECK(std::abs(red[2] - 230) <= 12);
  CHECK(std::abs(red[1] - 20) <= 12);
  CHECK(std::abs(red[0] - 30) <= 12);
}

TEST_CASE("decode seeds: a restart marker out of sequence is reported as corrupt, OpenCV decodes it silently") {
  Bytes b = seed("gen_restart.jpg");
  std::size_t at = 0;
  for (std::size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == 0xD2) at = i + 1;  // RST2
  REQUIRE(at > 0);
  b[at] = 0xD5;  // RST5 where RST2 belongs
  REQUIRE_FALSE(cv::imdecode(b, cv::IMREAD_COLOR).empty());
  cv::Mat out;
  const std::string err = run_decode(b, out);
  CAPTURE(err);
  CHECK(err.rfind("corrupt JPEG: Corrupt JPEG data: found marker 0xd5 instead of RST2", 0) == 0);
  CHECK(out.empty());
}

TEST_CASE("decode seeds: CMYK and YCCK JPEGs (Adobe marker, inverted ink) decode as cv::imdecode") {
  // Stored (inverted) ink of the patches, 8x8 each, 4 across and 2 down (see
  // make_decode_seeds.cpp); OpenCV's conversion: channel = k - ((255 - v) * k >> 8).
  const unsigned char ink[8][4] = {{255, 0, 0, 255},   {0, 255, 0, 255},     {0, 0, 255, 255},
                                   {255, 255, 255, 0}, {255, 255, 255, 255}, {0, 128, 255, 200},
                                   {128, 0, 64, 255},  {255, 255, 0, 128}};
  for (const char* name : {"gen_cmyk.jpg", "gen_ycck.jpg"}) {
    CAPTURE(name);
    const Bytes b = seed(name);
    CHECK(has_marker(b, 0xEE));  // APP14 Adobe
    CHECK(sniff_header(b).width == 32);
    const cv::Mat out = decoded(b);
    CHECK(same(out, cv::imdecode(b, cv::IMREAD_COLOR)));
    for (int k = 0; k < 8; ++k) {
      CAPTURE(k);
      const cv::Vec3b p = px(out, (k % 4) * 8 + 4, (k / 4) * 8 + 4);
      const int K = ink[k][3];
      auto conv = [&](int v) { return K - ((255 - v) * K >> 8); };
      CHECK(std::abs(p[2] - conv(ink[k][0])) <= 6);  // R from C
      CHECK(std::abs(p[1] - conv(ink[k][1])) <= 6);  // G from M
      CHECK(std::abs(p[0] - conv(ink[k][2])) <= 6);  // B from Y
    }
  }
}

TEST_CASE("decode seeds: EXIF orientations 1 to 8 are applied as cv::imdecode applies them") {
  DecodeConfig as_stored;
  as_stored.exif_orientation = false;
  const cv::Mat stored = decoded(seed("gen_exif_orientation_1.jpg"), as_stored);
  CHECK(stored.size() == cv::Size(24, 16));
  for (int o = 1; o <= 8; ++o) {
    CAPTURE(o);
    const Bytes b = seed("gen_exif_orientation_" + std::to_string(o) + ".jpg");
    CHECK(sniff_header(b).orientation == o);
    CHECK(has_marker(b, 0xE1));
    CHECK_FALSE(has_marker(b, 0xE0));  // no JFIF: EXIF first, as cameras write
    const cv::Mat out = decoded(b);
    CHECK(same(out, cv::imdecode(b, cv::IMREAD_COLOR)));
    CHECK(out.size() == (o >= 5 ? cv::Size(16, 24) : cv::Size(24, 16)));
    cv::Mat expect = stored.clone();
    imgpipe::codecs::apply_exif_orientation(expect, o);
    CHECK(same(out, expect));
    CHECK(same(decoded(b, as_stored), stored));  // same pixels in every file
  }
}

TEST_CASE("decode seeds: a 12-bit JPEG is reported as unsupported by name, not as corrupt") {
  const Bytes b = seed("gen_12bit.jpg");
  const auto h = sniff_header(b);
  CHECK(h.format == "jpeg");
  CHECK(h.jpeg_sof == 0xC1);  // extended sequential, Huffman
  CHECK(h.precision == 12);
  CHECK(h.width == 32);
  CHECK(h.height == 16);
  cv::Mat out;
  CHECK(run_decode(b, out) == "12-bit JPEG (sample precision 12, SOF1) is not supported: 8-bit samples only");
  CHECK(out.empty());
  // Why it is named up front: libjpeg (8-bit build) and cv::imdecode refuse it
  // in words that read like damage.
  imgpipe::codecs::JpegDecodeOptions opt;
  CHECK(imgpipe::codecs::decode_jpeg(b, opt, out) == "corrupt JPEG: Unsupported JPEG data precision 12");
  CHECK(cv::imdecode(b, cv::IMREAD_UNCHANGED).empty());
  // The seed is a valid 12-bit JPEG: GDAL's 12-bit libjpeg (through OpenCV's
  // GDAL reader, from a file) decodes its eight flat tiles exactly.
  const auto path = imgpipe::test::source_dir() / "tests" / "fuzz" / "corpus_decode" / "gen_12bit.jpg";
  const cv::Mat twelve = cv::imread(path.string(), cv::IMREAD_LOAD_GDAL | cv::IMREAD_ANYDEPTH | cv::IMREAD_GRAYSCALE);
  if (twelve.empty()) {
    MESSAGE("OpenCV has no GDAL reader here: the 12-bit seed's content is not cross-checked");
  } else {
    REQUIRE(twelve.type() == CV_16UC1);
    REQUIRE(twelve.size() == cv::Size(32, 16));
    const int tiles[2][4] = {{0, 4095, 2048, 1000}, {3000, 17, 4000, 2500}};
    for (int ty = 0; ty < 2; ++ty)
      for (int tx = 0; tx < 4; ++tx) {
        double lo = 0, hi = 0;
        cv::minMaxLoc(twelve(cv::Rect(tx * 8, ty * 8, 8, 8)), &lo, &hi);
        CHECK(lo == tiles[ty][tx]);
        CHECK(hi == tiles[ty][tx]);
      }
  }
}

TEST_CASE("decode seeds: lossless and hierarchical JPEGs and impossible precisions are reported by name") {
  Bytes b = seed("gen_12bit.jpg");
  std::size_t sof = 0;
  for (std::size_t i = 2; i + 1 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == 0xC1) {
      sof = i;
      break;
    }
  REQUIRE(sof > 0);
  cv::Mat out;
  b[sof + 1] = 0xC3;
  CHECK(run_decode(b, out) == "lossless JPEG (SOF3) is not supported");
  b[sof + 1] = 0xCB;
  CHECK(run_decode(b, out) == "lossless JPEG (SOF11) is not supported");
  b[sof + 1] = 0xC5;
  CHECK(run_decode(b, out) == "hierarchical JPEG (SOF5) is not supported");
  b[sof + 1] = 0xC1;
  b[sof + 4] = 7;
  CHECK(run_decode(b, out) == "corrupt JPEG: sample precision 7 in SOF1 (8 or 12 for DCT-based JPEG)");
  CHECK(out.empty());
}

TEST_CASE("decode seeds: 16-bit PNGs (RGB, grey with alpha) become round(v / 257), where cv::imdecode truncates") {
  for (const char* name : {"gen_16bit_rgb.png", "gen_16bit_grey_alpha.png"}) {
    CAPTURE(name);
    const Bytes b = seed(name);
    const cv::Mat out = decoded(b);
    cv::Mat wide = cv::imdecode(b, cv::IMREAD_UNCHANGED), expect;
    REQUIRE(wide.depth() == CV_16U);
    if (wide.channels() == 4) cv::cvtColor(wide, wide, cv::COLOR_BGRA2BGR);  // alpha dropped
    if (wide.channels() == 2) {  // (should OpenCV keep grey + alpha as two channels)
      std::vector<cv::Mat> ch;
      cv::split(wide, ch);
      cv::cvtColor(ch[0], wide, cv::COLOR_GRAY2BGR);
    }
    wide.convertTo(expect, CV_8U, 1.0 / 257.0);
    CHECK(same(out, expect));
    // The values 129, 386, 32897, 65408 (257k + 129) round up; OpenCV's
    // IMREAD_COLOR shifts them down, so the two differ by one there.
    const cv::Mat opencv = cv::imdecode(b, cv::IMREAD_COLOR);
    REQUIRE(opencv.size() == out.size());
    CHECK(cv::norm(out, opencv, cv::NORM_INF) == 1);
  }
}

TEST_CASE("decode seeds: palette PNGs (8-bit, and 4-bit with tRNS) decode as cv::imdecode, transparency dropped") {
  for (const char* name : {"gen_palette8.png", "gen_palette4_trns.png"}) {
    CAPTURE(name);
    const Bytes b = seed(name);
    CHECK(sniff_header(b).format == "png");
    const cv::Mat out = decoded(b);
    CHECK(out.size() == cv::Size(16, 8));
    CHECK(same(out, cv::imdecode(b, cv::IMREAD_COLOR)));
    // Index 0 (transparent in the tRNS file) at (0, 0): its colour, RGB
    // (0, 255, 0), not composited over anything.
    CHECK(px(out, 0, 0) == cv::Vec3b(0, 255, 0));
    // Index 1 at (1, 0): RGB (37, 239, 101).
    CHECK(px(out, 1, 0) == cv::Vec3b(101, 239, 37));
  }
}

TEST_CASE("decode seeds: BigTIFF (both byte orders) is recognised, flagged and decoded as cv::imdecode") {
  const Bytes le = seed("gen_bigtiff_le.tif"), be = seed("gen_bigtiff_be.tif");
  for (const Bytes* b : {&le, &be}) {
    const auto h = sniff_header(*b);
    CHECK(h.format == "tiff");
    CHECK(h.bigtiff);
    CHECK(h.width == 16);
    CHECK(h.height == 8);
    const cv::Mat out = decoded(*b);
    CHECK(same(out, cv::imdecode(*b, cv::IMREAD_COLOR)));
    CHECK(px(out, 0, 0) == cv::Vec3b(30, 20, 230));   // the red block (uncompressed: exact)
    CHECK(px(out, 15, 7) == cv::Vec3b(255, 255, 255));
  }
  CHECK(same(decoded(le), decoded(be)));
  // Classic TIFF is not flagged; the size limit and max_pixels apply to BigTIFF.
  Bytes classic;
  REQUIRE(cv::imencode(".tiff", decoded(le), classic));
  CHECK_FALSE(sniff_header(classic).bigtiff);
  CHECK(same(decoded(classic), decoded(le)));
  DecodeConfig tiny;
  tiny.max_pixels = 100;
  cv::Mat out;
  CHECK(run_decode(le, out, tiny) == "image of 16x8 (128 pixels) exceeds decode.max_pixels (100)");
}

TEST_CASE("decode seeds: BigTIFF headers: LONG8 sizes, bad offsets and huge entry counts are read safely") {
  Bytes b = seed("gen_bigtiff_le.tif");
  // Entry 0 (ImageWidth) at 16 + 8: make it LONG8 (type 16) of 2^40.
  const std::size_t e = 24;
  b[e + 2] = 16;
  for (int k = 0; k < 8; ++k) b[e + 12 + k] = k == 5 ? 1 : 0;
  CHECK(sniff_header(b).width == (std::int64_t{1} << 40));
  cv::Mat out;
  CHECK(run_decode(b, out).rfind("corrupt TIFF: header claims 1099511627776x8", 0) == 0);
  // An IFD offset past the end, an offset size other than 8, a cut header.
  Bytes far = seed("gen_bigtiff_le.tif");
  far[15] = 0x7F;
  CHECK(sniff_header(far).bigtiff);
  CHECK(sniff_header(far).width == 0);
  Bytes odd = seed("gen_bigtiff_be.tif");
  odd[5] = 4;
  CHECK(sniff_header(odd).width == 0);
  const Bytes le_all = seed("gen_bigtiff_le.tif");
  const Bytes cut(le_all.begin(), le_all.begin() + 12);
  CHECK(sniff_header(cut).format == "tiff");
  CHECK(sniff_header(cut).width == 0);
  // An entry count of 2^64 - 1: the walk stops at the end of the data.
  Bytes many = le_all;
  std::fill(many.begin() + 16, many.begin() + 24, 0xFF);
  CHECK(sniff_header(many).width == 16);
  CHECK(sniff_header(many).height == 8);
}

TEST_CASE("decode seeds: an animated WebP is reported by name, its frames being valid WebP") {
  const Bytes anim = seed("gen_animated.webp");
  const auto h = sniff_header(anim);
  CHECK(h.format == "webp");
  CHECK(h.animated);
  CHECK(h.frames == 3);
  CHECK(h.width == 16);
  CHECK(h.height == 16);
  cv::Mat out;
  CHECK(run_decode(anim, out) == "animated WebP (3 frames) is not supported: still WebP only");
  CHECK(out.empty());
  // OpenCV 4.6 returns nothing for it either (no frame, no error).
  CHECK(cv::imdecode(anim, cv::IMREAD_COLOR).empty());
  // Its first frame's VP8L bitstream as a still WebP decodes, as OpenCV does: red.
  const Bytes still = seed("gen_still_vp8l.webp");
  CHECK_FALSE(sniff_header(still).animated);
  const cv::Mat red = decoded(still);
  CHECK(red.size() == cv::Size(16, 16));
  CHECK(same(red, cv::imdecode(still, cv::IMREAD_COLOR)));
  CHECK(same(red, cv::Mat(16, 16, CV_8UC3, cv::Scalar(0, 0, 255))));
  // Cut short: still animated, the frames that are whole are counted.
  const Bytes cut(anim.begin(), anim.end() - 20);
  CHECK(sniff_header(cut).animated);
  CHECK(sniff_header(cut).frames == 2);
  CHECK(run_decode(cut, out).rfind("animated WebP (2 frames)", 0) == 0);
  const Bytes header_only(anim.begin(), anim.begin() + 30);
  CHECK(run_decode(header_only, out) == "animated WebP is not supported: still WebP only");
}

TEST_CASE("decode seeds: every generated seed is decoded or reported by name") {
  const auto dir = imgpipe::test::source_dir() / "tests" / "fuzz" / "corpus_decode";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("gen_", 0) != 0) continue;
    ++n;
    CAPTURE(name);
    cv::Mat out;
    const std::string err = run_decode(seed(name), out);
    if (err.empty()) CHECK(out.type() == CV_8UC3);
    else CHECK(err.find("not supported") != std::string::npos);
  }
  CHECK(n == 23);
}
