#include "codecs/image/opencv/opencv_decoder.hpp"

#include <cctype>
#include <mutex>

#include <opencv2/imgcodecs.hpp>  // the flags alone: cv::imdecode is codecs/opencv_io's

#include "codecs/opencv_io/opencv_io.hpp"

namespace imgpipe::codecs {

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// OpenCV's imgcodecs, loaded on the first image that needs it
// (codecs/opencv_io); null with the reason when it cannot be.
//
// OpenCV builds its list of image decoders on the first cv::imdecode, as a
// function-local static. Threads that come later see it built through the
// guard's inline check, in OpenCV's own (uninstrumented) code, which
// ThreadSanitizer cannot see: it reported the decode threads' reads of the
// decoders' signatures as racing with the thread that built them (CI, TSan,
// the dump test's mpirun ranks). So the first call is made here, inside a
// std::call_once that every decoding thread passes first: the call that
// built the list happens before any other thread's decode.
const opencv_io::Api* imgcodecs(std::string& why) {
  static std::once_flag once;
  static const opencv_io::Api* api = nullptr;
  static std::string error;
  std::call_once(once, [] {
    try {
      api = &opencv_io::api();
      const unsigned char byte = 0;  // no decoder's signature: nothing is decoded
      cv::Mat none;
      api->imdecode(cv::Mat(1, 1, CV_8UC1, const_cast<unsigned char*>(&byte)), cv::IMREAD_COLOR, &none);
    } catch (const std::exception& e) {
      api = nullptr;
      error = e.what();
    }
  });
  if (api == nullptr) why = error;
  return api;
}

// What OpenCV's decode of `h` applied, checked against the frame it made.
ImageDecoded geometry_of(const ImageHeader& h, bool orientation, const cv::Mat& out) {
  // OpenCV 4.6 applies a PNG's eXIf orientation unless told to ignore it, and
  // a TIFF's orientation tag always (the flag notwithstanding).
  const int o = h.format == "tiff" || (h.format == "png" && orientation) ? h.orientation : 1;
  const bool turned = o >= 5;
  const std::int64_t w = turned ? h.height : h.width, hh = turned ? h.width : h.height;
  if (w == out.cols && hh == out.rows) return {static_cast<int>(h.width), static_cast<int>(h.height), o, 1};
  // A header this code misreads (or none): the frame as OpenCV made it.
  return {out.cols, out.rows, 1, 1};
}

}  // namespace

OpenCvDecoder::OpenCvDecoder() = default;

bool OpenCvDecoder::takes(const ImageHeader& h) const noexcept {
  return h.format == "png" || h.format == "bmp" || h.format == "tiff" || (h.format == "webp" && !h.animated);
}

std::string OpenCvDecoder::decode(std::span<const unsigned char> bytes, const ImageHeader& h,
                                  const ImageDecodeOptions& o, cv::Mat& out, ImageDecoded& done) const {
  // `out` may hold a previous image: cv::imdecode leaves its destination
  // untouched when no decoder accepts the data, so a failure would pass for it.
  out.release();
  std::string why;
  const opencv_io::Api* io = imgcodecs(why);
  if (io == nullptr) return "cannot decode " + upper(h.format) + ": " + why;
  const int orient = o.orientation ? 0 : cv::IMREAD_IGNORE_ORIENTATION;
  int flags = cv::IMREAD_COLOR | orient;
  // PNG and TIFF may hold 16-bit samples: decode them as they are and scale
  // here, the same way for every format (see the header).
  const bool wide = h.format == "png" || h.format == "tiff";
  if (wide) flags |= cv::IMREAD_ANYDEPTH;
  try {
    // cv::Mat header over the caller's bytes: no copy.
    const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<unsigned char*>(bytes.data()));
    io->imdecode(buf, flags, &out);
    if (wide && !out.empty() && out.depth() != CV_8U) {
      if (out.depth() == CV_16U) {
        out.convertTo(out, CV_8U, 1.0 / 257.0);  // rounds; v / 257 is never halfway
      } else {
        // Float or 32-bit samples: OpenCV's own conversion to 8 bits.
        out.release();
        io->imdecode(buf, cv::IMREAD_COLOR | orient, &out);
      }
    }
  } catch (const cv::Exception& e) {
    out.release();
    return std::string("decode failed: ") + e.what();
  }
  if (out.empty()) return "corrupt " + upper(h.format) + ": OpenCV could not decode it";
  if (out.type() != CV_8UC3) {
    out.release();
    return "decode produced an unexpected pixel format";
  }
  done = geometry_of(h, o.orientation, out);
  return {};
}

}  // namespace imgpipe::codecs
