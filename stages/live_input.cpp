#include "live_input.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <opencv2/videoio.hpp>  // the API and property names alone: the capture is codecs/opencv_io's

#include "codecs/opencv_io/opencv_io.hpp"

namespace fs = std::filesystem;

namespace imgpipe::stages {
namespace {

constexpr const char* camera_prefix = "camera:";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string scheme_of(const std::string& url) { return lower(url.substr(0, url.find("://"))); }

// "%2F" and the like, for a file:// path.
std::string percent_decoded(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The host and port a TCP-based stream URL connects to; port 0 when the
// scheme has no default and the URL names none.
struct Endpoint {
  std::string host;
  int port = 0;
};

Endpoint endpoint_of(const std::string& url) {
  static const std::map<std::string, int> default_ports = {{"http", 80},   {"https", 443}, {"rtsp", 554},
                                                           {"rtsps", 322}, {"rtmp", 1935}, {"rtmps", 443},
                                                           {"tcp", 0}};
  Endpoint e;
  const auto it = default_ports.find(scheme_of(url));
  if (it == default_ports.end()) return e;
  std::string authority = url.substr(url.find("://") + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  std::string port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const auto close = authority.find(']');
    e.host = authority.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < authority.size() && authority[close + 1] == ':')
      port = authority.substr(close + 2);
  } else {
    const auto colon = authority.rfind(':');
    e.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  e.port = it->second;
  if (!port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), ::isdigit)) e.port = std::stoi(port);
  return e;
}

// Empty when a TCP connection to the endpoint succeeds within `timeout_ms`,
// else why not.
std::string try_connect(const Endpoint& e, int timeout_ms) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(e.host.c_str(), std::to_string(e.port).c_str(), &hints, &found); rc != 0)
    return fmt::format("cannot resolve host '{}': {}", e.host, ::gai_strerror(rc));
  std::string why = "no address";
  for (const addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int err = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int n = ::poll(&p, 1, timeout_ms);
      socklen_t len = sizeof err;
      if (n == 0) err = ETIMEDOUT;
      else if (n < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    ::close(fd);
    if (err == 0) {
      ::freeaddrinfo(found);
      return {};
    }
    why = std::strerror(err);
  }
  ::freeaddrinfo(found);
  return fmt::format("cannot connect to {}:{}: {}", e.host, e.port, why);
}

// Why FFmpeg could not open `url` (it says so only on stderr): what the
// name, the time it took and a connection attempt of our own tell.
std::string why_stream_failed(const std::string& url, double elapsed_s, const StreamTimeouts& t) {
  const std::string scheme = scheme_of(url);
  if (scheme == "file") {
    std::string p = url.substr(url.find("://") + 3);
    if (p.rfind("localhost/", 0) == 0) p = p.substr(9);
    p = percent_decoded(p.substr(0, p.find_first_of("?#")));
    std::error_code ec;
    if (!fs::exists(p, ec)) return fmt::format("no such file '{}'", p);
    return fmt::format("'{}' is not a video FFmpeg can read", p);
  }
  if (t.open_s > 0 && elapsed_s >= 0.9 * t.open_s)
    return fmt::format("no stream within {:g} s (input.video.open_timeout_s)", t.open_s);
  const Endpoint e = endpoint_of(url);
  if (e.host.empty() || e.port == 0)
    return fmt::format("FFmpeg cannot open it (an unknown or unsupported protocol '{}', nothing received, or a "
                       "format or codec it cannot read)",
                       scheme);
  const int connect_ms = static_cast<int>(std::clamp(t.open_s > 0 ? t.open_s * 1000 : 5000, 100.0, 5000.0));
  if (std::string why = try_connect(e, connect_ms); !why.empty()) return why;
  return fmt::format("{}:{} accepts connections, but FFmpeg cannot open a video stream there (an error answer such "
                     "as HTTP 404, or a format or codec it cannot read)",
                     e.host, e.port);
}

std::string open_camera(codecs::opencv_io::Capture& cap, int index) {
#ifdef __linux__
  const std::string dev = "/dev/video" + std::to_string(index);
  std::error_code ec;
  if (!fs::exists(dev, ec)) return fmt::format("cannot open camera {} (no such device {})", index, dev);
  if (::access(dev.c_str(), R_OK | W_OK) != 0)
    return fmt::format("cannot open camera {} ({}: {})", index, dev, std::strerror(errno));
  const int api = codecs::opencv_io::api().has_backend(cv::CAP_V4L2) ? cv::CAP_V4L2 : cv::CAP_ANY;
  if (!cap.open(index, api))
    return fmt::format("cannot open camera {} ({} exists but is not a capture device OpenCV can open, or is busy)",
                       index, dev);
#else
  if (!cap.open(index, cv::CAP_ANY)) return fmt::format("cannot open camera {} (no such device, or busy)", index);
#endif
  return {};
}

}  // namespace

bool is_stream_url(const std::string& path) {
  const auto sep = path.find("://");
  if (sep == std::string::npos || sep == 0 || !std::isalpha(static_cast<unsigned char>(path[0]))) return false;
  return std::all_of(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(sep), [](unsigned char c) {
    return std::isalnum(c) || c == '+' || c == '-' || c == '.';
  });
}

bool is_camera(const std::string& path) { return path.rfind(camera_prefix, 0) == 0; }

int camera_index(const std::string& path) {
  if (!is_camera(path)) return -1;
  const std::string n = path.substr(std::strlen(camera_prefix));
  if (n.empty() || n.size() > 4 || !std::all_of(n.begin(), n.end(), ::isdigit)) return -1;
  return std::stoi(n);
}

std::string live_input_problem(const std::string& path) {
  if (is_camera(path) && camera_index(path) < 0)
    return "is not a camera: write camera:N, N the device index (0 for /dev/video0)";
  if (is_stream_url(path) && path.size() == path.find("://") + 3) return "is a stream URL with nothing after '://'";
  return {};
}

std::string open_live_input(codecs::opencv_io::Capture& cap, const std::string& path, const StreamTimeouts& timeouts) {
  if (std::string problem = live_input_problem(path); !problem.empty()) return "'" + path + "' " + problem;
  if (is_camera(path)) return open_camera(cap, camera_index(path));
  if (!codecs::opencv_io::api().has_backend(cv::CAP_FFMPEG))
    return "cannot open stream: this OpenCV was built without its FFmpeg backend";
  const auto ms = [](double s) { return static_cast<int>(std::clamp(s * 1000, 1.0, 2e9)); };
  const std::vector<int> params{cv::CAP_PROP_OPEN_TIMEOUT_MSEC, ms(timeouts.open_s), cv::CAP_PROP_READ_TIMEOUT_MSEC,
                                ms(timeouts.read_s)};
  const auto t0 = std::chrono::steady_clock::now();
  if (cap.open(path, cv::CAP_FFMPEG, params)) return {};
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return "cannot open stream: " + why_stream_failed(path, elapsed, timeouts);
}

}  // namespace imgpipe::stages
