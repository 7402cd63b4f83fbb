#include "codecs/image/libjpeg/jpeg_decode.hpp"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include <opencv2/core.hpp>

#include <jpeglib.h>
// After jpeglib.h, which it needs.
#include <jerror.h>

namespace imgpipe::codecs {

namespace {

// libjpeg reports fatal errors through error_exit (which must not return:
// longjmp back to decode_jpeg) and warnings through emit_message(-1).
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char first_warning[JMSG_LENGTH_MAX];
  int warnings;
  int harmless;
};

[[noreturn]] void on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<ErrorManager*>(c->err);
  std::longjmp(e->jump, 1);
}

// Warnings that say nothing about the pixels: quirks of the writer that
// libjpeg decodes around exactly (a newer JFIF version, an unknown Adobe
// transform code, unusual SOS parameters in a sequential file, an ICC chunk
// it cannot use), and a few stray bytes before a marker, which some encoders
// write (padding before EOI). Everything else is damage: a bad Huffman or
// arithmetic code, a scan cut short, a missing restart marker, a broken
// progression, the file ending early, or more than
// kPaddingBytes bytes out of place (a desynchronised scan leaves dozens).
constexpr long kPaddingBytes = 4;

bool harmless(const jpeg_error_mgr& err) {
  switch (err.msg_code) {
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_ICC:
      return true;
    case JWRN_EXTRANEOUS_DATA:
      return err.msg_parm.i[0] <= kPaddingBytes;
    default:
      return false;
  }
}

void on_message(j_common_ptr c, int level) {
  auto* e = reinterpret_cast<ErrorManager*>(c->err);
  if (level >= 0) return;  // trace messages
  if (harmless(e->pub)) {
    ++e->harmless;
    return;
  }
  if (e->warnings++ == 0) e->pub.format_message(c, e->first_warning);
}

void no_output(j_common_ptr) {}

// OpenCV's CMYK -> BGR (Adobe CMYK JPEGs store inverted values, which this
// formula expects); kept identical so both decoders give the same pixels.
void cmyk_row_to_bgr(const unsigned char* cmyk, unsigned char* bgr, int width) {
  for (int i = 0; i < width; ++i, cmyk += 4, bgr += 3) {
    const int k = cmyk[3];
    bgr[2] = static_cast<unsigned char>(k - ((255 - cmyk[0]) * k >> 8));
    bgr[1] = static_cast<unsigned char>(k - ((255 - cmyk[1]) * k >> 8));
    bgr[0] = static_cast<unsigned char>(k - ((255 - cmyk[2]) * k >> 8));
  }
}

// The libjpeg part, with no C++ object that has a destructor in scope of the
// setjmp: a longjmp out of libjpeg must not skip one. `out` is allocated
// before the scanlines are read and released by the caller on failure.
// Returns 0 on success, 1 on a fatal libjpeg error (message in `msg`).
int run_libjpeg(const unsigned char* data, std::size_t size, int scale_denom, const JpegRegion& region,
                ErrorManager& err, jpeg_decompress_struct& cinfo, cv::Mat& out, std::vector<unsigned char>& row,
                char* msg) {
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  err.pub.output_message = no_output;
  err.warnings = 0;
  err.harmless = 0;
  err.first_warning[0] = '\0';
  jpeg_create_decompress(&cinfo);
  if (setjmp(err.jump)) {
    err.pub.format_message(reinterpret_cast<j_common_ptr>(&cinfo), msg);
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(scale_denom);
  const bool four = cinfo.num_components == 4;
  cinfo.out_color_space = four ? JCS_CMYK : JCS_EXT_BGR;
  jpeg_start_decompress(&cinfo);
  const int full_w = static_cast<int>(cinfo.output_width), full_h = static_cast<int>(cinfo.output_height);
  // What is kept: the region clipped to the image (all of it without one).
  int kx = 0, ky = 0, kw = full_w, kh = full_h;
  if (!region.empty()) {
    kx = std::clamp(region.x, 0, full_w - 1);
    ky = std::clamp(region.y, 0, full_h - 1);
    kw = std::clamp(region.width, 1, full_w - kx);
    kh = std::clamp(region.height, 1, full_h - ky);
  }
  // What is decoded: one iMCU around it (fancy upsampling and block
  // smoothing read neighbours), aligned by jpeg_crop_scanline.
  const int imcu_w = cinfo.max_h_samp_factor * DCTSIZE, imcu_h = cinfo.max_v_samp_factor * DCTSIZE;
  JDIMENSION xoff = 0, dw = static_cast<JDIMENSION>(full_w);
  if (kw < full_w) {
    const int x0 = std::max(0, kx - imcu_w), x1 = std::min(full_w, kx + kw + imcu_w);
    xoff = static_cast<JDIMENSION>(x0);
    dw = static_cast<JDIMENSION>(x1 - x0);
    if (dw < static_cast<JDIMENSION>(full_w)) jpeg_crop_scanline(&cinfo, &xoff, &dw);
    else xoff = 0, dw = static_cast<JDIMENSION>(full_w);
  }
  const int first_row = std::max(0, ky - imcu_h);
  try {
    out.create(kh, kw, CV_8UC3);
  } catch (...) {  // no longjmp crosses this: libjpeg is not running here
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  // Scanlines land in `out` itself when they are whole BGR rows of it; else
  // in `row` (CMYK, a cropped width, or a row above the region).
  const bool direct = !four && kw == full_w;
  if (!direct || first_row < ky) row.resize(static_cast<std::size_t>(dw) * (four ? 4 : 3));
  const std::size_t skip_bytes = static_cast<std::size_t>(kx - static_cast<int>(xoff)) * (four ? 4 : 3);
  if (first_row > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(first_row));
  while (static_cast<int>(cinfo.output_scanline) < ky + kh) {
    const int y = static_cast<int>(cinfo.output_scanline);
    unsigned char* dst = y >= ky ? out.ptr<unsigned char>(y - ky) : nullptr;
    JSAMPROW r = direct && dst ? dst : row.data();
    if (jpeg_read_scanlines(&cinfo, &r, 1) != 1) break;
    if (!dst || r == dst) continue;
    if (four) cmyk_row_to_bgr(row.data() + skip_bytes, dst, kw);
    else std::memcpy(dst, row.data() + skip_bytes, static_cast<std::size_t>(kw) * 3);
  }
  // The rest is read (entropy-decoded, not reconstructed): damage there is
  // reported as in a whole decode. Not skipped to the very end: a skip that
  // reaches the last row marks the input finished without reading it
  // (libjpeg-turbo 2.1), so the last row is read.
  if (cinfo.output_scanline + 1 < cinfo.output_height)
    jpeg_skip_scanlines(&cinfo, cinfo.output_height - 1 - cinfo.output_scanline);
  if (cinfo.output_scanline < cinfo.output_height) {
    if (row.size() < static_cast<std::size_t>(dw) * (four ? 4 : 3)) row.resize(static_cast<std::size_t>(dw) * (four ? 4 : 3));
    JSAMPROW r = row.data();
    jpeg_read_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

}  // namespace

std::string decode_jpeg(std::span<const unsigned char> bytes, const JpegDecodeOptions& opt, cv::Mat& out) {
  ErrorManager err;
  jpeg_decompress_struct cinfo;
  std::vector<unsigned char> row;
  char msg[JMSG_LENGTH_MAX];
  if (run_libjpeg(bytes.data(), bytes.size(), opt.region.empty() ? opt.scale_denom : 1, opt.region, err, cinfo, out,
                  row, msg) != 0) {
    out.release();
    return std::string("corrupt JPEG: ") + msg;
  }
  if (opt.harmless_warnings) *opt.harmless_warnings = err.harmless;
  if (err.warnings > 0 && !opt.accept_damaged) {
    out.release();
    std::string reason = std::string("corrupt JPEG: ") + err.first_warning;
    if (err.warnings > 1) reason += " (and " + std::to_string(err.warnings - 1) + " more libjpeg warnings)";
    return reason;
  }
  apply_exif_orientation(out, opt.orientation);
  return {};
}

}  // namespace imgpipe::codecs
