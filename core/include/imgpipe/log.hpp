// imgpipe's own logger. The library logs through it alone, never through
// spdlog's process-wide default logger, so an application's default logger
// neither receives nor changes imgpipe's messages, and imgpipe never replaces
// or reconfigures the application's.
//
// The logger is named "imgpipe" and registered with spdlog on first use (so
// spdlog::get("imgpipe") finds it and spdlog::set_level applies to it, as to
// every registered logger); it writes to stderr at level info with spdlog's
// default pattern. If the application registered a logger named "imgpipe"
// before that, the library logs through the application's.
// Levels used: warn (something degraded: a fallback, no GPU), info (a limit the
// plan applied), debug (details), error (a misuse the library survived).
#pragma once

#include <functional>
#include <memory>
#include <string_view>

namespace spdlog {
class logger;
}

namespace imgpipe {

// The library's logger; never null, the same object on every call.
// Thread-safe. Include <spdlog/logger.h> to call it.
std::shared_ptr<spdlog::logger> logger();

// Where the library's own logger writes: `handler` receives each message
// that passes the logger's level, as (spdlog level: 0 trace ... 5 critical,
// the message without time or name), in place of stderr, on the thread that
// logs (any of the pipeline's). An empty handler restores stderr. Returns
// once no call of the previous handler is under way. Thread-safe. The C API's
// imgpipe_set_log_callback and Python's `logging` routing sit on it. A logger
// the application registered as "imgpipe" first is left alone (returns false).
using LogHandler = std::function<void(int level, std::string_view message)>;
bool set_log_handler(LogHandler handler);

}  // namespace imgpipe
