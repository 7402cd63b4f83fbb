// libFuzzer target: the decode stage on arbitrary bytes either decodes an
// image or returns a reason; never crashes, hangs or leaks. The header
// sniffer and the JPEG end-of-image check see the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include <opencv2/core.hpp>

#include "codecs/parse/image_header.hpp"
#include "stages/decode.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cv::setNumThreads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  imgpipe::DecodeConfig cfg;
  cfg.max_pixels = 4'000'000;  // keep each input cheap, as a service would
  imgpipe::TransformConfig transform;  // 640x640 stretch: large JPEGs take the reduced path
  const imgpipe::stages::Decode decode(cfg, transform);
  const std::span<const unsigned char> bytes(data, size);
  (void)imgpipe::codecs::sniff_header(bytes);
  (void)imgpipe::codecs::jpeg_has_eoi(bytes);
  cv::Mat out;
  const std::string reason = decode.decode(bytes, out);
  if (reason.empty() && (out.empty() || out.type() != CV_8UC3)) std::abort();
  if (!reason.empty() && reason.size() > 4096) std::abort();
  return 0;
}
