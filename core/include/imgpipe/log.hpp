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

#include <memory>

namespace spdlog {
class logger;
}

namespace imgpipe {

// The library's logger; never null, the same object on every call.
// Thread-safe. Include <spdlog/logger.h> to call it.
std::shared_ptr<spdlog::logger> logger();

}  // namespace imgpipe
