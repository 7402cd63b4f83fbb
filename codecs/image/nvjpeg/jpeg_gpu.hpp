// Batched JPEG decode on one GPU with nvJPEG (loaded at run time, see
// nvjpeg_loader.hpp): the JPEG engines (hardware backends) or Huffman decode
// on the SMs (gpu_hybrid). Output: interleaved RGB, 8 bits per channel, in
// device memory the caller owns.
//
// Typical use: parse() every candidate on the host copy of its bitstream
// (from any thread) and route images with batch_supported == false
// elsewhere; preallocate() once for the largest frame; then decode_batch()
// the rest from one thread, routing the images it reports failed to the CPU.
//
// Without libnvjpeg, a GPU, or a CUDA build, probe() says why and the
// constructor throws imgpipe::Error with that reason; nothing crashes.
// No CUDA-only types here: streams are CUstream_st* (cudaStream_t).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "imgpipe/error.hpp"
#include "imgpipe/types.hpp"

namespace imgpipe::codecs {

enum class JpegBackend : std::uint8_t {
  hardware_device,  // JPEG engines, bitstreams in device memory (NVJPEG_BACKEND_HARDWARE_DEVICE)
  hardware,         // JPEG engines, bitstreams in host memory (NVJPEG_BACKEND_HARDWARE)
  gpu_hybrid,       // Huffman on the SMs, bitstreams in host memory (NVJPEG_BACKEND_GPU_HYBRID)
};
std::string_view to_string(JpegBackend b) noexcept;
// "hardware_device" | "hardware" | "gpu_hybrid"; nullopt otherwise.
std::optional<JpegBackend> parse_jpeg_backend(std::string_view s) noexcept;

// "NVJPEG_STATUS_BAD_JPEG" for 3, the name of an nvJPEG status (as
// decode_batch and JpegInfo report them); "NVJPEG_STATUS_<unknown>" for a
// value nvJPEG 13 does not define.
std::string_view gpu_jpeg_status_name(int status) noexcept;

// Whether libnvjpeg is loaded (nvjpeg_loader.hpp: found, complete, not
// switched off with IMGPIPE_NVJPEG); when not, the reason in *why. Loads it
// on the first call. Says nothing about a GPU or its engines (probe() does).
bool nvjpeg_available(std::string* why = nullptr) noexcept;

// The JPEG's chroma subsampling, as nvJPEG classifies it.
enum class ChromaSubsampling : std::int8_t { css444, css422, css420, css440, css411, css410, gray, css410v, unknown };
std::string_view to_string(ChromaSubsampling c) noexcept;

// An allocator nvJPEG calls for its own buffers (same shape as nvJPEG's V2
// allocators): return 0 on success. Must be thread-safe; `ctx` is passed back
// unchanged and must outlive the decoder. `stream` is the stream nvJPEG
// orders the use on (the allocator may ignore it).
struct JpegAllocator {
  int (*allocate)(void* ctx, void** ptr, std::size_t bytes, CUstream_st* stream) = nullptr;
  int (*deallocate)(void* ctx, void* ptr, std::size_t bytes, CUstream_st* stream) = nullptr;
  void* ctx = nullptr;
  bool empty() const noexcept { return allocate == nullptr || deallocate == nullptr; }
};

struct GpuJpegOptions {
  JpegBackend backend = JpegBackend::hardware_device;
  // hardware_device only: use `hardware` (host bitstreams) when the library
  // or GPU has no HARDWARE_DEVICE backend. Check input_on_device() after.
  bool allow_host_input_fallback = true;
  // Interpolated chroma upsampling like libjpeg's default "fancy" upsampling
  // (NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, nvJPEG >= 12.1; ignored
  // before). Off: nvJPEG's sample replication.
  bool fancy_upsampling = true;
  // NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE: the library buffers no extra images.
  // Off is faster and decodes correctly (docs/benchmarks.md#pipelined-engine-calls); on stays
  // the default here because per-image failure reporting was first
  // exercised with it (the pipeline turns it off).
  bool hw_no_pipeline = true;
  // Channel order of the output: false R, G, B; true B, G, R (as OpenCV
  // decodes, so GPU- and CPU-decoded frames can share one kernel).
  bool bgr = false;
  // Hardware backends: synchronise the caller's stream before each decode
  // (see decode_batch). Turn off only to measure or to show the hazard:
  // without it, work queued on the stream can overwrite decoded pixels.
  bool host_barrier = true;
  // nvJPEG's device and pinned buffers. Empty: cudaMalloc/cudaFree and
  // cudaHostAlloc/cudaFreeHost.
  JpegAllocator device_allocator;
  JpegAllocator pinned_allocator;
};

// What probe() found.
struct JpegHardwareInfo {
  unsigned engines = 0;  // nvjpegGetHardwareDecoderInfo
  unsigned cores_per_engine = 0;
  bool device_input = false;   // NVJPEG_BACKEND_HARDWARE_DEVICE could be created
  int version[3] = {0, 0, 0};  // nvJPEG major, minor, patch
  std::string library;         // what was dlopen()ed
};

// What parse() found in a bitstream's header.
struct JpegInfo {
  bool valid = false;  // the header parsed
  int status = 0;      // nvJPEG status of the parse (0 when valid); gpu_jpeg_status_name() names it
  int width = 0;
  int height = 0;
  int components = 0;  // encoded components (1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK)
  ChromaSubsampling subsampling = ChromaSubsampling::unknown;
  bool progressive = false;      // SOF2
  bool batch_supported = false;  // nvjpegDecodeBatchedSupported accepts it for this decoder's backend
};

// One output image: caller-owned device memory of at least pitch * height
// bytes; the decoder writes width * 3 bytes (R, G, B, or B, G, R with
// GpuJpegOptions::bgr) in each of `height` rows. width and height must be the image's own (from parse()).
struct DecodedFrame {
  std::uint8_t* d_rgb = nullptr;
  std::size_t pitch = 0;
  int width = 0;
  int height = 0;
};

// Counters since construction (read with stats(); approximate while a
// decode_batch runs on another thread).
struct GpuJpegStats {
  std::uint64_t batches = 0;          // decode_batch calls with n > 0
  std::uint64_t images = 0;           // images passed to decode_batch
  std::uint64_t failed = 0;           // images reported failed
  std::uint64_t batch_failures = 0;   // nvjpegDecodeBatched calls that failed (bisection included)
  std::uint64_t initializations = 0;  // nvjpegDecodeBatchedInitialize calls
  std::uint64_t initialize_ns = 0;    // host time inside them (a call of another size than the last needs one)
  std::uint64_t preallocations = 0;   // nvjpegDecodeBatchedPreAllocate calls (preallocate() asking for more)
  // Host time: inside nvjpegDecodeBatched (the library's parsing and the
  // engines' submission), and waiting in decode_batch for the previous
  // batch to finish on the GPU.
  std::uint64_t submit_ns = 0;
  std::uint64_t previous_wait_ns = 0;
};

// An nvJPEG call failed where no per-image status can carry it.
class NvjpegError : public Error {
 public:
  NvjpegError(const std::string& what, int status) : Error(what), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

class GpuJpegDecoder {
 public:
  // Whether `device` has JPEG engines nvJPEG can drive, without keeping
  // anything: loads the library, creates and destroys a HARDWARE handle.
  // nullopt with the reason in *why when the library, the device or the
  // engines are missing (ARCH_MISMATCH: no engines on this GPU). Never throws.
  static std::optional<JpegHardwareInfo> probe(int device, std::string* why = nullptr) noexcept;

  // A decoder for `device` (the current device is restored on return).
  // Throws imgpipe::Error (its message the reason) when nvJPEG or the
  // requested backend is unavailable or a CUDA call fails, NvjpegError when
  // nvJPEG fails otherwise.
  explicit GpuJpegDecoder(int device, const GpuJpegOptions& options = {});
  ~GpuJpegDecoder();
  GpuJpegDecoder(const GpuJpegDecoder&) = delete;
  GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

  int device() const noexcept;
  JpegBackend backend() const noexcept;  // the one in use, after any fallback
  // The engines and library, as probe() reports them, read from this
  // decoder's own handle (engines 0 for gpu_hybrid).
  const JpegHardwareInfo& hardware_info() const noexcept;
  // True: decode_batch's data pointers must be device memory (on device());
  // false: host memory (pinned is best; see docs/gpu-decode.md).
  bool input_on_device() const noexcept;
  GpuJpegStats stats() const noexcept;

  // Reads the header of the bitstream at h_data (host memory, `size` bytes;
  // not kept). Thread-safe: any number of threads may parse at once (each
  // borrows one of the decoder's nvJPEG streams). A damaged header is
  // reported in the result (valid == false), not thrown. Throws NvjpegError
  // only when nvJPEG cannot create a stream.
  JpegInfo parse(const std::uint8_t* h_data, std::size_t size) const;

  // Sizes nvJPEG's internal buffers for batches of up to `max_batch` images
  // of up to max_width x max_height (any subsampling), so that decoding
  // such batches allocates nothing. Returns false where the backend has no
  // pre-allocation (gpu_hybrid; a library answering IMPLEMENTATION_NOT_
  // SUPPORTED). Asking for no more than an earlier call did does nothing
  // (true); asking for more sizes the buffers for both and waits for the
  // previous batch. Throws std::invalid_argument,
  // NvjpegError, imgpipe::Error (a CUDA call failed).
  bool preallocate(int max_batch, int max_width, int max_height);

  // Decodes data[i] (sizes[i] bytes; device memory when input_on_device(),
  // else host) into out[i], i < n, on `stream`. The caller must give only
  // images parse() found batch_supported and size out[] from parse().
  // status[i] receives 0 when image i was decoded, else the nvJPEG status
  // that rejected it (route it to the CPU). Returns the number decoded.
  //
  // When the calls return, the work is on `stream`: the pixels are ready for
  // work that follows on `stream` (or after synchronising it). Hardware
  // backends synchronise `stream` first: nvJPEG's engines write when called,
  // not when the stream reaches the decode, so pending work on `stream`
  // (including the upload of the bitstreams) must be finished. With
  // `inputs_ready` the caller vouches for that itself (it waited for the
  // uploads of these bitstreams, and nothing pending on any stream writes
  // the outputs), and the decoder does not wait for the rest of `stream`.
  // Either way it waits for its own previous batch (an event, not the
  // stream).
  //
  // Failures: when nvjpegDecodeBatched fails, the batch is split in halves
  // and each re-decoded (re-initialising nvJPEG), down to single images, so
  // that only the bad ones are reported; the decoder stays usable and leaves
  // no pending CUDA error. One caller at a time (calls are serialised).
  // Throws std::invalid_argument (bad arguments), NvjpegError (nvJPEG cannot
  // be initialised for the batch), imgpipe::Error naming the CUDA error (the
  // stream failed: not the images' fault; a sticky error stays sticky).
  int decode_batch(const std::uint8_t* const* data, const std::size_t* sizes, int n, const DecodedFrame* out,
                   int* status, CUstream_st* stream, bool inputs_ready = false);

  // Waits for the last batch's stream and forgets it, so that the stream may
  // be destroyed and the decoder used with other streams afterwards (a
  // decoder kept across runs outlives each run's streams). Never throws: a
  // failed wait is the stream's error, reported by the stream's owner.
  // With `stream`: only when the last batch ran on that stream. A kept
  // decoder may already serve the next run, which got staging and streams of
  // its own because a caller still held a batch of this one (the pull API
  // across epochs): this run's end must leave the next run's stream bound.
  void release_stream(CUstream_st* stream = nullptr) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace imgpipe::codecs
