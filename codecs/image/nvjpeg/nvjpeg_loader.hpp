// libnvjpeg, loaded at run time with dlopen: a table of the entry points
// declared in nvjpeg_api.hpp.
//
// The process-wide table (nvj::api()) is loaded lazily on first use, once,
// thread-safely, and never unloaded. The library is looked for as
// libnvjpeg.so.13, .12, .11, then libnvjpeg.so (the loader's search path), or
// only at the path in IMGPIPE_NVJPEG_LIB; IMGPIPE_NVJPEG=off makes it absent.
// Where it is absent or incomplete, every caller gets a null table and one
// reason string (which names were tried, dlerror(), the missing symbol).
// Private to codecs/image/nvjpeg/ (and its tests, and the samples that
// measure nvJPEG itself): the stages and the pipeline ask jpeg_gpu.hpp
// (nvjpeg_available, gpu_jpeg_status_name).
#pragma once

#include <memory>
#include <string>

#include "codecs/image/nvjpeg/nvjpeg_api.hpp"

namespace imgpipe::codecs::nvj {

// The names tried, in order, when no path is given.
inline constexpr const char* default_library_names[] = {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11",
                                                        "libnvjpeg.so"};

// The resolved entry points of one loaded libnvjpeg. All pointers are
// non-null in a table handed out by load_api() / api().
struct Api {
  PFN_nvjpegGetProperty nvjpegGetProperty = nullptr;
  PFN_nvjpegCreateExV2 nvjpegCreateExV2 = nullptr;
  PFN_nvjpegDestroy nvjpegDestroy = nullptr;
  PFN_nvjpegGetHardwareDecoderInfo nvjpegGetHardwareDecoderInfo = nullptr;
  PFN_nvjpegJpegStateCreate nvjpegJpegStateCreate = nullptr;
  PFN_nvjpegJpegStateDestroy nvjpegJpegStateDestroy = nullptr;
  PFN_nvjpegDecode nvjpegDecode = nullptr;
  PFN_nvjpegJpegStreamCreate nvjpegJpegStreamCreate = nullptr;
  PFN_nvjpegJpegStreamDestroy nvjpegJpegStreamDestroy = nullptr;
  PFN_nvjpegJpegStreamParseHeader nvjpegJpegStreamParseHeader = nullptr;
  PFN_nvjpegJpegStreamGetFrameDimensions nvjpegJpegStreamGetFrameDimensions = nullptr;
  PFN_nvjpegJpegStreamGetComponentsNum nvjpegJpegStreamGetComponentsNum = nullptr;
  PFN_nvjpegJpegStreamGetChromaSubsampling nvjpegJpegStreamGetChromaSubsampling = nullptr;
  PFN_nvjpegJpegStreamGetJpegEncoding nvjpegJpegStreamGetJpegEncoding = nullptr;
  PFN_nvjpegDecodeBatchedSupported nvjpegDecodeBatchedSupported = nullptr;
  PFN_nvjpegDecodeBatchedPreAllocate nvjpegDecodeBatchedPreAllocate = nullptr;
  PFN_nvjpegDecodeBatchedInitialize nvjpegDecodeBatchedInitialize = nullptr;
  PFN_nvjpegDecodeBatched nvjpegDecodeBatched = nullptr;

  std::string library;         // the name or path dlopen accepted
  int version[3] = {0, 0, 0};  // major, minor, patch (nvjpegGetProperty)

  // True when the library is at least major.minor.
  bool at_least(int major, int minor) const noexcept {
    return version[0] > major || (version[0] == major && version[1] >= minor);
  }

  Api() = default;
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;
  ~Api();  // dlclose()s the library this table owns

 private:
  friend struct Loader;
  void* dl_ = nullptr;
};

// Where to look. `library` empty: the default names; else only that path or
// name. `origin` names where the settings came from, for the reason string
// (e.g. "IMGPIPE_NVJPEG_LIB").
struct LoadOptions {
  std::string library;
  bool disabled = false;
  std::string origin;
};

// IMGPIPE_NVJPEG_LIB (a path) and IMGPIPE_NVJPEG ("off", "0", "false" or "no",
// any case, disables) as they are now.
LoadOptions load_options_from_env();

// One uncached attempt: dlopen, then every symbol. Returns the table, which
// owns the library handle (destroy it only after every nvJPEG object created
// through it); or null with the reason in *why (when why is non-null).
// Throws only std::bad_alloc.
std::unique_ptr<Api> load_api(const LoadOptions& options, std::string* why);

// The process-wide table: the first call loads it with
// load_options_from_env(); later calls return the same result, whatever the
// environment says by then. Null when unavailable, with the reason in *why.
// Thread-safe; the table lives until the process exits.
const Api* api(std::string* why = nullptr) noexcept;

}  // namespace imgpipe::codecs::nvj
