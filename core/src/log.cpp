#include "imgpipe/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace imgpipe {
namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  if (auto existing = spdlog::get("imgpipe")) return existing;  // the application's, registered first
  auto l = std::make_shared<spdlog::logger>("imgpipe", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  l->set_level(spdlog::level::info);
  try {
    spdlog::register_logger(l);
  } catch (const spdlog::spdlog_ex&) {
    // Registered by another thread in between: use that one.
    if (auto existing = spdlog::get("imgpipe")) return existing;
  }
  return l;
}

}  // namespace

std::shared_ptr<spdlog::logger> logger() {
  // Kept here too: spdlog::drop_all() by the application does not end it.
  static const std::shared_ptr<spdlog::logger> l = make_logger();
  return l;
}

}  // namespace imgpipe
