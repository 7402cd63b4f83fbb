// Which route decodes each video file: an NVDEC engine (codecs/video/nvdec/) or
// the CPU (libavcodec), decided per file once its stream is known
// (input.video.where: auto | cpu | gpu). docs/video.md has the rules.
//
// A stream goes to NVDEC only when the engines of the device take it: the
// codec, chroma format and bit depth, and the size, as the device's
// capability table says (cuvidGetDecoderCaps, NvdecCaps); and the frames
// can go from device memory straight to the fused kernel (the GPU resizes,
// and the display rotation is not to be applied: the CPU route turns
// frames). Otherwise it goes to the CPU, and the reason is counted for the
// report. `where: gpu` sends every stream the engines take to them; `auto`
// keeps both routes busy: each file goes where the frames already queued on
// a route (the frames its open files declare, less those delivered) plus
// its own would be done first, at each route's measured rate (frames a
// second while it had files open; a prior until a second of it is known).
// Thread-safe: the readers of a run share one router.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "codecs/video/frame.hpp"

namespace imgpipe::codecs {

enum class VideoWhere : std::uint8_t { auto_, cpu, gpu };

// One row of a device's NVDEC capabilities (cuvidGetDecoderCaps).
struct NvdecCap {
  std::string codec;  // FFmpeg's codec name: "h264", "hevc", "vp9", "av1", ...
  int chroma = 420;   // 400 (monochrome), 420, 422, 444
  int bit_depth = 8;
  int min_width = 0, min_height = 0;
  int max_width = 0, max_height = 0;
  std::uint64_t max_macroblocks = 0;  // 16x16 blocks; 0: no limit beyond the size
};
using NvdecCaps = std::vector<NvdecCap>;

// The chroma format of a stream as NvdecCap counts it (400 for grey).
int chroma_of(const VideoInfo& v) noexcept;

// Empty when `caps` take the stream; else why not ("NVDEC cannot decode av1",
// "... h264 10-bit 4:2:0", "4112x2176 is larger than NVDEC's 4096x4096 for h264").
std::string nvdec_refusal(const VideoInfo& v, const NvdecCaps& caps);

class VideoRouter {
 public:
  struct Options {
    VideoWhere where = VideoWhere::auto_;
    std::vector<int> devices;      // the run's GPUs (CUDA ordinals); empty: none
    std::vector<NvdecCaps> caps;   // per device, same order
    // Why NVDEC is off for the whole run (no GPU, no libnvcuvid, the CPU
    // resizes): every file goes to the CPU with it. Empty: on.
    std::string off_reason;
    bool orientation = true;       // input.video.orientation: rotated streams go to the CPU
    // Priors for auto before a route's rate is measured (frames a second).
    double nvdec_prior_fps = 1400;  // per device
    double cpu_prior_fps = 1000;
  };
  using Clock = std::chrono::steady_clock;
  explicit VideoRouter(Options o);

  struct Choice {
    int device = -1;        // the NVDEC device; -1: the CPU
    std::string cpu_reason;  // why the CPU, when it is not the balance's choice (empty for it)
  };
  // A file opens: its route. Counts it as open there from now.
  Choice choose(const VideoInfo& v, Clock::time_point now = Clock::now());
  // A file on `device` (-1: CPU) delivered a frame / decoded one it does not
  // deliver (before a clip's first frame, between a clip's frames, decoded
  // again) / closed. The work given at choose (v.planned_work, else
  // v.declared_frames) minus the frames it decoded (`frames` at close:
  // delivered and dropped) is taken off its route's queue on close. A
  // route's rate counts both kinds of frames: what its decoders do.
  void delivered(int device, Clock::time_point now = Clock::now());
  void dropped(int device, Clock::time_point now = Clock::now());
  void closed(int device, const VideoInfo& v, std::int64_t frames, Clock::time_point now = Clock::now());
  // A file that was to go to NVDEC could not start there (the decoder could
  // not be made): it goes to the CPU instead, counted with `why`.
  void fell_back(int device, const VideoInfo& v, const std::string& why, Clock::time_point now = Clock::now());
  // A file on NVDEC `device` that the CPU decodes from its `frames`-th
  // frame on (damage placed by libavcodec, NVDEC's frame memory full): its
  // frames from now are the CPU's. It stays counted as NVDEC's file; `why`,
  // when not empty, is counted among the reasons.
  void moved(int device, const VideoInfo& v, std::int64_t frames, const std::string& why,
             Clock::time_point now = Clock::now());

  struct Figures {
    std::uint64_t nvdec_files = 0, nvdec_frames = 0;
    std::uint64_t cpu_files = 0, cpu_frames = 0;
    std::map<std::string, std::uint64_t> cpu_reasons;  // reason -> files
  };
  Figures figures() const;
  // The measured rate of a route (frames a second while it had files open), or the
  // prior when less than a second is known.
  double rate(bool nvdec) const;

 private:
  struct Route {
    int open = 0;
    std::int64_t queued = 0;  // declared frames of its open files not yet delivered
    std::uint64_t files = 0, frames = 0;
    std::uint64_t dropped = 0;  // decoded, not delivered
    double busy_s = 0;  // with at least one file open
    Clock::time_point since;
  };
  Route& route(int device) { return device >= 0 ? nvdec_ : cpu_; }
  void open(Route& r, std::int64_t frames, Clock::time_point now);
  void close(Route& r, std::int64_t left, Clock::time_point now);
  double rate_locked(bool nvdec, Clock::time_point now) const;  // rate(), mu_ held
  static std::int64_t expected_frames(const VideoInfo& v);

  Options o_;
  mutable std::mutex mu_;
  Route nvdec_, cpu_;
  std::size_t next_device_ = 0;
  std::map<std::string, std::uint64_t> reasons_;
};

}  // namespace imgpipe::codecs
