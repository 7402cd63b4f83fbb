// The image decoder interface (codecs/image/image_decoder.hpp), each backend
// through it: the CPU backends (libjpeg, OpenCV) take their formats and
// refuse the rest, decode small images written here to the pixels the
// libraries give, say what they applied (ImageDecoded), and report corrupt
// data with their reason and an empty frame. The nvJPEG backend's takes()
// runs where a GPU with nvJPEG is (it skips elsewhere).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "codecs/image/image_decoder.hpp"
#include "codecs/image/libjpeg/libjpeg_decoder.hpp"
#include "codecs/image/nvjpeg/nvjpeg_backend.hpp"
#include "codecs/image/opencv/opencv_decoder.hpp"
#include "codecs/parse/image_header.hpp"
#include "common.hpp"
#include "hostile_jpegs.hpp"
#include "jpeg_writer.hpp"
#include "nvjpeg_test_util.hpp"

namespace codecs = imgpipe::codecs;
using Bytes = std::vector<unsigned char>;

namespace {

// A picture with detail in both directions, so that a turn or a flip shows.
cv::Mat picture(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) = {static_cast<unsigned char>(x * 4), static_cast<unsigned char>(y * 5),
                               static_cast<unsigned char>((x * y) & 0xFF)};
  return m;
}

Bytes jpeg_of(const cv::Mat& m, int exif_orientation = 0) {
  imgpipe::test::JpegWriteOptions o;
  o.exif_orientation = exif_orientation;
  return imgpipe::test::write_jpeg(m.data, m.cols, m.rows, m.step, o);
}

Bytes encoded(const std::string& ext, const cv::Mat& m) {
  Bytes b;
  REQUIRE(cv::imencode(ext, m, b));
  return b;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

codecs::ImageHeader jpeg_header(int sof, int precision) {
  codecs::ImageHeader h;
  h.format = "jpeg";
  h.jpeg_sof = sof;
  h.precision = precision;
  return h;
}

}  // namespace

TEST_CASE("image decoders: the CPU backends, in order, each take their formats and refuse the rest") {
  const auto all = codecs::cpu_image_decoders();
  REQUIRE(all.size() == 2);
  CHECK(all[0]->name() == "libjpeg");
  CHECK(all[1]->name() == "opencv");
  const codecs::LibjpegDecoder libjpeg;
  const codecs::OpenCvDecoder opencv;
  const cv::Mat pic = picture(40, 24);
  const codecs::ImageHeader jpg = codecs::sniff_header(jpeg_of(pic));
  const codecs::ImageHeader png = codecs::sniff_header(encoded(".png", pic));
  const codecs::ImageHeader bmp = codecs::sniff_header(encoded(".bmp", pic));
  const codecs::ImageHeader tif = codecs::sniff_header(encoded(".tiff", pic));
  const codecs::ImageHeader webp = codecs::sniff_header(encoded(".webp", pic));
  REQUIRE(jpg.format == "jpeg");
  CHECK(libjpeg.takes(jpg));
  CHECK_FALSE(opencv.takes(jpg));
  for (const codecs::ImageHeader* h : {&png, &bmp, &tif, &webp}) {
    CAPTURE(h->format);
    CHECK(opencv.takes(*h));
    CHECK_FALSE(libjpeg.takes(*h));
  }
  // Features no backend reads are refused by the one that takes the format.
  CHECK(libjpeg.takes(jpeg_header(0xC2, 8)));   // progressive
  CHECK(libjpeg.takes(jpeg_header(0xC9, 8)));   // arithmetic
  CHECK(libjpeg.takes(jpeg_header(0, 0)));      // no frame header read: libjpeg says what is wrong
  CHECK_FALSE(libjpeg.takes(jpeg_header(0xC0, 12)));
  CHECK_FALSE(libjpeg.takes(jpeg_header(0xC3, 8)));  // lossless
  CHECK_FALSE(libjpeg.takes(jpeg_header(0xC5, 8)));  // hierarchical
  codecs::ImageHeader animated = webp;
  animated.animated = true;
  CHECK_FALSE(opencv.takes(animated));
  // The first that takes it; none for what no backend reads.
  CHECK(codecs::cpu_image_decoder_for(jpg)->name() == "libjpeg");
  CHECK(codecs::cpu_image_decoder_for(png)->name() == "opencv");
  CHECK(codecs::cpu_image_decoder_for(codecs::ImageHeader{}) == nullptr);
  CHECK(codecs::cpu_image_decoder_for(animated) == nullptr);
  CHECK(codecs::cpu_image_decoder_for(jpeg_header(0xC0, 12)) == nullptr);
}

TEST_CASE("image decoders: libjpeg decodes as cv::imdecode does, reduced and turned when asked") {
  const codecs::LibjpegDecoder libjpeg;
  const cv::Mat pic = picture(64, 48);
  const Bytes plain = jpeg_of(pic);
  const codecs::ImageHeader h = codecs::sniff_header(plain);
  cv::Mat out;
  codecs::ImageDecoded done;
  REQUIRE(libjpeg.decode(plain, h, {}, out, done) == "");
  CHECK(same(out, cv::imdecode(plain, cv::IMREAD_COLOR)));
  CHECK(done.stored_width == 64);
  CHECK(done.stored_height == 48);
  CHECK(done.orientation == 1);
  CHECK(done.scale == 1);
  // Reduced in the DCT domain: OpenCV's IMREAD_REDUCED_COLOR_2, bit for bit.
  codecs::ImageDecodeOptions half;
  half.scale_denom = 2;
  REQUIRE(libjpeg.decode(plain, h, half, out, done) == "");
  CHECK(same(out, cv::imdecode(plain, cv::IMREAD_REDUCED_COLOR_2)));
  CHECK(done.scale == 2);
  CHECK(done.stored_width == 64);  // the original's, not the reduced frame's
  // EXIF orientation 6 (turn 90 degrees clockwise): applied unless asked not to.
  const Bytes turned = jpeg_of(pic, 6);
  const codecs::ImageHeader th = codecs::sniff_header(turned);
  REQUIRE(th.orientation == 6);
  REQUIRE(libjpeg.decode(turned, th, {}, out, done) == "");
  CHECK(out.size() == cv::Size(48, 64));
  CHECK(done.orientation == 6);
  CHECK(same(out, cv::imdecode(turned, cv::IMREAD_COLOR)));
  codecs::ImageDecodeOptions as_stored;
  as_stored.orientation = false;
  REQUIRE(libjpeg.decode(turned, th, as_stored, out, done) == "");
  CHECK(out.size() == cv::Size(64, 48));
  CHECK(done.orientation == 1);
  CHECK(same(out, cv::imdecode(turned, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION)));
}

TEST_CASE("image decoders: OpenCV decodes PNG, BMP and TIFF, 16-bit samples as round(v / 257)") {
  const codecs::OpenCvDecoder opencv;
  const cv::Mat pic = picture(30, 20);
  for (const char* ext : {".png", ".bmp", ".tiff"}) {
    CAPTURE(ext);
    const Bytes b = encoded(ext, pic);
    cv::Mat out;
    codecs::ImageDecoded done;
    REQUIRE(opencv.decode(b, codecs::sniff_header(b), {}, out, done) == "");
    CHECK(same(out, pic));
    CHECK(done.stored_width == 30);
    CHECK(done.stored_height == 20);
    CHECK(done.orientation == 1);
    CHECK(done.scale == 1);
  }
  // 16-bit: values either side of the halfway points of v / 257.
  cv::Mat wide(1, 6, CV_16UC3);
  const std::uint16_t values[6] = {0, 128, 129, 385, 386, 65535};
  for (int i = 0; i < 6; ++i) wide.at<cv::Vec<std::uint16_t, 3>>(0, i) = {values[i], values[5 - i], values[i]};
  const Bytes png16 = encoded(".png", wide);
  cv::Mat out;
  codecs::ImageDecoded done;
  // A reduction asked for is not one this backend makes.
  codecs::ImageDecodeOptions reduce;
  reduce.scale_denom = 4;
  REQUIRE(opencv.decode(png16, codecs::sniff_header(png16), reduce, out, done) == "");
  REQUIRE(out.type() == CV_8UC3);
  CHECK(out.size() == cv::Size(6, 1));
  CHECK(done.scale == 1);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(out.at<cv::Vec3b>(0, i)[0] == std::lround(values[i] / 257.0));
    CHECK(out.at<cv::Vec3b>(0, i)[1] == std::lround(values[5 - i] / 257.0));
  }
}

TEST_CASE("image decoders: corrupt data gives the backend's reason and leaves no frame") {
  const cv::Mat pic = picture(64, 48);
  // libjpeg: the scan cut short and closed with EOI is damage libjpeg warns
  // about; accept_damaged delivers what it recovered.
  const Bytes good = jpeg_of(pic);
  const std::size_t sos = codecs::read_jpeg_markers(good).sos;
  REQUIRE(sos > 0);
  const std::size_t scan = sos + 2 + codecs::be16(&good[sos + 2]);
  Bytes cut(good.begin(), good.begin() + static_cast<long>(scan + (good.size() - 2 - scan) / 2));
  cut.insert(cut.end(), {0xFF, 0xD9});
  const codecs::LibjpegDecoder libjpeg;
  cv::Mat out = pic.clone();  // a pooled frame holding an earlier image
  codecs::ImageDecoded done;
  const std::string why = libjpeg.decode(cut, codecs::sniff_header(cut), {}, out, done);
  CAPTURE(why);
  CHECK(why.rfind("corrupt JPEG: ", 0) == 0);
  CHECK(out.empty());
  codecs::ImageDecodeOptions lenient;
  lenient.accept_damaged = true;
  CHECK(libjpeg.decode(cut, codecs::sniff_header(cut), lenient, out, done) == "");
  CHECK(out.size() == cv::Size(64, 48));
  // A header libjpeg cannot read (no frame header at all) is a fatal error.
  const Bytes soi_only{0xFF, 0xD8, 0xFF, 0xD9};
  CHECK(libjpeg.decode(soi_only, codecs::sniff_header(soi_only), {}, out, done).rfind("corrupt JPEG: ", 0) == 0);
  CHECK(out.empty());
  // OpenCV: a PNG without its image data.
  const codecs::OpenCvDecoder opencv;
  const Bytes png = encoded(".png", pic);
  const Bytes header_only(png.begin(), png.begin() + 33);  // signature and IHDR
  out = pic.clone();
  CHECK(opencv.decode(header_only, codecs::sniff_header(header_only), {}, out, done) ==
        "corrupt PNG: OpenCV could not decode it");
  CHECK(out.empty());
}

TEST_CASE("image decoders: the nvJPEG backend takes what the engines decode as libjpeg does") {
  const std::string no_gpu = nvjpeg_test::no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  // The engines where the GPU has them, else nvJPEG on the SMs: the question
  // is the same.
  codecs::GpuJpegOptions options;
  if (!codecs::GpuJpegDecoder::probe(0).has_value()) options.backend = codecs::JpegBackend::gpu_hybrid;
  const codecs::GpuJpegDecoder decoder(0, options);
  const codecs::NvjpegBackend nvjpeg(decoder);
  CHECK(nvjpeg.name() == "nvjpeg");
  const codecs::GpuJpegRoom room{1 << 24, std::size_t{1} << 26, std::size_t{1} << 24};
  const auto take = [&](const Bytes& b, const codecs::GpuJpegRoom& r) {
    return nvjpeg.takes(b, codecs::parse_jpeg_segments(b), r);
  };
  const Bytes plain = jpeg_of(picture(64, 48));
  const codecs::GpuJpegTake t = take(plain, room);
  CHECK(t.taken);
  CHECK(t.width == 64);
  CHECK(t.height == 48);
  CHECK(t.refusal == codecs::JpegRefusal::none);
  // Within the room only: the bitstream, the frame.
  codecs::GpuJpegRoom tight = room;
  tight.max_bitstream = plain.size() - 1;
  CHECK_FALSE(take(plain, tight).taken);
  tight = room;
  tight.max_frame_bytes = 64 * 48 * 3 - 1;
  CHECK_FALSE(take(plain, tight).taken);
  // A layout the hardware does not take: refused, and no structural reason.
  imgpipe::test::JpegWriteOptions progressive;
  progressive.progressive = true;
  const cv::Mat pic = picture(64, 48);
  const codecs::GpuJpegTake p =
      take(imgpipe::test::write_jpeg(pic.data, pic.cols, pic.rows, pic.step, progressive), room);
  CHECK_FALSE(p.taken);
  CHECK(p.refusal == codecs::JpegRefusal::none);
  // The structural checks' reasons come back, class by class.
  for (const auto& h : imgpipe::test::hostile_jpegs()) {
    if (h.refusal == codecs::JpegRefusal::none) continue;
    const codecs::GpuJpegTake r = take(h.bytes, room);
    CAPTURE(h.name);
    CHECK_FALSE(r.taken);
    // Those the layout refuses first carry no structural reason.
    if (r.refusal != codecs::JpegRefusal::none) CHECK(r.refusal == h.refusal);
  }
}
