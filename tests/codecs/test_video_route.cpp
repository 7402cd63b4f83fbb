// Which decoder takes a video file (codecs/route/video_route.hpp), against a
// fake capability table, and the packets NVDEC's parser is given
// (codecs::PacketFilter) on clips made here with Debian's ffmpeg: no GPU
// needed. The NVDEC route itself: tests/pipeline/test_nvdec.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

TEST_CASE("video route: auto sends each file where it would be done first: each route's slots at its rate per file") {
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0});
  for (codecs::NvdecCap& c : o.caps[0]) c.engines = 1;  // two NVDEC slots
  o.cpu_slots = 2;
  o.nvdec_prior_fps = 200;  // 100 a file on each route
  o.nvdec_file_prior_fps = 100;
  o.cpu_prior_fps = 200;
  VideoRouter r(o);
  CHECK(r.slots(true) == 2);
  CHECK(r.slots(false) == 2);
  CHECK(r.rate(true) == doctest::Approx(100));
  CHECK(r.rate(false) == doctest::Approx(100));
  const VideoInfo v = stream("h264", 640, 480);  // 100 frames declared
  // Each route decodes two files at once at 100 frames/s: NVDEC takes two
  // (ties go to it), then the CPU two, then they take turns as their
  // queues grow.
  std::vector<int> routes;
  for (int i = 0; i < 7; ++i) routes.push_back(r.choose(v).device);
  CHECK(routes == std::vector<int>{0, 0, -1, -1, 0, -1, 0});
  // Measured: the CPU's files decoded 400 frames in 2 s of decoding (200 a
  // file), NVDEC's 400 in 4 s (100 a file).
  for (int i = 0; i < 400; ++i) r.delivered(0);
  for (int i = 0; i < 400; ++i) r.delivered(-1);
  r.worked(-1, 2.0);
  r.worked(0, 1.5);
  r.worked(0, 2.5);
  for (int i = 0; i < 4; ++i) r.closed(0, v, 100);
  for (int i = 0; i < 3; ++i) r.closed(-1, v, 100);
  CHECK(r.rate(false) == doctest::Approx(200));
  CHECK(r.rate(true) == doctest::Approx(100));
  // Now the CPU is twice as fast: it takes files until its queue would
  // outlast a file's time on NVDEC.
  routes.clear();
  for (int i = 0; i < 6; ++i) routes.push_back(r.choose(v).device);
  CHECK(routes == std::vector<int>{-1, -1, -1, 0, 0, -1});
  // The balance's choices carry no reason; nothing is counted as refused.
  CHECK(r.figures().cpu_reasons.empty());
}

TEST_CASE("video route: a route given few files is judged by its rate per file and its slots, not by the few") {
  // Sixteen CPU threads, seven engines (14 NVDEC slots), 100 frames a
  // second a file on each route at first.
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0});
  for (codecs::NvdecCap& c : o.caps[0]) c.engines = 7;
  o.cpu_slots = 16;
  o.cpu_prior_fps = 1600;
  o.nvdec_prior_fps = 1400;
  o.nvdec_file_prior_fps = 100;
  VideoRouter r(o);
  REQUIRE(r.slots(true) == 14);
  const VideoInfo v = stream("h264", 640, 480);  // 100 frames declared
  std::vector<int> routes;
  for (int f = 0; f < 15; ++f) routes.push_back(r.choose(v).device);
  std::vector<int> expected(14, 0);
  expected.push_back(-1);
  REQUIRE(routes == expected);  // NVDEC's slots fill first (ties go to it), then the CPU has one
  // Measured: the CPU's one file decoded 100 frames in a second, NVDEC's
  // fourteen 1,400 in 14 file-seconds. Frames a second while a route had
  // files open would rate the CPU at 100 against NVDEC's 1,400 and give
  // it one file in fifteen; a file's rate times its slots rates it at
  // 1,600, and it takes about half.
  for (int i = 0; i < 100; ++i) r.delivered(-1);
  for (int i = 0; i < 1400; ++i) r.delivered(0);
  r.worked(-1, 1.0);
  r.worked(0, 14.0);
  for (const int d : routes) r.closed(d, v, 100);
  CHECK(r.rate(false) == doctest::Approx(100));
  CHECK(r.rate(true) == doctest::Approx(100));
  int cpu = 0;
  for (int f = 0; f < 30; ++f) cpu += r.choose(v).device < 0 ? 1 : 0;
  CHECK(cpu >= 14);
  CHECK(cpu <= 16);
}

TEST_CASE("video route: before anything is measured, short files go to NVDEC, which does one alone faster") {
  // A run's priors (stage_set.cpp): 16 decode threads at 110 frames/s; one
  // device of 7 engines, 1,400 frames/s in all, 600 for one file alone.
  // Twelve files of 20 frames: each is done on NVDEC before a CPU thread
  // would do it, even behind the others (240 frames at 1,400 a second
  // against 20 at 110): NVDEC takes them all, the CPU none.
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0});
  for (codecs::NvdecCap& c : o.caps[0]) c.engines = 7;
  o.cpu_slots = 16;
  o.cpu_prior_fps = 110.0 * 16;
  VideoRouter r(o);
  VideoInfo v = stream("h264", 320, 240);
  v.declared_frames = 20;
  for (int f = 0; f < 12; ++f) CHECK(r.choose(v).device == 0);
  // Longer ones (300 frames: 2.7 s on a CPU thread): NVDEC takes eleven
  // more, until its queue would outlast that; then the CPU's threads fill,
  // and the two take turns by capacity.
  v.declared_frames = 300;
  std::vector<int> routes;
  for (int f = 0; f < 40; ++f) routes.push_back(r.choose(v).device);
  CHECK(std::count(routes.begin(), routes.begin() + 11, 0) == 11);
  CHECK(routes[11] == -1);
  const auto cpu = std::count(routes.begin(), routes.end(), -1);
  CHECK(cpu >= 20);
  CHECK(cpu <= 26);
}

TEST_CASE("video route: NVDEC's slots are two files an engine on every device, none where it is off") {
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0, 1});
  for (auto& caps : o.caps)
    for (codecs::NvdecCap& c : caps) c.engines = 7;
  o.caps[1][0].engines = 5;  // the most that take any codec count
  CHECK(VideoRouter(o).slots(true) == 28);
  o.caps[1].back().engines = 0;
  CHECK(VideoRouter(o).slots(true) == 28);
  VideoRouter::Options unknown = on_gpus(codecs::VideoWhere::gpu, {0});  // engines 0: unknown, one counted
  CHECK(VideoRouter(unknown).slots(true) == 2);
  o.where = codecs::VideoWhere::cpu;
  CHECK(VideoRouter(o).slots(true) == 0);
  VideoRouter::Options off = on_gpus(codecs::VideoWhere::auto_, {0});
  off.off_reason = "the CPU resizes";
  CHECK(VideoRouter(off).slots(true) == 0);
  CHECK(VideoRouter(on_gpus(codecs::VideoWhere::auto_, {})).slots(true) == 0);
  CHECK(VideoRouter(off).slots(false) == 1);  // cpu_slots' default
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

TEST_CASE("video route: h264_unreferenced names the Annex B access units whose every slice no picture refers to") {
  using Bytes = std::vector<std::uint8_t>;
  const auto unref = [](const Bytes& b) { return codecs::h264_unreferenced(b.data(), b.size()); };
  CHECK(unref({0, 0, 0, 1, 0x01, 0x88, 0x84}));                   // a non-reference slice (nal_ref_idc 0)
  CHECK_FALSE(unref({0, 0, 0, 1, 0x21, 0x88, 0x84}));             // nal_ref_idc 1
  CHECK_FALSE(unref({0, 0, 0, 1, 0x65, 0x88, 0x84}));             // an IDR slice
  CHECK(unref({0, 0, 0, 1, 0x09, 0x10, 0, 0, 1, 0x06, 0x05, 0, 0, 1, 0x01, 0x9a}));  // AUD, SEI, then the slice
  CHECK_FALSE(unref({0, 0, 1, 0x01, 0x9a, 0, 0, 1, 0x41, 0x9a}));  // two slices, the second a reference
  CHECK(unref({0, 0, 1, 0x01, 0x9a, 0, 0, 1, 0x01, 0x9b}));        // two non-reference slices
  CHECK_FALSE(unref({0, 0, 0, 1, 0x67, 0x64, 0, 0, 1, 0x68, 0xee, 0, 0, 1, 0x01, 0x9a}));  // SPS and PPS first
  CHECK_FALSE(unref({0, 0, 1, 0x14, 0x80, 0, 0, 1, 0x01, 0x9a}));  // an MVC/SVC slice (type 20)
  CHECK_FALSE(unref({0, 0, 0, 1, 0x09, 0x10}));                    // no slice at all
  CHECK_FALSE(unref({}));
  CHECK_FALSE(unref({0, 0, 1}));                                   // cut before the NAL header
  // The same units with 4-byte (and 2-byte) sizes instead of start codes (AVCC).
  const auto sized = [](const Bytes& b, int n) { return codecs::h264_unreferenced_sized(b.data(), b.size(), n); };
  CHECK(sized({0, 0, 0, 3, 0x01, 0x88, 0x84}, 4));
  CHECK_FALSE(sized({0, 0, 0, 3, 0x21, 0x88, 0x84}, 4));
  CHECK(sized({0, 2, 0x09, 0x10, 0, 2, 0x01, 0x9a}, 2));            // AUD, then the slice
  CHECK_FALSE(sized({0, 2, 0x01, 0x9a, 0, 2, 0x41, 0x9a}, 2));      // the second slice a reference
  CHECK_FALSE(sized({0, 2, 0x67, 0x64, 0, 2, 0x01, 0x9a}, 2));      // an SPS first
  CHECK_FALSE(sized({0, 0, 0, 9, 0x01, 0x88, 0x84}, 4));            // a size past the end
  CHECK_FALSE(sized({0, 0, 0, 0}, 4));                              // an empty unit
  CHECK_FALSE(sized({0, 2, 0x01, 0x9a}, 5));                        // no such size

  // A real stream: without B-pyramid every B-frame x264 makes is a
  // non-reference picture, every I- and P-frame a reference. Each packet
  // the filter gives is judged; libavcodec's picture types are the truth.
  test::TempDir d;
  const std::string path = (d / "b.mp4").string();
  test::ffmpeg("-f lavfi -i testsrc2=s=192x160:d=2 -pix_fmt yuv420p -c:v libx264 -bf 3 -g 25 "
               "-x264-params scenecut=0:b-pyramid=none " + path);
  AVFormatContext* fmt = nullptr;
  REQUIRE(avformat_open_input(&fmt, path.c_str(), nullptr, nullptr) == 0);
  REQUIRE(avformat_find_stream_info(fmt, nullptr) >= 0);
  const int s = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  REQUIRE(s >= 0);
  const AVCodec* codec = avcodec_find_decoder(fmt->streams[s]->codecpar->codec_id);
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  REQUIRE(avcodec_parameters_to_context(ctx, fmt->streams[s]->codecpar) >= 0);
  ctx->thread_count = 1;
  REQUIRE(avcodec_open2(ctx, codec, nullptr) == 0);
  std::map<std::int64_t, bool> judged;  // pts -> unreferenced
  std::map<std::int64_t, bool> judged_mp4;  // the same, of the packets as the MP4 holds them (sized units)
  std::map<std::int64_t, bool> b_frame;  // pts -> libavcodec's picture type is B
  AVPacket* in = av_packet_alloc();
  AVPacket* out = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  const auto frames = [&] {
    while (avcodec_receive_frame(ctx, frame) == 0) b_frame[frame->pts] = frame->pict_type == AV_PICTURE_TYPE_B;
  };
  {
    codecs::PacketFilter f(fmt->streams[s]);
    while (av_read_frame(fmt, in) >= 0) {
      if (in->stream_index == s) {
        judged_mp4[in->pts] = codecs::h264_unreferenced_packet(fmt->streams[s], *in);
        REQUIRE(avcodec_send_packet(ctx, in) == 0);
        frames();
        REQUIRE(f.send(in) == 0);
        while (f.receive(out) == 0) {
          judged[out->pts] = codecs::h264_unreferenced(out->data, static_cast<std::size_t>(out->size));
          av_packet_unref(out);
        }
      }
      av_packet_unref(in);
    }
  }
  REQUIRE(avcodec_send_packet(ctx, nullptr) == 0);
  frames();
  av_frame_free(&frame);
  av_packet_free(&in);
  av_packet_free(&out);
  avcodec_free_context(&ctx);
  avformat_close_input(&fmt);
  REQUIRE(judged.size() == 50);
  REQUIRE(b_frame.size() == 50);
  int unreferenced = 0;
  for (const auto& [pts, u] : judged) {
    CAPTURE(pts);
    REQUIRE(b_frame.count(pts) == 1);
    CHECK(u == b_frame.at(pts));
    CHECK(judged_mp4.at(pts) == u);
    unreferenced += u ? 1 : 0;
  }
  CHECK(unreferenced >= 30);  // three B-frames in four, but at the GOPs' ends
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
  VideoRouter::Options o = on_gpus(codecs::VideoWhere::auto_, {0});
  o.cpu_slots = 1;
  o.nvdec_prior_fps = 200;  // two slots (engines unknown): 100 a file, as the CPU's one
  o.nvdec_file_prior_fps = 100;
  o.cpu_prior_fps = 100;
  VideoRouter r(o);
  VideoInfo whole = stream("h264", 640, 480);  // 100 frames declared
  VideoInfo clip = whole;
  clip.planned_work = 10;  // a clip decodes 10 of them
  CHECK(r.choose(whole).device == 0);
  CHECK(r.choose(whole).device == 0);   // ties go to NVDEC: 1 s on either
  CHECK(r.choose(clip).device == -1);   // 0.1 s on the CPU, 1.05 s behind NVDEC's 200 frames
  // The CPU's queue is the clip's 10 frames, not the file's 100: the next
  // whole file is done there in 1.1 s, before NVDEC's 1.5 s (with 100
  // queued it would be 2 s).
  CHECK(r.choose(whole).device == -1);
  // NVDEC delivers 20 frames and drops 100 (decoded before clips' first
  // frames) in a second of decoding: its rate is what it decoded.
  for (int i = 0; i < 20; ++i) r.delivered(0);
  for (int i = 0; i < 100; ++i) r.dropped(0);
  r.worked(0, 1.0);
  CHECK(r.rate(true) == doctest::Approx(120));
  CHECK(r.figures().nvdec_frames == 20);  // the report's frames are the delivered ones
}
