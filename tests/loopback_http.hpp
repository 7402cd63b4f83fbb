// A tiny HTTP/1.0 file server for the stream tests: it listens on 127.0.0.1
// on an ephemeral port (never any other address), serves named byte blobs
// (with byte ranges, so FFmpeg can seek as in a file, unless told not to),
// and can stall: stop sending after a given number of body bytes while
// keeping the connection open, as a live stream that stops sending does.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace imgpipe::test {

class LoopbackHttpServer {
 public:
  struct Options {
    bool ranges = true;  // answer Range requests (206) and say Accept-Ranges: bytes
    // Body bytes sent per response before the connection goes silent (kept
    // open until the server is destroyed); max(): never stalls.
    std::size_t stall_after = std::numeric_limits<std::size_t>::max();
  };

  // Starts listening at once; throws std::runtime_error when it cannot.
  LoopbackHttpServer();
  explicit LoopbackHttpServer(Options options);
  // Closes every connection (stalled ones too) and joins the threads.
  ~LoopbackHttpServer();
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  // Serves `body` at "/name" (replacing what was there); other paths get 404.
  void serve(const std::string& name, std::vector<unsigned char> body);
  int port() const noexcept { return port_; }
  // "http://127.0.0.1:PORT/name"
  std::string url(const std::string& name) const;
  // Requests answered so far (any path).
  int requests() const noexcept { return requests_.load(); }

 private:
  void accept_loop();
  void handle(int fd);
  bool wait_stopping(int ms);

  Options opts_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::mutex m_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::vector<unsigned char>> files_;
  std::vector<int> clients_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// A TCP port on 127.0.0.1 that nothing listens on (bound, then closed).
int closed_loopback_port();

}  // namespace imgpipe::test
