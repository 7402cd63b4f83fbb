// Builds an image corpus from real photographs: N crops cut at a random scale
// and offset, resized and written as JPEG (or PNG). This is how the W1
// benchmark corpus (512+ 1920x1080 JPEGs, quality 90), the W3 training corpus
// (ImageNet-like sizes in class folders) and the shipped sample images are
// made.
//
// Usage: imgpipe_make_corpus --from DIR --out DIR [--count N] [--width W]
//        [--height H] [--sizes fixed|imagenet] [--classes K] [--first I]
//        [--quality Q] [--seed S] [--png-every K]
//
// --sizes imagenet draws each image's size as ImageNet's training images
// come (see draw_imagenet_size); --classes K writes image i into the class
// folder class_(i mod K) as torchvision's ImageFolder reads them; --first I
// numbers the images from I, so that blocks made in parallel (each its own
// --seed) fill one folder. Every draw comes from --seed: the same arguments
// give the same files.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace fs = std::filesystem;

namespace {

// An ImageNet-like size: most training images are 500x375 (a 4:3 landscape
// whose short side is 375), the rest spread around it, about one in fourteen
// a portrait. The short side is 375 for 60% of the images, else log-uniform
// in [150, 680]; the long/short ratio is 4:3 for 60%, 3:2 for 17%, 16:9 for
// 8%, 1:1 for 5%, else log-uniform in [1, 2]; 7% are portraits. The
// expected size is then about 500x375 (the tool prints the corpus's mean).
cv::Size draw_imagenet_size(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double short_side = u(rng) < 0.60 ? 375.0 : 150.0 * std::exp(u(rng) * std::log(680.0 / 150.0));
  const double pick = u(rng);
  const double ratio = pick < 0.60   ? 4.0 / 3.0
                       : pick < 0.77 ? 1.5
                       : pick < 0.85 ? 16.0 / 9.0
                       : pick < 0.90 ? 1.0
                                     : std::exp(u(rng) * std::log(2.0));
  const bool portrait = u(rng) < 0.07;
  const int s = std::max(1, static_cast<int>(std::lround(short_side)));
  const int l = std::max(s, static_cast<int>(std::lround(short_side * ratio)));
  return portrait ? cv::Size(s, l) : cv::Size(l, s);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cut a corpus of crops from real photos"};
  std::string from, out, sizes = "fixed";
  int count = 512, width = 1920, height = 1080, quality = 90, png_every = 0, classes = 0, first = 0;
  unsigned seed = 1;
  app.add_option("--from", from, "folder of source photos")->required()->check(CLI::ExistingDirectory);
  app.add_option("--out", out, "output folder")->required();
  app.add_option("--count", count, "images to write")->check(CLI::Range(1, 1000000));
  app.add_option("--width", width, "--sizes fixed: every image's width")->check(CLI::Range(1, 16384));
  app.add_option("--height", height, "--sizes fixed: every image's height")->check(CLI::Range(1, 16384));
  app.add_option("--sizes", sizes, "fixed: every image --width x --height; imagenet: sizes and aspect ratios "
                                   "drawn as ImageNet's training images (about 500x375 on average)")
      ->check(CLI::IsMember({"fixed", "imagenet"}));
  app.add_option("--classes", classes, "write image i into OUT/class_(i mod K)/ (0: all in OUT)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--first", first, "number of the first image (img_FIRST...): blocks made apart fill one folder")
      ->check(CLI::Range(0, 100000000));
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
  const int class_digits = classes > 0 ? static_cast<int>(fmt::format("{}", classes - 1).size()) : 0;
  std::mt19937 rng(seed);
  double sum_w = 0, sum_h = 0;
  std::uintmax_t bytes = 0;
  for (int i = 0; i < count; ++i) {
    const int index = first + i;
    const cv::Mat& src = photos[i % photos.size()];
    const cv::Size size = sizes == "imagenet" ? draw_imagenet_size(rng) : cv::Size(width, height);
    // A crop with the target's aspect, between 40% and 100% of the largest
    // that fits, at a random offset.
    const double aspect = static_cast<double>(size.width) / size.height;
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
    cv::resize(src(cv::Rect(x, y, cw, ch)), img, size, 0, 0, cv::INTER_AREA);
    const bool png = png_every > 0 && (i + 1) % png_every == 0;
    fs::path dir = out;
    if (classes > 0) {
      dir /= fmt::format("class_{:0{}d}", index % classes, class_digits);
      fs::create_directories(dir);
    }
    const std::string name = (dir / fmt::format("img_{:05d}.{}", index, png ? "png" : "jpg")).string();
    const std::vector<int> params = png ? std::vector<int>{cv::IMWRITE_PNG_COMPRESSION, 6}
                                        : std::vector<int>{cv::IMWRITE_JPEG_QUALITY, quality};
    if (!cv::imwrite(name, img, params)) {
      std::cerr << "cannot write " << name << "\n";
      return 1;
    }
    sum_w += size.width;
    sum_h += size.height;
    bytes += fs::file_size(name);
  }
  std::cout << fmt::format("wrote {} images to {} (mean {:.0f}x{:.0f}, {:.1f} kB a file{})\n", count, out,
                           sum_w / count, sum_h / count, bytes / 1000.0 / count,
                           classes > 0 ? fmt::format(", {} class folders", classes) : "");
  return 0;
}
