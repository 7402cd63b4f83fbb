#include "imgpipe/log.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <utility>

namespace imgpipe {
namespace {

// stderr, or the handler set_log_handler() names. base_sink's mutex is held
// while a message is written, so a new handler waits for the old one's calls.
class RoutedSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_handler(LogHandler handler) {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (handler_) {
      handler_(static_cast<int>(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
      return;
    }
    stderr_->log(msg);
  }
  void flush_() override { stderr_->flush(); }
  void set_pattern_(const std::string& pattern) override { stderr_->set_pattern(pattern); }
  void set_formatter_(std::unique_ptr<spdlog::formatter> f) override { stderr_->set_formatter(std::move(f)); }

 private:
  std::shared_ptr<spdlog::sinks::sink> stderr_ = std::make_shared<spdlog::sinks::stderr_color_sink_st>();
  LogHandler handler_;
};

// The sink of the logger this library made (null: the application's logger).
std::shared_ptr<RoutedSink>& routed_sink() {
  static std::shared_ptr<RoutedSink> s;
  return s;
}

std::shared_ptr<spdlog::logger> make_logger() {
  if (auto existing = spdlog::get("imgpipe")) return existing;  // the application's, registered first
  auto sink = std::make_shared<RoutedSink>();
  auto l = std::make_shared<spdlog::logger>("imgpipe", sink);
  l->set_level(spdlog::level::info);
  try {
    spdlog::register_logger(l);
  } catch (const spdlog::spdlog_ex&) {
    // Registered by another thread in between: use that one.
    if (auto existing = spdlog::get("imgpipe")) return existing;
  }
  routed_sink() = std::move(sink);
  return l;
}

}  // namespace

std::shared_ptr<spdlog::logger> logger() {
  // Kept here too: spdlog::drop_all() by the application does not end it.
  static const std::shared_ptr<spdlog::logger> l = make_logger();
  return l;
}

bool set_log_handler(LogHandler handler) {
  logger();  // made (routed_sink() set, or left null for the application's) before it is read
  const std::shared_ptr<RoutedSink>& sink = routed_sink();
  if (!sink) return false;
  sink->set_handler(std::move(handler));
  return true;
}

}  // namespace imgpipe
