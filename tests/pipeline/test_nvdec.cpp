// The NVDEC route (codecs/video/nvdec/nvdec_decoder.hpp) against the CPU
// route, on clips made here with Debian's ffmpeg: the same frames, the same
// pixels (within one level; the decoders of these codecs are bit-exact, so
// they agree to the bit), the same breaks on damaged files, and the streams
// the engines cannot take decoded on the CPU with the reason in the report.
// GPU cases; the routing itself is tested without one
// (tests/codecs/test_video_route.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "codecs/route/video_route.hpp"
#include "codecs/video/video_devices.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"
#include "core/fault.hpp"
#include "imgpipe/pipeline.hpp"
#include "memory/gpu.hpp"

namespace fs = std::filesystem;
using namespace imgpipe;

namespace {

bool have_nvdec(std::string& why) {
  if (!test::have_gpu()) {
    why = "no CUDA device";
    return false;
  }
  return !codecs::nvdec_caps(0, why).empty();
}

struct Outcome {
  Report report;
  std::map<std::pair<std::string, std::int64_t>, std::vector<float>> frame;  // (file, frame) -> tensor
  std::map<std::pair<std::string, std::int64_t>, bool> on_gpu;
  std::map<std::string, std::string> failure;  // file -> "frame k: reason"
  std::uint64_t frame_bytes_seen = 0;  // the most device memory NVDEC's frame pools held at a batch
  std::vector<int> idle;               // NVDEC decoders idle in the cache after each run (the Pipeline alive)
};

// `runs` runs of one Pipeline (the outcome holds the last run's frames);
// `tweak` changes the config before the Pipeline is made.
Outcome run(const fs::path& dir, Where where, int max_frames = 0, int interleave = 0, int runs = 1,
            const std::function<void(Config&)>& tweak = {}) {
  Config c;
  c.input.paths = {dir.string()};
  c.input.video.where = where;
  c.input.video.max_frames = max_frames;
  c.input.video.interleave = interleave;
  c.transform.resize = {96, 64, ResizeMode::stretch, Interpolation::linear, 0, Where::gpu};
  c.batch.size = 8;
  c.devices = DeviceSelection::parse("0");
  if (tweak) tweak(c);
  Pipeline p(c);
  Outcome o;
  for (int r = 0; r < runs; ++r) {
    o.frame.clear();
    o.on_gpu.clear();
    o.report = p.run([&](const DeviceBatch& b) {
      o.frame_bytes_seen = std::max(o.frame_bytes_seen, codecs::nvdec_figures().frame_bytes);
      const std::vector<unsigned char> host = test::batch_to_host(b);
      const std::size_t per = host.size() / b.size();
      for (std::size_t i = 0; i < b.size(); ++i) {
        const auto key = std::make_pair(fs::path(b.samples[i].path).filename().string(), b.samples[i].frame);
        std::vector<float> t(per / sizeof(float));
        std::memcpy(t.data(), host.data() + i * per, per);
        o.frame[key] = std::move(t);
        o.on_gpu[key] = b.samples[i].decoded_on_gpu;
      }
    });
    o.idle.push_back(codecs::nvdec_figures().idle);
  }
  for (const auto& f : o.report.inputs.failures)
    o.failure[fs::path(f.path).filename().string()] = "frame " + std::to_string(f.frame) + ": " + f.reason;
  return o;
}

// The two routes deliver the same frames of every file, within `levels`.
void same_frames(const Outcome& gpu, const Outcome& cpu, double levels = 1.001) {
  REQUIRE(gpu.frame.size() == cpu.frame.size());
  for (const auto& [key, t] : cpu.frame) {
    CAPTURE(key.first);
    CAPTURE(key.second);
    REQUIRE(gpu.frame.count(key) == 1);
    CHECK(test::max_level_diff(gpu.frame.at(key), t) <= levels);
  }
}

std::uint64_t reason_count(const Report& r, const std::string& reason) {
  for (const auto& [why, n] : r.video.cpu_reasons)
    if (why == reason) return n;
  return 0;
}

}  // namespace

TEST_CASE("nvdec: H.264 (BT.601, BT.709, full range), HEVC 8 and 10-bit and VP9 frames equal the CPU route's") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir d;
  const std::string src = "-f lavfi -i testsrc2=s=320x240:r=25:d=1.2 ";
  struct Clip {
    const char* name;
    std::string args;
  };
  const std::vector<Clip> clips = {
      {"h264_601.mp4", "-pix_fmt yuv420p -c:v libx264 -bf 3 -colorspace smpte170m -color_range tv"},
      {"h264_709.mkv", "-pix_fmt yuv420p -c:v libx264 -bf 2 -colorspace bt709 -color_range tv"},
      {"h264_709_full.mp4", "-vf scale=out_range=pc -pix_fmt yuvj420p -c:v libx264 -colorspace bt709 -color_range pc"},
      {"hevc_8.mp4", "-pix_fmt yuv420p -c:v libx265 -x265-params log-level=none -tag:v hvc1"},
      {"hevc_10.mkv", "-pix_fmt yuv420p10le -c:v libx265 -x265-params log-level=none -colorspace bt709"},
      {"vp9.webm", "-pix_fmt yuv420p -c:v libvpx-vp9 -deadline realtime -cpu-used 8"},
      {"h264.ts", "-pix_fmt yuv420p -c:v libx264 -bf 2"}};
  for (const Clip& c : clips) {
    CAPTURE(c.name);
    test::TempDir one;
    test::ffmpeg(src + c.args + " " + (one / c.name).string());
    const Outcome gpu = run(one.path(), Where::gpu);
    const Outcome cpu = run(one.path(), Where::cpu);
    CHECK(gpu.report.video.nvdec_files == 1);
    CHECK(gpu.report.video.nvdec_frames == 30);
    CHECK(cpu.report.video.cpu_files == 1);
    CHECK(gpu.report.inputs.delivered == 30);
    CHECK(cpu.report.inputs.delivered == 30);
    CHECK(gpu.failure.empty());
    for (const auto& [key, g] : gpu.on_gpu) CHECK(g);
    same_frames(gpu, cpu);
  }
}

TEST_CASE("nvdec: AV1, H.264 4:4:4 and odd sizes are decoded on the CPU, the report says why") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir d;
  const std::string src = "-f lavfi -i testsrc2=s=320x240:r=25:d=0.4 ";
  test::ffmpeg(src + "-pix_fmt yuv420p -c:v libaom-av1 -cpu-used 8 " + (d / "av1.mkv").string());
  test::ffmpeg(src + "-pix_fmt yuv444p -c:v libx264 " + (d / "h264_444.mp4").string());
  // VP9 codes odd sizes in 4:2:0 (H.264 and HEVC cannot).
  test::ffmpeg(src + "-vf scale=321:241 -pix_fmt yuv420p -c:v libvpx-vp9 -deadline realtime -cpu-used 8 " +
               (d / "odd.webm").string());
  test::ffmpeg(src + "-pix_fmt yuv420p -c:v libx264 " + (d / "ok.mp4").string());
  const Outcome o = run(d.path(), Where::gpu);
  CHECK(o.report.inputs.delivered == 40);
  CHECK(o.failure.empty());
  CHECK(o.report.video.nvdec_files == 1);
  CHECK(o.report.video.cpu_files == 3);
  CHECK(reason_count(o.report, "NVDEC cannot decode av1") == 1);
  CHECK(reason_count(o.report, "NVDEC cannot decode h264 8-bit 4:4:4") == 1);
  CHECK(reason_count(o.report, "an odd size (321x241): the CPU route takes it") == 1);
  for (const auto& [key, g] : o.on_gpu) {
    CAPTURE(key.first);
    CHECK(g == (key.first == "ok.mp4"));
  }
}

TEST_CASE("nvdec: damaged files break as on the CPU route, and neither delivers a damaged frame") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir made;
  const std::string src = "-f lavfi -i testsrc2=s=320x240:r=25:d=2 -pix_fmt yuv420p -c:v libx264 -g 25 ";
  test::ffmpeg(src + "-bf 3 " + (made / "bframes.mp4").string());
  test::ffmpeg(src + "-bf 3 -movflags +faststart " + (made / "bframes_fast.mp4").string());
  test::ffmpeg(src + "-bf 0 " + (made / "plain.mkv").string());
  test::ffmpeg(src + "-bf 2 " + (made / "stream.ts").string());
  test::TempDir d;
  std::map<std::string, std::string> original;  // damaged file -> the whole one
  // Cut at 60% of the file: inside a frame's data (the MP4 without
  // faststart loses its index and cannot be opened at all).
  for (const char* name : {"bframes.mp4", "bframes_fast.mp4", "plain.mkv", "stream.ts"}) {
    std::vector<unsigned char> b = test::read_bytes(made / name);
    b.resize(b.size() * 6 / 10);
    test::write_bytes(d / (std::string("cut_") + name), b);
    original[std::string("cut_") + name] = name;
  }
  // Bytes flipped in the middle of the file (slice data of a frame).
  for (const char* name : {"plain.mkv", "stream.ts"}) {
    std::vector<unsigned char> b = test::read_bytes(made / name);
    for (std::size_t i = b.size() / 2; i < b.size() / 2 + 64; ++i) b[i] ^= 0x5a;
    test::write_bytes(d / (std::string("flipped_") + name), b);
    original[std::string("flipped_") + name] = name;
  }
  const Outcome truth = run(made.path(), Where::cpu);  // the whole files
  const Outcome gpu = run(d.path(), Where::gpu);
  const Outcome cpu = run(d.path(), Where::cpu);
  CHECK(gpu.report.video.nvdec_files == 5);  // all but the MP4 that cannot be opened
  for (const auto& [name, whole] : original) {
    CAPTURE(name);
    REQUIRE(cpu.failure.count(name) == 1);
    REQUIRE(gpu.failure.count(name) == 1);
    MESSAGE(name << ": CPU " << cpu.failure.at(name) << " | NVDEC " << gpu.failure.at(name));
    // Both routes break at the same frame: cut files where the demuxer says
    // so; flipped bytes where the decoder flags a frame (neither delivers a
    // frame decoded after it, and the CPU route places damage its frame
    // threads find by decoding again with one thread).
    const auto at = [](const std::string& f) { return f.substr(0, f.find(':')); };
    CHECK(at(gpu.failure.at(name)) == at(cpu.failure.at(name)));
  }
  for (const Outcome* o : {&gpu, &cpu}) {
    for (const auto& [key, t] : o->frame) {
      CAPTURE(key.first);
      CAPTURE(key.second);
      const auto whole = std::make_pair(original.at(key.first), key.second);
      REQUIRE(truth.frame.count(whole) == 1);
      CHECK(test::max_level_diff(t, truth.frame.at(whole)) <= 1.001);
    }
  }
}

TEST_CASE("nvdec: a folder of videos on both routes at once (auto), decoders reused, every frame as on the CPU") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir made;
  test::ffmpeg("-f lavfi -i testsrc2=s=320x240:r=25:d=0.8 -pix_fmt yuv420p -c:v libx264 -bf 2 " +
               (made / "a.mp4").string());
  test::ffmpeg("-f lavfi -i mandelbrot=s=320x240:r=25 -t 0.8 -pix_fmt yuv420p -c:v libx264 " +
               (made / "b.mkv").string());
  test::TempDir d;
  for (int i = 0; i < 12; ++i)
    fs::copy_file(made / (i % 2 ? "b.mkv" : "a.mp4"), d / ("v" + std::to_string(10 + i) + (i % 2 ? ".mkv" : ".mp4")));
  const Outcome both = run(d.path(), Where::automatic);
  const Outcome cpu = run(d.path(), Where::cpu);
  CHECK(both.report.inputs.delivered == 240);
  CHECK(both.report.video.nvdec_files + both.report.video.cpu_files == 12);
  CHECK(both.report.video.nvdec_files >= 1);
  CHECK(both.report.video.nvdec_frames + both.report.video.cpu_frames == 240);
  same_frames(both, cpu);
  // Two videos at a time on NVDEC: the later files take the decoders the
  // earlier ones left (one format).
  const codecs::NvdecFigures before = codecs::nvdec_figures();
  const Outcome gpu = run(d.path(), Where::gpu, 0, 2, 2);
  const codecs::NvdecFigures after = codecs::nvdec_figures();
  MESSAGE("auto: NVDEC files " << both.report.video.nvdec_files << "; gpu: decoders made " << after.made - before.made
                               << ", reused " << after.reused - before.reused);
  CHECK(gpu.report.video.nvdec_files == 12);
  CHECK(after.reused - before.reused >= 6);
  same_frames(gpu, cpu);
  // The decoded frames' device buffers are pooled while the run lasts and
  // freed with its last frame: nothing is held once the pipeline is gone.
  CHECK(gpu.frame_bytes_seen > 0);
  CHECK(after.frame_bytes == 0);
  // The decoders stay cached between the runs of a Pipeline (its second run
  // can take them), and are destroyed with it (their device memory freed).
  REQUIRE(gpu.idle.size() == 2);
  CHECK(gpu.idle[0] >= 1);
  CHECK(gpu.idle[1] >= 1);
  CHECK(after.idle == 0);
  // What the engines take was asked once in the process (the runs above
  // asked already): the two runs of the Pipeline asked nothing again.
  CHECK(before.caps_asked >= 1);
  CHECK(after.caps_asked == before.caps_asked);
}

TEST_CASE("nvdec: a stream whose size changes mid-way (an MPEG-TS joined from two) plays through as on the CPU") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir made;
  test::ffmpeg("-f lavfi -i testsrc2=s=320x240:r=25 -frames:v 20 -c:v libx264 -bf 2 -pix_fmt yuv420p " +
               (made / "a.ts").string());
  test::ffmpeg("-f lavfi -i mandelbrot=s=256x144:r=25 -frames:v 20 -c:v libx264 -bf 2 -pix_fmt yuv420p " +
               (made / "b.ts").string());
  test::TempDir d;
  // Joined byte for byte, as `cat a.ts b.ts` does: the decoder is reconfigured
  // for the second size.
  auto joined = test::read_bytes(made / "a.ts");
  const auto second = test::read_bytes(made / "b.ts");
  joined.insert(joined.end(), second.begin(), second.end());
  test::write_bytes(d / "joined.ts", joined);
  const Outcome gpu = run(d.path(), Where::gpu);
  const Outcome cpu = run(d.path(), Where::cpu);
  CHECK(gpu.report.video.nvdec_files == 1);
  CHECK(gpu.failure.empty());
  CHECK(cpu.failure.empty());
  CHECK(gpu.report.inputs.delivered == 40);
  same_frames(gpu, cpu);
}

// ------------------------------------------------ the defects of a careful read

TEST_CASE("nvdec: an RGB-coded 4:4:4 HEVC stream is left to the CPU route, which gives its colours") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  // HEVC 8-bit 4:4:4 is in NVDEC's table; coded as G, B, R planes (matrix
  // coefficients identity, FFmpeg's gbrp) a YUV matrix must not be applied.
  test::TempDir d;
  test::ffmpeg("-f lavfi -i testsrc2=s=320x240:r=25:d=0.4 -vf format=gbrp -c:v libx265 -x265-params "
               "lossless=1:log-level=none " + (d / "rgb.mkv").string());
  test::ffmpeg("-f lavfi -i testsrc2=s=320x240:r=25:d=0.4 -pix_fmt yuv444p -c:v libx265 -x265-params "
               "lossless=1:log-level=none " + (d / "yuv444.mkv").string());
  const Outcome gpu = run(d.path(), Where::gpu);
  const Outcome cpu = run(d.path(), Where::cpu);
  CHECK(gpu.report.inputs.delivered == 20);
  CHECK(gpu.failure.empty());
  CHECK(gpu.report.video.nvdec_files == 1);  // the YUV one
  CHECK(reason_count(gpu.report, "RGB-coded hevc (gbrp): the CPU route takes it") == 1);
  for (const auto& [key, g] : gpu.on_gpu) {
    CAPTURE(key.first);
    CHECK(g == (key.first == "yuv444.mkv"));
  }
  same_frames(gpu, cpu);
}

TEST_CASE("nvdec: a picture the parser displays without its decode is not delivered, the file goes on on the CPU") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir d;
  const std::string src = "-f lavfi -i testsrc2=s=320x240:r=25:d=1.2 -pix_fmt yuv420p -c:v libx264 -g 12 ";
  test::ffmpeg(src + "-bf 0 " + (d / "plain.mp4").string());
  test::ffmpeg(src + "-bf 3 " + (d / "bframes.mkv").string());
  const Outcome cpu = run(d.path(), Where::cpu);
  // The drill: the 7th picture of each file in decode order is left
  // undecoded (as the parser leaves a damaged one) and still displayed, so
  // its surface holds an earlier picture.
  fault::inject("nvdec_skip", 7);
  const Outcome gpu = run(d.path(), Where::gpu);
  fault::clear();
  CHECK(gpu.report.inputs.delivered == 60);
  CHECK(gpu.failure.empty());  // libavcodec, placing the damage, finds none: the files play through
  CHECK(gpu.report.video.nvdec_files == 2);
  CHECK(gpu.report.video.cpu_files == 0);
  CHECK(gpu.report.video.nvdec_frames > 0);
  CHECK(gpu.report.video.cpu_frames > 0);  // the frames from the break on: the CPU's
  CHECK(gpu.report.video.nvdec_frames + gpu.report.video.cpu_frames == 60);
  std::uint64_t on_gpu = 0;
  for (const auto& [key, g] : gpu.on_gpu) on_gpu += g ? 1 : 0;
  CHECK(on_gpu == gpu.report.video.nvdec_frames);
  same_frames(gpu, cpu);  // no stale picture among them
}

TEST_CASE("nvdec: frames copied from another GPU are waited for by the kernels, in copy and zero_copy transfer") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir d;
  test::ffmpeg("-f lavfi -i testsrc2=s=320x240:r=25:d=1.6 -pix_fmt yuv420p -c:v libx264 -bf 2 " +
               (d / "a.mp4").string());
  for (const TransferMode mode : {TransferMode::copy, TransferMode::zero_copy}) {
    CAPTURE(static_cast<int>(mode));
    const auto transfer = [&](Config& c) { c.staging.transfer = mode; };
    const Outcome plain = run(d.path(), Where::gpu, 0, 0, 1, transfer);
    // The drill: every frame goes through the cross-device copy (on this
    // GPU), behind a 20 ms stall of the copy's stream: a kernel that does
    // not wait for the copy reads the buffer's earlier frame.
    fault::inject("frame_copy", 20);
    const Outcome copied = run(d.path(), Where::gpu, 0, 0, 1, transfer);
    fault::clear();
    CHECK(copied.failure.empty());
    CHECK(copied.report.video.nvdec_frames == 40);
    same_frames(copied, plain, 0.0);
  }
}

TEST_CASE("nvdec: NVDEC's frame memory keeps to memory.nvdec_frames_mb, a file that finds it full goes on on the CPU") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir d;
  test::ffmpeg("-f lavfi -i testsrc2=s=640x480:r=25:d=2 -pix_fmt yuv420p -c:v libx264 -bf 2 " + (d / "a.mp4").string());
  const Outcome cpu = run(d.path(), Where::cpu);
  // 4 MiB: seven 640x480 NV12 frames (pitch 768: 0.53 MiB each), fewer
  // than the batches in flight and the frames held back hold.
  const Outcome gpu = run(d.path(), Where::gpu, 0, 0, 1, [](Config& c) { c.memory.nvdec_frames_mb = 4; });
  CHECK(gpu.failure.empty());
  CHECK(gpu.report.inputs.delivered == 50);
  CHECK(gpu.report.video.nvdec_files == 1);
  CHECK(gpu.report.video.nvdec_frames > 0);
  CHECK(gpu.report.video.cpu_frames > 0);
  CHECK(gpu.report.video.nvdec_frames + gpu.report.video.cpu_frames == 50);
  CHECK(reason_count(gpu.report, "NVDEC's frame memory (memory.nvdec_frames_mb) was full: the CPU route decoded the rest") == 1);
  CHECK(gpu.frame_bytes_seen <= (std::uint64_t{4} << 20));
  same_frames(gpu, cpu);
  // The default (1/8 of the device's memory) holds the run.
  const Outcome roomy = run(d.path(), Where::gpu);
  CHECK(roomy.report.video.nvdec_frames == 50);
  CHECK(roomy.report.video.cpu_reasons.empty());
}

TEST_CASE("nvdec: the decoder binds its device's context for each call and leaves the caller's thread as it was") {
  std::string why;
  IMGPIPE_SKIP_UNLESS(have_nvdec(why), "NVDEC not exercised here: " + why);
  test::TempDir d;
  test::ffmpeg("-f lavfi -i testsrc2=s=320x240:r=25:d=1.2 -pix_fmt yuv420p -c:v libx264 -bf 2 " +
               (d / "a.mp4").string());
  std::shared_ptr<void> hold = codecs::hold_nvdec_decoders();
  // A fresh thread has no CUDA context current. Each call binds the
  // decoder's (device 0's primary context) and restores "none": the frames
  // decode although nothing is current between the calls, and nothing is
  // left current after them. (No REQUIRE on this thread.)
  std::thread([&] {
    CHECK(gpu::current_context() == nullptr);
    codecs::VideoRouter::Options o;
    o.where = codecs::VideoWhere::gpu;
    o.devices = {0};
    std::string caps_why;
    o.caps = {codecs::nvdec_caps(0, caps_why)};
    CHECK(gpu::current_context() == nullptr);
    codecs::VideoRouter router(o);
    codecs::VideoFileOptions vo;
    vo.router = &router;
    codecs::VideoFile f((d / "a.mp4").string(), vo);
    CHECK(f.device() == 0);
    CHECK(gpu::current_context() == nullptr);
    std::shared_ptr<codecs::VideoFrame> frame;
    int n = 0;
    while (f.next(frame) == codecs::VideoFile::Next::frame) {
      ++n;
      CHECK(frame->device() == 0);
      CHECK(gpu::current_context() == nullptr);
    }
    CHECK(f.error().empty());
    CHECK(n == 30);
    frame.reset();
  }).join();
  // The decoder went back to the cache; destroying it (the last holder
  // gone) leaves this thread's state too.
  gpu::set_device(0);
  CUctx_st* mine = gpu::current_context();
  hold.reset();
  CHECK(gpu::current_context() == mine);
}
