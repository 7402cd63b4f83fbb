// The subset of the nvJPEG C API that imgpipe calls, declared here so that the
// project builds where nvjpeg.h is absent (this machine, CI) and loads
// libnvjpeg at run time (nvjpeg_loader.hpp).
//
// Values and layouts are those of the CUDA 13 nvjpeg.h (nvJPEG 13.0), which
// agree with every nvJPEG since 11.0 for what is declared here. The names
// mirror the C names inside namespace imgpipe::codecs::nvj; the header's macros
// (NVJPEG_FLAGS_*, NVJPEG_MAX_COMPONENT) get lower-case names so that this
// file and the real header can be included together.
// tests/gpu/nvjpeg_decl_check.cpp compiles this file against the real header
// on the GPU machine and checks every value, layout and function type.
// Private to codecs/image/nvjpeg/, as nvjpeg_loader.hpp is.
#pragma once

#include <cstddef>

#include "imgpipe/types.hpp"  // CUstream_st (cudaStream_t)

namespace imgpipe::codecs::nvj {

constexpr int max_component = 4;  // NVJPEG_MAX_COMPONENT

enum nvjpegStatus_t : int {
  NVJPEG_STATUS_SUCCESS = 0,
  NVJPEG_STATUS_NOT_INITIALIZED = 1,
  NVJPEG_STATUS_INVALID_PARAMETER = 2,
  NVJPEG_STATUS_BAD_JPEG = 3,
  NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
  NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
  NVJPEG_STATUS_EXECUTION_FAILED = 6,
  NVJPEG_STATUS_ARCH_MISMATCH = 7,
  NVJPEG_STATUS_INTERNAL_ERROR = 8,
  NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
  NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10,
};

enum nvjpegChromaSubsampling_t : int {
  NVJPEG_CSS_444 = 0,
  NVJPEG_CSS_422 = 1,
  NVJPEG_CSS_420 = 2,
  NVJPEG_CSS_440 = 3,
  NVJPEG_CSS_411 = 4,
  NVJPEG_CSS_410 = 5,
  NVJPEG_CSS_GRAY = 6,
  NVJPEG_CSS_410V = 7,
  NVJPEG_CSS_UNKNOWN = -1,
};

// Only the formats imgpipe may ask for (the header has more, and a
// NVJPEG_OUTPUT_FORMAT_MAX that grows between releases).
enum nvjpegOutputFormat_t : int {
  NVJPEG_OUTPUT_UNCHANGED = 0,
  NVJPEG_OUTPUT_YUV = 1,
  NVJPEG_OUTPUT_Y = 2,
  NVJPEG_OUTPUT_RGB = 3,
  NVJPEG_OUTPUT_BGR = 4,
  NVJPEG_OUTPUT_RGBI = 5,  // interleaved RGB in channel[0]
  NVJPEG_OUTPUT_BGRI = 6,
};

enum nvjpegBackend_t : int {
  NVJPEG_BACKEND_DEFAULT = 0,
  NVJPEG_BACKEND_HYBRID = 1,             // Huffman on the CPU
  NVJPEG_BACKEND_GPU_HYBRID = 2,         // Huffman on the SMs
  NVJPEG_BACKEND_HARDWARE = 3,           // the JPEG engines, bitstreams in host memory
  NVJPEG_BACKEND_GPU_HYBRID_DEVICE = 4,  // batched API only, bitstreams in device memory
  NVJPEG_BACKEND_HARDWARE_DEVICE = 5,    // batched API only, bitstreams in device memory
};

// The frame's SOF marker.
enum nvjpegJpegEncoding_t : int {
  NVJPEG_ENCODING_UNKNOWN = 0x0,
  NVJPEG_ENCODING_BASELINE_DCT = 0xc0,
  NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN = 0xc1,
  NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN = 0xc2,
  NVJPEG_ENCODING_LOSSLESS_HUFFMAN = 0xc3,
};

// library_types.h's libraryPropertyType, for nvjpegGetProperty.
enum libraryPropertyType : int {
  MAJOR_VERSION = 0,
  MINOR_VERSION = 1,
  PATCH_LEVEL = 2,
};

// nvjpegCreateEx* flags (bit fields).
constexpr unsigned int flags_default = 0;                        // NVJPEG_FLAGS_DEFAULT
constexpr unsigned int flag_hw_decode_no_pipeline = 1;           // NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE
constexpr unsigned int flag_bitstream_strict = 4;                // NVJPEG_FLAGS_BITSTREAM_STRICT
constexpr unsigned int flag_upsampling_with_interpolation = 32;  // NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION (>= 12.1)

// Output descriptor: per-plane device pointers and row pitches in bytes.
struct nvjpegImage_t {
  unsigned char* channel[max_component];
  std::size_t pitch[max_component];
};

// Extended (V2) allocators: return 0 on success. nvJPEG passes the context
// back and a stream the allocation may be ordered on.
using tDevMallocV2 = int (*)(void* ctx, void** ptr, std::size_t size, CUstream_st* stream);
using tDevFreeV2 = int (*)(void* ctx, void* ptr, std::size_t size, CUstream_st* stream);
using tPinnedMallocV2 = int (*)(void* ctx, void** ptr, std::size_t size, CUstream_st* stream);
using tPinnedFreeV2 = int (*)(void* ctx, void* ptr, std::size_t size, CUstream_st* stream);

struct nvjpegDevAllocatorV2_t {
  tDevMallocV2 dev_malloc;
  tDevFreeV2 dev_free;
  void* dev_ctx;
};

struct nvjpegPinnedAllocatorV2_t {
  tPinnedMallocV2 pinned_malloc;
  tPinnedFreeV2 pinned_free;
  void* pinned_ctx;
};

// Opaque handles.
struct nvjpegHandle;
struct nvjpegJpegState;
struct nvjpegJpegStream;
using nvjpegHandle_t = nvjpegHandle*;
using nvjpegJpegState_t = nvjpegJpegState*;
using nvjpegJpegStream_t = nvjpegJpegStream*;

// Function types, one per entry point imgpipe resolves.
using PFN_nvjpegGetProperty = nvjpegStatus_t (*)(libraryPropertyType type, int* value);
using PFN_nvjpegCreateExV2 = nvjpegStatus_t (*)(nvjpegBackend_t backend, nvjpegDevAllocatorV2_t* dev_allocator,
                                                nvjpegPinnedAllocatorV2_t* pinned_allocator, unsigned int flags,
                                                nvjpegHandle_t* handle);
using PFN_nvjpegDestroy = nvjpegStatus_t (*)(nvjpegHandle_t handle);
using PFN_nvjpegGetHardwareDecoderInfo = nvjpegStatus_t (*)(nvjpegHandle_t handle, unsigned int* num_engines,
                                                            unsigned int* num_cores_per_engine);
using PFN_nvjpegJpegStateCreate = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegState_t* jpeg_handle);
using PFN_nvjpegJpegStateDestroy = nvjpegStatus_t (*)(nvjpegJpegState_t jpeg_handle);
using PFN_nvjpegDecode = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                            const unsigned char* data, std::size_t length,
                                            nvjpegOutputFormat_t output_format, nvjpegImage_t* destination,
                                            CUstream_st* stream);
using PFN_nvjpegJpegStreamCreate = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegStream_t* jpeg_stream);
using PFN_nvjpegJpegStreamDestroy = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream);
using PFN_nvjpegJpegStreamParseHeader = nvjpegStatus_t (*)(nvjpegHandle_t handle, const unsigned char* data,
                                                           std::size_t length, nvjpegJpegStream_t jpeg_stream);
using PFN_nvjpegJpegStreamGetFrameDimensions = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream, unsigned int* width,
                                                                  unsigned int* height);
using PFN_nvjpegJpegStreamGetComponentsNum = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream,
                                                                unsigned int* components_num);
using PFN_nvjpegJpegStreamGetChromaSubsampling = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream,
                                                                    nvjpegChromaSubsampling_t* chroma_subsampling);
using PFN_nvjpegJpegStreamGetJpegEncoding = nvjpegStatus_t (*)(nvjpegJpegStream_t jpeg_stream,
                                                               nvjpegJpegEncoding_t* jpeg_encoding);
using PFN_nvjpegDecodeBatchedSupported = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegStream_t jpeg_stream,
                                                            int* is_supported);
using PFN_nvjpegDecodeBatchedPreAllocate = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                                              int batch_size, int width, int height,
                                                              nvjpegChromaSubsampling_t chroma_subsampling,
                                                              nvjpegOutputFormat_t output_format);
using PFN_nvjpegDecodeBatchedInitialize = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                                             int batch_size, int max_cpu_threads,
                                                             nvjpegOutputFormat_t output_format);
using PFN_nvjpegDecodeBatched = nvjpegStatus_t (*)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                                   const unsigned char* const* data, const std::size_t* lengths,
                                                   nvjpegImage_t* destinations, CUstream_st* stream);

// "NVJPEG_STATUS_BAD_JPEG" for 3; "NVJPEG_STATUS_<unknown>" for a value this
// file does not know. Never null.
constexpr const char* status_name(int s) noexcept {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
    default: return "NVJPEG_STATUS_<unknown>";
  }
}

}  // namespace imgpipe::codecs::nvj
