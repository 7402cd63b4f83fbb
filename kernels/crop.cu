// GPU twin of crop_ref.cpp: the resize kernel (resize.cu) with the centre-crop
// placement.
#include <stdexcept>

#include "crop.hpp"
#include "resize_plan.hpp"

namespace imgpipe::kernels {

void center_crop_gpu(const ResizeBatch& b, std::uint8_t* d_dst, CUstream_st* stream) {
  ResizeBatch cc = b;
  cc.fit = Fit::center_crop;
  validate(cc);
  if (!d_dst) throw std::invalid_argument("center_crop: dst is null");
  detail::resample_gpu(cc, detail::u8_hwc_output(d_dst), stream);
}

}  // namespace imgpipe::kernels
