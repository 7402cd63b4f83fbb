// The stand-in for a detector: in each sample of a normalised float32 NCHW
// RGB batch, the bounding box of the "red" pixels (after undoing the
// normalisation: r > 0.6, g < 0.35, b < 0.35). A real application runs its
// model here; what matters for the sample is that the boxes come out in
// tensor coordinates, on the batch's stream, like a model's.
#pragma once

#include <array>
#include <vector>

struct CUstream_st;  // cudaStream_t

namespace detect {

// Tensor pixel bounds [x0, x1) x [y0, y1) of a sample's red pixels; empty
// (x1 <= x0) when it has none.
struct TensorBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const noexcept { return x1 <= x0 || y1 <= y0; }
};

struct Normalization {
  std::array<float, 3> mean, std;
  float scale;  // the config's normalize.scale (1/255): pixel = (value * std + mean) / scale
};

// On the CPU, for a batch in host memory (the host backend).
std::vector<TensorBox> red_boxes_cpu(const float* data, int n, int height, int width, const Normalization& norm);

// On the GPU, enqueued on `stream` after the batch's own work; waits for the
// result (the caller needs the boxes on the host to draw them). Throws
// std::runtime_error on a CUDA error. Only in CUDA builds.
std::vector<TensorBox> red_boxes_gpu(const float* d_data, int n, int height, int width, const Normalization& norm,
                                     CUstream_st* stream);

bool built_with_cuda() noexcept;

}  // namespace detect
