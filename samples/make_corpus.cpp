// Builds an image corpus from real photographs: N crops cut at a random scale
// and offset, resized to WxH and written as JPEG (or PNG). This is how the W1
// benchmark corpus (512+ 1920x1080 JPEGs, quality 90) and the shipped sample
// images are made.
//
// Usage: imgpipe_make_corpus --from DIR --out DIR [--count N] [--width W]
//        [--height H] [--quality Q] [--seed S] [--png-every K]
#include <filesystem>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{"cut a corpus of crops from real photos"};
  std::string from, out;
  int count = 512, width = 1920, height = 1080, quality = 90, png_every = 0;
  unsigned seed = 1;
  app.add_option("--from", from, "folder of source photos")->required()->check(CLI::ExistingDirectory);
  app.add_option("--out", out, "output folder")->required();
  app.add_option("--count", count, "images to write")->check(CLI::Range(1, 1000000));
  app.add_option("--width", width)->check(CLI::Range(1, 16384));
  app.add_option("--height", height)->check(CLI::Range(1, 16384));
  app.add_option("--quality", quality, "JPEG quality")->check(CLI::Range(1, 100));
  app.add_option("--seed", seed);
  app.add_option("--png-every", png_every, "write every K-th image as PNG (0: never)");
  CLI11_PARSE(app, argc, argv);

  std::vector<fs::path> sources;
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file()) sources.push_back(e.path());
  std::sort(sources.begin(), sources.end());
  std::vector<cv::Mat> photos;
  for (const auto& p : sources) {
    cv::Mat m = cv::imread(p.string(), cv::IMREAD_COLOR);
    if (!m.empty()) photos.push_back(m);
  }
  if (photos.empty()) {
    std::cerr << "no readable photos in " << from << "\n";
    return 1;
  }
  fs::create_directories(out);
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    const cv::Mat& src = photos[i % photos.size()];
    // A crop with the target's aspect, between 40% and 100% of the largest
    // that fits, at a random offset.
    const double aspect = static_cast<double>(width) / height;
    int cw = src.cols, ch = static_cast<int>(cw / aspect);
    if (ch > src.rows) {
      ch = src.rows;
      cw = static_cast<int>(ch * aspect);
    }
    const double f = std::uniform_real_distribution<double>(0.4, 1.0)(rng);
    cw = std::max(1, static_cast<int>(cw * f));
    ch = std::max(1, static_cast<int>(ch * f));
    const int x = std::uniform_int_distribution<int>(0, src.cols - cw)(rng);
    const int y = std::uniform_int_distribution<int>(0, src.rows - ch)(rng);
    cv::Mat img;
    cv::resize(src(cv::Rect(x, y, cw, ch)), img, cv::Size(width, height), 0, 0, cv::INTER_AREA);
    const bool png = png_every > 0 && (i + 1) % png_every == 0;
    const std::string name = (fs::path(out) / fmt::format("img_{:05d}.{}", i, png ? "png" : "jpg")).string();
    const std::vector<int> params = png ? std::vector<int>{cv::IMWRITE_PNG_COMPRESSION, 6}
                                        : std::vector<int>{cv::IMWRITE_JPEG_QUALITY, quality};
    if (!cv::imwrite(name, img, params)) {
      std::cerr << "cannot write " << name << "\n";
      return 1;
    }
  }
  std::cout << "wrote " << count << " images to " << out << "\n";
  return 0;
}
