// FFmpeg's log: one callback for the process (FFmpeg has one), which the
// video reader needs to see the errors its demuxers report while they skip
// damaged data (demuxer.hpp), and which passes every line on to a sink the
// application sets (stages/native_logs.hpp: into imgpipe's logger).
#pragma once

#include <cstdarg>

namespace imgpipe::codecs {

// FFmpeg's log lines go through one callback of the process, installed by
// the first VideoFile (or by this call): it notes the errors a VideoFile's
// demuxer reports while it skips damaged data (a Matroska block it cannot
// parse: "Error parsing frame sizes"), which break that file, and passes
// every line to `sink` (null: FFmpeg's own printing to stderr).
using FfmpegLogSink = void (*)(void* avcl, int level, const char* fmt, std::va_list args);
void set_ffmpeg_log_sink(FfmpegLogSink sink);

}  // namespace imgpipe::codecs
