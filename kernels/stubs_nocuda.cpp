// Builds without a CUDA toolkit: the GPU launchers exist (so callers link) and
// say clearly that this build has no GPU support. The pipeline never calls
// them here: it selects the host backend.
#include <stdexcept>

#include "checksum.hpp"
#include "normalize.hpp"

namespace imgpipe::kernels {

void normalize_gpu(const NormalizeParams&, CUstream_st*) {
  throw std::logic_error("normalize_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}
void checksum_gpu(const void*, std::size_t, std::uint64_t*, CUstream_st*) {
  throw std::logic_error("checksum_gpu: imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc)");
}

}  // namespace imgpipe::kernels
