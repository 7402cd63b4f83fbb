// What the video layer offers on GPUs, whichever backend decodes there
// (NVDEC's engines: nvdec/ implements this): what a device's engines decode,
// the decoders kept from one video to the next, their figures for the
// report, their memory budget, and a device frame copied to another GPU. Stages and the pipeline
// include this, never a backend's header. A build without CUDA has the same
// functions: no engines, nothing kept.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codecs/video/frame.hpp"
#include "codecs/route/video_route.hpp"

namespace imgpipe::gpu {
class Stream;
}

namespace imgpipe::codecs {

// What `device`'s engines decode (cuvidGetDecoderCaps for each codec, chroma
// format and bit depth nvcuvid knows). Empty, with the reason in `why`, when
// NVDEC cannot be used (no libnvcuvid, no CUDA build, no such device).
NvdecCaps nvdec_caps(int device, std::string& why);

// A device frame copied into a buffer of `device`'s pool (a frame another
// GPU decoded, for a batch on this one), enqueued on `stream` (`device`'s).
// `f` must be kept until the stream has done the copy.
std::shared_ptr<VideoFrame> copy_frame_to(const VideoFrame& f, int device, const gpu::Stream& stream);

// Idle decoders kept for reuse (all devices), and decoders made so far.
struct NvdecFigures {
  int idle = 0;
  std::uint64_t made = 0, reused = 0;
  std::uint64_t frame_bytes = 0;  // device memory the decoded-frame pools hold now (in use and idle)
  std::uint64_t caps_asked = 0;   // times the engines were asked what they take (nvdec_caps: once a device)
};
NvdecFigures nvdec_figures();

// Decoders that finish a video are kept (up to 32) for the next video of a
// format they can take while anything holds this; when the last holder goes,
// the idle decoders are destroyed and their device memory (~94 MiB for a
// 1080p one) is freed. A Pipeline holds one for its life (its runs reuse
// them); a decoder given back while nothing holds one is destroyed at once.
std::shared_ptr<void> hold_nvdec_decoders();

// The device memory NVDEC's decoded frames may hold on `device`, in use and
// idle (memory.nvdec_frames_mb; 0: no limit). A file whose next frame finds
// no room goes on on the CPU route from that frame, and the report counts
// the reason. Frames held past it are not taken back. Process-wide: the
// last run to set it decides.
void set_nvdec_frame_budget(int device, std::uint64_t bytes);

}  // namespace imgpipe::codecs
