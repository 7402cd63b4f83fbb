// The NVDEC video route: a stream decoded by the GPU's video engines through
// nvcuvid (the driver's libnvcuvid.so.1, loaded at run time with FFmpeg's
// ffnvcodec loader, as nvJPEG is; docs/video-decode.md has the facts).
//
// Per file: the demuxed packets (VideoFile's) go through PacketFilter
// (../packet_filter.hpp: Annex B) to nvcuvid's parser, which calls back to
// decode each picture on the engines and to display each frame in order. Each
// displayed frame's decode status is checked (an engine error or concealed
// damage is the file's break: video_file.hpp's policy), then the frame is
// mapped, copied on the device into a buffer of a per-device pool (NV12, P016
// for more than 8 bits, planar for 4:4:4) and unmapped, so the decoder's few
// output surfaces are free again at once; the frame travels as a device
// VideoFrame to the fused kernel, which converts, resizes and normalises it
// into the batch (it never crosses PCIe).
//
// Decoders are kept per device and format when a file closes and reused by
// the next file of that format (cuvidReconfigureDecoder for another size
// within the one they were made for; nvdec_cache.hpp): making one takes ~54
// ms and ~94 MiB. A seek (VideoFile::seek) flushes the decoder
// (FrameDecoder::flush: a new parser, the bitstream filter flushed, the
// frames in flight dropped) and keeps its engine. What the stages and the
// pipeline use of NVDEC (the capability query, the kept decoders, the
// figures, a frame copied to another GPU) is video_devices.hpp's; this
// header is VideoFile's.
#pragma once

#include <memory>

#include "codecs/video/video_decoder.hpp"

namespace imgpipe::codecs {

// A decoder for the stream on `device`'s engines. Throws imgpipe::Error
// with the reason when it cannot start (no libnvcuvid, a build without CUDA,
// a codec NVDEC does not know).
std::unique_ptr<FrameDecoder> make_nvdec_decoder(const AVStream* st, const VideoInfo& info, int device);

}  // namespace imgpipe::codecs
