// Writes the hostile JPEG corpus (tests/hostile_jpegs.hpp) into DIR, one
// <class>.jpg each, and DIR/labels.tsv: file, libjpeg's verdict ("ok" or
// "rejected"), libjpeg's message, the probe's reason, entropy-only damage.
// Run the folder through the CLI with decode.where cpu, gpu and auto and
// compare the delivered and failed lists (issue 28).
//   imgpipe_make_hostile_jpegs DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <opencv2/core.hpp>

#include "codecs/image/libjpeg/jpeg_decode.hpp"
#include "codecs/parse/image_header.hpp"
#include "codecs/parse/jpeg_checks.hpp"
#include "hostile_jpegs.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: imgpipe_make_hostile_jpegs DIR\n";
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream labels(dir / "labels.tsv");
  if (ec || !labels) {
    std::cerr << "imgpipe_make_hostile_jpegs: cannot write into " << dir << "\n";
    return 1;
  }
  labels << "file\tlibjpeg\tmessage\tprobe\tentropy_damage\n";
  int n = 0;
  for (const auto& h : imgpipe::test::hostile_jpegs()) {
    const std::string file = h.name + ".jpg";
    std::ofstream out(dir / file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(h.bytes.data()), static_cast<std::streamsize>(h.bytes.size()));
    if (!out) {
      std::cerr << "imgpipe_make_hostile_jpegs: cannot write " << (dir / file) << "\n";
      return 1;
    }
    std::string message;
    if (!imgpipe::codecs::jpeg_has_eoi(h.bytes)) {
      message = "truncated (no end-of-image marker)";
    } else {
      cv::Mat pixels;
      message = imgpipe::codecs::decode_jpeg(h.bytes, {}, pixels);
    }
    for (char& c : message)
      if (c == '\t' || c == '\n') c = ' ';
    labels << file << '\t' << (message.empty() ? "ok" : "rejected") << '\t' << message << '\t'
           << imgpipe::codecs::jpeg_refusal_name(imgpipe::codecs::check_jpeg(h.bytes)) << '\t'
           << (h.entropy_damage ? "yes" : "no") << '\n';
    ++n;
  }
  std::cout << n << " JPEGs and labels.tsv written to " << dir.string() << "\n";
  return 0;
}
