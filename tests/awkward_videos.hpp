// The video files that trip seekers, made once per test process with
// Debian's ffmpeg (small: 96x64, 1-3 s): B-frames, open GOPs in MKV and
// MPEG-TS, a variable frame rate, an MP4 edit list, two MPEG-TS streams of
// different sizes joined, HEVC with B-frames, VP9 with hidden alt-ref
// frames, AV1. The frame index, seeking and clip tests run over them.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace imgpipe::test {

struct AwkwardVideo {
  std::string path;
  std::size_t frames;  // a sequential decode's frames; 0: not fixed (the edit list's cut)
};

// name -> file, made on the first call.
const std::map<std::string, AwkwardVideo>& awkward();

}  // namespace imgpipe::test
