// input.video.clips end to end on the CPU route (host backend): every frame
// of every clip is, bit for bit, the frame at that index of a run over all
// the frames, over the files that trip seekers (tests/awkward_videos.hpp);
// the cthw, tchw and thwc layouts place them; clips follow plan_clips'
// draws, differ between epochs and reproduce with the seed; ranks split the
// videos with none lost; short videos are skipped, padded or looped and
// counted; the report gives the decode amplification and the clips' geometry,
// and each batch's checksum as delivered.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "awkward_videos.hpp"
#include "common.hpp"
#include "imgpipe/clips.hpp"
#include "codecs/route/video_route.hpp"
#include "codecs/video/video_devices.hpp"
#include "codecs/video/video_file.hpp"
#include "imgpipe/pipeline.hpp"
#include "kernels/checksum.hpp"

using imgpipe::ClipLayout;
using imgpipe::ClipPlace;
using imgpipe::ClipShort;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::Pipeline;
using imgpipe::Report;

namespace {

constexpr int kSide = 24;  // the tensor's width and height
constexpr std::size_t kPlane = kSide * kSide;  // uint8: one channel of one frame

Config base(const std::string& path) {
  Config c;
  c.input.paths = {path};
  c.devices = imgpipe::DeviceSelection::parse("cpu");
  c.transform.resize.width = c.transform.resize.height = kSide;
  c.transform.dtype = imgpipe::DType::uint8;
  c.decode.threads = 2;
  c.input.video.threads = 1;
  return c;
}

using Frame = std::vector<unsigned char>;  // C x H x W

// Every frame of the file through the pipeline (no clips), by index.
std::map<std::int64_t, Frame> all_frames(const std::string& path) {
  Config c = base(path);
  c.batch.size = 8;
  std::map<std::int64_t, Frame> out;
  Pipeline p(c);
  const Report r = p.run([&](const DeviceBatch& b) {
    const std::vector<unsigned char> host = imgpipe::test::batch_to_host(b);
    const unsigned char* d = host.data();
    for (std::size_t i = 0; i < b.samples.size(); ++i)
      out[b.samples[i].frame] = Frame(d + i * 3 * kPlane, d + (i + 1) * 3 * kPlane);
  });
  REQUIRE_MESSAGE(r.inputs.failed == 0, path);
  return out;
}

struct ClipSeen {
  std::string path;
  std::int64_t clip = -1;
  std::vector<std::int64_t> frames;
  std::vector<double> pts;
  std::vector<Frame> pixels;  // per frame, C x H x W, gathered from the clip's layout
};

// A clip run's clips, each frame's pixels read out of the batch's layout.
std::vector<ClipSeen> clips_of(Pipeline& p, Report* report = nullptr) {
  std::vector<ClipSeen> out;
  std::map<std::uint64_t, std::uint64_t> checksums;  // of each batch as delivered
  const Report r = p.run([&](const DeviceBatch& b) {
    const int T = b.clip_length;
    REQUIRE(T > 0);
    REQUIRE(b.shape.size() == 5);
    CHECK(b.shape[0] == static_cast<std::int64_t>(b.size()));
    CHECK(b.samples.size() == b.size() * T);
    const std::vector<unsigned char> host = imgpipe::test::batch_to_host(b);  // device memory on a GPU
    checksums[b.index] = imgpipe::kernels::checksum_ref(host.data(), host.size());
    const unsigned char* d = host.data();
    for (std::size_t n = 0; n < b.size(); ++n) {
      ClipSeen c;
      c.path = b.clip_frame(n, 0).path;
      c.clip = b.clip_frame(n, 0).clip;
      for (int t = 0; t < T; ++t) {
        const imgpipe::SampleId& s = b.clip_frame(n, t);
        CHECK(s.path == c.path);
        CHECK(s.clip == c.clip);
        c.frames.push_back(s.frame);
        c.pts.push_back(s.pts);
        Frame f(3 * kPlane);
        for (std::size_t ch = 0; ch < 3; ++ch)
          for (std::size_t px = 0; px < kPlane; ++px) {
            const std::size_t tt = static_cast<std::size_t>(t), TT = static_cast<std::size_t>(T);
            std::size_t at = 0;
            switch (b.clip_layout) {
              case ClipLayout::cthw: at = (((n * 3 + ch) * TT + tt) * kPlane) + px; break;
              case ClipLayout::tchw: at = (((n * TT + tt) * 3 + ch) * kPlane) + px; break;
              case ClipLayout::thwc: at = ((n * TT + tt) * kPlane + px) * 3 + ch; break;
            }
            f[ch * kPlane + px] = d[at];
          }
        c.pixels.push_back(std::move(f));
      }
      out.push_back(std::move(c));
    }
  });
  // The report's checksums (on the host backend added up from the parts
  // summed as the frames were written, wherever the layout moved them).
  CHECK(r.batch_records.size() == checksums.size());
  for (const auto& rec : r.batch_records) {
    CAPTURE(rec.index);
    REQUIRE(checksums.count(rec.index) == 1);
    CHECK(rec.checksum == checksums[rec.index]);
  }
  if (report) *report = r;
  return out;
}

}  // namespace

TEST_CASE("clips: every frame of every clip is the full decode's frame at its index, bit for bit, on awkward files") {
  for (const auto& [name, v] : imgpipe::test::awkward()) {
    CAPTURE(name);
    const std::map<std::int64_t, Frame> frames = all_frames(v.path);
    REQUIRE(!frames.empty());
    const auto count = static_cast<std::int64_t>(frames.size());
    CHECK(frames.rbegin()->first == count - 1);  // indices 0..count-1, none missing
    // Each layout with one decoder thread, and cthw under frame threads (frames
    // held back, as on NVDEC: want() spares the stride's unreferenced frames).
    for (const auto& [layout, threads] : {std::pair{ClipLayout::cthw, 1}, std::pair{ClipLayout::tchw, 1},
                                          std::pair{ClipLayout::thwc, 1}, std::pair{ClipLayout::cthw, 2}}) {
      CAPTURE(static_cast<int>(layout));
      CAPTURE(threads);
      Config c = base(v.path);
      c.input.video.threads = threads;
      c.batch.size = 2;
      c.transform.seed = 11;
      c.input.video.clips.length = 5;
      c.input.video.clips.stride = 3;
      c.input.video.clips.per_video = 4;
      c.input.video.clips.layout = layout;
      if (layout == ClipLayout::thwc) c.transform.layout = imgpipe::Layout::nhwc;
      Pipeline p(c);
      Report r;
      const std::vector<ClipSeen> seen = clips_of(p, &r);
      CHECK(r.inputs.failed == 0);
      CHECK(r.samples.unit == "clips");
      CHECK(r.samples.clips == 4);
      CHECK(r.samples.frames == 20);
      CHECK(r.video.clips == 4);
      CHECK(r.video.cpu_decoded >= r.video.cpu_delivered);
      // The clips plan_clips draws for the video (item 0, epoch 0).
      const imgpipe::ClipPlan plan = imgpipe::plan_clips(c.input.video.clips, count, 11, 0, 0);
      REQUIRE(seen.size() == plan.clips.size());
      for (std::size_t k = 0; k < seen.size(); ++k) {
        CHECK(seen[k].clip == static_cast<std::int64_t>(k));
        CHECK(seen[k].frames == plan.clips[k]);
        for (std::size_t t = 0; t < seen[k].frames.size(); ++t) {
          const auto want = frames.find(seen[k].frames[t]);
          REQUIRE(want != frames.end());
          CHECK_MESSAGE(seen[k].pixels[t] == want->second, "clip " << k << " frame " << seen[k].frames[t]);
          if (t > 0 && name.find("joined") == std::string::npos) CHECK(seen[k].pts[t] > seen[k].pts[t - 1]);
          CHECK_FALSE(std::isnan(seen[k].pts[t]));
        }
      }
    }
  }
}

TEST_CASE("clips: epochs draw new clips, the seed reproduces them, and ranks split the videos with none lost") {
  const auto& aw = imgpipe::test::awkward();
  const std::string dir = std::filesystem::path(aw.at("H.264 B-frames, closed GOPs, MP4").path).parent_path().string();
  Config c = base(dir);
  c.input.extensions = {".mp4", ".mkv", ".webm"};
  c.batch.size = 3;
  c.transform.seed = 5;
  c.input.video.clips.length = 4;
  c.input.video.clips.stride = 2;
  c.input.video.clips.per_video = 2;
  c.input.video.interleave = 3;
  auto key = [](const std::vector<ClipSeen>& v) {
    std::set<std::pair<std::string, std::vector<std::int64_t>>> s;
    for (const ClipSeen& seen : v) s.insert({seen.path, seen.frames});
    return s;
  };
  Pipeline p(c);
  Report r0;
  const auto e0 = key(clips_of(p, &r0));
  const auto e1 = key(clips_of(p));
  CHECK(e0.size() >= 8);
  CHECK(e0 != e1);
  // Epoch 0 again on the kept Pipeline: the same clips, decoded into the
  // frame blocks the earlier runs made (the pool is kept from run to run).
  p.set_epoch(0);
  Report r2;
  CHECK(key(clips_of(p, &r2)) == e0);
  CHECK(r0.video.frame_blocks_made > 0);
  CHECK(r2.video.frame_blocks_made < r0.video.frame_blocks_made);
  Pipeline again(c);
  CHECK(key(clips_of(again)) == e0);
  // Two ranks: each video on one of them, every clip of epoch 0 delivered once.
  std::set<std::pair<std::string, std::vector<std::int64_t>>> both;
  std::set<std::string> videos0, videos1;
  for (int rank = 0; rank < 2; ++rank) {
    Config r = c;
    r.input.shard = {rank, 2};
    Pipeline pr(r);
    for (const ClipSeen& s : clips_of(pr)) {
      CHECK(both.insert({s.path, s.frames}).second);
      (rank == 0 ? videos0 : videos1).insert(s.path);
    }
  }
  CHECK(both == e0);
  for (const std::string& v : videos0) CHECK(videos1.count(v) == 0);
}

TEST_CASE("clips: a video shorter than a clip is skipped with a reason, padded or looped, and counted") {
  imgpipe::test::TempDir d;
  const std::string path = (d / "short.mp4").string();
  imgpipe::test::ffmpeg("-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 7 -pix_fmt yuv420p -c:v libx264 -bf 2 " +
                        path);
  const std::map<std::int64_t, Frame> frames = all_frames(path);
  REQUIRE(frames.size() == 7);
  Config c = base(path);
  c.batch.size = 1;
  c.input.video.clips.length = 6;
  c.input.video.clips.stride = 2;  // span 11
  {
    Pipeline p(c);
    Report r;
    CHECK(clips_of(p, &r).empty());
    REQUIRE(r.inputs.failures.size() == 1);
    CHECK(r.inputs.failures[0].path == path);
    CHECK(r.inputs.failures[0].reason.find("shorter than a clip") != std::string::npos);
    CHECK(r.video.short_skipped == 1);
  }
  for (const ClipShort how : {ClipShort::pad, ClipShort::loop}) {
    c.input.video.clips.shorter = how;
    Pipeline p(c);
    Report r;
    const std::vector<ClipSeen> seen = clips_of(p, &r);
    REQUIRE(seen.size() == 1);
    const std::vector<std::int64_t> want =
        how == ClipShort::pad ? std::vector<std::int64_t>{0, 2, 4, 6, 6, 6} : std::vector<std::int64_t>{0, 2, 4, 6, 1, 3};
    CHECK(seen[0].frames == want);
    for (std::size_t t = 0; t < want.size(); ++t) CHECK(seen[0].pixels[t] == frames.at(want[t]));
    CHECK(r.inputs.failed == 0);
    CHECK((how == ClipShort::pad ? r.video.short_padded : r.video.short_looped) == 1);
  }
}

TEST_CASE("clips: a run of clips refuses images among its inputs, and a clip's frames share one crop") {
  const auto& aw = imgpipe::test::awkward();
  Config c = base(aw.at("H.264 B-frames, closed GOPs, MP4").path);
  c.input.video.clips.length = 4;
  const std::string image = imgpipe::test::sample_images().front().string();
  c.input.paths.push_back(image);
  try {
    Pipeline p(c);
    p.run();
    FAIL("a clip run took an image");
  } catch (const imgpipe::ConfigError& e) {
    CHECK(std::string(e.what()).find(image) != std::string::npos);
  }
  // random_crop: one box and flip for all of a clip's frames, new ones per clip.
  Config rc = base(aw.at("H.264 B-frames, closed GOPs, MP4").path);
  rc.input.video.clips.length = 4;
  rc.input.video.clips.per_video = 6;
  rc.transform.resize.mode = imgpipe::ResizeMode::random_crop;
  rc.transform.flip.horizontal = 0.5f;
  Pipeline p(rc);
  std::set<std::tuple<int, int, int, int, bool>> boxes;
  p.run([&](const DeviceBatch& b) {
    for (std::size_t n = 0; n < b.size(); ++n) {
      const imgpipe::SampleGeometry& g0 = b.clip_frame(n, 0).geometry;
      for (int t = 1; t < b.clip_length; ++t) {
        const imgpipe::SampleGeometry& g = b.clip_frame(n, t).geometry;
        CHECK(g.box_x == g0.box_x);
        CHECK(g.box_y == g0.box_y);
        CHECK(g.box_width == g0.box_width);
        CHECK(g.box_height == g0.box_height);
        CHECK(g.flip_x == g0.flip_x);
      }
      boxes.insert({g0.box_x, g0.box_y, g0.box_width, g0.box_height, g0.flip_x});
    }
  });
  CHECK(boxes.size() > 1);
}

TEST_CASE("clips: on NVDEC every clip's frames are within 1 level of the CPU route's, the files staying on the engines") {
  IMGPIPE_SKIP_UNLESS(imgpipe::test::have_gpu(), "no CUDA device");
  std::string why;
  const imgpipe::codecs::NvdecCaps caps = imgpipe::codecs::nvdec_caps(0, why);
  IMGPIPE_SKIP_UNLESS(!caps.empty(), "no NVDEC: " + why);
  for (const auto& [name, v] : imgpipe::test::awkward()) {
    if (name == "AV1" || name.find("joined") != std::string::npos) continue;  // no AV1 engine; the joined TS changes size
    CAPTURE(name);
    // The engines' smallest HEVC and VP9 pictures (144x144, 128x128 on
    // the H100) are larger than these 96x64 files: those go to the CPU,
    // said so in the report, and their clips are the CPU route's.
    const std::string refusal = imgpipe::codecs::nvdec_refusal(imgpipe::codecs::VideoFile(v.path).info(), caps);
    CAPTURE(refusal);
    std::map<imgpipe::Where, std::vector<ClipSeen>> by;
    std::map<imgpipe::Where, Report> reports;
    for (const imgpipe::Where where : {imgpipe::Where::cpu, imgpipe::Where::gpu}) {
      Config c = base(v.path);
      c.devices = imgpipe::DeviceSelection::parse("0");
      c.batch.size = 2;
      c.transform.seed = 3;
      c.input.video.where = where;
      c.input.video.clips.length = 6;
      c.input.video.clips.stride = 2;
      c.input.video.clips.per_video = 4;
      Pipeline p(c);
      by[where] = clips_of(p, &reports[where]);
    }
    const Report& g = reports[imgpipe::Where::gpu];
    CHECK(g.inputs.failed == 0);
    if (refusal.empty()) {
      CHECK(g.video.nvdec_delivered == 24);  // every clip's frames from the engines: seeks keep the file there
      CHECK(g.video.nvdec_decoded >= g.video.nvdec_delivered);
    } else {
      CHECK(g.video.nvdec_delivered == 0);
      REQUIRE(g.video.cpu_reasons.size() == 1);
      CHECK(g.video.cpu_reasons[0].first.find(refusal) != std::string::npos);
    }
    const auto& cpu = by[imgpipe::Where::cpu];
    const auto& gpu = by[imgpipe::Where::gpu];
    REQUIRE(cpu.size() == gpu.size());
    for (std::size_t k = 0; k < cpu.size(); ++k) {
      CHECK(cpu[k].frames == gpu[k].frames);
      for (std::size_t t = 0; t < cpu[k].pixels.size() && t < gpu[k].pixels.size(); ++t) {
        int most = 0;
        for (std::size_t i = 0; i < cpu[k].pixels[t].size(); ++i)
          most = std::max(most, std::abs(int{cpu[k].pixels[t][i]} - int{gpu[k].pixels[t][i]}));
        CHECK_MESSAGE(most <= 1, "clip " << k << " frame " << cpu[k].frames[t] << ": " << most << " levels");
      }
    }
  }
}
