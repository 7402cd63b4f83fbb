// The CPU route's one pass from a video frame's YUV planes to the tensor
// (stages/transform.cpp, kernels/yuv_fused.hpp) end to end, host backend:
// every frame a run delivers equals, bit for bit, what the route did before
// it: the decoder's frame converted to BGR (VideoFrame::to_bgr), resized by
// the transform stage's cv::resize path with the sample's box and flips, and
// normalised by the normalise twin. Over stretch, letterbox, centre crop,
// random crops with flips and centre crops of a box, bilinear and nearest,
// float32 NCHW and float16 NHWC, on MPEG-4, H.264 with B-frames, HEVC and an
// MPEG-TS whose frame size changes midway. And the pack-copy stage's two
// ways of placing such a frame: in the slot itself (plain memory), or made
// aside and copied (a range over two chunks, or write-combined memory),
// summing the frame's checksum parts either way; the report's checksums
// equal the delivered batches'.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <opencv2/core.hpp>

#include "awkward_videos.hpp"
#include "codecs/video/video_file.hpp"
#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "kernels/checksum.hpp"
#include "memory/gpu.hpp"
#include "memory/staging_ring.hpp"
#include "stages/pack.hpp"
#include "stages/transform.hpp"

using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::Pipeline;
using imgpipe::Report;
using imgpipe::stages::Work;

namespace {

// Every frame of a file, converted to BGR as the CPU route did before the one pass.
std::vector<cv::Mat> bgr_frames(const std::string& path, int max_frames) {
  imgpipe::codecs::VideoFile file(path);
  std::vector<cv::Mat> out;
  std::shared_ptr<imgpipe::codecs::VideoFrame> f;
  while (static_cast<int>(out.size()) < max_frames && file.next(f) == imgpipe::codecs::VideoFile::Next::frame) {
    cv::Mat m(f->height(), f->width(), CV_8UC3);
    f->to_bgr(m.data, m.step);
    out.push_back(m);
  }
  return out;
}

// The tensor the route made before: transform.resize's cv::resize path, then the normalise twin.
std::vector<unsigned char> before(const Config& c, const cv::Mat& bgr, const imgpipe::SampleGeometry& g) {
  imgpipe::stages::Transform t(c.transform, true);
  imgpipe::Augment a;
  a.x = g.box_x;
  a.y = g.box_y;
  a.width = g.box_width;
  a.height = g.box_height;
  a.flip_x = g.flip_x;
  a.flip_y = g.flip_y;
  cv::Mat resized, scratch;
  t.resize(bgr, resized, scratch, &a);
  imgpipe::kernels::NormalizeParams n = t.normalize_params();
  std::vector<unsigned char> out(t.frame_bytes());
  n.src = resized.data;
  n.src_pitch = resized.step[0];
  n.dst = out.data();
  imgpipe::kernels::normalize_image_ref(n);
  return out;
}

}  // namespace

TEST_CASE("video one pass: every frame equals the BGR conversion cut, resized, mirrored and normalised, bit for bit") {
  const auto& aw = imgpipe::test::awkward();
  const std::vector<std::string> files = {(imgpipe::test::opencv_data_dir() / "vtest.avi").string(),
                                          aw.at("H.264 B-frames, closed GOPs, MP4").path,
                                          aw.at("HEVC with B-frames").path,
                                          aw.at("two MPEG-TS streams of different sizes joined, times overlapping").path};
  constexpr int kFrames = 30;  // the joined MPEG-TS changes size at frame 25
  std::map<std::string, std::vector<cv::Mat>> frames;
  for (const std::string& f : files) frames[f] = bgr_frames(f, kFrames);
  struct Mode {
    const char* name;
    imgpipe::ResizeMode mode;
    imgpipe::Interpolation interp;
    int short_side;
    float flip;
    imgpipe::DType dtype;
    imgpipe::Layout layout;
  };
  using imgpipe::DType, imgpipe::Layout, imgpipe::ResizeMode, imgpipe::Interpolation;
  for (const Mode& m : {Mode{"stretch", ResizeMode::stretch, Interpolation::linear, 0, 0, DType::float32, Layout::nchw},
                        Mode{"letterbox nearest", ResizeMode::letterbox, Interpolation::nearest, 0, 0, DType::float16,
                             Layout::nhwc},
                        Mode{"center_crop flips", ResizeMode::center_crop, Interpolation::linear, 0, 0.5f,
                             DType::float32, Layout::nchw},
                        Mode{"random_crop flips", ResizeMode::random_crop, Interpolation::linear, 0, 0.5f,
                             DType::float32, Layout::nchw},
                        Mode{"center_crop of a box (short_side)", ResizeMode::center_crop, Interpolation::linear, 80,
                             0, DType::float16, Layout::nchw}}) {
    CAPTURE(m.name);
    Config c;
    c.input.paths = files;
    c.devices = imgpipe::DeviceSelection::parse("cpu");
    c.input.video.max_frames = kFrames;
    c.input.video.where = imgpipe::Where::cpu;
    c.transform.resize.width = 61;
    c.transform.resize.height = 47;
    c.transform.resize.mode = m.mode;
    c.transform.resize.interpolation = m.interp;
    c.transform.resize.short_side = m.short_side;
    c.transform.flip.horizontal = m.flip;
    c.transform.flip.vertical = m.flip;
    c.transform.dtype = m.dtype;
    c.transform.layout = m.layout;
    c.transform.seed = 7;
    c.batch.size = 16;
    Pipeline p(c);
    int compared = 0, flipped = 0;
    std::vector<std::uint64_t> checksums;  // of each batch as delivered
    const Report r = p.run([&](const DeviceBatch& b) {
      const std::vector<unsigned char> host = imgpipe::test::batch_to_host(b);
      checksums.push_back(imgpipe::kernels::checksum_ref(host.data(), host.size()));
      const std::size_t one = host.size() / b.samples.size();
      for (std::size_t i = 0; i < b.samples.size(); ++i) {
        const imgpipe::SampleId& s = b.samples[i];
        CAPTURE(s.path);
        CAPTURE(s.frame);
        const std::vector<cv::Mat>& fr = frames.at(s.path);
        REQUIRE(s.frame < static_cast<std::int64_t>(fr.size()));
        const std::vector<unsigned char> want = before(c, fr[static_cast<std::size_t>(s.frame)], s.geometry);
        REQUIRE(want.size() == one);
        CHECK(std::memcmp(host.data() + i * one, want.data(), one) == 0);
        ++compared;
        flipped += s.geometry.flip_x || s.geometry.flip_y;
      }
    });
    CHECK(r.inputs.failed == 0);
    CHECK(compared == 4 * kFrames);
    // The report's checksums: summed by the one pass as it wrote the rows
    // where the frames are whole words (float32 nchw), else by the sink.
    REQUIRE(r.batch_records.size() == checksums.size());
    for (std::size_t i = 0; i < checksums.size(); ++i) CHECK(r.batch_records[i].checksum == checksums[i]);
    if (m.flip > 0) CHECK(flipped > 0);
  }
}

TEST_CASE("video one pass: pack_copy makes the frame in the slot where it is plain memory, else aside and copies it") {
  imgpipe::codecs::VideoFile file((imgpipe::test::opencv_data_dir() / "vtest.avi").string());
  std::shared_ptr<imgpipe::codecs::VideoFrame> frame;
  REQUIRE(file.next(frame) == imgpipe::codecs::VideoFile::Next::frame);
  imgpipe::kernels::YuvFusedParams p;
  REQUIRE(frame->yuv(p.src));
  p.width = 64;
  p.height = 48;
  p.swap_rb = true;
  p.scale = 1.0f / 255.0f;
  const std::size_t bytes = 64 * 48 * 3 * sizeof(float);
  std::vector<unsigned char> want(bytes);
  p.dst = want.data();
  imgpipe::kernels::yuv_fused_cpu(p);
  p.dst = nullptr;
  // A host slot made with 4096 bytes and grown: chunks [0, 4096) and [4096, ...).
  imgpipe::memory::StagingOptions o;
  o.slots = 2;
  o.slot_bytes = 4 * bytes;
  o.initial_bytes = 4096;
  imgpipe::memory::StagingRing ring(o);
  imgpipe::memory::SlotWriter w = ring.acquire();
  w = ring.grow(w.slot(), 4 * bytes);
  imgpipe::gpu::Stream stream(-1);
  for (std::size_t offset : {std::size_t{4096} + 64, std::size_t{4096} - 100}) {  // inside the second chunk; over the edge
    CAPTURE(offset);
    CHECK((w.plain_span(offset, bytes) != nullptr) == (offset >= 4096));
    Work work;
    work.kind = Work::Kind::video_frame;
    work.pixels.video = frame;
    work.pixels.out.one_pass = p;
    work.pixels.out.bytes = bytes;
    work.dest.writer = w;
    work.dest.offset = offset;
    imgpipe::stages::SampleChecksum sum;
    work.dest.sum = &sum;
    imgpipe::stages::PackCopy copy;
    copy(&work);
    CHECK(work.pixels.video == nullptr);  // the decoder's buffer goes back
    CHECK(sum.bytes == bytes);  // its checksum parts, summed on either way
    for (std::size_t k = 0; k < 3; ++k) {
      const auto part = imgpipe::kernels::checksum_part(want.data() + k * bytes / 3, bytes / 3);
      CHECK(sum.part[k].sum == part.sum);
      CHECK(sum.part[k].weighted == part.weighted);
    }
    imgpipe::gpu::DeviceBuffer back(-1, bytes);
    ring.copy_to_device(w.slot(), offset, back.get(), bytes, stream);
    CHECK(std::memcmp(back.get(), want.data(), bytes) == 0);
  }
  ring.release(w.slot(), stream);
}
