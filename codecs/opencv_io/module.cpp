// libimgpipe_opencv_io.so: OpenCV's imgcodecs and videoio behind the
// function table opencv_io.hpp declares, loaded on demand by the library.
// The one symbol it exports is imgpipe_opencv_io_api().
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>

#include "opencv_io.hpp"

namespace {

namespace io = imgpipe::codecs::opencv_io;

cv::VideoCapture& cap(void* c) { return *static_cast<cv::VideoCapture*>(c); }

const io::Api kApi = [] {
  io::Api a;
  a.version = io::kApiVersion;
  a.imdecode = [](const cv::Mat& buf, int flags, cv::Mat* out) { cv::imdecode(buf, flags, out); };
  a.has_backend = [](int api) { return cv::videoio_registry::hasBackend(static_cast<cv::VideoCaptureAPIs>(api)); };
  a.capture_new = []() -> void* { return new cv::VideoCapture(); };
  a.capture_delete = [](void* c) { delete static_cast<cv::VideoCapture*>(c); };
  a.open_index = [](void* c, int index, int api) { return cap(c).open(index, api); };
  a.open_url = [](void* c, const std::string& url, int api, const std::vector<int>& params) {
    return cap(c).open(url, api, params);
  };
  a.get = [](void* c, int prop) { return cap(c).get(prop); };
  a.read = [](void* c, cv::Mat* frame) { return cap(c).read(*frame); };
  a.grab = [](void* c) { return cap(c).grab(); };
  return a;
}();

}  // namespace

extern "C" __attribute__((visibility("default"))) const io::Api* imgpipe_opencv_io_api() { return &kApi; }
