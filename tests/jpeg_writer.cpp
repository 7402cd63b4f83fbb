#include "jpeg_writer.hpp"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <jpeglib.h>

namespace imgpipe::test {

namespace {

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

J_COLOR_SPACE to_libjpeg(JpegColour c) {
  switch (c) {
    case JpegColour::ycbcr: return JCS_YCbCr;
    case JpegColour::grey: return JCS_GRAYSCALE;
    case JpegColour::rgb: return JCS_RGB;
    case JpegColour::cmyk: return JCS_CMYK;
    case JpegColour::ycck: return JCS_YCCK;
    case JpegColour::automatic: break;
  }
  return JCS_UNKNOWN;
}

}  // namespace

std::vector<unsigned char> write_jpeg(const unsigned char* samples, int width, int height, std::size_t stride,
                                      const JpegWriteOptions& o) {
  if (o.components != 1 && o.components != 3 && o.components != 4)
    throw std::invalid_argument("write_jpeg: components must be 1, 3 or 4");
  jpeg_compress_struct c{};
  JpegError err{};
  c.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = [](j_common_ptr p) {
    auto* e = reinterpret_cast<JpegError*>(p->err);
    e->mgr.format_message(p, e->message);
    std::longjmp(e->jump, 1);
  };
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&c);
    std::free(mem);
    throw std::runtime_error(std::string("libjpeg failed to write a test JPEG: ") + err.message);
  }
  // The order of these calls is the seeds' (tests/fuzz/corpus_decode/gen_*.jpg):
  // every setting that shapes the bytes comes after jpeg_set_defaults and
  // jpeg_set_colorspace (which resets the components' sampling factors).
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = static_cast<JDIMENSION>(width);
  c.image_height = static_cast<JDIMENSION>(height);
  c.input_components = o.components;
  c.in_color_space = o.components == 4 ? JCS_CMYK : o.components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  if (o.colour != JpegColour::automatic) jpeg_set_colorspace(&c, to_libjpeg(o.colour));  // CMYK, YCCK, RGB: Adobe marker
  jpeg_set_quality(&c, o.quality, TRUE);
  c.optimize_coding = FALSE;
  if (o.h_samp > 0 && o.v_samp > 0 && c.num_components >= 3) {
    c.comp_info[0].h_samp_factor = o.h_samp;
    c.comp_info[0].v_samp_factor = o.v_samp;
    for (int k = 1; k < c.num_components; ++k) c.comp_info[k].h_samp_factor = c.comp_info[k].v_samp_factor = 1;
  }
  if (o.progressive) jpeg_simple_progression(&c);
  c.arith_code = o.arithmetic ? TRUE : FALSE;
  c.restart_interval = o.restart_interval;
  // Without a JFIF APP0 when EXIF is written, as cameras do (APP1 first).
  if (o.exif_orientation) c.write_JFIF_header = FALSE;
  jpeg_start_compress(&c, TRUE);
  if (o.exif_orientation) {
    const std::vector<unsigned char> app1 = exif_orientation_payload(o.exif_orientation);
    jpeg_write_marker(&c, JPEG_APP0 + 1, app1.data(), static_cast<unsigned>(app1.size()));
  }
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(samples + static_cast<std::size_t>(c.next_scanline) * stride);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<unsigned char> b(mem, mem + size);
  std::free(mem);
  return b;
}

std::vector<unsigned char> exif_orientation_payload(int o, bool little_endian) {
  std::vector<unsigned char> b{'E', 'x', 'i', 'f', 0, 0};
  auto u16 = [&](unsigned v) {
    const auto lo = static_cast<unsigned char>(v), hi = static_cast<unsigned char>(v >> 8);
    b.push_back(little_endian ? lo : hi);
    b.push_back(little_endian ? hi : lo);
  };
  auto u32 = [&](unsigned long v) {
    u16(little_endian ? v & 0xFFFF : v >> 16);
    u16(little_endian ? v >> 16 : v & 0xFFFF);
  };
  b.push_back(little_endian ? 'I' : 'M');
  b.push_back(little_endian ? 'I' : 'M');
  u16(42);
  u32(8);       // IFD0 right after the header
  u16(1);       // one entry
  u16(0x0112);  // Orientation
  u16(3);       // SHORT
  u32(1);       // one value, in the entry
  u16(static_cast<unsigned>(o));
  u16(0);       // the value field's padding
  u32(0);       // no next IFD
  return b;
}

}  // namespace imgpipe::test
