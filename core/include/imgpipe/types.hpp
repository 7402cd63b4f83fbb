// Basic value types shared by the public API, the stages and the kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

// The CUDA runtime's handle types, declared without including a CUDA header so
// that public headers compile in builds without a CUDA toolkit.
// cudaStream_t is CUstream_st*, cudaEvent_t is CUevent_st*.
struct CUstream_st;
struct CUevent_st;

namespace imgpipe {

enum class Layout : std::uint8_t { nchw, nhwc };
enum class DType : std::uint8_t { float32, float16, uint8 };
// input.video.clips.layout: one clip's tensor. cthw: C x T x H x W (the
// torchvision video models, X3D, SlowFast, VideoMAE); tchw: T x C x H x W
// (torchcodec's); thwc: T x H x W x C (with transform.layout nhwc).
enum class ClipLayout : std::uint8_t { cthw, tchw, thwc };

// One enum value and the name that config files and reports use for it. Each
// enum's names are listed once, in one such array (no array indexed by value).
template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

inline constexpr EnumName<Layout> layout_names[] = {{Layout::nchw, "nchw"}, {Layout::nhwc, "nhwc"}};
inline constexpr EnumName<ClipLayout> clip_layout_names[] = {
    {ClipLayout::cthw, "cthw"}, {ClipLayout::tchw, "tchw"}, {ClipLayout::thwc, "thwc"}};
inline constexpr EnumName<DType> dtype_names[] = {
    {DType::float32, "float32"}, {DType::float16, "float16"}, {DType::uint8, "uint8"}};

// The value's name in `names`, or "?" for a value not listed there.
template <typename E, std::size_t N>
constexpr std::string_view enum_name(const EnumName<E> (&names)[N], E value) noexcept {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

constexpr std::size_t dtype_size(DType t) noexcept {
  return t == DType::float32 ? 4 : t == DType::float16 ? 2 : 1;
}
constexpr std::string_view to_string(DType t) noexcept { return enum_name(dtype_names, t); }
constexpr std::string_view to_string(Layout l) noexcept { return enum_name(layout_names, l); }

}  // namespace imgpipe
