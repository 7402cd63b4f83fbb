// The run report on runs with video: samples counted and named by kind
// (images, video frames), and the video decoders' own rows, so that the
// source's row holds only its own work (issue 44, points 3 and 4).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"
#include "imgpipe/push_source.hpp"

namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::Pipeline;
using imgpipe::Report;
using imgpipe::RunOptions;
using imgpipe::StageReport;
using imgpipe::test::TempDir;

namespace {

constexpr int kFrames = 40;  // of Megamind.avi (input.video.max_frames)

Config config_for(std::vector<std::string> paths) {
  Config c;
  c.input.paths = std::move(paths);
  c.input.video.max_frames = kFrames;
  c.transform.resize.width = 64;
  c.transform.resize.height = 48;
  c.batch.size = 8;
  c.devices = imgpipe::DeviceSelection::parse("cpu");
  return c;
}

std::string video() { return (imgpipe::test::opencv_data_dir() / "Megamind.avi").string(); }

const StageReport* row(const Report& r, std::string_view name) {
  const auto it = std::find_if(r.stages.begin(), r.stages.end(), [&](const StageReport& s) { return s.name == name; });
  return it == r.stages.end() ? nullptr : &*it;
}

std::string table(const Report& r) {
  std::ostringstream os;
  r.print_table(os);
  return os.str();
}

using imgpipe::test::contains;

}  // namespace

TEST_CASE("report samples: images, video frames and a mix are each counted and named by kind") {
  const std::size_t images = imgpipe::test::sample_images().size();
  SUBCASE("images only") {
    const Report r = Pipeline(config_for({imgpipe::test::sample_dir().string()})).run();
    CHECK(r.samples.images == images);
    CHECK(r.samples.frames == 0);
    CHECK(r.samples.unit == "images");
    CHECK(contains(table(r), std::to_string(images) + " images delivered,"));
  }
  SUBCASE("frames only") {
    const Report r = Pipeline(config_for({video()})).run();
    CHECK(r.samples.images == 0);
    CHECK(r.samples.frames == kFrames);
    CHECK(r.samples.unit == "frames");
    CAPTURE(table(r));
    CHECK(contains(table(r), std::to_string(kFrames) + " frames delivered,"));
    CHECK(contains(table(r), "frames/s end to end"));
    CHECK_FALSE(contains(table(r), "images/s end to end"));
  }
  SUBCASE("a mix") {
    const Report r = Pipeline(config_for({imgpipe::test::sample_dir().string(), video()})).run();
    CHECK(r.samples.images == images);
    CHECK(r.samples.frames == kFrames);
    CHECK(r.inputs.delivered == images + kFrames);
    CHECK(r.samples.unit == "samples");
    CHECK(contains(table(r), std::to_string(images + kFrames) + " samples delivered (" + std::to_string(images) +
                                 " images, " + std::to_string(kFrames) + " frames),"));
    const nlohmann::json j = nlohmann::json::parse(r.to_json());
    CHECK(j["samples"]["images"] == images);
    CHECK(j["samples"]["frames"] == kFrames);
    CHECK(j["samples"]["unit"] == "samples");
    CHECK(j["samples_per_s"].get<double>() > 0);
    CHECK(j["samples_per_s"] == j["images_per_s"]);  // the deprecated alias
    CHECK(j["steady_samples_per_s"] == j["steady_images_per_s"]);
  }
}

TEST_CASE("report samples: frames an application pushes count as frames, encoded pictures as images") {
  auto src = std::make_shared<imgpipe::PushSource>(8);
  const auto files = imgpipe::test::sample_images();
  REQUIRE(files.size() >= 5);
  for (int i = 0; i < 2; ++i)
    REQUIRE(src->push_encoded(imgpipe::test::read_bytes(files[i]), "enc") == imgpipe::PushSource::Result::ok);
  for (int i = 2; i < 5; ++i) {
    const cv::Mat bgr = cv::imread(files[i].string(), cv::IMREAD_COLOR);
    REQUIRE_FALSE(bgr.empty());
    REQUIRE(src->push_frame({bgr.data, bgr.cols, bgr.rows, bgr.step, imgpipe::PixelFormat::bgr}, "cam") ==
            imgpipe::PushSource::Result::ok);
  }
  src->close();
  RunOptions o;
  o.source = src;
  const Report r = Pipeline(config_for({})).run({}, o);
  CHECK(r.inputs.delivered == 5);
  CHECK(r.samples.images == 2);
  CHECK(r.samples.frames == 3);
  CHECK(r.samples.unit == "samples");
}

TEST_CASE("report samples: video decoding has its own row, the source's time is its own") {
  RunOptions o;
  o.timeline_interval_s = 0.01;
  const Report r = Pipeline(config_for({video()})).run({}, o);
  CAPTURE(table(r));
  REQUIRE_FALSE(r.stages.empty());
  const StageReport* decoder = row(r, "video cpu");
  const StageReport* source = row(r, "source");
  REQUIRE(decoder != nullptr);
  REQUIRE(source != nullptr);
  CHECK(&r.stages.front() == decoder);  // upstream of the source
  CHECK(decoder->unit == "frames");
  CHECK(decoder->items == r.video.cpu_frames);
  CHECK(decoder->items == kFrames);
  CHECK(decoder->concurrency == 1);  // one video
  CHECK(decoder->bytes > 0);
  CHECK(decoder->items_per_s);
  // The host backend has no NVDEC: no row for it.
  CHECK(row(r, "video nvdec") == nullptr);
  // The source hands out frames the decoder made: its waits for them are
  // not its time (they were all of it before the decoder had a row).
  CHECK(source->items == kFrames);
  CHECK(source->busy_s < 0.5 * decoder->busy_s);
  CHECK(r.bottleneck != "source");
  // The table's row, and the note that says what it is.
  const std::string t = table(r);
  CHECK(contains(t, "\nvideo cpu "));
  CHECK(contains(t.substr(t.find("\nvideo cpu ")), std::to_string(kFrames) + " frames"));
  CHECK(contains(t, "the source's time leaves out its waits for their frames"));
  // The timeline has a lane per row shown, the NVDEC lane it sampled left out.
  REQUIRE(r.timeline.stages.size() == r.stages.size());
  for (std::size_t j = 0; j < r.stages.size(); ++j) CHECK(r.timeline.stages[j] == r.stages[j].name);
  REQUIRE_FALSE(r.timeline.ticks.empty());
  for (const auto& k : r.timeline.ticks) CHECK(k.items.size() == r.stages.size());
  CHECK(r.timeline.ticks.back().items.front() == decoder->items);
  // A run of images has no video rows.
  const Report images = Pipeline(config_for({imgpipe::test::sample_dir().string()})).run();
  CHECK(std::none_of(images.stages.begin(), images.stages.end(),
                     [](const StageReport& s) { return imgpipe::is_video_decoder_row(s.name); }));
}
