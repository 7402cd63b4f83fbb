// Soak benchmark: one pipeline run many times over a folder with ~1% bad
// inputs, each run looping over the folder, in one process. Prints, per run,
// the images delivered and failed, the process's resident memory (RSS at the
// start, the most sampled inside the run, at the end, and after malloc_trim
// gives glibc's cached free memory back), the heap in use (mallinfo2) and the
// pinned bytes the pipeline holds, then whether they stayed flat from the end
// of the warm-up to the end of the last run. The warm-up is run 1 (allocator
// arenas, CUDA context, OpenCV), and with GPU JPEG decode every run until
// the first that found the Pipeline's decoder ready when it began: the
// decoder is made during run 1 and kept, so run 1 may use it for a few
// batches only, and its buffers reach their full size in the first run
// that uses it throughout.
//
// Usage: imgpipe_bench_soak [--dir FOLDER] [--copies 10] [--bad-every 100]
//        [--loop 20] [--runs 8] [--device auto|cpu|N] [--size 224]
//        [--tolerance-mb 16] [--heap-tolerance-mb 2] [--json FILE]
//
// The corpus: every image of --dir (default samples/data) copied --copies
// times, plus one bad file (rotating: truncated JPEG, text, zero bytes,
// damaged scan) for every --bad-every good ones. Exit status 1 when RSS
// (trimmed) grew by more than --tolerance-mb or the heap in use by more than
// --heap-tolerance-mb from the end of run 1 to the end of the last run, when
// the pinned bytes changed, or when a run lost an input.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "imgpipe/pipeline.hpp"

#ifndef IMGPIPE_SOURCE_DIR
#define IMGPIPE_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;
using Bytes = std::vector<char>;

namespace {

double rss_mb() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  f >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// Bytes malloc has handed out and not had back (glibc): a leak shows here
// whatever the allocator keeps cached.
double heap_in_use_mb() {
  const struct mallinfo2 m = ::mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1 << 20);
}

Bytes read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

void write_all(const fs::path& p, const Bytes& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

// Builds the corpus; returns {good, bad} file counts.
std::pair<int, int> make_corpus(const fs::path& src, const fs::path& dst, int copies, int bad_every) {
  std::vector<fs::path> images;
  for (const auto& e : fs::directory_iterator(src)) {
    const auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".png" || ext == ".jpeg")) images.push_back(e.path());
  }
  std::sort(images.begin(), images.end());
  if (images.empty()) throw std::runtime_error("no images in " + src.string());
  Bytes jpeg;
  for (const auto& p : images)
    if (p.extension() == ".jpg" || p.extension() == ".jpeg") {
      jpeg = read_all(p);
      break;
    }
  if (jpeg.empty()) throw std::runtime_error("no JPEG in " + src.string());
  int good = 0, bad = 0;
  for (int c = 0; c < copies; ++c)
    for (const auto& p : images) {
      fs::copy_file(p, dst / fmt::format("{:03d}_{}", c, p.filename().string()));
      if (++good % bad_every != 0) continue;
      const std::string name = fmt::format("{:03d}_bad{}", c, bad);
      switch (bad++ % 4) {
        case 0: write_all(dst / (name + ".jpg"), Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2)); break;
        case 1: write_all(dst / (name + ".png"), Bytes{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'}); break;
        case 2: write_all(dst / (name + ".jpg"), Bytes{}); break;
        default: {
          Bytes d = jpeg;
          for (std::size_t k = 0; k < 96; ++k) d[d.size() / 2 + k] = static_cast<char>((k * 37 + 11) % 255);
          write_all(dst / (name + ".jpg"), d);
        }
      }
    }
  return {good, bad};
}

struct RunFigures {
  std::uint64_t delivered = 0, failed = 0, discovered = 0;
  double seconds = 0, images_per_s = 0;
  double rss_start_mb = 0, rss_max_mb = 0, rss_end_mb = 0, rss_trimmed_mb = 0, heap_mb = 0;
  std::uint64_t pinned_bytes = 0, staging_bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"imgpipe soak benchmark: RSS and pinned bytes over a long looped run with ~1% bad inputs"};
  std::string dir = std::string(IMGPIPE_SOURCE_DIR) + "/samples/data";
  int copies = 10, bad_every = 100, loop = 20, runs = 8, size = 224;
  double tolerance_mb = 16, heap_tolerance_mb = 2;
  std::string device = "auto", json_path;
  app.add_option("--dir", dir, "folder of good images")->check(CLI::ExistingDirectory);
  app.add_option("--copies", copies, "copies of each image in the corpus")->check(CLI::PositiveNumber);
  app.add_option("--bad-every", bad_every, "one bad file per this many good ones")->check(CLI::PositiveNumber);
  app.add_option("--loop", loop, "input.loop of each run")->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "runs of the same pipeline")->check(CLI::Range(2, 100000));
  app.add_option("--size", size, "square resize target")->check(CLI::PositiveNumber);
  app.add_option("--device", device, "auto, cpu or a CUDA ordinal");
  app.add_option("--tolerance-mb", tolerance_mb, "allowed RSS growth (after malloc_trim) from run 1 to the last");
  app.add_option("--heap-tolerance-mb", heap_tolerance_mb, "allowed growth of the heap in use from run 1 to the last");
  app.add_option("--json", json_path, "write the figures as JSON");
  CLI11_PARSE(app, argc, argv);

  const fs::path corpus = fs::temp_directory_path() / fmt::format("imgpipe-soak-{}", ::getpid());
  fs::create_directories(corpus);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{corpus};

  try {
    const auto [good, bad] = make_corpus(dir, corpus, copies, bad_every);
    imgpipe::Config cfg;
    cfg.input.paths = {corpus.string()};
    cfg.input.loop = loop;
    cfg.transform.resize.width = size;
    cfg.transform.resize.height = size;
    cfg.devices = imgpipe::DeviceSelection::parse(device);
    cfg.memory.track = true;  // leak report at shutdown
    imgpipe::Pipeline pipeline(cfg);
    fmt::print("soak: {} good + {} bad files ({:.2f}% bad), loop {}, {} runs, {}x{}, device {}\n", good, bad,
               100.0 * bad / (good + bad), loop, runs, size, size, device);
    fmt::print("{:>4} {:>9} {:>7} {:>7} {:>8} {:>10} {:>9} {:>9} {:>10} {:>10} {:>10}\n", "run", "delivered",
               "failed", "img/s", "seconds", "RSS start", "RSS max", "RSS end", "RSS trim", "heap used", "pinned MB");
    std::vector<RunFigures> figs;
    std::size_t base = 0;  // the warm-up's last run
    bool base_found = false;
    bool lost = false;
    for (int r = 0; r < runs; ++r) {
      RunFigures f;
      f.rss_start_mb = f.rss_max_mb = rss_mb();
      std::uint64_t batches = 0;
      const auto t0 = std::chrono::steady_clock::now();
      const imgpipe::Report rep = pipeline.run([&](const imgpipe::DeviceBatch&) {
        if (++batches % 16 == 0) f.rss_max_mb = std::max(f.rss_max_mb, rss_mb());
      });
      f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      f.rss_end_mb = rss_mb();
      f.rss_max_mb = std::max(f.rss_max_mb, f.rss_end_mb);
      f.heap_mb = heap_in_use_mb();
      ::malloc_trim(0);  // what the allocator keeps cached goes back to the system
      f.rss_trimmed_mb = rss_mb();
      f.delivered = rep.inputs.delivered;
      f.failed = rep.inputs.failed;
      f.discovered = rep.inputs.discovered;
      f.images_per_s = rep.images_per_s;
      f.pinned_bytes = rep.memory.pinned_bytes;
      if (!base_found && rep.decode.engines_ready_s <= 0) {  // no decoder (-1), or ready at the start (0)
        base = figs.size();
        base_found = true;
      }
      f.staging_bytes = rep.memory.staging_bytes;
      const auto expect_good = static_cast<std::uint64_t>(good) * static_cast<std::uint64_t>(loop);
      const auto expect_bad = static_cast<std::uint64_t>(bad) * static_cast<std::uint64_t>(loop);
      if (f.delivered != expect_good || f.failed != expect_bad || f.discovered != f.delivered + f.failed) {
        fmt::print(stderr, "run {}: expected {} delivered and {} failed, got {} and {} of {}\n", r + 1, expect_good,
                   expect_bad, f.delivered, f.failed, f.discovered);
        lost = true;
      }
      fmt::print("{:>4} {:>9} {:>7} {:>7.0f} {:>8.2f} {:>10.1f} {:>9.1f} {:>9.1f} {:>10.1f} {:>10.1f} {:>10.1f}\n",
                 r + 1, f.delivered, f.failed, f.images_per_s, f.seconds, f.rss_start_mb, f.rss_max_mb, f.rss_end_mb,
                 f.rss_trimmed_mb, f.heap_mb, f.pinned_bytes / 1048576.0);
      std::fflush(stdout);
      figs.push_back(f);
    }
    // After malloc_trim: what the process really holds, without the freed
    // memory glibc keeps cached in its arenas (RSS end shows that much more).
    if (base + 1 >= figs.size()) base = 0;  // too few runs after the warm-up: measure from run 1
    const RunFigures& first = figs[base];
    const double growth = figs.back().rss_trimmed_mb - first.rss_trimmed_mb;
    const double heap_growth = figs.back().heap_mb - first.heap_mb;
    const bool pinned_flat = std::all_of(figs.begin(), figs.end(),
                                         [&](const RunFigures& f) { return f.pinned_bytes == figs.front().pinned_bytes; });
    std::uint64_t total = 0;
    for (const auto& f : figs) total += f.delivered + f.failed;
    fmt::print(
        "inputs handled: {}; after run {} (the warm-up's last) / run {}: RSS {:.1f} / {:.1f} MB ({:+.1f} MB), heap in "
        "use {:.1f} / {:.1f} MB ({:+.2f} MB), pinned {:.1f} / {:.1f} MB ({}); from run 1: RSS {:+.1f} MB, heap "
        "{:+.2f} MB\n",
        total, base + 1, runs, first.rss_trimmed_mb, figs.back().rss_trimmed_mb, growth, first.heap_mb,
        figs.back().heap_mb, heap_growth, first.pinned_bytes / 1048576.0, figs.back().pinned_bytes / 1048576.0,
        pinned_flat ? "constant" : "CHANGED", figs.back().rss_trimmed_mb - figs.front().rss_trimmed_mb,
        figs.back().heap_mb - figs.front().heap_mb);
    const bool flat = growth <= tolerance_mb && heap_growth <= heap_tolerance_mb && pinned_flat && !lost;
    fmt::print("soak: {}\n", flat ? "flat" : "NOT FLAT");
    if (!json_path.empty()) {
      nlohmann::json j;
      j["good_files"] = good;
      j["bad_files"] = bad;
      j["loop"] = loop;
      j["device"] = device;
      j["size"] = size;
      j["baseline_run"] = base + 1;
      j["rss_growth_mb"] = growth;
      j["heap_growth_mb"] = heap_growth;
      j["pinned_constant"] = pinned_flat;
      j["flat"] = flat;
      for (const auto& f : figs)
        j["runs"].push_back({{"delivered", f.delivered}, {"failed", f.failed}, {"seconds", f.seconds},
                             {"images_per_s", f.images_per_s}, {"rss_start_mb", f.rss_start_mb},
                             {"rss_max_mb", f.rss_max_mb}, {"rss_end_mb", f.rss_end_mb},
                             {"rss_trimmed_mb", f.rss_trimmed_mb}, {"heap_in_use_mb", f.heap_mb},
                             {"pinned_bytes", f.pinned_bytes}, {"staging_bytes", f.staging_bytes}});
      std::ofstream(json_path) << j.dump(2) << '\n';
    }
    return flat ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "imgpipe_bench_soak: {}\n", e.what());
    return 1;
  }
}
