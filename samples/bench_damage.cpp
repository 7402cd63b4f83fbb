// How the CPU video route (codecs::VideoFile) meets damage: random bytes of
// a video flipped, --flips times, each copy decoded with 1, 2, 4 and 8
// threads and its frames compared with the undamaged file's. Each copy is
// counted as one of
//   broke    the file broke, and every frame delivered equals the whole file's
//   whole    it played to the end with every frame right (no video data hit)
//   wrong    a delivered frame differs from the whole file's (damage that
//            no decoder or checksum saw)
// and the copies whose verdict depends on the threads are counted apart.
// docs/video.md quotes its figures.
//   imgpipe_bench_damage VIDEO [--flips 25] [--seed 1]
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "codecs/video/frame_hash.hpp"
#include "codecs/video/video_file.hpp"

namespace fs = std::filesystem;
using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;

namespace {

struct Outcome {
  std::vector<std::uint64_t> frames;
  bool broke = false;
};

Outcome decode(const std::string& path, int threads) {
  Outcome o;
  try {
    VideoFile v(path, {threads, nullptr, nullptr});
    std::shared_ptr<VideoFrame> f;
    VideoFile::Next n;
    while ((n = v.next(f)) == VideoFile::Next::frame) o.frames.push_back(imgpipe::codecs::frame_hash(*f));
    o.broke = n == VideoFile::Next::broken;
  } catch (const std::exception&) {
    o.broke = true;  // cannot be opened: nothing delivered
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Random bytes of a video flipped: does the CPU video route break, and deliver only right frames?"};
  std::string video;
  int flips = 25;
  unsigned seed = 1;
  app.add_option("video", video, "the undamaged video")->required()->check(CLI::ExistingFile);
  app.add_option("--flips", flips, "damaged copies to try")->check(CLI::Range(1, 100000));
  app.add_option("--seed", seed, "random seed");
  CLI11_PARSE(app, argc, argv);

  const Outcome truth = decode(video, 1);
  if (truth.broke || truth.frames.empty()) {
    fmt::print(stderr, "'{}' does not decode whole: it cannot be the reference\n", video);
    return 1;
  }
  std::ifstream in(video, std::ios::binary);
  const std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in), {}};
  const fs::path copy = fs::temp_directory_path() / fmt::format("imgpipe_damage_{}{}", seed, fs::path(video).extension().string());
  std::mt19937 rng(seed);
  const int threads[] = {1, 2, 4, 8};
  int broke[4] = {}, whole[4] = {}, wrong[4] = {}, differ = 0;
  for (int k = 0; k < flips; ++k) {
    std::vector<unsigned char> b = bytes;
    const std::size_t at = std::uniform_int_distribution<std::size_t>(b.size() / 10, b.size() * 9 / 10)(rng);
    const std::size_t len = std::vector<std::size_t>{4, 16, 64}[std::uniform_int_distribution<int>(0, 2)(rng)];
    for (std::size_t i = at; i < std::min(b.size(), at + len); ++i) b[i] ^= 0x5a;
    std::ofstream(copy, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    std::string first;  // the one-thread verdict: broke, frames delivered, all right
    bool same = true;
    for (int t = 0; t < 4; ++t) {
      const Outcome o = decode(copy.string(), threads[t]);
      bool right = o.frames.size() <= truth.frames.size();
      for (std::size_t i = 0; right && i < o.frames.size(); ++i) right = o.frames[i] == truth.frames[i];
      if (!right) ++wrong[t];
      else if (o.broke) ++broke[t];
      else ++whole[t];
      const std::string verdict = fmt::format("{}:{}:{}", o.broke, o.frames.size(), right);
      if (t == 0) first = verdict;
      same = same && verdict == first;
    }
    if (!same) ++differ;
  }
  fs::remove(copy);
  fmt::print("{}: {} frames, {} damaged copies ({} bytes flipped at 10-90% of the file)\n", video,
             truth.frames.size(), flips, "4, 16 or 64");
  fmt::print("{:>8} {:>6} {:>6} {:>6}\n", "threads", "broke", "whole", "wrong");
  for (int t = 0; t < 4; ++t) fmt::print("{:>8} {:>6} {:>6} {:>6}\n", threads[t], broke[t], whole[t], wrong[t]);
  fmt::print("copies whose verdict depends on the threads: {}\n", differ);
  return 0;
}
