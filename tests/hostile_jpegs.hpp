// A generated corpus of hostile JPEGs (issue 28): real libjpeg encodes
// (tests/jpeg_writer.hpp), then mutated, one class each. Made the same way
// on every run (fixed seeds). Used by tests/stages/test_hostile_jpegs.cpp
// and by samples/make_hostile_jpegs.cpp, which writes them with their labels.
#pragma once

#include <string>
#include <vector>

#include "codecs/parse/jpeg_checks.hpp"

namespace imgpipe::test {

struct HostileJpeg {
  std::string name;  // the class, file-name safe
  std::vector<unsigned char> bytes;
  // What the probe's structural checks must say (codecs/parse/jpeg_checks.hpp).
  codecs::JpegRefusal refusal = codecs::JpegRefusal::none;
  // Damage only an entropy-data check can see (point 2 of issue 28): the
  // markers are in order, the Huffman-coded bits are not.
  bool entropy_damage = false;
};

// Every class, in a fixed order.
std::vector<HostileJpeg> hostile_jpegs();

}  // namespace imgpipe::test
