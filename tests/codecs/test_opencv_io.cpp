// OpenCV's image codecs and video capture on demand (codecs/opencv_io): the
// module's functions do what OpenCV's own do; the CLI loads neither
// imgcodecs nor videoio for JPEGs and video files, loads the module for a
// PNG, and without the module reports the PNG failed with the loader's
// reason while the rest is delivered.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include "codecs/opencv_io/opencv_io.hpp"
#include "common.hpp"
#include "imgpipe/error.hpp"

namespace fs = std::filesystem;
namespace io = imgpipe::codecs::opencv_io;

namespace {

using imgpipe::test::q;

using imgpipe::test::contains;

// A folder of two JPEGs, a PNG and a video file (links to the shipped ones).
void fill_mixed(const fs::path& d) {
  const fs::path data = imgpipe::test::sample_dir();
  fs::create_symlink(data / "img_00000.jpg", d / "a.jpg");
  fs::create_symlink(data / "img_00001.jpg", d / "b.jpg");
  fs::create_symlink(data / "img_00009.png", d / "c.png");
  fs::create_symlink(imgpipe::test::opencv_data_dir() / "vtest.avi", d / "d.avi");
}

}  // namespace

TEST_CASE("opencv io: the module's image decode and video capture are OpenCV's own") {
  const io::Api& a = io::api();
  CHECK(a.version == io::kApiVersion);
  CHECK(&io::api() == &a);  // loaded once
  // A PNG decoded through the module, against cv::imdecode in this process.
  const cv::Mat png = cv::imread((imgpipe::test::sample_dir() / "img_00009.png").string(), cv::IMREAD_COLOR);
  REQUIRE(!png.empty());
  std::vector<unsigned char> bytes;
  REQUIRE(cv::imencode(".png", png, bytes));
  const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, bytes.data());
  cv::Mat got;
  a.imdecode(buf, cv::IMREAD_COLOR, &got);
  REQUIRE(got.size() == png.size());
  CHECK(cv::norm(got, png, cv::NORM_INF) == 0);
  // Garbage: no decoder takes it, nothing made.
  const unsigned char junk[16] = {1, 2, 3};
  cv::Mat none;
  a.imdecode(cv::Mat(1, 16, CV_8UC1, const_cast<unsigned char*>(junk)), cv::IMREAD_COLOR, &none);
  CHECK(none.empty());
  // A video file through the module's capture, frame for frame as OpenCV's.
  CHECK(a.has_backend(cv::CAP_FFMPEG));
  const std::string avi = (imgpipe::test::opencv_data_dir() / "vtest.avi").string();
  io::Capture cap;
  REQUIRE(cap.open(avi, cv::CAP_FFMPEG, {}));
  cv::VideoCapture ref(avi, cv::CAP_FFMPEG);
  REQUIRE(ref.isOpened());
  CHECK(cap.get(cv::CAP_PROP_FRAME_COUNT) == ref.get(cv::CAP_PROP_FRAME_COUNT));
  CHECK(cap.grab());
  CHECK(ref.grab());
  for (int i = 0; i < 3; ++i) {
    cv::Mat f, r;
    REQUIRE(cap.read(f));
    REQUIRE(ref.read(r));
    CHECK(cv::norm(f, r, cv::NORM_INF) == 0);
  }
  io::Capture closed;
  CHECK_FALSE(closed.open((imgpipe::test::sample_dir() / "no_such.avi").string(), cv::CAP_FFMPEG, {}));
}

TEST_CASE("opencv io: JPEGs and video files load neither imgcodecs nor videoio, a PNG loads the module, or fails with the loader's reason") {
  imgpipe::test::TempDir d;
  fs::create_directories(d / "mixed");
  fill_mixed(d / "mixed");
  fs::create_directories(d / "plain");
  fs::create_symlink(imgpipe::test::sample_dir() / "img_00000.jpg", d / "plain" / "a.jpg");
  fs::create_symlink(imgpipe::test::opencv_data_dir() / "vtest.avi", d / "plain" / "d.avi");
  const std::string common = " --device cpu --set input.video.max_frames=3 --set batch.size=4";
  std::string out;
  // The dynamic loader's own account of every library it loads.
  REQUIRE(imgpipe::test::run_cli("--input " + q(d / "plain") + common, &out, "LD_DEBUG=files") == 0);
  CHECK(contains(out, "libavcodec"));  // the account is there
  CHECK_FALSE(contains(out, "libopencv_imgcodecs"));
  CHECK_FALSE(contains(out, "libopencv_videoio"));
  CHECK_FALSE(contains(out, "libimgpipe_opencv_io"));
  REQUIRE(imgpipe::test::run_cli("--input " + q(d / "mixed") + common, &out, "LD_DEBUG=files") == 0);
  CHECK(contains(out, "libimgpipe_opencv_io.so"));
  CHECK(contains(out, "libopencv_imgcodecs"));
  // Without the module: the PNG fails, naming where the module was looked
  // for and why; the JPEGs and the video's frames are delivered.
  const fs::path report = d / "r.json";
  const int rc = imgpipe::test::run_cli("--input " + q(d / "mixed") + common + " --report " + q(report), &out,
                         "IMGPIPE_OPENCV_IO=" + q(d / "nowhere" / "libimgpipe_opencv_io.so"));
  CAPTURE(out);
  CHECK(rc == 0);  // input.on_error: skip (the default)
  std::ifstream f(report);
  const nlohmann::json j = nlohmann::json::parse(f);
  CHECK(j["inputs"]["delivered"] == 5);  // two JPEGs, three frames
  REQUIRE(j["inputs"]["failed"] == 1);
  const std::string why = j["inputs"]["failures"][0]["reason"];
  CHECK(contains(j["inputs"]["failures"][0]["path"].get<std::string>(), "c.png"));
  CHECK(contains(why, "cannot decode PNG"));
  CHECK(contains(why, "libimgpipe_opencv_io.so) could not be loaded"));
  CHECK(contains(why, (d / "nowhere" / "libimgpipe_opencv_io.so").string() + ": no such file"));
}
