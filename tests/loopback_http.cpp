#include "loopback_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace imgpipe::test {
namespace {

int loopback_socket(int port, bool listen_on) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || (listen_on && ::listen(fd, 16) != 0)) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot listen on 127.0.0.1: " + why);
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

bool send_all(int fd, const unsigned char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool send_text(int fd, const std::string& s) {
  return send_all(fd, reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

LoopbackHttpServer::LoopbackHttpServer() : LoopbackHttpServer(Options{}) {}

LoopbackHttpServer::LoopbackHttpServer(Options options) : opts_(options) {
  listen_fd_ = loopback_socket(0, true);
  port_ = bound_port(listen_fd_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  {
    std::lock_guard lk(m_);
    stopping_ = true;
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);  // wakes a blocked send or recv
  }
  cv_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : threads_) t.join();  // no new ones: the acceptor has ended
  ::close(listen_fd_);
}

void LoopbackHttpServer::serve(const std::string& name, std::vector<unsigned char> body) {
  std::lock_guard lk(m_);
  files_["/" + name] = std::move(body);
}

std::string LoopbackHttpServer::url(const std::string& name) const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/" + name;
}

bool LoopbackHttpServer::wait_stopping(int ms) {
  std::unique_lock lk(m_);
  return cv_.wait_for(lk, std::chrono::milliseconds(ms), [&] { return stopping_; });
}

void LoopbackHttpServer::accept_loop() {
  while (!wait_stopping(0)) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lk(m_);
    if (stopping_) {
      ::close(fd);
      break;
    }
    clients_.push_back(fd);
    threads_.emplace_back([this, fd] { handle(fd); });
  }
}

void LoopbackHttpServer::handle(int fd) {
  // The request head, up to its blank line.
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) == 0) {
      if (wait_stopping(0)) break;
      continue;
    }
    const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
    if (k <= 0) break;
    head.append(buf, static_cast<std::size_t>(k));
  }
  std::string path;
  std::size_t from = 0, to = std::string::npos;
  bool ranged = false;
  if (char target[2048]; std::sscanf(head.c_str(), "GET %2047s", target) == 1) path = target;
  const std::string lhead = lower(head);
  if (const auto r = lhead.find("\r\nrange: bytes="); r != std::string::npos && opts_.ranges) {
    unsigned long long a = 0, b = 0;
    const int n = std::sscanf(lhead.c_str() + r + 15, "%llu-%llu", &a, &b);
    if (n >= 1) {
      ranged = true;
      from = a;
      if (n == 2) to = b + 1;
    }
  }
  std::vector<unsigned char> body;
  bool found = false;
  {
    std::lock_guard lk(m_);
    if (auto it = files_.find(path); it != files_.end()) {
      found = true;
      body = it->second;
    }
  }
  ++requests_;
  if (!path.empty() && !found) {
    send_text(fd, "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  } else if (!path.empty()) {
    to = std::min(to, body.size());
    if (ranged && from >= body.size()) {
      send_text(fd, "HTTP/1.0 416 Range Not Satisfiable\r\nContent-Range: bytes */" + std::to_string(body.size()) +
                        "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    } else {
      std::string h = ranged ? "HTTP/1.0 206 Partial Content\r\n" : "HTTP/1.0 200 OK\r\n";
      h += "Content-Type: application/octet-stream\r\nConnection: close\r\n";
      h += "Content-Length: " + std::to_string(to - from) + "\r\n";
      if (opts_.ranges) h += "Accept-Ranges: bytes\r\n";
      if (ranged)
        h += "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(to - 1) + "/" +
             std::to_string(body.size()) + "\r\n";
      bool ok = send_text(fd, h + "\r\n");
      const std::size_t end = std::min(to, from + std::min(opts_.stall_after, to - from));
      for (std::size_t at = from; ok && at < end && !wait_stopping(0);) {
        const std::size_t n = std::min<std::size_t>(64 * 1024, end - at);
        ok = send_all(fd, body.data() + at, n);
        at += n;
      }
      if (ok && end < to)
        while (!wait_stopping(1000)) {  // stalled: the connection stays open, silent
        }
    }
  }
  {
    std::lock_guard lk(m_);
    clients_.erase(std::find(clients_.begin(), clients_.end(), fd));
    ::close(fd);
  }
}

int closed_loopback_port() {
  const int fd = loopback_socket(0, false);
  const int port = bound_port(fd);
  ::close(fd);
  return port;
}

}  // namespace imgpipe::test
