// The NVDEC video route: a stream decoded by the GPU's video engines through
// nvcuvid (the driver's libnvcuvid.so.1, loaded at run time with FFmpeg's
// ffnvcodec loader, as nvJPEG is; docs/video-decode.md has the facts).
//
// Per file: the demuxed packets (VideoFile's) go through PacketFilter
// (Annex B) to nvcuvid's parser, which calls back to decode each picture on
// the engines and to display each frame in order. Each displayed frame's
// decode status is checked (an engine error or concealed damage is the
// file's break: video_file.hpp's policy), then the frame is mapped, copied
// on the device into a buffer of a per-device pool (NV12, P016 for more than
// 8 bits, planar for 4:4:4) and unmapped, so the decoder's few output
// surfaces are free again at once; the frame travels as a device
// VideoFrame to the fused kernel, which converts, resizes and normalises it
// into the batch (it never crosses PCIe).
//
// Decoders are kept per device and format when a file closes and reused by
// the next file of that format (cuvidReconfigureDecoder for another size
// within the one they were made for): making one takes ~54 ms and ~94 MiB.
#pragma once

#include <memory>
#include <string>

#include "memory/gpu.hpp"
#include "codecs/video/video_decoder.hpp"
#include "codecs/route/video_route.hpp"

namespace imgpipe::codecs {

// A decoder for the stream on `device`'s engines. Throws imgpipe::Error
// with the reason when it cannot start (no libnvcuvid, a build without CUDA,
// a codec NVDEC does not know).
std::unique_ptr<FrameDecoder> make_nvdec_decoder(const AVStream* st, const VideoInfo& info, int device);

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
};
NvdecFigures nvdec_figures();

// Decoders that finish a video are kept (up to 32) for the next video of a
// format they can take while anything holds this; when the last holder goes,
// the idle decoders are destroyed and their device memory (~94 MiB for a
// 1080p one) is freed. A Pipeline holds one for its life (its runs reuse
// them); a decoder given back while nothing holds one is destroyed at once.
std::shared_ptr<void> hold_nvdec_decoders();

}  // namespace imgpipe::codecs
