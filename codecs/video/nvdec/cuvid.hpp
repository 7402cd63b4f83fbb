// nvcuvid as the NVDEC backend uses it, private to codecs/video/nvdec/:
// ffnvcodec's declarations and loader (the driver's libnvcuvid.so.1, loaded
// once at run time), the codecs NVDEC is given, and the checks of its calls.
// Only in a CUDA build; nothing outside this folder includes it.
#pragma once

#if IMGPIPE_HAS_CUDA

#include <cstdint>
#include <string>

// ffnvcodec's loader prints what it cannot load; the reason is ours to give.
#define FFNV_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#include <dlfcn.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#include <ffnvcodec/dynlink_loader.h>
#pragma GCC diagnostic pop

namespace imgpipe::codecs::nvdec {

struct CodecName {
  const char* ffmpeg;
  cudaVideoCodec cuvid;
};
// What nvcuvid's parser reads from FFmpeg's demuxers as they are (VC-1 would
// need its sequence header rebuilt: it goes to the CPU route).
inline constexpr CodecName kCodecs[] = {
    {"h264", cudaVideoCodec_H264},        {"hevc", cudaVideoCodec_HEVC},         {"vp9", cudaVideoCodec_VP9},
    {"vp8", cudaVideoCodec_VP8},          {"av1", cudaVideoCodec_AV1},           {"mpeg1video", cudaVideoCodec_MPEG1},
    {"mpeg2video", cudaVideoCodec_MPEG2}, {"mpeg4", cudaVideoCodec_MPEG4}};

// kCodecs' entry for FFmpeg's codec name, or null.
const CodecName* codec_named(const std::string& name);

// libnvcuvid, loaded once (IMGPIPE_NVDEC=off: absent): `f` null, or `why`
// set when it cannot be used.
struct Library {
  CuvidFunctions* f = nullptr;
  std::string why;
};
const Library& library();

// The loaded functions; throws imgpipe::Error with library().why.
const CuvidFunctions& api();

// Throws imgpipe::Error naming `what` and the CUDA driver's error.
void check(CUresult r, const char* what);

// nvcuvid's chroma format for 400, 420, 422, 444.
cudaVideoChromaFormat chroma_format(int chroma);

// Times nvdec_caps asked a device's engines (not answered from what it keeps).
std::uint64_t caps_asked();

}  // namespace imgpipe::codecs::nvdec

#endif  // IMGPIPE_HAS_CUDA
