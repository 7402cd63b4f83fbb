// Builds without a CUDA toolkit: the GPU launchers exist (so callers link) and
// say clearly that this build has no GPU support. The pipeline never calls
// them here: it selects the host backend.
#include <stdexcept>

#include "checksum.hpp"
#include "crop.hpp"
#include "fused.hpp"
#include "letterbox.hpp"
#include "normalize.hpp"
#include "resize.hpp"

namespace imgpipe::kernels {

void normalize_gpu(const NormalizeParams&, CUstream_st*) {
  throw std::logic_error("normalize_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void checksum_gpu(const void*, std::size_t, std::uint64_t*, CUstream_st*) {
  throw std::logic_error("checksum_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}

void resize_gpu(const ResizeBatch&, std::uint8_t*, CUstream_st*) {
  throw std::logic_error("resize_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void letterbox_gpu(const ResizeBatch&, std::uint8_t*, LetterboxGeometry*, CUstream_st*) {
  throw std::logic_error("letterbox_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void center_crop_gpu(const ResizeBatch&, std::uint8_t*, CUstream_st*) {
  throw std::logic_error("center_crop_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void fused_gpu(const FusedParams&, CUstream_st*) {
  throw std::logic_error("fused_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}

}  // namespace imgpipe::kernels

// ---- memread (memory layer: calibration and tests)
#include "memread.hpp"

namespace imgpipe::kernels {

void memread_gpu(const void*, std::size_t, std::uint64_t*, CUstream_st*) {
  throw std::logic_error("memread_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void gather_read_gpu(const void*, std::size_t, const std::uint32_t*, std::size_t, std::uint64_t*, CUstream_st*) {
  throw std::logic_error("gather_read_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void spin_gpu(std::uint32_t, CUstream_st*) {
  throw std::logic_error("spin_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}

}  // namespace imgpipe::kernels

#include "trap.hpp"
namespace imgpipe::kernels {
void trap_gpu(CUstream_st*) {
  throw std::logic_error("trap_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void stall_gpu(CUstream_st*, unsigned) {
  throw std::logic_error("stall_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
}  // namespace imgpipe::kernels
