#include "probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "codecs/parse/jpeg_entropy.hpp"
#include "codecs/parse/jpeg_checks.hpp"
#include "codecs/parse/jpeg_markers.hpp"
#include "decode.hpp"
#include "geometry.hpp"

namespace imgpipe::stages {

Probe::Probe(const ProbeLimits& limits, const codecs::JpegEngines& engines, codecs::RouteSteering& steering,
             const StageStats& decode, const StageStats& transform, const codecs::GpuDecodeMeter& gpu,
             std::vector<const StageStats*> others)
    : Stage("probe", true), limits_(limits), engines_(engines), steering_(steering), decode_(decode),
      transform_(transform), gpu_(gpu), others_(std::move(others)) {}

bool Probe::gpu_able(const Work& w, int& width, int& height) const {
  const codecs::GpuJpegDecoder* decoder = limits_.wait_for_engines ? engines_.wait() : engines_.ready();
  if (!decoder) return false;  // not made yet, or GPU decode failed to start
  const std::span<const unsigned char> b(w.pixels.bytes);
  const ImageHeader h = sniff_header(b);
  if (h.format != "jpeg") return false;
  // What the CPU route checks or does that the engines would not: these stay there.
  if (limits_.accept_truncated || !jpeg_has_eoi(b)) return false;
  if (limits_.exif_orientation && h.orientation != 1) return false;
  const codecs::JpegLayout j = codecs::parse_jpeg_layout(b);
  if (!codecs::gpu_route_refusal(j).empty()) return false;
  // Structure the engines would decode differently from libjpeg, or decode
  // where libjpeg rejects the file: the CPU route gives libjpeg's verdict
  // (docs/gpu-decode.md, "What the probe checks").
  if (const codecs::JpegRefusal r = codecs::check_jpeg(b); r != codecs::JpegRefusal::none) {
    ++refusals_[static_cast<std::size_t>(r)];
    return false;
  }
  const std::size_t frame = static_cast<std::size_t>(j.width) * static_cast<std::size_t>(j.height) * 3;
  if (j.width > limits_.max_pixels / j.height || frame > limits_.max_frame_bytes || b.size() > limits_.max_bitstream)
    return false;
  const codecs::JpegInfo info = decoder->parse(b.data(), b.size());
  if (!info.valid || !info.batch_supported || info.width != j.width || info.height != j.height) return false;
  width = j.width;
  height = j.height;
  return true;
}

std::vector<std::pair<std::string, std::uint64_t>> Probe::cpu_route_reasons() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (std::size_t r = 1; r < refusals_.size(); ++r)
    if (const std::uint64_t n = refusals_[r].load(); n > 0)
      out.emplace_back(std::string(codecs::jpeg_refusal_name(static_cast<codecs::JpegRefusal>(r))), n);
  return out;
}

void Probe::steer() {
  codecs::SteeringSample m;
  m.cpu_images = decode_.items.load();
  m.cpu_s = (decode_.busy_ns.load() + transform_.busy_ns.load()) * 1e-9;
  m.gpu_images = gpu_.images.load();
  m.gpu_s = gpu_.ns.load() * 1e-9;
  m.samples = seen_.load();
  std::int64_t other = 0;
  for (const StageStats* st : others_) other += st->busy_ns.load() - st->wait_ns.load();
  other += stats().busy_ns.load() - stats().wait_ns.load();  // this stage's own
  m.other_s = static_cast<double>(other) * 1e-9;
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  m.wall_s = std::chrono::duration<double>(now).count();
  m.busy_s = gpu_.busy_s(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  const std::int64_t first = gpu_.first_begin_ns();
  m.engines_from_s = first >= 0 ? static_cast<double>(first) * 1e-9 : -1.0;
  steering_.update(m);
}

Tally Probe::run(Work& w) {
  int width = 0, height = 0;
  if ((++seen_ & 63) == 0) steer();
  // A pushed image stays on the CPU: a JPEG the engines reject is decoded
  // again on the CPU from its file, and a pushed one has none.
  if (w.preloaded) return {1, 0};
  if (!gpu_able(w, width, height)) return {1, 0};
  ++gpu_able_;
  if (!steering_.take_gpu(w.sample.seq)) return {1, 0};
  if (limits_.verify_entropy) {
    ++entropy_checked_;
    if (!codecs::check_entropy(w.pixels.bytes).clean) {
      ++entropy_to_cpu_;
      return {1, 0};
    }
  }
  ++to_gpu_;
  w.route = Route::gpu_jpeg;
  w.pixels.out = {w.pixels.bytes.data(), w.pixels.bytes.size(), width, height};
  // The engines decode at full size without rotating (rotated JPEGs stay on
  // the CPU); the fused kernel resizes with kernels::placement.
  w.sample.geometry = decoded_geometry(width, height, 1, 1);
  complete_geometry(w.sample.geometry, width, height, limits_.resize);
  return {1, w.pixels.bytes.size()};
}

}  // namespace imgpipe::stages
