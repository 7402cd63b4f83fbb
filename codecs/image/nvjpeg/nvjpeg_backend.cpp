#include "codecs/image/nvjpeg/nvjpeg_backend.hpp"

namespace imgpipe::codecs {

GpuJpegTake NvjpegBackend::takes(std::span<const unsigned char> b, const JpegSegments& segments,
                                 const GpuJpegRoom& room) const {
  GpuJpegTake t;
  const JpegLayout j = jpeg_layout(b, segments);
  if (!gpu_route_refusal(j).empty()) return t;
  // Structure the engines would decode differently from libjpeg, or decode
  // where libjpeg rejects the file: the CPU route gives libjpeg's verdict
  // (docs/gpu-decode.md, "What the probe checks").
  JpegStructure s;
  if (t.refusal = check_jpeg(b, segments, s); t.refusal != JpegRefusal::none) return t;
  const std::size_t frame = static_cast<std::size_t>(j.width) * static_cast<std::size_t>(j.height) * 3;
  if (j.width > room.max_pixels / j.height || frame > room.max_frame_bytes || b.size() > room.max_bitstream) return t;
  const JpegInfo info = decoder_.parse(b.data(), b.size());
  if (!info.valid || !info.batch_supported || info.width != j.width || info.height != j.height) return t;
  t.taken = true;
  t.width = j.width;
  t.height = j.height;
  return t;
}

}  // namespace imgpipe::codecs
