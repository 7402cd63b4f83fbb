#include "codecs/video/nvdec/cuvid.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"
#include "codecs/video/video_devices.hpp"

namespace imgpipe::codecs {

#if IMGPIPE_HAS_CUDA

namespace nvdec {

const CodecName* codec_named(const std::string& name) {
  for (const CodecName& c : kCodecs)
    if (name == c.ffmpeg) return &c;
  return nullptr;
}

const Library& library() {
  static const Library lib = [] {
    Library l;
    if (const char* v = std::getenv("IMGPIPE_NVDEC"); v && std::string(v) == "off") {
      l.why = "NVDEC is off (IMGPIPE_NVDEC=off)";
    } else if (cuvid_load_functions(&l.f, nullptr) < 0 || !l.f) {
      l.f = nullptr;
      l.why = "cannot load libnvcuvid.so.1 (the NVIDIA driver's video decoder) or one of its functions";
    } else if (!l.f->cuvidGetDecoderCaps) {
      l.why = "libnvcuvid.so.1 has no cuvidGetDecoderCaps (driver too old)";
    }
    return l;
  }();
  return lib;
}

const CuvidFunctions& api() {
  const Library& l = library();
  if (!l.f || !l.why.empty()) throw Error(l.why);
  return *l.f;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(fmt::format("{} failed (CUDA driver error {})", what, static_cast<int>(r)));
}

cudaVideoChromaFormat chroma_format(int chroma) {
  switch (chroma) {
    case 400: return cudaVideoChromaFormat_Monochrome;
    case 422: return cudaVideoChromaFormat_422;
    case 444: return cudaVideoChromaFormat_444;
    default: return cudaVideoChromaFormat_420;
  }
}

}  // namespace nvdec

namespace {
NvdecCaps query_caps(int device, std::string& why) {
  NvdecCaps caps;
  try {
    const CuvidFunctions& f = nvdec::api();
    const gpu::CurrentDeviceGuard bind(device);  // the caller's device and context come back
    gpu::Stream make_context_current(device);
    for (const nvdec::CodecName& c : nvdec::kCodecs) {
      for (const int chroma : {420, 444}) {
        for (const int depth : {8, 10, 12}) {
          CUVIDDECODECAPS q{};
          q.eCodecType = c.cuvid;
          q.eChromaFormat = nvdec::chroma_format(chroma);
          q.nBitDepthMinus8 = static_cast<unsigned>(depth - 8);
          if (f.cuvidGetDecoderCaps(&q) != CUDA_SUCCESS || !q.bIsSupported) continue;
          caps.push_back({c.ffmpeg, chroma, depth, q.nMinWidth, q.nMinHeight, static_cast<int>(q.nMaxWidth),
                          static_cast<int>(q.nMaxHeight), q.nMaxMBCount, static_cast<int>(q.nNumNVDECs)});
        }
      }
    }
    if (caps.empty()) why = fmt::format("NVDEC on device {} decodes none of the codecs", device);
  } catch (const std::exception& e) {
    why = e.what();
    caps.clear();
  }
  return caps;
}

// What a device's engines take does not change while the process runs, and
// asking costs a cuvidGetDecoderCaps call per codec, chroma format and bit
// depth, which every run of a kept Pipeline (each epoch) paid before its
// first video (docs/benchmarks.md, "W4"). Kept per device once found; a
// failure is asked again.
std::mutex g_caps_mutex;
std::map<int, NvdecCaps> g_known_caps;  // under g_caps_mutex
std::uint64_t g_caps_asked = 0;         // under g_caps_mutex
}  // namespace

NvdecCaps nvdec_caps(int device, std::string& why) {
  const std::lock_guard lock(g_caps_mutex);
  if (const auto it = g_known_caps.find(device); it != g_known_caps.end()) return it->second;
  ++g_caps_asked;
  NvdecCaps caps = query_caps(device, why);
  if (!caps.empty()) g_known_caps.emplace(device, caps);
  return caps;
}

std::uint64_t nvdec::caps_asked() {
  const std::lock_guard lock(g_caps_mutex);
  return g_caps_asked;
}

#else  // !IMGPIPE_HAS_CUDA

NvdecCaps nvdec_caps(int, std::string& why) {
  why = "imgpipe was built without CUDA";
  return {};
}

#endif  // IMGPIPE_HAS_CUDA

}  // namespace imgpipe::codecs
