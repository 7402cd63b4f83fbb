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
// keeps both routes busy: each file goes where it would be done first. A
// route decodes `slots` files at once (the CPU: the run's decode threads;
// NVDEC: two files an engine), each at the route's measured rate per file
// (frames decoded a second of decoding, worked()), its capacity that rate
// times the slots (priors until a second of it is known). A file is done
// no sooner than its own frames take at the rate per file, nor before the
// frames already queued on the route (the frames its open files declare,
// less those decoded) plus its own are through at the capacity. A route
// given few files is not judged by them: its rate is a file's, its
// capacity the slots'.
// Thread-safe: the readers of a run share one router.
#pragma once

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
  int engines = 0;  // NVDEC engines that take it (nNumNVDECs); 0: unknown
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
    // Files the CPU decodes at once at full speed (the run's decode threads).
    int cpu_slots = 1;
    // Priors for auto before a route's rate is measured (frames a second):
    // each route's capacity, and NVDEC's for one file alone (one file
    // feeds the engines faster than its share of them; a CPU file's is
    // its slot's share).
    double nvdec_prior_fps = 1400;       // per device, all its engines
    double nvdec_file_prior_fps = 600;   // one file alone
    double cpu_prior_fps = 1000;         // all the CPU's slots
  };
  explicit VideoRouter(Options o);

  struct Choice {
    int device = -1;        // the NVDEC device; -1: the CPU
    std::string cpu_reason;  // why the CPU, when it is not the balance's choice (empty for it)
  };
  // A file opens: its route. Counts it as open there.
  Choice choose(const VideoInfo& v);
  // A file on `device` (-1: CPU) delivered a frame / decoded one it does not
  // deliver (before a clip's first frame, between a clip's frames, decoded
  // again) / closed. The work given at choose (v.planned_work, else
  // v.declared_frames) minus the frames it decoded (`frames` at close:
  // delivered and dropped) is taken off its route's queue on close. A
  // route's rate counts both kinds of frames: what its decoders do.
  void delivered(int device);
  void dropped(int device);
  void closed(int device, const VideoInfo& v, std::int64_t frames);
  // A file that was to go to NVDEC could not start there (the decoder could
  // not be made): it goes to the CPU instead, counted with `why`.
  void fell_back(int device, const VideoInfo& v, const std::string& why);
  // A file on NVDEC `device` that the CPU decodes from its `frames`-th
  // frame on (damage placed by libavcodec, NVDEC's frame memory full): its
  // frames from now are the CPU's. It stays counted as NVDEC's file; `why`,
  // when not empty, is counted among the reasons.
  void moved(int device, const VideoInfo& v, std::int64_t frames, const std::string& why);

  struct Figures {
    std::uint64_t nvdec_files = 0, nvdec_frames = 0;
    std::uint64_t cpu_files = 0, cpu_frames = 0;
    std::map<std::string, std::uint64_t> cpu_reasons;  // reason -> files
  };
  Figures figures() const;
  // Seconds a file on `device` (-1: CPU) spent decoding (VideoFile's
  // next() and seek()): the measure of its route's rate per file.
  void worked(int device, double seconds);
  // A route's rate per file (frames decoded a second of decoding), or its
  // prior for one file while less than a second is known.
  double rate(bool nvdec) const;
  // Files a route decodes at once at full speed: the CPU's from Options;
  // NVDEC's two an engine on every device (0 where NVDEC is off or where
  // is cpu). The source opens this many more videos at once when NVDEC
  // may take some, so that both routes have files.
  int slots(bool nvdec) const noexcept;

 private:
  struct Route {
    std::int64_t queued = 0;  // declared frames of its open files not yet delivered
    std::uint64_t files = 0, frames = 0;
    std::uint64_t dropped = 0;  // decoded, not delivered
    double worked_s = 0;  // its files' seconds of decoding (worked())
  };
  Route& route(int device) { return device >= 0 ? nvdec_ : cpu_; }
  void open(Route& r, std::int64_t frames);
  void close(Route& r, std::int64_t left);
  bool measured(bool nvdec) const;  // a second of decoding known, mu_ held
  double rate_locked(bool nvdec) const;  // rate(), mu_ held
  double done_in(bool nvdec, std::int64_t frames) const;  // seconds until a new file would be done there, mu_ held
  static std::int64_t expected_frames(const VideoInfo& v);

  Options o_;
  int nvdec_slots_ = 0;
  mutable std::mutex mu_;
  Route nvdec_, cpu_;
  std::size_t next_device_ = 0;
  std::map<std::string, std::uint64_t> reasons_;
};

}  // namespace imgpipe::codecs
