#include "probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "codecs/image/nvjpeg/nvjpeg_backend.hpp"
#include "codecs/parse/image_header.hpp"
#include "codecs/parse/jpeg_entropy.hpp"
#include "geometry.hpp"

namespace imgpipe::stages {

Probe::Probe(const ProbeLimits& limits, const codecs::JpegEngines& engines, codecs::RouteSteering& steering,
             const StageStats& decode, const StageStats& transform, const codecs::GpuDecodeMeter& gpu,
             std::vector<const StageStats*> others)
    : Stage("probe", true), limits_(limits), engines_(engines), steering_(steering), decode_(decode),
      transform_(transform), gpu_(gpu), others_(std::move(others)) {}

bool Probe::gpu_able(const Work& w, codecs::JpegSegments& segments, int& width, int& height) const {
  const codecs::GpuJpegDecoder* decoder = limits_.wait_for_engines ? engines_.wait() : engines_.ready();
  if (!decoder) return false;  // not made yet, or GPU decode failed to start
  const std::span<const unsigned char> b(w.pixels.bytes);
  if (!codecs::jpeg_signature(b)) return false;
  // The one parse of the JPEG's headers: the header fields, the layout, the
  // structural checks and the entropy walk all read it.
  segments = codecs::parse_jpeg_segments(b);
  const codecs::ImageHeader h = codecs::sniff_header(b, segments.markers);
  // What the CPU route checks or does that the engines would not: these stay there.
  if (limits_.accept_truncated || !codecs::jpeg_has_eoi(b, segments.markers)) return false;
  if (limits_.exif_orientation && h.orientation != 1) return false;
  const codecs::GpuJpegRoom room{limits_.max_pixels, limits_.max_frame_bytes, limits_.max_bitstream};
  const codecs::GpuJpegTake t = codecs::NvjpegBackend(*decoder).takes(b, segments, room);
  if (t.refusal != codecs::JpegRefusal::none) ++refusals_[static_cast<std::size_t>(t.refusal)];
  if (!t.taken) return false;
  width = t.width;
  height = t.height;
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
  codecs::JpegSegments segments;
  if ((++seen_ & 63) == 0) steer();
  // A pushed image stays on the CPU: a JPEG the engines reject is decoded
  // again on the CPU from its file, and a pushed one has none.
  if (w.preloaded) return {1, 0};
  if (!gpu_able(w, segments, width, height)) return {1, 0};
  ++gpu_able_;
  if (!steering_.take_gpu(w.sample.seq)) return {1, 0};
  if (limits_.verify_entropy) {
    ++entropy_checked_;
    if (!codecs::check_entropy(w.pixels.bytes, segments).clean) {
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
  const std::optional<Augment> a =
      augment_of(limits_.transform, limits_.epoch, w.sample.input->id, w.sample.frame, w.sample.geometry, width, height);
  complete_geometry(w.sample.geometry, width, height, limits_.resize, a ? &*a : nullptr);
  w.sample.geometry.epoch = limits_.epoch;
  if (a) w.pixels.out.gpu = gpu_window(*a, limits_.resize);
  return {1, w.pixels.bytes.size()};
}

}  // namespace imgpipe::stages
