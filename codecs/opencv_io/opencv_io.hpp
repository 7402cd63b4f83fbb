// OpenCV's image codecs (imgcodecs) and video capture (videoio), loaded on
// first use from a module of their own, libimgpipe_opencv_io.so
// (module.cpp). The two bring about a hundred shared libraries (GDAL,
// GStreamer and what those link) whose loading and relocation was most of a
// process's start, and only what JPEG and the video reader do not cover
// needs them: PNG, BMP, TIFF and WebP images, stream URLs and cameras. So
// neither the imgpipe CLI nor libimgpipe_c.so links them, and a run over
// JPEGs and video files never loads them (docs/architecture.md, "OpenCV's
// codecs on demand").
//
// Where the module is looked for, first found wins: $IMGPIPE_OPENCV_IO (a
// path: only there); beside the program or library that holds this code
// (libimgpipe_c.so, installed or in the Python package); the installed
// library folder (relative to the installed CLI, then absolute); the build
// tree; then the loader's own search (the program's run path, which
// find_package(imgpipe) and imgpipe.pc give an application, LD_LIBRARY_PATH,
// the system's folders). When it cannot be loaded,
// what needs it fails with a reason that names every place tried and the
// loader's answer: an image is reported failed, a stream or camera too.
#pragma once

#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace imgpipe::codecs::opencv_io {

// The module's functions (module.cpp); the module and this library are
// built together, so the C++ types cross as they are. An OpenCV exception
// comes through as itself.
struct Api {
  int version = 0;
  void (*imdecode)(const cv::Mat& buf, int flags, cv::Mat* out) = nullptr;
  bool (*has_backend)(int api) = nullptr;
  void* (*capture_new)() = nullptr;
  void (*capture_delete)(void* cap) = nullptr;
  bool (*open_index)(void* cap, int index, int api) = nullptr;
  bool (*open_url)(void* cap, const std::string& url, int api, const std::vector<int>& params) = nullptr;
  double (*get)(void* cap, int prop) = nullptr;
  bool (*read)(void* cap, cv::Mat* frame) = nullptr;
  bool (*grab)(void* cap) = nullptr;
};
inline constexpr int kApiVersion = 1;
inline constexpr const char* kModuleName = "libimgpipe_opencv_io.so";

// The loaded module's functions, loading it on the first call (any thread).
// Throws imgpipe::Error: "OpenCV's image codecs and video capture
// (libimgpipe_opencv_io.so) could not be loaded: PATH: REASON; ...".
const Api& api();

// OpenCV's VideoCapture through the module, owned.
class Capture {
 public:
  Capture();  // loads the module (throws as api() does)
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  bool open(int index, int api_preference);
  bool open(const std::string& url, int api_preference, const std::vector<int>& params);
  double get(int prop) const;
  bool read(cv::Mat& frame);
  bool grab();

 private:
  const Api& api_;
  void* cap_;
};

}  // namespace imgpipe::codecs::opencv_io
