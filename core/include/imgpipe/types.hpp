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

constexpr std::size_t dtype_size(DType t) noexcept {
  return t == DType::float32 ? 4 : t == DType::float16 ? 2 : 1;
}
constexpr std::string_view to_string(DType t) noexcept {
  return t == DType::float32 ? "float32" : t == DType::float16 ? "float16" : "uint8";
}
constexpr std::string_view to_string(Layout l) noexcept { return l == Layout::nchw ? "nchw" : "nhwc"; }

}  // namespace imgpipe
