// The C API's calls about a pipeline that start no run (its checks, its
// planned batches) and the log's level and routing (capi/include/imgpipe_c.h).
#include <spdlog/logger.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "handles.hpp"
#include "imgpipe/log.hpp"
#include "imgpipe/pipeline.hpp"

using imgpipe::capi::guarded;
using imgpipe::capi::null_handle;

extern "C" {

imgpipe_status imgpipe_pipeline_check(imgpipe_pipeline* p, const char* device) {
  if (p == nullptr) return null_handle("pipeline");
  return guarded([&] {
    imgpipe::RunOptions options;
    if (device != nullptr && *device != '\0') options.device = imgpipe::DeviceSelection::parse(device);
    p->pipeline.check(options);
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_pipeline_planned_batches(imgpipe_pipeline* p, uint64_t* batches, int* known,
                                                const char** why) {
  if (p == nullptr) return null_handle("pipeline");
  if (batches == nullptr || known == nullptr || why == nullptr) return null_handle("an out argument");
  return guarded([&] {
    p->why_unknown.clear();
    const auto n = p->pipeline.planned_batches(&p->why_unknown);
    *batches = n.value_or(0);
    *known = n.has_value() ? 1 : 0;
    *why = p->why_unknown.c_str();
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_set_log_level(const char* level) {
  if (level == nullptr) return null_handle("level");
  return guarded([&] {
    const std::string l = level;
    spdlog::level::level_enum v;
    if (l == "error") v = spdlog::level::err;
    else if (l == "warn") v = spdlog::level::warn;
    else if (l == "info") v = spdlog::level::info;
    else if (l == "debug") v = spdlog::level::debug;
    else if (l == "off") v = spdlog::level::off;
    else throw std::invalid_argument("log level must be error, warn, info, debug or off (got '" + l + "')");
    imgpipe::logger()->set_level(v);
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_set_log_callback(imgpipe_log_callback callback, void* user) {
  return guarded([&] {
    imgpipe::LogHandler handler;
    if (callback != nullptr)
      handler = [callback, user](int level, std::string_view message) {
        const std::string text(message);  // NUL-terminated for C
        callback(level, text.c_str(), user);
      };
    if (!imgpipe::set_log_handler(std::move(handler)))
      throw std::logic_error("imgpipe_set_log_callback: the application registered its own spdlog logger "
                             "named \"imgpipe\", which is left alone");
    return IMGPIPE_OK;
  });
}

}  // extern "C"
