// Which decoder takes a video file (codecs/route/video_route.hpp), against a
// fake capability table, and the packets NVDEC's parser is given
// (codecs::PacketFilter) on clips made here with Debian's ffmpeg: no GPU
// needed. The NVDEC route itself: tests/pipeline/test_nvdec.cpp.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "codecs/video/packet_filter.hpp"
#include "codecs/route/video_route.hpp"
#include "common.hpp"
#include "imgpipe/error.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using namespace imgpipe;
using codecs::NvdecCaps;
using codecs::VideoInfo;
using codecs::VideoRouter;

namespace {

// An H200's table, in part (docs/video-decode.md).
NvdecCaps h200_caps() {
  return {{"h264", 420, 8, 48, 16, 4096, 4096, 65536},   {"hevc", 420, 8, 144, 144, 8192, 8192, 262144},
          {"hevc", 420, 10, 144, 144, 8192, 8192, 262144}, {"hevc", 444, 8, 144, 144, 8192, 8192, 262144},
          {"vp9", 420, 8, 128, 128, 8192, 8192, 262144},   {"vp9", 420, 10, 128, 128, 8192, 8192, 262144}};
}

VideoInfo stream(const char* codec, int w, int h, int depth = 8, int sx = 1, int sy = 1) {
  VideoInfo v;
  v.codec = codec;
  v.pixel_format = "yuv420p";
  v.width = w;
  v.height = h;
  v.bit_depth = depth;
  v.chroma_shift_x = sx;
  v.chroma_shift_y = sy;
  v.declared_frames = 100;
  return v;
}

VideoRouter::Options on_gpus(codecs::VideoWhere where, std::vector<int> devices) {
  VideoRouter::Options o;
  o.where = where;
  o.devices = devices;
  o.caps.assign(devices.size(), h200_caps());
  return o;
}

// The first bytes of every packet the filter gives for the file's video stream.
std::vector<std::vector<unsigned char>> filtered_heads(const fs::path& file, std::string& filter) {
  AVFormatContext* fmt = nullptr;
  REQUIRE(avformat_open_input(&fmt, file.c_str(), nullptr, nullptr) == 0);
  REQUIRE(avformat_find_stream_info(fmt, nullptr) >= 0);
  const int s = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  REQUIRE(s >= 0);
  std::vector<std::vector<unsigned char>> heads;
  {
    codecs::PacketFilter f(fmt->streams[s]);
    filter = f.name();
    AVPacket* in = av_packet_alloc();
    AVPacket* out = av_packet_alloc();
    auto drain = [&] {
      while (f.receive(out) == 0) {
        heads.emplace_back(out->data, out->data + std::min(out->size, 5));
        av_packet_unref(out);
      }
    };
    while (av_read_frame(fmt, in) >= 0) {
      if (in->stream_index == s) {
        REQUIRE(f.send(in) == 0);
        drain();
      }
      av_packet_unref(in);
    }
    REQUIRE(f.send(nullptr) == 0);
    drain();
    av_packet_free(&in);
    av_packet_free(&out);
  }
  avformat_close_input(&fmt);
  return heads;
}

bool annex_b(const std::vector<unsigned char>& h) {
  return h.size() >= 4 && h[0] == 0 && h[1] == 0 && (h[2] == 1 || (h[2] == 0 && h[3] == 1));
}

}  // namespace

TEST_CASE("video route: NVDEC's capability table decides which streams it takes, and says why not") {
  const NvdecCaps caps = h200_caps();
  CHECK(codecs::nvdec_refusal(stream("h264", 1920, 1080), caps).empty());
  CHECK(codecs::nvdec_refusal(stream("hevc", 3840, 2160, 10), caps).empty());
  CHECK(codecs::nvdec_refusal(stream("vp9", 1280, 720), caps).empty());
  CHECK(codecs::nvdec_refusal(stream("hevc", 640, 480, 8, 0, 0), caps).empty());  // 4:4:4
  CHECK(codecs::nvdec_refusal(stream("av1", 1920, 1080), caps) == "NVDEC cannot decode av1");
  CHECK(codecs::nvdec_refusal(stream("h264", 1920, 1080, 8, 0, 0), caps) == "NVDEC cannot decode h264 8-bit 4:4:4");
  CHECK(codecs::nvdec_refusal(stream("h264", 1920, 1080, 10), caps) == "NVDEC cannot decode h264 10-bit 4:2:0");
  CHECK(codecs::nvdec_refusal(stream("h264", 640, 480, 8, 1, 0), caps) == "NVDEC cannot decode h264 8-bit 4:2:2");
  VideoInfo grey = stream("h264", 640, 480);
  grey.monochrome = true;
  CHECK(codecs::nvdec_refusal(grey, caps) == "NVDEC cannot decode h264 8-bit grey");
  CHECK(codecs::nvdec_refusal(stream("h264", 4112, 2176), caps) == "4112x2176 is larger than NVDEC's 4096x4096 for h264");
  CHECK(codecs::nvdec_refusal(stream("h264", 32, 16), caps) == "32x16 is smaller than NVDEC's 48x16 for h264");
  CHECK(codecs::nvdec_refusal(stream("hevc", 100, 100), caps) == "100x100 is smaller than NVDEC's 144x144 for hevc");
  CHECK(codecs::nvdec_refusal(stream("h264", 4096, 4096), caps).empty());
  NvdecCaps few = caps;
  few[0].max_macroblocks = 8160;  // 1920x1088 / 256
  CHECK(codecs::nvdec_refusal(stream("h264", 1920, 1080), few).empty());
  CHECK(codecs::nvdec_refusal(stream("h264", 1920, 1104), few) ==
        "1920x1104 has more macroblocks than NVDEC's 8160 for h264");
  CHECK(codecs::nvdec_refusal(stream("h264", 321, 240), caps) == "an odd size (321x240): the CPU route takes it");
  VideoInfo unknown = stream("h264", 640, 480);
  unknown.pixel_format.clear();
  CHECK(codecs::nvdec_refusal(unknown, caps) == "the h264 stream does not say its pixel format");
}

TEST_CASE("video route: where cpu, no GPU, rotation and refusals send files to the CPU, counted by reason") {
  VideoRouter cpu(on_gpus(codecs::VideoWhere::cpu, {0}));
  CHECK(cpu.choose(stream("h264", 640, 480)).device == -1);
  CHECK(cpu.choose(stream("h264", 640, 480)).cpu_reason == "input.video.where is cpu");
  VideoRouter none(on_gpus(codecs::VideoWhere::auto_, {}));
  CHECK(none.choose(stream("h264", 640, 480)).cpu_reason == "no GPU in the run");
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0});
  o.off_reason = "cannot load libnvcuvid.so.1";
  VideoRouter off(o);
  CHECK(off.choose(stream("h264", 640, 480)).cpu_reason == "cannot load libnvcuvid.so.1");

  VideoRouter gpu(on_gpus(codecs::VideoWhere::gpu, {0}));
  VideoInfo phone = stream("h264", 640, 480);
  phone.rotation = 90;
  CHECK(gpu.choose(phone).cpu_reason == "its display rotation is applied on the CPU route");
  CHECK(gpu.choose(stream("av1", 640, 480)).cpu_reason == "NVDEC cannot decode av1");
  CHECK(gpu.choose(stream("av1", 640, 480)).device == -1);
  CHECK(gpu.choose(stream("h264", 640, 480)).device == 0);
  // orientation false: frames are delivered as stored, so NVDEC may take it.
  VideoRouter::Options as_stored = on_gpus(codecs::VideoWhere::gpu, {0});
  as_stored.orientation = false;
  CHECK(VideoRouter(as_stored).choose(phone).device == 0);

  const VideoRouter::Figures f = gpu.figures();
  CHECK(f.nvdec_files == 1);
  CHECK(f.cpu_files == 3);
  CHECK(f.cpu_reasons.at("NVDEC cannot decode av1") == 2);
  CHECK(f.cpu_reasons.at("its display rotation is applied on the CPU route") == 1);
}

TEST_CASE("video route: an RGB-coded 4:4:4 stream goes to the CPU, which converts it without a YUV matrix") {
  // HEVC 8-bit 4:4:4 is in the table: as YUV it would go to NVDEC.
  VideoInfo v = stream("hevc", 640, 480, 8, 0, 0);
  v.pixel_format = "yuv444p";
  CHECK(codecs::nvdec_refusal(v, h200_caps()).empty());
  v.pixel_format = "gbrp";
  v.rgb_coded = true;
  CHECK(codecs::nvdec_refusal(v, h200_caps()) == "RGB-coded hevc (gbrp): the CPU route takes it");
  VideoRouter r(on_gpus(codecs::VideoWhere::gpu, {0}));
  CHECK(r.choose(v).device == -1);
  CHECK(r.figures().cpu_reasons.at("RGB-coded hevc (gbrp): the CPU route takes it") == 1);
}

TEST_CASE("video route: a file that moves off NVDEC midway stays NVDEC's file, its later frames are the CPU's") {
  VideoRouter r(on_gpus(codecs::VideoWhere::gpu, {0}));
  const VideoInfo v = stream("h264", 640, 480);  // 100 frames declared
  REQUIRE(r.choose(v).device == 0);
  for (int i = 0; i < 10; ++i) r.delivered(0);
  r.moved(0, v, 10, "NVDEC's frame memory (memory.nvdec_frames_mb) was full: the CPU route decoded the rest");
  for (int i = 0; i < 90; ++i) r.delivered(-1);
  r.closed(-1, v, 100);
  REQUIRE(r.choose(v).device == 0);
  r.moved(0, v, 0, "");  // damage placed by libavcodec: no reason counted
  r.closed(-1, v, 0);
  const VideoRouter::Figures f = r.figures();
  CHECK(f.nvdec_files == 2);
  CHECK(f.nvdec_frames == 10);
  CHECK(f.cpu_files == 0);
  CHECK(f.cpu_frames == 90);
  CHECK(f.cpu_reasons.size() == 1);
  CHECK(f.cpu_reasons.at("NVDEC's frame memory (memory.nvdec_frames_mb) was full: the CPU route decoded the rest") == 1);
}

TEST_CASE("video route: gpu spreads files over the devices, a decoder that cannot start falls back, frames are counted") {
  VideoRouter r(on_gpus(codecs::VideoWhere::gpu, {0, 1}));
  const VideoInfo v = stream("h264", 640, 480);
  CHECK(r.choose(v).device == 0);
  CHECK(r.choose(v).device == 1);
  CHECK(r.choose(v).device == 0);
  // A device whose engines refuse the stream is passed over.
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::gpu, {0, 1});
  o.caps[0].clear();
  VideoRouter one(o);
  CHECK(one.choose(v).device == 1);
  CHECK(one.choose(v).device == 1);

  for (int i = 0; i < 5; ++i) r.delivered(0);
  r.closed(0, v, 5);
  r.fell_back(1, v, "NVDEC could not start (out of memory)");
  for (int i = 0; i < 7; ++i) r.delivered(-1);
  const VideoRouter::Figures f = r.figures();
  CHECK(f.nvdec_files == 2);
  CHECK(f.nvdec_frames == 5);
  CHECK(f.cpu_files == 1);
  CHECK(f.cpu_frames == 7);
  CHECK(f.cpu_reasons.at("NVDEC could not start (out of memory)") == 1);
}

TEST_CASE("video route: auto sends each file where the frames queued there would be done first, at measured rates") {
  using Clock = VideoRouter::Clock;
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0});
  o.nvdec_prior_fps = 1500;
  o.cpu_prior_fps = 500;
  VideoRouter r(o);
  const Clock::time_point t0 = Clock::now();
  const VideoInfo v = stream("h264", 640, 480);  // 100 frames declared
  // Priors 1500 and 500 frames/s: NVDEC takes three files for each the CPU takes.
  std::vector<int> routes;
  for (int i = 0; i < 8; ++i) routes.push_back(r.choose(v, t0).device);
  CHECK(routes == std::vector<int>{0, 0, 0, -1, 0, 0, 0, -1});
  CHECK(r.rate(true) == 1500);
  // Measured over two seconds: NVDEC delivered its six files' 600 frames, the
  // CPU 1600 frames (its files were longer than declared).
  for (int i = 0; i < 600; ++i) r.delivered(0);
  for (int i = 0; i < 1600; ++i) r.delivered(-1);
  const Clock::time_point t2 = t0 + std::chrono::seconds(2);
  for (int i = 0; i < 6; ++i) r.closed(0, v, 100, t2);
  for (int i = 0; i < 2; ++i) r.closed(-1, v, 800, t2);
  CHECK(r.rate(true) == doctest::Approx(300));
  CHECK(r.rate(false) == doctest::Approx(800));
  // Now the CPU is faster: it takes files until its queue would outlast NVDEC's.
  routes.clear();
  for (int i = 0; i < 7; ++i) routes.push_back(r.choose(v, t2).device);
  CHECK(routes == std::vector<int>{-1, -1, 0, -1, -1, -1, 0});
  // The balance's choices carry no reason; nothing is counted as refused.
  CHECK(r.figures().cpu_reasons.empty());
}

TEST_CASE("video route: the packets NVDEC's parser gets are Annex B for H.264 and HEVC, whatever the container") {
  test::TempDir d;
  const std::string src = "-f lavfi -i testsrc2=s=160x96:d=0.4 -pix_fmt yuv420p ";
  test::ffmpeg(src + "-c:v libx264 -bf 2 " + (d / "a.mp4").string());
  test::ffmpeg(src + "-c:v libx264 " + (d / "a.ts").string());
  test::ffmpeg(src + "-c:v libx265 -x265-params log-level=none " + (d / "a.mkv").string());
  test::ffmpeg(src + "-c:v libvpx-vp9 " + (d / "a.webm").string());
  for (const char* name : {"a.mp4", "a.ts", "a.mkv"}) {
    CAPTURE(name);
    std::string filter;
    const auto heads = filtered_heads(d / name, filter);
    CHECK(filter == (std::string(name) == "a.mkv" ? "hevc_mp4toannexb" : "h264_mp4toannexb"));
    CHECK(heads.size() == 10);  // 0.4 s at 25 frames/s
    for (const auto& h : heads) CHECK(annex_b(h));
  }
  // MP4 keeps H.264 length-prefixed: the filter is what makes it Annex B.
  AVFormatContext* fmt = nullptr;
  REQUIRE(avformat_open_input(&fmt, (d / "a.mp4").c_str(), nullptr, nullptr) == 0);
  AVPacket* p = av_packet_alloc();
  REQUIRE(av_read_frame(fmt, p) == 0);
  CHECK_FALSE(annex_b({p->data, p->data + 4}));
  av_packet_free(&p);
  avformat_close_input(&fmt);
  // VP9 goes as it is.
  std::string filter;
  const auto vp9 = filtered_heads(d / "a.webm", filter);
  CHECK(filter == std::string("null"));
  CHECK(vp9.size() == 10);
}

TEST_CASE("video route: input.video.where gpu without a GPU is an error naming the key, auto says why files went to the CPU") {
  test::TempDir d;
  test::ffmpeg("-f lavfi -i testsrc2=s=160x96:d=0.2 -pix_fmt yuv420p -c:v libx264 " + (d / "a.mp4").string());
  Config c;
  c.input.paths = {d.path().string()};
  c.devices = DeviceSelection::parse("cpu");
  c.input.video.where = Where::gpu;
  {
    Pipeline p(c);
    CHECK_THROWS_WITH_AS(p.run(), doctest::Contains("input.video.where"), ConfigError);
  }
  c.input.video.where = Where::automatic;
  Pipeline p(c);
  const Report r = p.run();
  CHECK(r.inputs.delivered == 5);
  CHECK(r.video.cpu_files == 1);
  CHECK(r.video.cpu_frames == 5);
  CHECK(r.video.nvdec_files == 0);
  REQUIRE(r.video.cpu_reasons.size() == 1);
  CHECK(r.video.cpu_reasons[0].first == "no GPU in the run");
  std::ostringstream text;
  r.print_table(text);
  CHECK(text.str().find("video: NVDEC 0 files (0 frames) | CPU 1 file (5 frames) | on the CPU (1): no GPU in the run") !=
        std::string::npos);
}

TEST_CASE("video route: a clip file weighs the frames its clips decode, and dropped frames count in the route's rate") {
  using Clock = VideoRouter::Clock;
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0});
  o.nvdec_prior_fps = 1000;
  o.cpu_prior_fps = 1000;
  VideoRouter r(o);
  const Clock::time_point t0 = Clock::now();
  VideoInfo whole = stream("h264", 640, 480);  // 100 frames declared
  VideoInfo clip = whole;
  clip.planned_work = 10;  // a clip decodes 10 of them
  // Equal rates: NVDEC takes the first whole file (100 queued); then the CPU
  // is empty and takes the next; a clip file (10) goes where 10 more is least.
  CHECK(r.choose(whole, t0).device == 0);
  CHECK(r.choose(whole, t0).device == -1);
  CHECK(r.choose(clip, t0).device == 0);  // ties go to NVDEC: 110 against 110
  CHECK(r.choose(clip, t0).device == -1);  // 120 against 110
  // Over one second NVDEC delivers 20 frames and drops 100 (decoded before
  // clips' first frames): its rate is what it decoded, 120 a second.
  for (int i = 0; i < 20; ++i) r.delivered(0);
  for (int i = 0; i < 100; ++i) r.dropped(0);
  const Clock::time_point t1 = t0 + std::chrono::seconds(1);
  r.closed(0, whole, 100, t1);
  r.closed(0, clip, 20, t1);
  CHECK(r.rate(true) == doctest::Approx(120));
  CHECK(r.figures().nvdec_frames == 20);  // the report's frames are the delivered ones
}
