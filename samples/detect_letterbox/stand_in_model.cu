#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "stand_in_model.hpp"

namespace detect {

namespace {

__global__ void init_boxes(int4* boxes, int n, int width, int height) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < n) boxes[s] = make_int4(width, height, 0, 0);
}

// One thread per tensor pixel; the boxes grow by atomics (few pixels are red).
__global__ void red_boxes(const float* data, int n, int height, int width, float3 mean, float3 std, float unit,
                          int4* boxes) {
  const long long plane = static_cast<long long>(height) * width;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= plane * n) return;
  const int s = static_cast<int>(i / plane);
  const long long p = i % plane;
  const float* base = data + static_cast<long long>(s) * 3 * plane + p;
  const float r = (base[0] * std.x + mean.x) / unit;
  const float g = (base[plane] * std.y + mean.y) / unit;
  const float b = (base[2 * plane] * std.z + mean.z) / unit;
  if (!(r > 0.6f && g < 0.35f && b < 0.35f)) return;
  const int x = static_cast<int>(p % width), y = static_cast<int>(p / width);
  atomicMin(&boxes[s].x, x);
  atomicMin(&boxes[s].y, y);
  atomicMax(&boxes[s].z, x + 1);
  atomicMax(&boxes[s].w, y + 1);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

std::vector<TensorBox> red_boxes_gpu(const float* d_data, int n, int height, int width, const Normalization& norm,
                                     CUstream_st* stream) {
  int4* d_boxes = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&d_boxes), sizeof(int4) * n, stream), "cudaMallocAsync");
  init_boxes<<<(n + 127) / 128, 128, 0, stream>>>(d_boxes, n, width, height);
  const long long pixels = static_cast<long long>(n) * height * width;
  red_boxes<<<static_cast<unsigned>((pixels + 255) / 256), 256, 0, stream>>>(
      d_data, n, height, width, make_float3(norm.mean[0], norm.mean[1], norm.mean[2]),
      make_float3(norm.std[0], norm.std[1], norm.std[2]), 255 * norm.scale, d_boxes);
  check(cudaGetLastError(), "red_boxes launch");
  std::vector<int4> h(n);
  check(cudaMemcpyAsync(h.data(), d_boxes, sizeof(int4) * n, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check(cudaFreeAsync(d_boxes, stream), "cudaFreeAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<TensorBox> out(n);
  for (int s = 0; s < n; ++s) out[s] = {h[s].x, h[s].y, h[s].z, h[s].w};
  return out;
}

bool built_with_cuda() noexcept { return true; }

}  // namespace detect
