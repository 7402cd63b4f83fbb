// Decode stage: OpenCV decode of real images, header sniffing, truncated and
// corrupt files, the max_pixels guard.
#include <doctest/doctest.h>

#include <limits>

#include <algorithm>
#include <cstdint>
#include <random>
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
using imgpipe::codecs::jpeg_has_eoi;
using imgpipe::codecs::sniff_header;
using Bytes = std::vector<unsigned char>;

namespace {

bool same_image(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  return cv::norm(a, b, cv::NORM_INF) == 0;
}

// Decodes with the default transform (640x640 stretch: no reduced decode of
// the 640x480 samples).
std::string decode(const Bytes& bytes, cv::Mat& out, DecodeConfig cfg = {}) {
  Decode d(cfg, imgpipe::TransformConfig{});
  return d.decode(bytes, out);
}

Bytes first_jpeg() {
  for (const auto& p : imgpipe::test::sample_images())
    if (p.extension() == ".jpg") return imgpipe::test::read_bytes(p);
  throw std::runtime_error("no sample JPEG");
}

Bytes first_png() {
  for (const auto& p : imgpipe::test::sample_images())
    if (p.extension() == ".png") return imgpipe::test::read_bytes(p);
  throw std::runtime_error("no sample PNG");
}

std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

void put_be32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
}

// A PNG whose IHDR (valid CRC) claims width x height, followed by garbage.
Bytes crafted_png(std::uint32_t width, std::uint32_t height) {
  Bytes b{0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  put_be32(b, 13);
  const std::size_t type_at = b.size();
  for (char c : {'I', 'H', 'D', 'R'}) b.push_back(static_cast<unsigned char>(c));
  put_be32(b, width);
  put_be32(b, height);
  for (unsigned char c : {8, 2, 0, 0, 0}) b.push_back(c);  // 8-bit RGB, no interlace
  put_be32(b, crc32(b.data() + type_at, b.size() - type_at));
  std::mt19937 rng(1);
  for (int i = 0; i < 200; ++i) b.push_back(static_cast<unsigned char>(rng()));
  return b;
}

// Offset of the first SOF0..SOF2 marker of a JPEG.
std::size_t find_sof(const Bytes& b) {
  for (std::size_t i = 2; i + 1 < b.size(); ++i)
    if (b[i] == 0xFF && (b[i + 1] == 0xC0 || b[i + 1] == 0xC1 || b[i + 1] == 0xC2)) return i;
  throw std::runtime_error("no SOF marker");
}

}  // namespace

TEST_CASE("decode: every sample decodes exactly as cv::imread") {
  const auto images = imgpipe::test::sample_images();
  REQUIRE(images.size() == 20);
  for (const auto& p : images) {
    CAPTURE(p);
    cv::Mat out;
    CHECK(decode(imgpipe::test::read_bytes(p), out).empty());
    const cv::Mat ref = cv::imread(p.string(), cv::IMREAD_COLOR);
    REQUIRE_FALSE(ref.empty());
    CHECK(out.type() == CV_8UC3);
    CHECK(out.cols == 640);
    CHECK(out.rows == 480);
    CHECK(same_image(out, ref));
  }
}

TEST_CASE("decode: grey, alpha and 16-bit PNGs become 8-bit BGR") {
  cv::Mat bgr(9, 7, CV_8UC3);
  cv::randu(bgr, 0, 256);
  cv::Mat gray, bgra, wide;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  cv::cvtColor(bgr, bgra, cv::COLOR_BGR2BGRA);
  bgr.convertTo(wide, CV_16UC3, 257.0);
  for (const cv::Mat* m : {&gray, &bgra, &wide}) {
    Bytes png;
    REQUIRE(cv::imencode(".png", *m, png));
    cv::Mat out;
    CHECK(decode(png, out).empty());
    CHECK(out.type() == CV_8UC3);
    CHECK(out.size() == bgr.size());
    CHECK(same_image(out, cv::imdecode(png, cv::IMREAD_COLOR)));
  }
}

TEST_CASE("decode: sniff_header reads format and size of JPEG and PNG") {
  const auto jpg = sniff_header(first_jpeg());
  CHECK(jpg.format == "jpeg");
  CHECK(jpg.width == 640);
  CHECK(jpg.height == 480);
  const auto png = sniff_header(first_png());
  CHECK(png.format == "png");
  CHECK(png.width == 640);
  CHECK(png.height == 480);
  // Odd sizes, both orientations, from freshly encoded images.
  for (const auto& size : {cv::Size(1, 1), cv::Size(37, 1001), cv::Size(1001, 37)}) {
    cv::Mat m(size, CV_8UC3, cv::Scalar(10, 20, 30));
    for (const char* ext : {".jpg", ".png"}) {
      CAPTURE(ext);
      Bytes b;
      REQUIRE(cv::imencode(ext, m, b));
      const auto h = sniff_header(b);
      CHECK(h.width == size.width);
      CHECK(h.height == size.height);
    }
  }
  const auto crafted = sniff_header(crafted_png(100000, 100000));
  CHECK(crafted.format == "png");
  CHECK(crafted.width == 100000);
  CHECK(crafted.height == 100000);
  // Unknown or too short: no format, no size; never throws.
  CHECK(sniff_header(Bytes{}).format.empty());
  CHECK(sniff_header(Bytes{0xFF, 0xD8}).format.empty());
  const Bytes text{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
  CHECK(sniff_header(text).format.empty());
  CHECK(sniff_header(text).width == 0);
  const Bytes jpeg_start{0xFF, 0xD8, 0xFF, 0xE0, 0x00};
  CHECK(sniff_header(jpeg_start).format == "jpeg");
  CHECK(sniff_header(jpeg_start).width == 0);
}

TEST_CASE("decode: sniff_header reads the size of BMP, WebP (lossy, lossless, extended) and TIFF (both byte orders)") {
  for (const auto& size : {cv::Size(1, 1), cv::Size(37, 1001), cv::Size(1001, 37)}) {
    cv::Mat bgr(size, CV_8UC3, cv::Scalar(10, 20, 30));
    cv::Mat bgra(size, CV_8UC4, cv::Scalar(10, 20, 30, 128));
    struct Case {
      const char* ext;
      cv::Mat img;
      std::vector<int> params;
      const char* format;
    };
    const Case cases[] = {
        {".bmp", bgr, {}, "bmp"},
        {".webp", bgr, {cv::IMWRITE_WEBP_QUALITY, 80}, "webp"},    // VP8
        {".webp", bgr, {cv::IMWRITE_WEBP_QUALITY, 101}, "webp"},   // VP8L
        {".webp", bgra, {cv::IMWRITE_WEBP_QUALITY, 80}, "webp"},   // VP8X + ALPH
        {".tiff", bgr, {}, "tiff"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.ext);
      CAPTURE(c.params.empty() ? 0 : c.params[1]);
      CAPTURE(c.img.channels());
      Bytes b;
      REQUIRE(cv::imencode(c.ext, c.img, b, c.params));
      const auto h = sniff_header(b);
      CHECK(h.format == c.format);
      CHECK(h.width == size.width);
      CHECK(h.height == size.height);
    }
  }
  // Big-endian TIFF, written by hand: 3000 x 2000 (LONG width, SHORT height).
  Bytes mm{'M', 'M', 0, 42, 0, 0, 0, 8, 0, 2};
  const unsigned char width_entry[12] = {0x01, 0x00, 0, 4, 0, 0, 0, 1, 0, 0, 0x0B, 0xB8};
  const unsigned char height_entry[12] = {0x01, 0x01, 0, 3, 0, 0, 0, 1, 0x07, 0xD0, 0, 0};
  mm.insert(mm.end(), width_entry, width_entry + 12);
  mm.insert(mm.end(), height_entry, height_entry + 12);
  const auto h = sniff_header(mm);
  CHECK(h.format == "tiff");
  CHECK(h.width == 3000);
  CHECK(h.height == 2000);
  // An IFD offset past the end: format known, size not, no overread (ASan).
  Bytes bad{'I', 'I', 42, 0, 0xFF, 0xFF, 0xFF, 0x7F};
  CHECK(sniff_header(bad).format == "tiff");
  CHECK(sniff_header(bad).width == 0);
}

TEST_CASE("decode: BMP, WebP and TIFF headers claiming huge sizes are rejected before decoding") {
  cv::Mat img(8, 8, CV_8UC3, cv::Scalar(1, 2, 3)), out;
  DecodeConfig cfg;
  cfg.max_pixels = 10'000;
  Bytes bmp;
  REQUIRE(cv::imencode(".bmp", img, bmp));
  for (int k = 0; k < 4; ++k) bmp[18 + k] = k == 3 ? 0x00 : 0xFF;  // width 16777215
  CHECK(decode(bmp, out, cfg).find("max_pixels") != std::string::npos);
  Bytes webp;
  REQUIRE(cv::imencode(".webp", img, webp, {cv::IMWRITE_WEBP_QUALITY, 101}));
  for (int k = 21; k < 25; ++k) webp[k] = 0xFF;  // VP8L: 16384 x 16384
  CHECK(decode(webp, out, cfg).find("16384x16384") != std::string::npos);
  CHECK(out.empty());
  Bytes tiff;
  REQUIRE(cv::imencode(".tiff", cv::Mat(200, 200, CV_8UC3, cv::Scalar(5)), tiff));
  const std::string err = decode(tiff, out, cfg);
  CHECK(err.find("200x200 (40000 pixels) exceeds decode.max_pixels (10000)") != std::string::npos);
}

TEST_CASE("decode: only JPEG, PNG, BMP, WebP and TIFF reach OpenCV, so a malformed DICOM cannot abort the process") {
  // Found by the decode fuzzer in CI: a damaged PNG signature with "DICM" at
  // offset 128 went to OpenCV's DICOM decoder, and Debian's GDCM asserts
  // (abort) on it. This test dies with SIGABRT if such a file reaches OpenCV.
  // The fuzzer's inputs, as it found them, kept in its seed corpus.
  const auto regress = imgpipe::test::source_dir() / "tests" / "fuzz" / "corpus_decode";
  const Bytes dicom = imgpipe::test::read_bytes(regress / "regress-gdcm-abort.bin");
  REQUIRE(dicom.size() == 135);
  REQUIRE(std::equal(dicom.begin() + 128, dicom.begin() + 132, "DICM"));
  cv::Mat out;
  CHECK(decode(dicom, out) == "not a recognised image format (supported: JPEG, PNG, BMP, WebP, TIFF)");
  CHECK(out.empty());
  // The second one (the fuzzer again): a RIFF/WEBP magic with a chunk that
  // libwebp refuses, so OpenCV went past its WebP reader to GDCM.
  const Bytes webp_dicom = imgpipe::test::read_bytes(regress / "regress-webp-gdcm-abort.bin");
  REQUIRE(webp_dicom.size() == 138);
  CHECK(sniff_header(webp_dicom).format == "webp");
  CHECK(decode(webp_dicom, out).rfind("corrupt WebP", 0) == 0);
  CHECK(out.empty());
  // Formats OpenCV reads but imgpipe does not take: reported, not decoded.
  Bytes ppm;
  REQUIRE(cv::imencode(".ppm", cv::Mat(4, 4, CV_8UC3, cv::Scalar(9)), ppm));
  REQUIRE_FALSE(cv::imdecode(ppm, cv::IMREAD_COLOR).empty());
  CHECK(decode(ppm, out).rfind("not a recognised image format", 0) == 0);
  CHECK(decode(Bytes{}, out) == "empty file (0 bytes)");
}

TEST_CASE("decode: header sizes cannot overflow the max_pixels check, sizes beyond a format's limit are corrupt") {
  // Found by the decode fuzzer: a PNG IHDR of 0xffe30100 x 0xd04e4840 made
  // width * height overflow (undefined behaviour, so the check's result was
  // anyone's guess). Kept in the seed corpus as found.
  const auto regress = imgpipe::test::source_dir() / "tests" / "fuzz" / "corpus_decode";
  const Bytes png = imgpipe::test::read_bytes(regress / "regress-size-overflow.bin");
  REQUIRE(png.size() == 24);
  CHECK(sniff_header(png).width == 0xffe30100LL);
  cv::Mat out;
  CHECK(decode(png, out) ==
        "corrupt PNG: header claims 4293067008x3494791232, beyond the format's limit of 2147483647 per side");
  CHECK(out.empty());
  // At the limit itself (2^31 - 1 per side, ~4.6e18 pixels) the check still
  // holds without overflowing: a max_pixels failure, with the exact product.
  const std::string err = decode(crafted_png(2147483647, 2147483647), out);
  CHECK(err == "image of 2147483647x2147483647 (4611686014132420609 pixels) exceeds decode.max_pixels (100000000)");
  DecodeConfig huge;
  huge.max_pixels = std::numeric_limits<std::int64_t>::max();
  CHECK(decode(crafted_png(2147483647, 2147483647), out, huge).find("max_pixels") == std::string::npos);
}

TEST_CASE("decode: images larger than max_pixels are rejected from the header") {
  cv::Mat out;
  // A PNG header claiming 100000 x 100000 (1e10 pixels) with garbage after it.
  const std::string err = decode(crafted_png(100000, 100000), out);
  CHECK(err.find("max_pixels") != std::string::npos);
  CHECK(err.find("100000x100000") != std::string::npos);
  CHECK(out.empty());
  // A real JPEG whose SOF is patched to claim 65535 x 65535.
  Bytes jpg = first_jpeg();
  const std::size_t sof = find_sof(jpg);
  for (int k = 5; k < 9; ++k) jpg[sof + k] = 0xFF;
  CHECK(sniff_header(jpg).width == 65535);
  CHECK(decode(jpg, out).find("max_pixels") != std::string::npos);
  // The limit is inclusive and configurable.
  DecodeConfig cfg;
  cfg.max_pixels = 640 * 480;
  CHECK(decode(first_jpeg(), out, cfg).empty());
  cfg.max_pixels = 640 * 480 - 1;
  CHECK(decode(first_jpeg(), out, cfg).find("max_pixels") != std::string::npos);
  CHECK(decode(first_png(), out, cfg).find("max_pixels") != std::string::npos);
}

TEST_CASE("decode: truncated JPEGs are reported as truncated unless accept_truncated") {
  const Bytes full = first_jpeg();
  const std::size_t n = full.size();
  REQUIRE(n > 4000);
  for (std::size_t cut : {std::size_t{3}, std::size_t{4}, std::size_t{20}, std::size_t{300}, std::size_t{700},
                          n / 4, n / 2, n - 100, n - 2, n - 1}) {
    CAPTURE(cut);
    const Bytes part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    CHECK_FALSE(jpeg_has_eoi(part));
    cv::Mat out;
    const std::string err = decode(part, out);
    CHECK(err.find("truncated") != std::string::npos);
    CHECK(out.empty());
  }
  // Accepted: a file cut in the scan decodes to a full-size (partly grey) image.
  DecodeConfig accept;
  accept.accept_truncated = true;
  for (std::size_t cut : {n / 2, n - 2}) {
    CAPTURE(cut);
    const Bytes part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    cv::Mat out;
    CHECK(decode(part, out, accept).empty());
    CHECK(out.cols == 640);
    CHECK(out.rows == 480);
  }
  // Accepted but cut in the headers: OpenCV cannot decode it, and says so.
  cv::Mat out;
  const std::string err = decode(Bytes(full.begin(), full.begin() + 20), out, accept);
  CHECK_FALSE(err.empty());
  CHECK(err.find("truncated") == std::string::npos);
}

TEST_CASE("decode: jpeg_has_eoi tolerates trailing data and ignores an EOI before the first scan") {
  const Bytes full = first_jpeg();
  CHECK(jpeg_has_eoi(full));
  Bytes junk = full;
  for (char c : std::string("trailing junk appended by a camera \xFF\x00\x12")) junk.push_back(static_cast<unsigned char>(c));
  CHECK(jpeg_has_eoi(junk));
  cv::Mat out;
  CHECK(decode(junk, out).empty());
  Bytes padded = full;
  padded.insert(padded.end(), 4096, 0x00);
  CHECK(jpeg_has_eoi(padded));
  // An APP1 segment (an EXIF thumbnail) holding a complete tiny JPEG, so an
  // FF D9 before the scan: it must not make a truncated file look complete.
  Bytes with_thumb(full.begin(), full.begin() + 2);
  const Bytes thumb{0xFF, 0xD8, 0xFF, 0xD9};
  with_thumb.insert(with_thumb.end(), {0xFF, 0xE1, 0x00, static_cast<unsigned char>(2 + thumb.size())});
  with_thumb.insert(with_thumb.end(), thumb.begin(), thumb.end());
  with_thumb.insert(with_thumb.end(), full.begin() + 2, full.end());
  CHECK(jpeg_has_eoi(with_thumb));
  CHECK(decode(with_thumb, out).empty());
  CHECK(same_image(out, cv::imdecode(full, cv::IMREAD_COLOR)));
  const Bytes cut_thumb(with_thumb.begin(), with_thumb.begin() + static_cast<std::ptrdiff_t>(with_thumb.size() / 2));
  CHECK_FALSE(jpeg_has_eoi(cut_thumb));
  CHECK(decode(cut_thumb, out).find("truncated") != std::string::npos);
  // Not JPEG at all.
  CHECK_FALSE(jpeg_has_eoi(Bytes{}));
  CHECK_FALSE(jpeg_has_eoi(Bytes{0xFF, 0xD9}));
}

TEST_CASE("decode: JPEGs with damaged entropy-coded data are reported with libjpeg's warning, which OpenCV only prints") {
  const Bytes good = first_jpeg();
  // The first scan's data starts after the SOS segment; damage its middle
  // with bytes that are not 0xFF (no accidental markers).
  const std::size_t data = imgpipe::test::first_scan_data(good);
  REQUIRE(data > 0);
  std::mt19937 rng(7);
  // (JPEG has no checksum: a few damaged bytes can decode without a warning
  // to a slightly wrong image, and no decoder can tell. Longer damage
  // desynchronises the Huffman decoder, which libjpeg notices.)
  for (const std::size_t burst : {std::size_t{64}, std::size_t{256}}) {
    CAPTURE(burst);
    Bytes bad = good;
    const std::size_t at = data + (good.size() - 2 - data) / 2;
    for (std::size_t k = 0; k < burst; ++k) bad[at + k] = static_cast<unsigned char>(rng() % 255);
    // OpenCV decodes it without an error: the damage would pass unnoticed.
    REQUIRE_FALSE(cv::imdecode(bad, cv::IMREAD_COLOR).empty());
    cv::Mat out;
    const std::string err = decode(bad, out);
    CAPTURE(err);
    CHECK(err.rfind("corrupt JPEG: Corrupt JPEG data", 0) == 0);
    CHECK(out.empty());
    // accept_truncated delivers what libjpeg recovered, as OpenCV does.
    DecodeConfig lenient;
    lenient.accept_truncated = true;
    CHECK(decode(bad, out, lenient).empty());
    CHECK(same_image(out, cv::imdecode(bad, cv::IMREAD_COLOR)));
  }
  // Stray bytes before EOI: a few are an encoder's padding (libjpeg warns,
  // the image is whole: delivered); dozens mean a damaged file. libjpeg
  // counts the bytes it had not already buffered as scan data, so k inserted
  // bytes show as fewer.
  bool padding_seen = false, damage_seen = false;
  for (std::size_t k = 1; k <= 48; ++k) {
    CAPTURE(k);
    Bytes padded = good;
    padded.insert(padded.end() - 2, k, 0x5A);
    cv::Mat out;
    int harmless = 0;
    imgpipe::codecs::JpegDecodeOptions opt;
    opt.harmless_warnings = &harmless;
    const std::string err = imgpipe::codecs::decode_jpeg(padded, opt, out);
    if (err.empty()) {
      CHECK(same_image(out, cv::imdecode(good, cv::IMREAD_COLOR)));
      padding_seen |= harmless > 0;
    } else {
      CAPTURE(err);
      CHECK(err.rfind("corrupt JPEG: Corrupt JPEG data: ", 0) == 0);
      const int reported = std::stoi(err.substr(std::string("corrupt JPEG: Corrupt JPEG data: ").size()));
      CHECK(reported > 4);
      damage_seen = true;
    }
  }
  CHECK(padding_seen);
  CHECK(damage_seen);
  // A damaged header (a DHT table cut short) is a fatal libjpeg error.
  Bytes dht = good;
  for (std::size_t i = 2; i + 3 < dht.size(); ++i)
    if (dht[i] == 0xFF && dht[i + 1] == 0xC4) {
      dht[i + 2] = 0;
      dht[i + 3] = 3;
      break;
    }
  cv::Mat out;
  const std::string err = decode(dht, out);
  CAPTURE(err);
  CHECK(err.rfind("corrupt JPEG: ", 0) == 0);
  CHECK(out.empty());
}

TEST_CASE("decode: PNGs cut anywhere before the end of IEND are reported as truncated") {
  const Bytes png = first_png();
  REQUIRE(imgpipe::codecs::png_has_iend(png));
  cv::Mat out;
  DecodeConfig lenient;
  lenient.accept_truncated = true;
  // Inside the signature, the IHDR, the image data, and just before IEND.
  for (const std::size_t keep : {std::size_t{9}, std::size_t{30}, png.size() / 3, png.size() - 12, png.size() - 1}) {
    CAPTURE(keep);
    const Bytes cut(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(keep));
    CHECK_FALSE(imgpipe::codecs::png_has_iend(cut));
    CHECK(decode(cut, out) == "corrupt PNG: truncated (no IEND chunk)");
    CHECK(out.empty());
  }
  // With accept_truncated the cut files reach libpng, which refuses them too
  // (it reads up to IEND): still reported, with OpenCV's reason.
  const Bytes no_iend(png.begin(), png.end() - 12);
  CHECK(decode(no_iend, out, lenient) == "corrupt PNG: OpenCV could not decode it");
  CHECK(out.empty());
  const Bytes half(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2));
  CHECK(decode(half, out, lenient).rfind("corrupt PNG", 0) == 0);
  CHECK(out.empty());
  // The whole file still decodes.
  CHECK(decode(png, out).empty());
}

TEST_CASE("decode: garbage and corrupt files are reported, never thrown") {
  cv::Mat out;
  const Bytes text{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e', '\n'};
  CHECK(decode(text, out) == "not a recognised image format (supported: JPEG, PNG, BMP, WebP, TIFF)");
  CHECK(out.empty());
  std::mt19937 rng(42);
  Bytes noise(5000);
  for (auto& b : noise) b = static_cast<unsigned char>(rng());
  noise[0] = 0x00;  // not an accidental magic number
  CHECK_FALSE(decode(noise, out).empty());
  CHECK(out.empty());
  // JPEG magic followed by noise, with an EOI at the end.
  Bytes fake{0xFF, 0xD8, 0xFF, 0xE0};
  fake.insert(fake.end(), noise.begin(), noise.end());
  fake.push_back(0xFF);
  fake.push_back(0xD9);
  CHECK_FALSE(decode(fake, out).empty());
  CHECK(out.empty());
  // A PNG cut in half.
  const Bytes png = first_png();
  const Bytes half(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2));
  const std::string err = decode(half, out);
  CHECK_FALSE(err.empty());
  CHECK(err.find("corrupt PNG: truncated") != std::string::npos);
  // The crafted PNG with a plausible size but garbage data.
  CHECK_FALSE(decode(crafted_png(16, 16), out).empty());
}

TEST_CASE("decode: a failed decode never leaves the previous image in a reused output Mat") {
  // The pipeline reuses each work item's Mat from image to image.
  const Bytes good = first_jpeg();
  cv::Mat out;
  REQUIRE(decode(good, out).empty());
  REQUIRE_FALSE(out.empty());
  const Bytes text{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  CHECK(decode(text, out) == "not a recognised image format (supported: JPEG, PNG, BMP, WebP, TIFF)");
  CHECK(out.empty());
  REQUIRE(decode(good, out).empty());
  // JPEG magic, a broken header: OpenCV's header read fails.
  Bytes fake{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00};
  fake.insert(fake.end(), 100, 0x00);
  fake.insert(fake.end(), {0xFF, 0xDA, 0x00, 0x02, 0x12, 0x34, 0xFF, 0xD9});
  CHECK_FALSE(decode(fake, out).empty());
  CHECK(out.empty());
  REQUIRE(decode(good, out).empty());
  CHECK_FALSE(decode(crafted_png(16, 16), out).empty());
  CHECK(out.empty());
  // And a good image after a failure decodes normally.
  CHECK(decode(first_png(), out).empty());
  CHECK(out.cols == 640);
}
