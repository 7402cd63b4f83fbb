#include "awkward_videos.hpp"

#include <fstream>

#include "common.hpp"

namespace imgpipe::test {

const std::map<std::string, AwkwardVideo>& awkward() {
  static TempDir dir;
  static std::map<std::string, AwkwardVideo> clips;
  if (!clips.empty()) return clips;
  const auto at = [&](const char* name) { return (dir / name).string(); };
  const std::string src3 = "-f lavfi -i testsrc2=size=96x64:rate=25:duration=3 -pix_fmt yuv420p ";
  const std::string src2 = "-f lavfi -i testsrc2=size=96x64:rate=25:duration=2 -pix_fmt yuv420p ";
  ffmpeg(src3 + "-c:v libx264 -bf 3 -g 12 -x264-params scenecut=0 " + at("b.mp4"));
  clips["H.264 B-frames, closed GOPs, MP4"] = {at("b.mp4"), 75};
  for (const char* name : {"open.mkv", "open.ts"}) {
    ffmpeg(src3 + "-c:v libx264 -bf 3 -x264-params keyint=12:min-keyint=12:open-gop=1:scenecut=0 " + at(name));
    clips[std::string("H.264 open GOPs, ") + name] = {at(name), 75};
  }
  ffmpeg(src3 + "-vf \"select='lt(n\\,10)+not(mod(n\\,3))'\" -fps_mode vfr -c:v libx264 -bf 2 " + at("vfr.mkv"));
  clips["variable frame rate"] = {at("vfr.mkv"), 10 + 21};  // frames 0-9, then 12, 15, ... 72
  ffmpeg(src3 + "-c:v libx264 -bf 3 -g 25 " + at("whole.mp4"));
  ffmpeg("-ss 0.5 -i " + at("whole.mp4") + " -c copy " + at("cut.mp4"));
  clips["MP4 edit list"] = {at("cut.mp4"), 0};  // fewer than 75: checked below
  ffmpeg("-f lavfi -i testsrc2=size=96x64:rate=25:duration=1 -c:v libx264 -bf 2 -g 10 " + at("a.ts"));
  ffmpeg("-f lavfi -i testsrc2=size=64x48:rate=25:duration=1 -c:v libx264 -bf 2 -g 10 -output_ts_offset 1 " +
         at("b.ts"));
  {
    std::ofstream joined(at("ab.ts"), std::ios::binary);
    for (const char* part : {"a.ts", "b.ts"}) joined << std::ifstream(at(part), std::ios::binary).rdbuf();
  }
  clips["two MPEG-TS streams of different sizes joined, times overlapping"] = {at("ab.ts"), 50};
  ffmpeg(src2 + "-c:v libx265 -x265-params log-level=none:bframes=3:keyint=10 " + at("h.mp4"));
  clips["HEVC with B-frames"] = {at("h.mp4"), 50};
  ffmpeg(src2 + "-c:v libvpx-vp9 -auto-alt-ref 1 -lag-in-frames 16 -g 20 -deadline realtime -cpu-used 8 " +
         at("v.webm"));
  clips["VP9 with hidden alt-ref frames, WebM"] = {at("v.webm"), 50};
  ffmpeg(src2 + "-c:v libaom-av1 -cpu-used 8 -g 20 " + at("a1.mkv"));
  clips["AV1"] = {at("a1.mkv"), 50};
  return clips;
}

}  // namespace imgpipe::test
