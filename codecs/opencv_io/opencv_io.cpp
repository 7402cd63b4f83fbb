#include "opencv_io.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "imgpipe/error.hpp"

namespace imgpipe::codecs::opencv_io {

namespace {

namespace fs = std::filesystem;

struct Loaded {
  const Api* api = nullptr;
  std::string error;  // why it could not be loaded
};

// The places opencv_io.hpp names, in order, without repeats.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  auto add = [&](const fs::path& p) {
    const std::string s = p.lexically_normal().string();
    for (const std::string& o : out)
      if (o == s) return;
    out.push_back(s);
  };
  if (const char* env = std::getenv("IMGPIPE_OPENCV_IO"); env != nullptr && *env != '\0') return {env};
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&candidates), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    fs::path self = fs::canonical(info.dli_fname, ec);
    if (ec) self = info.dli_fname;
    const fs::path dir = self.parent_path();
    add(dir / kModuleName);
#ifdef IMGPIPE_OPENCV_IO_FROM_BIN
    add(dir / IMGPIPE_OPENCV_IO_FROM_BIN);
#endif
  }
#ifdef IMGPIPE_OPENCV_IO_INSTALLED
  add(IMGPIPE_OPENCV_IO_INSTALLED);
#endif
#ifdef IMGPIPE_OPENCV_IO_BUILT
  add(IMGPIPE_OPENCV_IO_BUILT);
#endif
  out.push_back(kModuleName);  // the loader's own search (the program's run path among it)
  return out;
}

Loaded load() {
  Loaded l;
  std::string tried;
  for (const std::string& path : candidates()) {
    const bool bare = path.find('/') == std::string::npos;
    std::error_code ec;
    if (!bare && !fs::exists(path, ec)) {
      tried += (tried.empty() ? "" : "; ") + path + ": no such file";
      continue;
    }
    void* dl = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) {
      const char* why = ::dlerror();
      tried += (tried.empty() ? "" : "; ") + (bare ? "the loader's search" : path) + ": " + (why ? why : "dlopen failed");
      continue;
    }
    using Entry = const Api* (*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(dl, "imgpipe_opencv_io_api"));
    const Api* a = entry ? entry() : nullptr;
    if (a == nullptr || a->version != kApiVersion) {
      tried += (tried.empty() ? "" : "; ") + path + ": not this imgpipe's module (another version)";
      ::dlclose(dl);
      continue;
    }
    l.api = a;  // kept loaded for the process's life
    return l;
  }
  l.error = std::string("OpenCV's image codecs and video capture (") + kModuleName +
            ") could not be loaded: " + tried + " (set IMGPIPE_OPENCV_IO to its path)";
  return l;
}

std::once_flag once;
Loaded loaded;

}  // namespace

const Api& api() {
  std::call_once(once, [] { loaded = load(); });
  if (loaded.api == nullptr) throw Error(loaded.error);
  return *loaded.api;
}

Capture::Capture() : api_(api()), cap_(api_.capture_new()) {}
Capture::~Capture() { api_.capture_delete(cap_); }
bool Capture::open(int index, int api_preference) { return api_.open_index(cap_, index, api_preference); }
bool Capture::open(const std::string& url, int api_preference, const std::vector<int>& params) {
  return api_.open_url(cap_, url, api_preference, params);
}
double Capture::get(int prop) const { return api_.get(cap_, prop); }
bool Capture::read(cv::Mat& frame) { return api_.read(cap_, &frame); }
bool Capture::grab() { return api_.grab(cap_); }

}  // namespace imgpipe::codecs::opencv_io
