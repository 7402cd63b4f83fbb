// Messages of the native libraries the pipeline drives, routed through
// imgpipe's logger (imgpipe/log.hpp) instead of their own stderr printing, so
// that --quiet and --log-level govern them too (issue 29, point 5).
//
// FFmpeg (reached through OpenCV's FFmpeg video backend, which Debian's
// OpenCV links against the system's libavutil): its av_log lines ("moov atom
// not found", "Invalid NAL unit size") become imgpipe info lines for
// FFmpeg's errors and debug lines for its warnings, prefixed "ffmpeg: ";
// the failure itself still reaches the report and the failed-input warning
// with imgpipe's own reason. The lines come through the codecs layer's
// callback (codecs::set_ffmpeg_log_sink), which the video route needs too.
#pragma once

namespace imgpipe::stages {

// Installs the routing (later calls do nothing new).
void route_native_logs();

// FFmpeg's level (AV_LOG_*) of a message, mapped to imgpipe's logger:
// errors -> info, warnings -> debug, the rest dropped (-1). Exposed for tests.
int ffmpeg_level_to_spdlog(int av_level) noexcept;

}  // namespace imgpipe::stages
