// Live inputs: entries of input.paths that name a stream URL or a camera
// instead of a file. They are not checked for existence and not globbed;
// each is one video input (VideoReader) whose frames are named by the entry
// and the frame index.
//
//   stream URL  a scheme, then "://": rtsp://, rtsps://, http://, https://,
//               rtmp://, udp://, tcp://, file://, ... (whatever OpenCV's FFmpeg
//               backend opens), e.g. rtsp://10.0.0.5:554/cam1
//   camera      "camera:N", N the device index (V4L2 /dev/videoN on Linux),
//               e.g. camera:0. A bare number is a file name, never a camera.
#pragma once

#include <string>

namespace imgpipe::codecs::opencv_io {
class Capture;
}

namespace imgpipe::stages {

// A scheme (a letter, then letters, digits, '+', '-', '.') followed by "://".
bool is_stream_url(const std::string& path);
// Starts with "camera:", well-formed or not (live_input_problem says).
bool is_camera(const std::string& path);
inline bool is_live_input(const std::string& path) { return is_stream_url(path) || is_camera(path); }

// N of "camera:N" (decimal digits, at most 4); -1 when malformed.
int camera_index(const std::string& path);

// Why a live input's name cannot be opened at all, else empty: "camera:x"
// (not a device index), a stream URL with nothing after "://".
std::string live_input_problem(const std::string& path);

// The limits on opening a stream URL and on each read from it, in seconds
// (> 0, at least 1 ms; OpenCV's CAP_PROP_OPEN_TIMEOUT_MSEC / CAP_PROP_READ_TIMEOUT_MSEC, FFmpeg
// backend; without them OpenCV 4.6 waits 30 s).
struct StreamTimeouts {
  double open_s = 10;
  double read_s = 10;
};

// Opens a live input into `cap`: a stream URL with OpenCV's FFmpeg backend
// and the timeouts, a camera with V4L2 (after checking that its device
// exists, so an absent camera fails at once and quietly). Returns empty on
// success, else the reason ("cannot open camera 3 (no such device
// /dev/video3)", "cannot open stream: cannot connect to 127.0.0.1:8554:
// Connection refused", ...), diagnosed within a few seconds at most.
std::string open_live_input(codecs::opencv_io::Capture& cap, const std::string& path, const StreamTimeouts& timeouts);

}  // namespace imgpipe::stages
