// GPU twin of letterbox_ref.cpp: the resize kernel (resize.cu) with the
// letterbox placement; the geometry is computed on the host.
#include <stdexcept>

#include "letterbox.hpp"
#include "resize_plan.hpp"

namespace imgpipe::kernels {

void letterbox_gpu(const ResizeBatch& b, std::uint8_t* d_dst, LetterboxGeometry* geometry, CUstream_st* stream) {
  ResizeBatch lb = b;
  lb.fit = Fit::letterbox;
  validate(lb);
  if (!d_dst) throw std::invalid_argument("letterbox: dst is null");
  if (geometry)
    for (int i = 0; i < lb.batch; ++i)
      geometry[i] = letterbox_geometry(lb.images[i].width, lb.images[i].height, lb.width, lb.height);
  detail::resample_gpu(lb, detail::u8_hwc_output(d_dst), stream);
}

}  // namespace imgpipe::kernels
