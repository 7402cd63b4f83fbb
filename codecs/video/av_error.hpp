// FFmpeg's text for an AVERROR code, for the reasons the video reader gives
// ("cannot open video (No such file or directory)"). For the FFmpeg code of
// codecs/video/ (the reader, libav/).
#pragma once

#include <string>

extern "C" {
#include <libavutil/error.h>
}

namespace imgpipe::codecs {

inline std::string av_error(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

}  // namespace imgpipe::codecs
