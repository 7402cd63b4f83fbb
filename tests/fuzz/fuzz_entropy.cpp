// libFuzzer target: the entropy check (codecs/parse/jpeg_entropy.hpp) against
// libjpeg itself. It must never crash or read out of bounds, and it must never
// call "clean" a file on which imgpipe's CPU route (codecs::decode_jpeg,
// libjpeg) reports damage: such a file would be delivered by the GPU's JPEG
// engines with decode.verify full where the CPU route reports it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include <opencv2/core.hpp>

#include "codecs/parse/jpeg_entropy.hpp"
#include "codecs/image/libjpeg/jpeg_decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  const imgpipe::codecs::EntropyCheck c = imgpipe::codecs::check_entropy(bytes);
  if (!c.clean) {
    if (c.reason.empty()) std::abort();
    return 0;
  }
  if (!c.reason.empty() || c.mcus == 0) std::abort();
  cv::Mat out;
  const std::string verdict = imgpipe::codecs::decode_jpeg(bytes, {}, out);
  if (!verdict.empty()) {
    std::fprintf(stderr, "entropy check: clean, libjpeg: %s\n", verdict.c_str());
    std::abort();
  }
  return 0;
}
