#include "native_logs.hpp"

#include <cstdarg>
#include <cstdio>
#include <string_view>

#include <spdlog/logger.h>

#include "codecs/video/ffmpeg_log.hpp"
#include "imgpipe/log.hpp"

namespace imgpipe::stages {

namespace {

// libavutil/log.h's levels (stable ABI since FFmpeg 0.x).
constexpr int kAvLogError = 16, kAvLogWarning = 24;

void on_ffmpeg_message(void*, int level, const char* fmt, va_list args) {
  const int to = ffmpeg_level_to_spdlog(level);
  if (to < 0) return;
  const auto lg = logger();
  if (!lg->should_log(static_cast<spdlog::level::level_enum>(to))) return;
  char line[1024];
  const int n = std::vsnprintf(line, sizeof line, fmt, args);
  if (n <= 0) return;
  std::string_view text(line, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - 1));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return;
  lg->log(static_cast<spdlog::level::level_enum>(to), "ffmpeg: {}", text);
}

}  // namespace

int ffmpeg_level_to_spdlog(int av_level) noexcept {
  if (av_level <= kAvLogError) return static_cast<int>(spdlog::level::info);
  if (av_level <= kAvLogWarning) return static_cast<int>(spdlog::level::debug);
  return -1;
}

void route_native_logs() {
  // Through the codecs layer's callback, which also watches the video
  // files' demuxers (codecs/video/ffmpeg_log.hpp).
  codecs::set_ffmpeg_log_sink(&on_ffmpeg_message);
}

}  // namespace imgpipe::stages
