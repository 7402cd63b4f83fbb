#include "imgpipe/memory/resources.hpp"

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda_check.hpp"
#endif

namespace imgpipe::memory {

void* PageableResource::allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded ? rounded : alignment);
  if (!p) throw std::bad_alloc();
  return p;
}

void PageableResource::deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }

std::string_view PinnedResource::name() const noexcept {
  switch (flags_) {
    case none: return "pinned";
    case portable: return "portable";
    case mapped: return "mapped";
    case write_combined: return "write_combined";
    case portable | write_combined: return "portable|write_combined";
    case portable | mapped: return "portable|mapped";
    case mapped | write_combined: return "mapped|write_combined";
    default: return "portable|mapped|write_combined";
  }
}

void* PinnedResource::allocate(std::size_t bytes, std::size_t alignment) {
#if IMGPIPE_HAS_CUDA
  // cudaHostAlloc returns page-aligned memory: any alignment up to 4096 holds.
  if (alignment > 4096) throw std::invalid_argument("PinnedResource: alignment above 4096 is not supported");
  void* p = nullptr;
  IMGPIPE_CUDA_TRY(cudaHostAlloc(&p, bytes ? bytes : 1, flags_));
  return p;
#else
  (void)bytes;
  (void)alignment;
  throw std::logic_error("PinnedResource: imgpipe was built without CUDA");
#endif
}

void PinnedResource::deallocate(void* p, std::size_t, std::size_t) noexcept {
#if IMGPIPE_HAS_CUDA
  if (p) IMGPIPE_CUDA_TRY_NOTHROW(cudaFreeHost(p));
#else
  (void)p;
#endif
}

}  // namespace imgpipe::memory
