// NVTX ranges, so that `nsys profile imgpipe ...` shows each stage's calls
// and each batch's copy and kernels on the threads that ran them (domain
// "imgpipe"). A range is pushed by the constructor and popped by the
// destructor, so ranges on one thread nest as scopes do.
//
// With the CUDA backend (IMGPIPE_WITH_NVTX=1, set by the core target) this is
// the header-only NVTX v3 of the CUDA Toolkit: without a profiler attached a
// range costs two calls through a null-tool function pointer. In the
// host-only build (no CUDA) Range is an empty class and compiles to nothing.
// The two variants live in different inline namespaces, so a translation unit
// may force the no-op variant (tests do) without an ODR clash.
#pragma once

#include <cstdint>

#ifndef IMGPIPE_WITH_NVTX
#define IMGPIPE_WITH_NVTX 0
#endif

#if IMGPIPE_WITH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace imgpipe::nvtx {

#if IMGPIPE_WITH_NVTX
inline namespace on {

inline constexpr bool enabled = true;

// The "imgpipe" domain, created on first use (thread-safe).
inline nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("imgpipe");
  return d;
}

class Range {
 public:
  // `name` must outlive the range (a literal or a stage's name). `payload`
  // (an input's sequence number, a batch index) shows with the range.
  explicit Range(const char* name) noexcept { push(name, nullptr); }
  Range(const char* name, std::uint64_t payload) noexcept { push(name, &payload); }
  ~Range() { nvtxDomainRangePop(domain()); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  static void push(const char* name, const std::uint64_t* payload) noexcept {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    if (payload) {
      a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
      a.payload.ullValue = *payload;
    }
    nvtxDomainRangePushEx(domain(), &a);
  }
};

}  // namespace on
#else
inline namespace off {

inline constexpr bool enabled = false;

class Range {
 public:
  explicit constexpr Range(const char*) noexcept {}
  constexpr Range(const char*, std::uint64_t) noexcept {}
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
};

}  // namespace off
#endif

}  // namespace imgpipe::nvtx
