// The hostile JPEG corpus (tests/hostile_jpegs.hpp) through the probe's
// structural checks (codecs/parse/jpeg_checks.hpp) and the CPU route's libjpeg
// decode: each class refused with its reason; no file libjpeg rejects passes
// the checks unless its damage is in the entropy-coded bits only; the valid
// ones still decode.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <opencv2/core.hpp>

#include "codecs/image/libjpeg/jpeg_decode.hpp"
#include "codecs/parse/image_header.hpp"
#include "codecs/parse/jpeg_checks.hpp"
#include "hostile_jpegs.hpp"

using imgpipe::codecs::check_jpeg;
using imgpipe::codecs::JpegRefusal;
using imgpipe::codecs::jpeg_refusal_name;

namespace {

// The CPU route's verdict: an empty string when libjpeg decodes it cleanly.
std::string cpu_verdict(const std::vector<unsigned char>& b) {
  if (!imgpipe::codecs::jpeg_has_eoi(b)) return "truncated (no end-of-image marker)";
  cv::Mat out;
  return imgpipe::codecs::decode_jpeg(b, {}, out);
}

}  // namespace

TEST_CASE("hostile jpegs: every class gets its probe reason, and libjpeg's verdict agrees with the class") {
  const auto corpus = imgpipe::test::hostile_jpegs();
  std::set<std::string> names;
  // The classes libjpeg decodes; the rest it must reject, except those whose
  // verdict depends on the damage's luck or on libjpeg's version (SOF ids
  // 1,1,1: libjpeg-turbo 2 renames the duplicates, older libjpeg rejects).
  const std::set<std::string> valid = {"valid_420", "valid_444", "valid_grey", "valid_odd_97x61", "valid_restart_2",
                                       "valid_exif", "valid_icc", "valid_trailing_data", "dc_category_15",
                                       "adobe_transform_0_rgb", "ids_rgb", "grey_2x2_sampling", "quality_1",
                                       "size_1x4000", "size_4000x1"};
  const std::set<std::string> either = {"sof_ids_111", "flipped_bytes", "zeroed_scan"};
  for (const auto& h : corpus) {
    CAPTURE(h.name);
    CHECK(names.insert(h.name).second);
    const JpegRefusal r = check_jpeg(h.bytes);
    CHECK(jpeg_refusal_name(r) == jpeg_refusal_name(h.refusal));
    const std::string verdict = cpu_verdict(h.bytes);
    MESSAGE(h.name << ": probe " << jpeg_refusal_name(r) << ", libjpeg " << (verdict.empty() ? "ok" : verdict));
    if (valid.count(h.name)) CHECK(verdict.empty());
    if (!valid.count(h.name) && !either.count(h.name)) CHECK_FALSE(verdict.empty());
    // Never probe-clean and rejected, except damage inside the Huffman bits.
    if (!verdict.empty() && r == JpegRefusal::none) CHECK(h.entropy_damage);
  }
  CHECK(corpus.size() >= 35);
}

TEST_CASE("hostile jpegs: the checks keep the tables and the scan's place") {
  imgpipe::codecs::JpegStructure s;
  const auto corpus = imgpipe::test::hostile_jpegs();
  const auto& base = corpus.front().bytes;  // valid_420
  REQUIRE(check_jpeg(base, s) == JpegRefusal::none);
  CHECK(s.width == 96);
  CHECK(s.height == 64);
  REQUIRE(s.frame.size() == 3);
  CHECK(s.frame[0].h == 2);
  CHECK(s.frame[0].v == 2);
  CHECK(s.huffman[0][0].defined);
  CHECK(s.huffman[1][1].defined);
  CHECK(s.quant[0].defined);
  CHECK(s.eoi_at == base.size() - 2);
  CHECK(s.scan_at + s.scan_size == s.eoi_at);
  CHECK(s.jfif);
  // Cut anywhere: never out of bounds, never clean.
  for (std::size_t cut = 0; cut + 2 < base.size(); cut += 5)
    CHECK(check_jpeg(std::span(base.data(), cut)) != JpegRefusal::none);
}

TEST_CASE("hostile jpegs: libjpeg's Huffman table rule") {
  imgpipe::codecs::JpegHuffmanTable t;
  t.bits[1] = 2;  // codes 0 and 1: the all-ones code
  t.vals = {0, 1};
  CHECK_FALSE(huffman_table_ok(t, true));
  t.bits[1] = 1;
  t.bits[2] = 1;  // 0, 10: incomplete, accepted
  CHECK(huffman_table_ok(t, true));
  t.vals = {0, 16};
  CHECK_FALSE(huffman_table_ok(t, true));
  CHECK(huffman_table_ok(t, false));
  t.bits[2] = 3;  // oversubscribed
  t.vals = {0, 1, 2, 3};
  CHECK_FALSE(huffman_table_ok(t, false));
}
