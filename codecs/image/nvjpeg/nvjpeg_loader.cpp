#include "codecs/image/nvjpeg/nvjpeg_loader.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <string_view>

#include "codecs/image/nvjpeg/jpeg_gpu.hpp"

namespace imgpipe::codecs::nvj {

Api::~Api() {
  if (dl_ != nullptr) ::dlclose(dl_);
}

namespace {

std::string last_dlerror() {
  const char* e = ::dlerror();
  return e != nullptr ? std::string(e) : std::string("no dlerror() text");
}

bool is_off(std::string_view v) {
  std::string low;
  for (char c : v) low.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return low == "off" || low == "0" || low == "false" || low == "no";
}

template <class Fn>
bool resolve(void* dl, const char* name, Fn& slot, std::string* missing) {
  ::dlerror();  // clear
  void* p = ::dlsym(dl, name);
  if (p == nullptr) {
    *missing = std::string(name) + " (" + last_dlerror() + ")";
    return false;
  }
  slot = reinterpret_cast<Fn>(p);
  return true;
}

}  // namespace

// Befriended by Api to hand it the library handle.
struct Loader {
  static std::unique_ptr<Api> load(const LoadOptions& options, std::string* why) {
    auto fail = [&](std::string reason) {
      if (why != nullptr) *why = std::move(reason);
      return std::unique_ptr<Api>();
    };
    if (options.disabled)
      return fail("nvJPEG disabled" + (options.origin.empty() ? std::string() : " by " + options.origin));

    void* dl = nullptr;
    std::string used;
    if (!options.library.empty()) {
      dl = ::dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (dl == nullptr)
        return fail("libnvjpeg not loaded: tried " + options.library +
                    (options.origin.empty() ? std::string() : " (from " + options.origin + ")") + ": " +
                    last_dlerror());
      used = options.library;
    } else {
      std::string tried;
      for (const char* name : default_library_names) {
        dl = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (dl != nullptr) {
          used = name;
          break;
        }
        tried += (tried.empty() ? "" : "; ") + std::string(name) + " (" + last_dlerror() + ")";
      }
      if (dl == nullptr) return fail("libnvjpeg not loaded: tried " + tried);
    }

    auto api = std::make_unique<Api>();
    api->dl_ = dl;  // from here on, the table closes the library
    api->library = used;
    std::string missing;
    const bool ok =  // every entry point is required
        resolve(dl, "nvjpegGetProperty", api->nvjpegGetProperty, &missing) &&
        resolve(dl, "nvjpegCreateExV2", api->nvjpegCreateExV2, &missing) &&
        resolve(dl, "nvjpegDestroy", api->nvjpegDestroy, &missing) &&
        resolve(dl, "nvjpegGetHardwareDecoderInfo", api->nvjpegGetHardwareDecoderInfo, &missing) &&
        resolve(dl, "nvjpegJpegStateCreate", api->nvjpegJpegStateCreate, &missing) &&
        resolve(dl, "nvjpegJpegStateDestroy", api->nvjpegJpegStateDestroy, &missing) &&
        resolve(dl, "nvjpegDecode", api->nvjpegDecode, &missing) &&
        resolve(dl, "nvjpegJpegStreamCreate", api->nvjpegJpegStreamCreate, &missing) &&
        resolve(dl, "nvjpegJpegStreamDestroy", api->nvjpegJpegStreamDestroy, &missing) &&
        resolve(dl, "nvjpegJpegStreamParseHeader", api->nvjpegJpegStreamParseHeader, &missing) &&
        resolve(dl, "nvjpegJpegStreamGetFrameDimensions", api->nvjpegJpegStreamGetFrameDimensions, &missing) &&
        resolve(dl, "nvjpegJpegStreamGetComponentsNum", api->nvjpegJpegStreamGetComponentsNum, &missing) &&
        resolve(dl, "nvjpegJpegStreamGetChromaSubsampling", api->nvjpegJpegStreamGetChromaSubsampling, &missing) &&
        resolve(dl, "nvjpegJpegStreamGetJpegEncoding", api->nvjpegJpegStreamGetJpegEncoding, &missing) &&
        resolve(dl, "nvjpegDecodeBatchedSupported", api->nvjpegDecodeBatchedSupported, &missing) &&
        resolve(dl, "nvjpegDecodeBatchedPreAllocate", api->nvjpegDecodeBatchedPreAllocate, &missing) &&
        resolve(dl, "nvjpegDecodeBatchedInitialize", api->nvjpegDecodeBatchedInitialize, &missing) &&
        resolve(dl, "nvjpegDecodeBatched", api->nvjpegDecodeBatched, &missing);
    if (!ok) return fail("libnvjpeg unusable: " + used + " lacks " + missing);

    const libraryPropertyType props[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
    for (int i = 0; i < 3; ++i)
      if (const nvjpegStatus_t s = api->nvjpegGetProperty(props[i], &api->version[i]); s != NVJPEG_STATUS_SUCCESS)
        return fail("libnvjpeg unusable: " + used + ": nvjpegGetProperty failed with " + status_name(s));
    return api;
  }
};

LoadOptions load_options_from_env() {
  LoadOptions o;
  if (const char* lib = std::getenv("IMGPIPE_NVJPEG_LIB"); lib != nullptr && *lib != '\0') {
    o.library = lib;
    o.origin = "IMGPIPE_NVJPEG_LIB";
  }
  if (const char* sw = std::getenv("IMGPIPE_NVJPEG"); sw != nullptr && is_off(sw)) {
    o.disabled = true;
    o.origin = std::string("IMGPIPE_NVJPEG=") + sw;
  }
  return o;
}

std::unique_ptr<Api> load_api(const LoadOptions& options, std::string* why) { return Loader::load(options, why); }

const Api* api(std::string* why) noexcept {
  struct Result {
    const Api* api = nullptr;
    std::string reason;
  };
  // Loaded once (a function-local static is initialised thread-safely) and
  // never closed: nvJPEG objects may live in other statics until exit.
  static const Result result = [] {
    Result r;
    try {
      r.api = load_api(load_options_from_env(), &r.reason).release();
    } catch (const std::exception& e) {
      r.reason = std::string("libnvjpeg not loaded: ") + e.what();
    }
    return r;
  }();
  if (result.api == nullptr && why != nullptr) {
    try {
      *why = result.reason;
    } catch (...) {  // noexcept: a failed copy leaves *why as it was
    }
  }
  return result.api;
}

}  // namespace imgpipe::codecs::nvj

namespace imgpipe::codecs {

// Declared in jpeg_gpu.hpp: what the stages and the pipeline may know of
// the loader and the API, without including their private headers.
std::string_view gpu_jpeg_status_name(int status) noexcept { return nvj::status_name(status); }

bool nvjpeg_available(std::string* why) noexcept { return nvj::api(why) != nullptr; }

}  // namespace imgpipe::codecs
