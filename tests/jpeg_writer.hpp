// The one libjpeg writer of the tests and of the decode fuzzer's seed
// generator (tests/fuzz/make_decode_seeds.cpp, whose committed output must
// stay byte for byte what it is: change the call sequence in jpeg_writer.cpp
// only with `make_decode_seeds DIR` rerun and the seeds committed).
// No OpenCV here (the seed generator does not link it): pass a cv::Mat as
// m.ptr(), m.step.
#pragma once

#include <cstddef>
#include <vector>

namespace imgpipe::test {

// The colour space stored in the file.
enum class JpegColour {
  automatic,  // libjpeg's choice for the input: grey, YCbCr (RGB input), CMYK
  ycbcr,
  grey,
  rgb,   // with an Adobe marker
  cmyk,  // with an Adobe marker
  ycck,  // with an Adobe marker
};

struct JpegWriteOptions {
  int components = 3;  // samples per pixel given: 1 grey, 3 RGB, 4 CMYK
  JpegColour colour = JpegColour::automatic;
  int quality = 90;
  // Sampling factors of the first component, the others 1x1 (2x2 = 4:2:0,
  // 2x1 = 4:2:2, 1x2 = 4:4:0, 1x1 = 4:4:4, 4x1 = 4:1:1); 0: libjpeg's default.
  int h_samp = 0, v_samp = 0;
  bool progressive = false;
  bool arithmetic = false;
  unsigned restart_interval = 0;  // in MCUs; 0: none
  // 1..8: an APP1 Exif segment (little-endian) with this Orientation, right
  // after SOI and without the JFIF APP0, as cameras write; 0: none.
  int exif_orientation = 0;
};

// `height` rows of `width` x `components` samples, rows `stride` bytes apart,
// as a JPEG. Throws std::runtime_error with libjpeg's message on failure.
std::vector<unsigned char> write_jpeg(const unsigned char* samples, int width, int height, std::size_t stride,
                                      const JpegWriteOptions& o);

// The payload of an APP1 Exif segment: "Exif\0\0", a TIFF header in the byte
// order asked for, IFD0 with one entry, Orientation (0x0112) = `o`.
std::vector<unsigned char> exif_orientation_payload(int o, bool little_endian = true);

}  // namespace imgpipe::test
