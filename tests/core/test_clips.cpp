// Which frames each clip takes (imgpipe/clips.hpp): random starts uniform
// over those that fit, keyed by (seed, epoch, video), reproducible and new
// every epoch; uniform and every placements; videos shorter than a clip
// skipped, padded or looped; and the config's checks of the clip keys.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "imgpipe/clips.hpp"
#include "imgpipe/config.hpp"

using imgpipe::ClipConfig;
using imgpipe::ClipPlace;
using imgpipe::ClipPlan;
using imgpipe::ClipShort;
using imgpipe::plan_clips;

namespace {

ClipConfig clips(int length, int stride, int per_video, ClipPlace place = ClipPlace::random) {
  ClipConfig c;
  c.length = length;
  c.stride = stride;
  c.per_video = per_video;
  c.place = place;
  return c;
}

}  // namespace

TEST_CASE("clips: a clip is length frames stride apart, its start within the video, by first frame") {
  const ClipConfig c = clips(16, 2, 3);
  const ClipPlan p = plan_clips(c, 300, 7, 0, 5);
  REQUIRE(p.clips.size() == 3);
  CHECK(p.skipped.empty());
  CHECK_FALSE(p.filled);
  for (std::size_t k = 0; k < p.clips.size(); ++k) {
    const auto& f = p.clips[k];
    REQUIRE(f.size() == 16);
    for (std::size_t j = 1; j < f.size(); ++j) CHECK(f[j] - f[j - 1] == 2);
    CHECK(f.front() >= 0);
    CHECK(f.back() <= 299);
    if (k > 0) CHECK(p.clips[k - 1].front() <= f.front());
  }
  CHECK(c.span() == 31);
}

TEST_CASE("clips: random starts are uniform over the starts that fit, reproducible, and new every epoch") {
  const ClipConfig c = clips(8, 3, 1);  // span 22
  const std::int64_t frames = 41;       // starts 0..19: 20 of them
  std::vector<int> hist(20, 0);
  constexpr int kVideos = 40000;
  for (int v = 0; v < kVideos; ++v) {
    const ClipPlan p = plan_clips(c, frames, 1, 0, static_cast<std::uint64_t>(v));
    REQUIRE(p.clips.size() == 1);
    const std::int64_t s = p.clips[0].front();
    REQUIRE(s >= 0);
    REQUIRE(s < 20);
    ++hist[static_cast<std::size_t>(s)];
  }
  // Each start's count is binomial(40000, 1/20): mean 2000, sd ~43.6; 5 sd.
  for (int n : hist) CHECK(std::abs(n - kVideos / 20) < 220);
  // Reproducible with the seed; another epoch, video or seed draws anew.
  const ClipConfig k = clips(4, 1, 4);
  const auto a = plan_clips(k, 1000, 3, 2, 9).clips;
  CHECK(plan_clips(k, 1000, 3, 2, 9).clips == a);
  CHECK(plan_clips(k, 1000, 3, 3, 9).clips != a);
  CHECK(plan_clips(k, 1000, 3, 2, 10).clips != a);
  CHECK(plan_clips(k, 1000, 4, 2, 9).clips != a);
  // Epochs draw different starts for most videos.
  int differ = 0;
  for (std::uint64_t v = 0; v < 100; ++v)
    differ += plan_clips(clips(16, 2, 1), 300, 0, 0, v).clips != plan_clips(clips(16, 2, 1), 300, 0, 1, v).clips;
  CHECK(differ > 90);
}

TEST_CASE("clips: uniform spreads the starts from the first frame to the last start that fits, and every steps") {
  {
    const ClipPlan p = plan_clips(clips(4, 2, 3, ClipPlace::uniform), 107, 0, 0, 0);  // span 7, last start 100
    REQUIRE(p.clips.size() == 3);
    CHECK(p.clips[0].front() == 0);
    CHECK(p.clips[1].front() == 50);
    CHECK(p.clips[2].front() == 100);
    CHECK(p.clips[2].back() == 106);
    // The same whatever the seed and epoch.
    CHECK(plan_clips(clips(4, 2, 3, ClipPlace::uniform), 107, 9, 4, 1).clips == p.clips);
    const ClipPlan one = plan_clips(clips(4, 2, 1, ClipPlace::uniform), 107, 0, 0, 0);
    REQUIRE(one.clips.size() == 1);
    CHECK(one.clips[0].front() == 50);
  }
  {
    ClipConfig c = clips(4, 1, 0, ClipPlace::every);  // span 4, step 0: the span
    ClipPlan p = plan_clips(c, 18, 0, 0, 0);
    REQUIRE(p.clips.size() == 4);  // 0, 4, 8, 12 (16 would need frames 16..19)
    CHECK(p.clips[3] == std::vector<std::int64_t>{12, 13, 14, 15});
    c.step = 6;
    p = plan_clips(c, 18, 0, 0, 0);
    REQUIRE(p.clips.size() == 3);  // 0, 6, 12
    CHECK(p.clips[1].front() == 6);
    c.per_video = 2;
    CHECK(plan_clips(c, 18, 0, 0, 0).clips.size() == 2);
  }
}

TEST_CASE("clips: a video shorter than a clip is skipped with its reason, padded with its last frame, or looped") {
  ClipConfig c = clips(6, 2, 2);  // span 11
  ClipPlan p = plan_clips(c, 7, 0, 0, 0);
  CHECK(p.clips.empty());
  CHECK(p.skipped.find("7 frames") != std::string::npos);
  CHECK(p.skipped.find("11 frames") != std::string::npos);
  CHECK(p.skipped.find("input.video.clips.short") != std::string::npos);
  c.shorter = ClipShort::pad;
  p = plan_clips(c, 7, 0, 0, 0);
  REQUIRE(p.clips.size() == 1);  // one clip, whatever per_video says
  CHECK(p.filled);
  CHECK(p.clips[0] == std::vector<std::int64_t>{0, 2, 4, 6, 6, 6});
  c.shorter = ClipShort::loop;
  p = plan_clips(c, 7, 0, 0, 0);
  REQUIRE(p.clips.size() == 1);
  CHECK(p.clips[0] == std::vector<std::int64_t>{0, 2, 4, 6, 1, 3});
  // Exactly the span fits: no filling.
  p = plan_clips(c, 11, 0, 0, 0);
  CHECK_FALSE(p.filled);
  CHECK(p.clips.size() == 2);
}

TEST_CASE("clips: the config's clip keys are checked together with the layout and the frame keys") {
  auto fails = [](const std::string& yaml, const std::string& key, const std::string& part) {
    try {
      (void)imgpipe::Config::from_yaml_string(yaml);
    } catch (const imgpipe::ConfigError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(key) != std::string::npos, e.what());
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
      return;
    }
    FAIL("no error for: " << yaml);
  };
  const imgpipe::Config ok = imgpipe::Config::from_yaml_string(
      "input: {video: {clips: {length: 16, stride: 2, per_video: 1, place: random, short: pad, layout: tchw}}}\n");
  CHECK(ok.input.video.clips.length == 16);
  CHECK(ok.input.video.clips.shorter == ClipShort::pad);
  CHECK(ok.input.video.clips.layout == imgpipe::ClipLayout::tchw);
  CHECK(imgpipe::Config::from_yaml_string(ok.to_yaml()) == ok);
  fails("input: {video: {clips: {length: 8, layout: thwc}}}\n", "input.video.clips.layout", "transform.layout nhwc");
  fails("input: {video: {clips: {length: 8}}}\ntransform: {layout: nhwc}\n", "input.video.clips.layout",
        "transform.layout nchw");
  fails("input: {video: {clips: {length: 8, per_video: 0}}}\n", "input.video.clips.per_video", "place every");
  fails("input: {video: {clips: {length: 8, step: 4}}}\n", "input.video.clips.step", "place every");
  fails("input: {video: {clips: {length: 8, place: sometimes}}}\n", "input.video.clips.place", "random");
  fails("input: {video: {clips: {lenght: 8}}}\n", "input.video.clips.lenght", "length");
}
