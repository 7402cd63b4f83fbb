// Where the time goes when a fresh process makes nvJPEG's hardware decoder:
// CUDA context, dlopen, nvjpegCreateExV2 per backend, the state, a second
// handle in the same process. Each phase is printed with its duration and
// the time since main() began, as one JSON object per line.
//
//   imgpipe_nvjpeg_startup [seq|overlap|repeat]
//     seq:     context, then load, then each backend's handle in turn
//     overlap: the handle made on a thread while the main thread makes the
//              context and a set-up's allocations (what JpegEngines does)
//     repeat:  five HARDWARE_DEVICE handles made and destroyed in turn
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "codecs/image/nvjpeg/nvjpeg_loader.hpp"

namespace nvj = imgpipe::codecs::nvj;
using Clock = std::chrono::steady_clock;

namespace {

const Clock::time_point t_start = Clock::now();

double since_start() { return std::chrono::duration<double>(Clock::now() - t_start).count(); }

template <class F>
void phase(const char* what, F&& f) {
  const auto t0 = Clock::now();
  const std::string note = f();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("{\"phase\": \"%s\", \"s\": %.4f, \"at_s\": %.4f, \"note\": \"%s\"}\n", what, s, since_start(),
              note.c_str());
  std::fflush(stdout);
}

const nvj::Api* load() {
  std::string why;
  const nvj::Api* a = nvj::api(&why);
  if (a == nullptr) std::printf("{\"error\": \"nvjpeg not loaded: %s\"}\n", why.c_str());
  return a;
}

int dev_malloc(void*, void** p, std::size_t n, CUstream_st*) { return cudaMalloc(p, n) == cudaSuccess ? 0 : 1; }
int dev_free(void*, void* p, std::size_t, CUstream_st*) { return cudaFree(p) == cudaSuccess ? 0 : 1; }
int host_malloc(void*, void** p, std::size_t n, CUstream_st*) { return cudaMallocHost(p, n) == cudaSuccess ? 0 : 1; }
int host_free(void*, void* p, std::size_t, CUstream_st*) { return cudaFreeHost(p) == cudaSuccess ? 0 : 1; }

std::string make_handle(const nvj::Api& a, nvj::nvjpegBackend_t b, unsigned flags, bool destroy,
                        nvj::nvjpegHandle_t* out = nullptr) {
  nvj::nvjpegHandle_t h = nullptr;
  nvj::nvjpegDevAllocatorV2_t dev{dev_malloc, dev_free, nullptr};
  nvj::nvjpegPinnedAllocatorV2_t pin{host_malloc, host_free, nullptr};
  const nvj::nvjpegStatus_t s = a.nvjpegCreateExV2(b, &dev, &pin, flags, &h);
  if (s != nvj::NVJPEG_STATUS_SUCCESS) return "failed " + std::to_string(static_cast<int>(s));
  if (out != nullptr) *out = h;
  if (destroy) a.nvjpegDestroy(h);
  return "ok";
}

std::string context() {
  const cudaError_t e = cudaFree(nullptr);
  return e == cudaSuccess ? "ok" : cudaGetErrorString(e);
}

std::string setup_allocations() {
  void* d = nullptr;
  void* h = nullptr;
  if (cudaMalloc(&d, 512u << 20) != cudaSuccess) return "cudaMalloc failed";
  if (cudaHostAlloc(&h, 128u << 20, cudaHostAllocWriteCombined) != cudaSuccess) return "cudaHostAlloc failed";
  return "512 MiB device + 128 MiB WC pinned (kept)";
}

void seq() {
  phase("cuda_context", context);
  const nvj::Api* a = nullptr;
  phase("dlopen_nvjpeg", [&] { return (a = load()) ? a->library : std::string("absent"); });
  if (a == nullptr) return;
  phase("create_hardware_device", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, 0, true); });
  phase("create_hardware_device_again", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, 0, true); });
  phase("create_hardware", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE, 0, true); });
  phase("create_hw_device_no_pipeline", [&] {
    return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, nvj::flag_hw_decode_no_pipeline, true);
  });
  phase("create_gpu_hybrid", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_GPU_HYBRID, 0, true); });
  phase("create_default", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_DEFAULT, 0, true); });
  nvj::nvjpegHandle_t h = nullptr;
  phase("create_kept", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, 0, false, &h); });
  if (h != nullptr) {
    nvj::nvjpegJpegState_t st = nullptr;
    phase("state_create", [&] {
      return a->nvjpegJpegStateCreate(h, &st) == nvj::NVJPEG_STATUS_SUCCESS ? std::string("ok") : "failed";
    });
    phase("batched_initialize_256", [&] {
      return a->nvjpegDecodeBatchedInitialize(h, st, 256, 1, nvj::NVJPEG_OUTPUT_RGBI) == nvj::NVJPEG_STATUS_SUCCESS
                 ? std::string("ok")
                 : "failed";
    });
    phase("preallocate_256_1080p", [&] {
      return a->nvjpegDecodeBatchedPreAllocate(h, st, 256, 1920, 1088, nvj::NVJPEG_CSS_444, nvj::NVJPEG_OUTPUT_RGBI) ==
                     nvj::NVJPEG_STATUS_SUCCESS
                 ? std::string("ok")
                 : "failed";
    });
    phase("destroy", [&] {
      a->nvjpegJpegStateDestroy(st);
      a->nvjpegDestroy(h);
      return std::string("ok");
    });
  }
}

void overlap() {
  std::thread t([] {
    phase("thread_dlopen", [] { return load() ? std::string("ok") : "absent"; });
    const nvj::Api* a = load();
    if (a) phase("thread_create_hardware_device", [&] {
        return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, 0, true);
      });
  });
  phase("main_cuda_context", context);
  phase("main_setup_allocations", setup_allocations);
  t.join();
  phase("all_done", [] { return std::string("ok"); });
}

void repeat() {
  phase("cuda_context", context);
  const nvj::Api* a = load();
  if (a == nullptr) return;
  for (int i = 0; i < 5; ++i)
    phase("create_destroy_hardware_device", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, 0, true); });
  nvj::nvjpegHandle_t keep = nullptr;
  phase("create_kept", [&] { return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, 0, false, &keep); });
  for (int i = 0; i < 3; ++i)
    phase("create_destroy_while_one_kept", [&] {
      return make_handle(*a, nvj::NVJPEG_BACKEND_HARDWARE_DEVICE, 0, true);
    });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "seq";
  if (mode == "overlap")
    overlap();
  else if (mode == "repeat")
    repeat();
  else
    seq();
  return 0;
}
