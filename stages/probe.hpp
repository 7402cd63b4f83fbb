// Probe stage (parallel, after read): decides where each JPEG is decoded.
//
// The header is parsed on the cached bytes the read stage made. A JPEG whose
// layout the GPU's JPEG engines take (baseline Huffman, 8-bit, 1 or 3
// components, 4:4:4 / 4:2:2 / 4:2:0 / 4:4:0 / grey; confirmed by
// nvjpegDecodeBatchedSupported) and that the CPU route would not treat
// differently (an end-of-image marker present, no EXIF rotation to apply, a
// bitstream and a decoded frame that fit their shares of the slot and of the
// device's frame buffer) may take the GPU route: its bitstream is staged as
// it is and decoded on the GPU. The share of such JPEGs sent to the GPU is
// steered by the rates both routes achieve during the run
// (codecs/route/route_steering.hpp), so that the CPUs and the JPEG engines
// are all busy. The JPEG's headers are parsed once (codecs/parse/
// jpeg_markers.hpp: parse_jpeg_segments) for its header fields, the layout
// and structural checks the nvJPEG backend asks (codecs/image/nvjpeg/
// nvjpeg_backend.hpp: takes) and the entropy check.
// With decode.verify full, a JPEG steered to the engines first passes the
// entropy check (codecs/parse/jpeg_entropy.hpp), on the steered ones only, so that
// its cost falls where the engines save a CPU decode; one that fails stays on
// the CPU route, which gives libjpeg's verdict.
// Everything else (other formats, progressive, CMYK, 12-bit, arithmetic
// coding, video frames) takes the CPU route.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codecs/image/nvjpeg/jpeg_engines.hpp"
#include "codecs/parse/jpeg_checks.hpp"
#include "codecs/parse/jpeg_markers.hpp"
#include "codecs/route/decode_meter.hpp"
#include "codecs/route/route_steering.hpp"
#include "imgpipe/config.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

struct ProbeLimits {
  bool wait_for_engines = false;      // decode.where gpu: wait for the decoder instead of using the CPU meanwhile
  bool accept_truncated = false;      // decode.accept_truncated: damaged JPEGs stay on the CPU route
  bool exif_orientation = true;       // rotated JPEGs stay on the CPU route (nvJPEG does not rotate)
  std::int64_t max_pixels = 0;        // decode.max_pixels: larger ones stay on the CPU route (reported there)
  std::size_t max_bitstream = 0;      // a sample's share of the staging slot
  std::size_t max_frame_bytes = 0;    // a sample's share of the device frame buffer (w * h * 3)
  ResizeConfig resize;                // what the GPU does to a frame it decodes (the sample's geometry)
  TransformConfig transform;          // its random augmentations (random_crop, flip)
  std::uint64_t epoch = 0;            // the run's epoch, whose draws they are
  bool verify_entropy = false;        // decode.verify full: the entropy check before the engines
};

class Probe : public Stage<Probe, Takes::encoded_samples> {
 public:
  // `engines`' decoder confirms each candidate (nvjpegDecodeBatchedSupported);
  // until it is ready every JPEG stays on the CPU route. The CPU route's
  // figures come from `decode` and `transform`'s statistics, the threads'
  // other work from `others` (every stage that runs on them but those two,
  // this one, which counts its own, and the GPU ops stage, whose engine
  // calls the steering counts apart).
  Probe(const ProbeLimits& limits, const codecs::JpegEngines& engines, codecs::RouteSteering& steering,
        const StageStats& decode, const StageStats& transform, const codecs::GpuDecodeMeter& gpu,
        std::vector<const StageStats*> others = {});
  Tally run(Work& w);

  std::uint64_t gpu_able() const noexcept { return gpu_able_.load(); }
  std::uint64_t routed_to_gpu() const noexcept { return to_gpu_.load(); }
  // decode.verify full: JPEGs the entropy check walked, and those it kept on
  // the CPU route (not clean).
  std::uint64_t entropy_checked() const noexcept { return entropy_checked_.load(); }
  std::uint64_t entropy_to_cpu() const noexcept { return entropy_to_cpu_.load(); }
  // JPEGs kept on the CPU route by the structural checks (codecs/parse/jpeg_checks.hpp),
  // by reason name; reasons with no JPEG are left out.
  std::vector<std::pair<std::string, std::uint64_t>> cpu_route_reasons() const;

 private:
  // Whether the JPEG in w may go to the engines (the CPU route's own
  // concerns, then the nvJPEG backend's takes()); `segments` receives its
  // parsed marker segments, for the entropy check after steering.
  bool gpu_able(const Work& w, codecs::JpegSegments& segments, int& width, int& height) const;
  void steer();
  ProbeLimits limits_;
  const codecs::JpegEngines& engines_;
  codecs::RouteSteering& steering_;
  const StageStats& decode_;
  const StageStats& transform_;
  const codecs::GpuDecodeMeter& gpu_;
  std::vector<const StageStats*> others_;
  std::atomic<std::uint64_t> gpu_able_{0}, to_gpu_{0}, seen_{0}, entropy_checked_{0}, entropy_to_cpu_{0};
  mutable std::array<std::atomic<std::uint64_t>, codecs::jpeg_refusal_count> refusals_{};
};

}  // namespace imgpipe::stages
