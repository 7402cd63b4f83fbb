// The entropy check (codecs/parse/jpeg_entropy.hpp) against libjpeg's verdict, as
// imgpipe's CPU route gives it (codecs::decode_jpeg): a file the check calls
// clean must decode there without damage, and every clean real file and
// encoder variant must be called clean (else the check would send all
// JPEGs to the CPU and test nothing).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "codecs/parse/jpeg_entropy.hpp"
#include "codecs/parse/jpeg_markers.hpp"
#include "common.hpp"
#include "jpeg_writer.hpp"
#include "codecs/image/libjpeg/jpeg_decode.hpp"

namespace {

using Bytes = std::vector<unsigned char>;
using imgpipe::codecs::check_entropy;

bool libjpeg_accepts(const Bytes& b) {
  cv::Mat out;
  return imgpipe::codecs::decode_jpeg(b, {}, out).empty();
}

// A textured picture (edges and noise: long codes, many coefficients).
cv::Mat picture(int w, int h, unsigned seed) {
  cv::Mat m(h, w, CV_8UC3);
  cv::randu(m, cv::Scalar::all(0), cv::Scalar::all(255));
  cv::Mat smooth;
  cv::GaussianBlur(m, smooth, {0, 0}, 1.5 + (seed % 3));
  cv::circle(smooth, {w / 2, h / 3}, std::max(1, std::min(w, h) / 4), cv::Scalar(250, 30, 90), -1);
  cv::line(smooth, {0, 0}, {w - 1, h - 1}, cv::Scalar(0, 255, 0), 2);
  return smooth;
}

Bytes encode(const cv::Mat& bgr, imgpipe::test::JpegWriteOptions o) {
  cv::Mat src = bgr;
  if (o.components == 1) cv::cvtColor(bgr, src, cv::COLOR_BGR2GRAY);
  else cv::cvtColor(bgr, src, cv::COLOR_BGR2RGB);
  return imgpipe::test::write_jpeg(src.ptr(), src.cols, src.rows, src.step, o);
}

// The clean files the engines take: the shipped sample photos and encoder
// variants (grey, every chroma sampling, restart intervals, odd sizes,
// thin images, EXIF, low and high quality).
std::vector<std::pair<std::string, Bytes>> clean_corpus() {
  std::vector<std::pair<std::string, Bytes>> files;
  for (int i = 0; i < 4; ++i) {
    const auto p = imgpipe::test::source_dir() / "samples/data" / ("img_0000" + std::to_string(i) + ".jpg");
    files.emplace_back(p.filename().string(), imgpipe::test::read_bytes(p));
  }
  struct Variant {
    const char* name;
    int w, h;
    imgpipe::test::JpegWriteOptions o;
  };
  const Variant variants[] = {
      {"420 q90", 97, 61, {3, {}, 90, 2, 2}},
      {"422 q75", 80, 33, {3, {}, 75, 2, 1}},
      {"440 q95", 41, 70, {3, {}, 95, 1, 2}},
      {"444 q100", 64, 64, {3, {}, 100, 1, 1}},
      {"grey", 53, 29, {1}},
      {"420 restart 1", 77, 45, {3, {}, 90, 2, 2, false, false, 1}},
      {"420 restart 7", 130, 90, {3, {}, 85, 2, 2, false, false, 7}},
      {"grey restart 3", 45, 45, {1, {}, 90, 0, 0, false, false, 3}},
      {"q1", 64, 48, {3, {}, 1, 2, 2}},
      {"1x300", 1, 300, {3, {}, 90, 2, 2}},
      {"300x1", 300, 1, {3, {}, 90, 2, 2}},
      {"1x1", 1, 1, {3}},
      {"exif", 33, 17, {3, {}, 90, 2, 2, false, false, 0, 6}},
  };
  unsigned seed = 0;
  for (const Variant& v : variants) files.emplace_back(v.name, encode(picture(v.w, v.h, seed++), v.o));
  return files;
}

std::string check_name(const Bytes& b) {
  const auto c = check_entropy(b);
  return c.clean ? "clean" : std::string(c.reason);
}

}  // namespace

TEST_CASE("entropy check: every clean file and encoder variant is clean") {
  for (const auto& [name, bytes] : clean_corpus()) {
    CAPTURE(name);
    REQUIRE(libjpeg_accepts(bytes));
    const auto c = check_entropy(bytes);
    CHECK_MESSAGE(c.clean, c.reason);
    CHECK(c.mcus > 0);
  }
}

TEST_CASE("entropy check: the damage the engines decode silently is found") {
  const Bytes good = encode(picture(96, 64, 1), {3, {}, 90, 2, 2});
  const auto layout = imgpipe::codecs::read_jpeg_markers(good);
  REQUIRE(layout.sos > 0);
  const std::size_t scan = layout.sos + 2 + imgpipe::codecs::be16(&good[layout.sos + 2]);
  const std::size_t eoi = good.size() - 2;
  REQUIRE(good[eoi] == 0xFF);
  REQUIRE(good[eoi + 1] == 0xD9);
  auto with_eoi = [](Bytes b) {
    b.push_back(0xFF);
    b.push_back(0xD9);
    return b;
  };
  // Cut at 10/50/90% of the scan, EOI appended.
  for (int pct : {10, 50, 90}) {
    const Bytes cut = with_eoi(Bytes(good.begin(), good.begin() + static_cast<long>(scan + (eoi - scan) * pct / 100)));
    CAPTURE(pct);
    CHECK_FALSE(libjpeg_accepts(cut));
    CHECK(check_name(cut) == "entropy-coded data ends early");
  }
  // No EOI at all.
  CHECK(check_name(Bytes(good.begin(), good.begin() + static_cast<long>(eoi))) ==
        "bytes or markers between the last MCU and EOI");
  // A zeroed run in the middle of the scan.
  Bytes zeroed = good;
  std::fill(zeroed.begin() + static_cast<long>(scan + (eoi - scan) / 3),
            zeroed.begin() + static_cast<long>(scan + (eoi - scan) / 2), 0);
  CHECK_FALSE(libjpeg_accepts(zeroed));
  CHECK_FALSE(check_entropy(zeroed).clean);
  // An RST marker inside a scan without DRI; an EOI inside the scan.
  for (unsigned char marker : {0xD3, 0xD9}) {
    Bytes in_scan = good;
    const std::size_t at = scan + (eoi - scan) / 2;
    in_scan.insert(in_scan.begin() + static_cast<long>(at), {0xFF, marker});
    CAPTURE(int(marker));
    CHECK_FALSE(libjpeg_accepts(in_scan));
    CHECK_FALSE(check_entropy(in_scan).clean);
  }
  // Extra bytes between the last MCU and EOI (libjpeg takes up to 4 as
  // padding; the check takes none).
  Bytes padded = good;
  padded.insert(padded.begin() + static_cast<long>(eoi), 20, 0x55);
  CHECK_FALSE(libjpeg_accepts(padded));
  CHECK(check_name(padded) == "bytes or markers between the last MCU and EOI");
  // The scan repeated after itself.
  Bytes twice(good.begin(), good.begin() + static_cast<long>(eoi));
  twice.insert(twice.end(), good.begin() + static_cast<long>(layout.sos), good.end());
  CHECK_FALSE(check_entropy(twice).clean);
  // Restart markers out of sequence.
  const Bytes rst = encode(picture(96, 64, 2), {3, {}, 90, 2, 2, false, false, 2});
  Bytes swapped = rst;
  const unsigned char rst0[] = {0xFF, 0xD0};
  auto first = std::search(swapped.begin() + static_cast<long>(scan), swapped.end(), std::begin(rst0), std::end(rst0));
  REQUIRE(first != swapped.end());
  first[1] = 0xD5;
  CHECK(check_entropy(rst).clean);
  CHECK_FALSE(libjpeg_accepts(swapped));
  CHECK(check_name(swapped) == "restart marker missing or out of place");
  // Not what the engines take: progressive, 12-bit never reach the check
  // clean.
  CHECK_FALSE(check_entropy(encode(picture(32, 32, 3), {3, {}, 90, 2, 2, true})).clean);
}

// The property the route rests on: never "clean" where libjpeg reports
// damage. Seeded random damage of every kind over the clean corpus.
TEST_CASE("entropy check: clean only where libjpeg decodes without damage (mutations)") {
  std::mt19937 rng(20261204);
  int clean = 0, rejected = 0, mutations = 0;
  for (const auto& [name, good] : clean_corpus()) {
    const auto markers = imgpipe::codecs::read_jpeg_markers(good);
    REQUIRE(markers.sos > 0);
    const std::size_t scan = markers.sos + 4;
    for (int n = 0; n < 120; ++n) {
      Bytes b = good;
      auto pos = [&](std::size_t from) {
        return std::uniform_int_distribution<std::size_t>(from, b.size() - 1)(rng);
      };
      switch (n % 6) {
        case 0: b[pos(scan)] ^= static_cast<unsigned char>(1u << (rng() % 8)); break;  // one bit
        case 1: b[pos(scan)] = static_cast<unsigned char>(rng()); break;                 // one byte
        case 2: {  // cut, EOI appended
          b.resize(pos(scan));
          b.insert(b.end(), {0xFF, 0xD9});
          break;
        }
        case 3: {  // a run of zeros or of 0xFF
          const std::size_t at = pos(scan), len = std::min<std::size_t>(b.size() - at, 1 + rng() % 16);
          std::fill_n(b.begin() + static_cast<long>(at), len, (rng() & 1) ? 0xFF : 0x00);
          break;
        }
        case 4: {  // a marker inserted
          const unsigned char m = static_cast<unsigned char>(0xC0 + rng() % 64);
          b.insert(b.begin() + static_cast<long>(pos(scan)), {0xFF, m});
          break;
        }
        default: b[pos(2)] = static_cast<unsigned char>(rng()); break;  // anywhere, headers too
      }
      ++mutations;
      const auto c = check_entropy(b);
      const bool ok = libjpeg_accepts(b);
      if (c.clean) {
        ++clean;
        INFO(name, " mutation ", n);
        CHECK(ok);
      } else if (!ok) {
        ++rejected;
      }
    }
  }
  MESSAGE(mutations, " mutations: ", clean, " clean (libjpeg agrees), ", rejected, " rejected by both");
  CHECK(rejected > mutations / 2);
  CHECK(clean > 0);
}
