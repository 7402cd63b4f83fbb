#include "read.hpp"


#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace imgpipe::stages {

std::string Read::read_file(const std::string& path, std::vector<unsigned char>& out) {
  out.clear();
  // O_NONBLOCK: opening a FIFO (or a device) named like an image must not
  // wait for a writer; it is rejected below. Regular files ignore the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return std::string("cannot stat: ") + std::strerror(e);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return "is a directory";
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return "not a regular file";
  }
  if (st.st_size == 0) {
    ::close(fd);
    return "empty file (0 bytes)";
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      out.clear();
      return std::string("read error: ") + std::strerror(e);
    }
    if (n == 0) break;  // shrank while reading
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got != out.size()) {
    out.resize(got);
    if (got == 0) return "empty file (0 bytes)";
  }
  return {};
}

Tally Read::run(Work& w) const {
  if (!w.sample.input->error.empty()) {  // discovery already failed
    w.sample.error = w.sample.input->error;
    return {0, 0};
  }
  if (!w.preloaded) w.sample.error = read_file(w.sample.input->path, w.pixels.bytes);
  else if (w.pixels.bytes.empty()) w.sample.error = "empty image (0 bytes pushed)";
  return {1, w.pixels.bytes.size()};
}

}  // namespace imgpipe::stages
