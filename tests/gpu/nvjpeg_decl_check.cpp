// Checks codecs/image/nvjpeg/nvjpeg_api.hpp (imgpipe's own declarations of the nvJPEG
// subset it calls) against the real nvjpeg.h, at compile time: every enum
// value, the flags and NVJPEG_MAX_COMPONENT, every struct's size, alignment,
// field offsets and field types, and every function pointer type against
// decltype(&::nvjpegXxx). Types are compared after mapping each imgpipe::nvj
// type to its nvjpeg.h counterpart (real<T> below), so a signature matches
// only if every parameter matches. Built and run by nvjpeg_decl_check.sh on a
// machine that has /usr/local/cuda/include/nvjpeg.h; a mismatch fails the
// build with the name of what differs.
#include <nvjpeg.h>

#include <cstddef>
#include <cstdio>
#include <string_view>
#include <type_traits>

#include "nvjpeg_api.hpp"

namespace nvj = imgpipe::codecs::nvj;

// real<T>: the nvjpeg.h type that imgpipe's T stands for.
template <class T>
struct real {
  using type = T;
};
template <class T>
using real_t = typename real<T>::type;
template <class T>
struct real<T*> {
  using type = real_t<T>*;
};
template <class T>
struct real<const T> {
  using type = const real_t<T>;
};
template <class T, std::size_t N>
struct real<T[N]> {
  using type = real_t<T>[N];
};
template <class R, class... A>
struct real<R (*)(A...)> {
  using type = real_t<R> (*)(real_t<A>...);
};
#define MAP(mine, theirs)  \
  template <>              \
  struct real<nvj::mine> { \
    using type = theirs;   \
  };
MAP(nvjpegStatus_t, ::nvjpegStatus_t)
MAP(nvjpegChromaSubsampling_t, ::nvjpegChromaSubsampling_t)
MAP(nvjpegOutputFormat_t, ::nvjpegOutputFormat_t)
MAP(nvjpegBackend_t, ::nvjpegBackend_t)
MAP(nvjpegJpegEncoding_t, ::nvjpegJpegEncoding_t)
MAP(libraryPropertyType, ::libraryPropertyType)
MAP(nvjpegImage_t, ::nvjpegImage_t)
MAP(nvjpegDevAllocatorV2_t, ::nvjpegDevAllocatorV2_t)
MAP(nvjpegPinnedAllocatorV2_t, ::nvjpegPinnedAllocatorV2_t)
MAP(nvjpegHandle, ::nvjpegHandle)
MAP(nvjpegJpegState, ::nvjpegJpegState)
MAP(nvjpegJpegStream, ::nvjpegJpegStream)
#undef MAP

// ---- enums: same size, every value equal
#define SAME_ENUM_TYPE(t)                                                                              \
  static_assert(sizeof(nvj::t) == sizeof(::t) && alignof(nvj::t) == alignof(::t), "enum size of " #t); \
  static_assert(std::is_same_v<real_t<nvj::t>, ::t>, "mapping of " #t);
#define SAME_VALUE(e) static_assert(static_cast<long long>(nvj::e) == static_cast<long long>(::e), "value of " #e);

SAME_ENUM_TYPE(nvjpegStatus_t)
SAME_VALUE(NVJPEG_STATUS_SUCCESS)
SAME_VALUE(NVJPEG_STATUS_NOT_INITIALIZED)
SAME_VALUE(NVJPEG_STATUS_INVALID_PARAMETER)
SAME_VALUE(NVJPEG_STATUS_BAD_JPEG)
SAME_VALUE(NVJPEG_STATUS_JPEG_NOT_SUPPORTED)
SAME_VALUE(NVJPEG_STATUS_ALLOCATOR_FAILURE)
SAME_VALUE(NVJPEG_STATUS_EXECUTION_FAILED)
SAME_VALUE(NVJPEG_STATUS_ARCH_MISMATCH)
SAME_VALUE(NVJPEG_STATUS_INTERNAL_ERROR)
SAME_VALUE(NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED)
SAME_VALUE(NVJPEG_STATUS_INCOMPLETE_BITSTREAM)

SAME_ENUM_TYPE(nvjpegChromaSubsampling_t)
SAME_VALUE(NVJPEG_CSS_444)
SAME_VALUE(NVJPEG_CSS_422)
SAME_VALUE(NVJPEG_CSS_420)
SAME_VALUE(NVJPEG_CSS_440)
SAME_VALUE(NVJPEG_CSS_411)
SAME_VALUE(NVJPEG_CSS_410)
SAME_VALUE(NVJPEG_CSS_GRAY)
SAME_VALUE(NVJPEG_CSS_410V)
SAME_VALUE(NVJPEG_CSS_UNKNOWN)

SAME_ENUM_TYPE(nvjpegOutputFormat_t)
SAME_VALUE(NVJPEG_OUTPUT_UNCHANGED)
SAME_VALUE(NVJPEG_OUTPUT_YUV)
SAME_VALUE(NVJPEG_OUTPUT_Y)
SAME_VALUE(NVJPEG_OUTPUT_RGB)
SAME_VALUE(NVJPEG_OUTPUT_BGR)
SAME_VALUE(NVJPEG_OUTPUT_RGBI)
SAME_VALUE(NVJPEG_OUTPUT_BGRI)

SAME_ENUM_TYPE(nvjpegBackend_t)
SAME_VALUE(NVJPEG_BACKEND_DEFAULT)
SAME_VALUE(NVJPEG_BACKEND_HYBRID)
SAME_VALUE(NVJPEG_BACKEND_GPU_HYBRID)
SAME_VALUE(NVJPEG_BACKEND_HARDWARE)
SAME_VALUE(NVJPEG_BACKEND_GPU_HYBRID_DEVICE)
SAME_VALUE(NVJPEG_BACKEND_HARDWARE_DEVICE)

SAME_ENUM_TYPE(nvjpegJpegEncoding_t)
SAME_VALUE(NVJPEG_ENCODING_UNKNOWN)
SAME_VALUE(NVJPEG_ENCODING_BASELINE_DCT)
SAME_VALUE(NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN)
SAME_VALUE(NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN)
SAME_VALUE(NVJPEG_ENCODING_LOSSLESS_HUFFMAN)

SAME_ENUM_TYPE(libraryPropertyType)
SAME_VALUE(MAJOR_VERSION)
SAME_VALUE(MINOR_VERSION)
SAME_VALUE(PATCH_LEVEL)

// ---- macros
static_assert(nvj::max_component == (NVJPEG_MAX_COMPONENT), "NVJPEG_MAX_COMPONENT");
static_assert(nvj::flags_default == (NVJPEG_FLAGS_DEFAULT), "NVJPEG_FLAGS_DEFAULT");
static_assert(nvj::flag_hw_decode_no_pipeline == (NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE),
              "NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE");
static_assert(nvj::flag_bitstream_strict == (NVJPEG_FLAGS_BITSTREAM_STRICT), "NVJPEG_FLAGS_BITSTREAM_STRICT");
static_assert(nvj::flag_upsampling_with_interpolation == (NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION),
              "NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION");

// ---- structs: size, alignment, each field's offset and type
#define SAME_STRUCT(t)                                                \
  static_assert(sizeof(nvj::t) == sizeof(::t), "size of " #t);        \
  static_assert(alignof(nvj::t) == alignof(::t), "alignment of " #t); \
  static_assert(std::is_standard_layout_v<nvj::t>, #t " is not standard-layout");
#define SAME_FIELD(t, f)                                                           \
  static_assert(offsetof(nvj::t, f) == offsetof(::t, f), "offset of " #t "::" #f); \
  static_assert(std::is_same_v<real_t<decltype(nvj::t::f)>, decltype(::t::f)>, "type of " #t "::" #f);

SAME_STRUCT(nvjpegImage_t)
SAME_FIELD(nvjpegImage_t, channel)
SAME_FIELD(nvjpegImage_t, pitch)
SAME_STRUCT(nvjpegDevAllocatorV2_t)
SAME_FIELD(nvjpegDevAllocatorV2_t, dev_malloc)
SAME_FIELD(nvjpegDevAllocatorV2_t, dev_free)
SAME_FIELD(nvjpegDevAllocatorV2_t, dev_ctx)
SAME_STRUCT(nvjpegPinnedAllocatorV2_t)
SAME_FIELD(nvjpegPinnedAllocatorV2_t, pinned_malloc)
SAME_FIELD(nvjpegPinnedAllocatorV2_t, pinned_free)
SAME_FIELD(nvjpegPinnedAllocatorV2_t, pinned_ctx)

// ---- allocator callback and handle types
static_assert(std::is_same_v<real_t<nvj::tDevMallocV2>, ::tDevMallocV2>, "tDevMallocV2");
static_assert(std::is_same_v<real_t<nvj::tDevFreeV2>, ::tDevFreeV2>, "tDevFreeV2");
static_assert(std::is_same_v<real_t<nvj::tPinnedMallocV2>, ::tPinnedMallocV2>, "tPinnedMallocV2");
static_assert(std::is_same_v<real_t<nvj::tPinnedFreeV2>, ::tPinnedFreeV2>, "tPinnedFreeV2");
static_assert(std::is_same_v<real_t<nvj::nvjpegHandle_t>, ::nvjpegHandle_t>, "nvjpegHandle_t");
static_assert(std::is_same_v<real_t<nvj::nvjpegJpegState_t>, ::nvjpegJpegState_t>, "nvjpegJpegState_t");
static_assert(std::is_same_v<real_t<nvj::nvjpegJpegStream_t>, ::nvjpegJpegStream_t>, "nvjpegJpegStream_t");
static_assert(std::is_same_v<CUstream_st*, cudaStream_t>, "cudaStream_t");

// ---- functions
#define SAME_FN(f) static_assert(std::is_same_v<real_t<nvj::PFN_##f>, decltype(&::f)>, "function type of " #f);
SAME_FN(nvjpegGetProperty)
SAME_FN(nvjpegCreateExV2)
SAME_FN(nvjpegDestroy)
SAME_FN(nvjpegGetHardwareDecoderInfo)
SAME_FN(nvjpegJpegStateCreate)
SAME_FN(nvjpegJpegStateDestroy)
SAME_FN(nvjpegDecode)
SAME_FN(nvjpegJpegStreamCreate)
SAME_FN(nvjpegJpegStreamDestroy)
SAME_FN(nvjpegJpegStreamParseHeader)
SAME_FN(nvjpegJpegStreamGetFrameDimensions)
SAME_FN(nvjpegJpegStreamGetComponentsNum)
SAME_FN(nvjpegJpegStreamGetChromaSubsampling)
SAME_FN(nvjpegJpegStreamGetJpegEncoding)
SAME_FN(nvjpegDecodeBatchedSupported)
SAME_FN(nvjpegDecodeBatchedPreAllocate)
SAME_FN(nvjpegDecodeBatchedInitialize)
SAME_FN(nvjpegDecodeBatched)

// The status names agree with the header's values (a run-time check: the
// table is constexpr, but this is cheap and prints something useful).
int main() {
  int bad = 0;
  const struct {
    ::nvjpegStatus_t s;
    const char* name;
  } statuses[] = {{NVJPEG_STATUS_SUCCESS, "NVJPEG_STATUS_SUCCESS"},
                  {NVJPEG_STATUS_BAD_JPEG, "NVJPEG_STATUS_BAD_JPEG"},
                  {NVJPEG_STATUS_ARCH_MISMATCH, "NVJPEG_STATUS_ARCH_MISMATCH"},
                  {NVJPEG_STATUS_INCOMPLETE_BITSTREAM, "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"}};
  for (const auto& e : statuses)
    if (std::string_view(nvj::status_name(e.s)) != e.name) {
      std::printf("status_name(%d) = %s, expected %s\n", static_cast<int>(e.s), nvj::status_name(e.s), e.name);
      ++bad;
    }
  std::printf(
      "nvjpeg_decl_check: nvjpeg.h %d.%d.%d: 6 enum types (41 values), 5 macros, 3 structs, 7 pointer "
      "types and 18 function types match codecs/image/nvjpeg/nvjpeg_api.hpp%s\n",
      NVJPEG_VER_MAJOR, NVJPEG_VER_MINOR, NVJPEG_VER_PATCH, bad ? "; status names DIFFER" : "");
  return bad == 0 ? 0 : 1;
}
