// The bad-input corpus: real images (the shipped samples and opencv-doc's
// photos) mixed with every kind of bad input made from real files —
// truncations at several offsets, bit flips and damaged scans, zero-byte and
// text files, crafted huge-dimension PNG and JPEG headers, a broken and a
// fake video, a dangling and a looping symlink, a FIFO, a file that vanishes
// during the run. Every good image must come out bit for bit as in a clean
// run over the good images alone, every bad one must be reported once with
// its reason, and discovered = delivered + failed. Under ASan (CI) the same
// run also proves it leaks nothing.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using imgpipe::Config;
using imgpipe::DeviceBatch;
using imgpipe::Pipeline;
using imgpipe::Report;
using imgpipe::test::TempDir;
using Bytes = std::vector<unsigned char>;

namespace {

Bytes head(const Bytes& b, std::size_t n) { return Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)); }

std::size_t find_marker(const Bytes& b, unsigned char m) {
  for (std::size_t i = 2; i + 3 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == m) return i;
  FAIL("marker not found");
  return 0;
}

// Offset and length of the first IDAT chunk's data.
std::pair<std::size_t, std::size_t> first_idat(const Bytes& b) {
  std::size_t i = 8;
  while (i + 12 <= b.size()) {
    const std::size_t len = (std::size_t{b[i]} << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3];
    if (b[i + 4] == 'I' && b[i + 5] == 'D' && b[i + 6] == 'A' && b[i + 7] == 'T') return {i + 8, len};
    i += 12 + len;
  }
  FAIL("no IDAT");
  return {0, 0};
}

// A PNG signature and an IHDR claiming width x height (CRC left wrong: the
// size check comes first), then noise.
Bytes huge_png(std::uint32_t w, std::uint32_t h) {
  Bytes b{0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (const std::uint32_t v : {w, h})
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
  b.insert(b.end(), {8, 2, 0, 0, 0, 0, 0, 0, 0});
  b.insert(b.end(), 500, 0x5A);
  return b;
}

struct Expected {
  std::string reason;      // a substring of the reported reason
  bool frame_any = false;  // a video that broke: any frame > 0
};

struct Corpus {
  TempDir clean;  // the good images alone
  TempDir mixed;  // the good images and the bad files
  std::vector<std::string> good;              // file names, in both folders
  std::map<std::string, Expected> bad;        // file name -> what must be reported
  std::string cut_video = "b_video_cut.avi";  // its good frames are delivered too
  std::string vanishing = "z_vanishes.jpg";   // removed during the run
};

void add_bad(Corpus& c, const std::string& name, const Bytes& bytes, const std::string& reason) {
  imgpipe::test::write_bytes(c.mixed / name, bytes);
  c.bad[name] = {reason};
}

void build(Corpus& c) {
  // Good: the 20 shipped samples and real photos and drawings from opencv-doc
  // (colour and grey JPEGs, a grey and an RGBA PNG).
  std::vector<fs::path> good = imgpipe::test::sample_images();
  for (const char* n : {"fruits.jpg", "baboon.jpg", "building.jpg", "HappyFish.jpg", "basketball1.png", "cards.png"})
    good.push_back(imgpipe::test::opencv_data_dir() / n);
  for (std::size_t i = 0; i < good.size(); ++i) {
    const std::string name = fmt::format("g{}_{}", 100 + i, good[i].filename().string());
    fs::copy_file(good[i], c.clean / name);
    fs::copy_file(good[i], c.mixed / name);
    c.good.push_back(name);
  }
  const Bytes jpg = imgpipe::test::read_bytes(imgpipe::test::opencv_data_dir() / "fruits.jpg");
  const Bytes png = imgpipe::test::read_bytes(imgpipe::test::opencv_data_dir() / "basketball1.png");
  const std::string trunc_jpg = "corrupt JPEG: truncated (no end-of-image marker)";
  const std::string trunc_png = "corrupt PNG: truncated (no IEND chunk)";
  const std::string unknown = "not a recognised image format";
  // Truncated JPEGs: inside the signature, the headers, the scan, and just
  // the end-of-image marker missing.
  add_bad(c, "b_jpg_cut_1.jpg", head(jpg, 1), unknown);
  add_bad(c, "b_jpg_cut_300.jpg", head(jpg, 300), trunc_jpg);
  for (const int pct : {25, 50, 90})
    add_bad(c, fmt::format("b_jpg_cut_{}pct.jpg", pct), head(jpg, jpg.size() * pct / 100), trunc_jpg);
  add_bad(c, "b_jpg_cut_eoi.jpg", head(jpg, jpg.size() - 2), trunc_jpg);
  // Truncated PNGs: the signature, the IHDR, the image data, the IEND.
  add_bad(c, "b_png_cut_5.png", head(png, 5), unknown);
  add_bad(c, "b_png_cut_20.png", head(png, 20), trunc_png);
  add_bad(c, "b_png_cut_50pct.png", head(png, png.size() / 2), trunc_png);
  add_bad(c, "b_png_cut_iend.png", head(png, png.size() - 12), trunc_png);
  // Bit flips: one bit of a PNG's image data (its CRC catches it), and a
  // damaged stretch of a JPEG's scan (libjpeg loses sync and warns).
  const auto [idat, idat_len] = first_idat(png);
  std::mt19937 rng(2026);
  for (int k = 0; k < 3; ++k) {
    Bytes flipped = png;
    flipped[idat + rng() % idat_len] ^= static_cast<unsigned char>(1u << (rng() % 8));
    add_bad(c, fmt::format("b_png_bitflip_{}.png", k), flipped, "corrupt PNG");
  }
  {
    Bytes damaged = jpg;
    const std::size_t sos = find_marker(jpg, 0xDA);
    const std::size_t at = sos + (jpg.size() - sos) / 2;
    for (std::size_t k = 0; k < 96; ++k) damaged[at + k] = static_cast<unsigned char>(rng() % 255);
    add_bad(c, "b_jpg_damaged_scan.jpg", damaged, "corrupt JPEG: Corrupt JPEG data");
  }
  // Zero bytes, text, a crafted PNG header and a JPEG whose SOF claims
  // 65535 x 65535: rejected from the header, nothing allocated.
  add_bad(c, "b_empty.jpg", {}, "empty file (0 bytes)");
  {
    const std::string t = "id,label\n1,cat\n2,dog\n";
    add_bad(c, "b_text.png", Bytes(t.begin(), t.end()), unknown);
  }
  add_bad(c, "b_huge.png", huge_png(200000, 200000), "exceeds decode.max_pixels");
  {
    Bytes huge = jpg;
    const std::size_t sof = find_marker(jpg, 0xC0);
    for (int k = 5; k < 9; ++k) huge[sof + static_cast<std::size_t>(k)] = 0xFF;
    add_bad(c, "b_huge.jpg", huge, "exceeds decode.max_pixels");
  }
  // A video cut short (its frames before the cut are delivered) and a fake one.
  {
    const Bytes v = imgpipe::test::read_bytes(imgpipe::test::opencv_data_dir() / "vtest.avi");
    imgpipe::test::write_bytes(c.mixed / c.cut_video, head(v, v.size() / 12));
    c.bad[c.cut_video] = {"at frame", true};
    add_bad(c, "b_video_fake.mp4", Bytes(300, 'x'), "cannot open video");
  }
  // Links and special files: a dangling link, a link to itself, a FIFO (must
  // not block the read), and a directory link to its parent (not followed:
  // not an input, and no endless recursion).
  fs::create_symlink(c.mixed / "nowhere.jpg", c.mixed / "b_dangling.jpg");
  c.bad["b_dangling.jpg"] = {"dangling symbolic link"};
  fs::create_symlink(c.mixed / "b_self.jpg", c.mixed / "b_self.jpg");
  c.bad["b_self.jpg"] = {"cannot stat"};
  REQUIRE(::mkfifo((c.mixed / "b_fifo.jpg").c_str(), 0600) == 0);
  c.bad["b_fifo.jpg"] = {"not a regular file"};
  fs::create_directory(c.mixed / "sub");
  fs::create_directory_symlink(c.mixed.path(), c.mixed / "sub" / "loop");
  // A good file that is removed after discovery, before it is read.
  imgpipe::test::write_bytes(c.mixed / c.vanishing, jpg);
  c.bad[c.vanishing] = {"cannot open: No such file or directory"};
}

// Each delivered sample's tensor bytes, keyed by file name (and frame).
using Tensors = std::map<std::pair<std::string, std::int64_t>, Bytes>;

Report run_collect(const Config& cfg, Tensors& out, const std::function<void(const DeviceBatch&)>& also = {}) {
  Pipeline p(cfg);
  return p.run([&](const DeviceBatch& b) {
    if (also) also(b);
    const Bytes host = imgpipe::test::batch_to_host(b);
    const std::size_t per = b.bytes / b.size();
    for (std::size_t i = 0; i < b.size(); ++i) {
      const auto key = std::make_pair(fs::path(b.samples[i].path).filename().string(), b.samples[i].frame);
      REQUIRE_MESSAGE(out.count(key) == 0, "delivered twice: " << key.first << " frame " << key.second);
      out[key] = Bytes(host.begin() + static_cast<std::ptrdiff_t>(i * per),
                       host.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
    }
  });
}

}  // namespace

TEST_CASE("corpus: good images come out bit-exact as in a clean run, every bad input is reported once with its reason") {
  Corpus c;
  build(c);
  for (const auto& dev : imgpipe::test::test_devices()) {
    CAPTURE(dev.to_string());
    Config cfg;
    cfg.input.paths = {c.mixed.path().string()};
    cfg.transform.resize.width = 96;
    cfg.transform.resize.height = 64;
    cfg.batch.size = 4;
    cfg.pipeline.max_tokens = 4;  // little read-ahead: the vanishing file is read long after batch 0
    cfg.devices = dev;

    // The mixed run; the last file disappears while batch 0 is handed over.
    imgpipe::test::write_bytes(c.mixed / c.vanishing, imgpipe::test::read_bytes(c.clean / c.good.front()));
    Tensors mixed;
    const Report r = run_collect(cfg, mixed, [&](const DeviceBatch& b) {
      if (b.index == 0) fs::remove(c.mixed / c.vanishing);
    });
    const auto& in = r.inputs;
    CHECK_FALSE(r.interrupted);
    CHECK(in.discovered == in.delivered + in.failed);
    CHECK(in.dropped == 0);
    CHECK(in.not_processed == 0);
    REQUIRE(in.failures.size() == c.bad.size());
    std::int64_t cut_frames = -1;
    std::map<std::string, int> reported;
    for (const auto& f : in.failures) {
      const std::string name = fs::path(f.path).filename().string();
      CAPTURE(name);
      CAPTURE(f.reason);
      ++reported[name];
      REQUIRE(c.bad.count(name) == 1);  // no good image among the failures
      const Expected& e = c.bad.at(name);
      CHECK(f.reason.find(e.reason) != std::string::npos);
      if (e.frame_any) {
        CHECK(f.frame > 0);
        cut_frames = f.frame;
      } else if (name.ends_with(".mp4")) {
        CHECK(f.frame == 0);
      } else {
        CHECK(f.frame == -1);
      }
    }
    for (const auto& [name, n] : reported) CHECK_MESSAGE(n == 1, name << " reported " << n << " times");
    REQUIRE(cut_frames > 0);
    // Each video frame counts as an input: the cut video's delivered frames
    // and its failure.
    CHECK(in.discovered == c.good.size() + c.bad.size() + static_cast<std::uint64_t>(cut_frames));
    CHECK(in.delivered == c.good.size() + static_cast<std::uint64_t>(cut_frames));
    CHECK(mixed.size() == in.delivered);

    // The clean run: the good images, and the intact video's first frames.
    fs::copy_file(imgpipe::test::opencv_data_dir() / "vtest.avi", c.clean / c.cut_video,
                  fs::copy_options::overwrite_existing);
    Config clean_cfg = cfg;
    clean_cfg.input.paths = {c.clean.path().string()};
    clean_cfg.input.video.max_frames = cut_frames;
    Tensors clean;
    const Report rc = run_collect(clean_cfg, clean);
    CHECK(rc.inputs.failed == 0);
    REQUIRE(clean.size() == mixed.size());
    for (const auto& [key, bytes] : clean) {
      CAPTURE(key.first);
      CAPTURE(key.second);
      REQUIRE(mixed.count(key) == 1);
      CHECK(mixed.at(key) == bytes);
    }
    for (const auto& name : c.good) CHECK_MESSAGE(mixed.count({name, -1}) == 1, name << " not delivered");
  }
}
