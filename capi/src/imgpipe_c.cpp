// The C API (capi/include/imgpipe_c.h) over the pull API of
// imgpipe/pipeline.hpp. Every entry point catches what the C++ side throws
// and turns it into a status plus the thread's last error; nothing throws
// across the boundary.
#include "imgpipe_c.h"

#include <dlpack/dlpack.h>
#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config_load.hpp"
#include "handles.hpp"
#include "cuda_calls.hpp"
#include "imgpipe/error.hpp"
#include "imgpipe/log.hpp"
#include "imgpipe/pipeline.hpp"
#include "core/geometry_json.hpp"
#include "memory/gpu.hpp"

using imgpipe::capi::fail;
using imgpipe::capi::from_exception;
using imgpipe::capi::guarded;
using imgpipe::capi::KeepDevice;
using imgpipe::capi::null_handle;

namespace {
void unref(imgpipe_pipeline* p) noexcept {
  if (p != nullptr && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}

// ---- batches -----------------------------------------------------------------

using imgpipe::geometry_json;  // core/geometry_json.hpp: the dump manifest's names

std::string samples_json(const imgpipe::DeviceBatch& b) {
  nlohmann::json all = nlohmann::json::array();
  for (const imgpipe::SampleId& s : b.samples) {
    nlohmann::json j = {{"input_index", s.input_index},
                        {"path", s.path},
                        {"frame", s.frame},
                        {"route", s.decoded_on_gpu ? "gpu" : "cpu"},
                        {"label", s.label},
                        {"geometry", geometry_json(s.geometry)},
                        {"clip", s.clip},
                        {"pts", nullptr}};
    if (!std::isnan(s.pts)) j["pts"] = s.pts;
    all.push_back(std::move(j));
  }
  return all.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void fill_info(const imgpipe::DeviceBatch& b, imgpipe_batch_info& info) {
  info = {};
  info.data = b.data;
  info.bytes = b.bytes;
  info.device = b.device;
  info.ndim = static_cast<std::int32_t>(std::min<std::size_t>(b.shape.size(), 5));
  for (int i = 0; i < info.ndim; ++i) info.shape[i] = b.shape[static_cast<std::size_t>(i)];
  switch (b.dtype) {
    case imgpipe::DType::float32: info.dtype = IMGPIPE_FLOAT32, info.dl_code = kDLFloat, info.dl_bits = 32; break;
    case imgpipe::DType::float16: info.dtype = IMGPIPE_FLOAT16, info.dl_code = kDLFloat, info.dl_bits = 16; break;
    case imgpipe::DType::uint8: info.dtype = IMGPIPE_UINT8, info.dl_code = kDLUInt, info.dl_bits = 8; break;
  }
  info.layout = b.layout == imgpipe::Layout::nchw ? IMGPIPE_NCHW : IMGPIPE_NHWC;
  info.stream = b.stream;
  info.ready = b.ready;
  info.index = b.index;
  info.size = b.size();
  info.clip_length = b.clip_length;
  info.clip_layout = static_cast<std::int32_t>(b.clip_layout);  // the enums' values match
}

// The batch's release, ordered after every consumer stream named to it. All
// or nothing: when that ordering cannot be made on the GPU (a consumer stream
// of another device, a sticky error), the slot comes back only once the
// consumers' streams are done, waited for on the host; never while their
// work may still read it.
void release(imgpipe_batch* b) noexcept {
  if (!b->batch) return;
  const KeepDevice keep;
  int device = -1;
  try {
    device = b->batch.get().device;
    if (device < 0 || b->after.empty()) {
      b->batch.release();
      return;
    }
    imgpipe::capi::DeviceGuard guard(device);
    void* after = b->after.back();
    for (std::size_t i = 0; i + 1 < b->after.size(); ++i) imgpipe::capi::join_streams(after, b->after[i]);
    b->batch.release(static_cast<CUstream_st*>(after));  // all or nothing
    return;
  } catch (const std::exception& e) {
    imgpipe::logger()->error(
        "releasing a batch held through the C API: {}; its slot comes back once its consumers' streams are done",
        e.what());
  }
  if (!b->batch) return;
  if (device >= 0) imgpipe::capi::wait_for_streams(b->after, device);
  try {
    b->batch.release();
  } catch (const std::exception& e) {  // the handle's destructor gives the slot back after a host wait
    imgpipe::logger()->error("releasing a batch held through the C API: {}", e.what());
  }
}

// ---- DLPack ------------------------------------------------------------------

// DLPack 1.0's versioned tensor (dlpack.h 0.6, Debian 12's, predates it).
struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};

template <typename Managed>
struct DlpackHolder {
  Managed managed{};
  std::int64_t shape[5]{};
  std::int64_t strides[5]{};
  imgpipe_batch* batch = nullptr;
  void* after = nullptr;  // the consumer's stream (nullptr: none)
};

template <typename Managed>
void dlpack_deleter(Managed* self) {
  if (self == nullptr) return;
  auto* h = static_cast<DlpackHolder<Managed>*>(self->manager_ctx);
  imgpipe_batch_free(h->batch, h->after);
  delete h;
}

template <typename Managed>
void* make_dlpack(imgpipe_batch* b, void* consumer) {
  const imgpipe::DeviceBatch& d = b->batch.get();
  imgpipe_batch_info info;
  fill_info(d, info);
  auto h = std::make_unique<DlpackHolder<Managed>>();
  std::int64_t stride = 1;
  for (int i = info.ndim - 1; i >= 0; --i) {
    h->shape[i] = info.shape[i];
    h->strides[i] = stride;
    stride *= std::max<std::int64_t>(info.shape[i], 1);
  }
  DLTensor& t = h->managed.dl_tensor;
  t.data = d.data;
  t.device = d.device >= 0 ? DLDevice{kDLCUDA, d.device} : DLDevice{kDLCPU, 0};
  t.ndim = info.ndim;
  t.dtype = DLDataType{info.dl_code, info.dl_bits, 1};
  t.shape = h->shape;
  t.strides = h->strides;
  t.byte_offset = 0;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    h->managed.version = {1, 0};
    h->managed.flags = 0;
  }
  h->managed.manager_ctx = h.get();
  h->managed.deleter = &dlpack_deleter<Managed>;
  if (d.device >= 0 && consumer != reinterpret_cast<void*>(-1)) {
    if (consumer == nullptr) consumer = imgpipe::capi::kLegacyStream;
    imgpipe::capi::DeviceGuard guard(d.device);
    imgpipe::capi::stream_wait_event(consumer, d.ready);
    h->after = consumer;
  }
  h->batch = imgpipe_batch_retain(b);
  return &h.release()->managed;
}

}  // namespace

// ---- C entry points ------------------------------------------------------------

extern "C" {

const char* imgpipe_version(void) { return imgpipe::version(); }
int imgpipe_c_api_version(void) { return IMGPIPE_C_API_VERSION; }
int imgpipe_built_with_cuda(void) { return imgpipe::capi::built_with_cuda() ? 1 : 0; }

const char* imgpipe_last_error(void) { return imgpipe::capi::last_error().message.c_str(); }
const char* imgpipe_last_error_class(void) { return imgpipe::capi::last_error().cls.c_str(); }
const char* imgpipe_last_error_field(const char* name) {
  if (name == nullptr) return "";
  const auto& fields = imgpipe::capi::last_error().fields;
  const auto it = fields.find(name);
  return it == fields.end() ? "" : it->second.c_str();
}

imgpipe_status imgpipe_pipeline_create(const char* config, imgpipe_config_kind kind, const char* overrides,
                                       const char* const* inputs, size_t n_inputs, imgpipe_pipeline** out) {
  if (out == nullptr) return null_handle("out");
  *out = nullptr;
  return guarded([&] {
    imgpipe::Config c = imgpipe::capi::load_config(config, kind, overrides);
    if (n_inputs > 0) {
      if (inputs == nullptr) return null_handle("inputs");
      c.input.paths.clear();
      for (size_t i = 0; i < n_inputs; ++i) {
        if (inputs[i] == nullptr) return null_handle("an input path");
        c.input.paths.emplace_back(inputs[i]);
      }
    }
    *out = new imgpipe_pipeline(imgpipe::Pipeline(std::move(c)));
    return IMGPIPE_OK;
  });
}

void imgpipe_pipeline_destroy(imgpipe_pipeline* p) {
  if (p == nullptr) return;
  const KeepDevice keep;  // the Pipeline's kept resources may be freed here
  {
    std::lock_guard lock(p->m);
    if (p->running != nullptr) p->running->stream.stop();
  }
  unref(p);
}

imgpipe_status imgpipe_pipeline_config_yaml(imgpipe_pipeline* p, const char** out) {
  if (p == nullptr) return null_handle("pipeline");
  if (out == nullptr) return null_handle("out");
  return guarded([&] {
    p->config_yaml = p->pipeline.config().to_yaml();
    *out = p->config_yaml.c_str();
    return IMGPIPE_OK;
  });
}

void imgpipe_pipeline_request_stop(imgpipe_pipeline* p) {
  if (p != nullptr) p->pipeline.request_stop();
}

void imgpipe_pipeline_set_epoch(imgpipe_pipeline* p, uint64_t epoch) {
  if (p != nullptr) p->pipeline.set_epoch(epoch);
}

uint64_t imgpipe_pipeline_epoch(const imgpipe_pipeline* p) { return p != nullptr ? p->pipeline.epoch() : 0; }

imgpipe_status imgpipe_pipeline_start(imgpipe_pipeline* p, const char* device, imgpipe_stream** out) {
  if (p == nullptr) return null_handle("pipeline");
  if (out == nullptr) return null_handle("out");
  *out = nullptr;
  return guarded([&] {
    imgpipe::RunOptions options;
    if (device != nullptr && *device != '\0') options.device = imgpipe::DeviceSelection::parse(device);
    auto s = std::make_unique<imgpipe_stream>();
    s->stream = p->pipeline.start(options);
    s->owner = p;
    p->refs.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(p->m);
    p->running = s.get();
    *out = s.release();
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_stream_next(imgpipe_stream* s, int64_t timeout_ms, imgpipe_batch** out) {
  if (s == nullptr) return null_handle("stream");
  if (out == nullptr) return null_handle("out");
  *out = nullptr;
  return guarded([&] {
    imgpipe::Batch b;
    if (timeout_ms < 0) {
      b = s->stream.next();
    } else if (std::optional<imgpipe::Batch> got = s->stream.next_for(std::chrono::milliseconds(timeout_ms))) {
      b = std::move(*got);
    } else {
      return IMGPIPE_TIMEOUT;
    }
    if (!b) return IMGPIPE_END;
    auto h = std::make_unique<imgpipe_batch>();
    h->batch = std::move(b);
    *out = h.release();
    return IMGPIPE_OK;
  });
}

void imgpipe_stream_stop(imgpipe_stream* s) {
  if (s != nullptr) s->stream.stop();
}

int imgpipe_stream_done(imgpipe_stream* s) { return s != nullptr && s->stream.done() ? 1 : 0; }

imgpipe_status imgpipe_stream_report_json(imgpipe_stream* s, const char** out) {
  if (s == nullptr) return null_handle("stream");
  if (out == nullptr) return null_handle("out");
  return guarded([&] {
    if (s->report_json.empty()) s->report_json = s->stream.report().to_json();
    *out = s->report_json.c_str();
    return IMGPIPE_OK;
  });
}

void imgpipe_stream_destroy(imgpipe_stream* s) {
  if (s == nullptr) return;
  const KeepDevice keep;
  imgpipe_pipeline* p = s->owner;
  if (p != nullptr) {
    std::lock_guard lock(p->m);
    if (p->running == s) p->running = nullptr;
  }
  delete s;
  unref(p);
}

imgpipe_status imgpipe_batch_get_info(imgpipe_batch* b, imgpipe_batch_info* out) {
  if (b == nullptr) return null_handle("batch");
  if (out == nullptr) return null_handle("out");
  return guarded([&] {
    fill_info(b->batch.get(), *out);
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_batch_samples_json(imgpipe_batch* b, const char** out) {
  if (b == nullptr) return null_handle("batch");
  if (out == nullptr) return null_handle("out");
  return guarded([&] {
    std::lock_guard lock(b->m);
    if (!b->samples_json) b->samples_json = samples_json(b->batch.get());
    *out = b->samples_json->c_str();
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_batch_labels(imgpipe_batch* b, int64_t* out, size_t n) {
  if (b == nullptr) return null_handle("batch");
  if (out == nullptr && n > 0) return null_handle("out");
  return guarded([&] {
    const imgpipe::DeviceBatch& d = b->batch.get();
    const size_t per = d.clip_length > 0 ? static_cast<size_t>(d.clip_length) : 1;  // a clip's label is its video's
    for (size_t i = 0; i < std::min(n, d.size()); ++i) out[i] = d.samples[i * per].label;
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_batch_map(imgpipe_batch* b, size_t sample, int to_image, int stored, const double in[4],
                                 double out[4]) {
  if (b == nullptr) return null_handle("batch");
  if (in == nullptr || out == nullptr) return null_handle("in or out");
  return guarded([&] {
    const auto& samples = b->batch.get().samples;
    if (sample >= samples.size())
      throw std::invalid_argument("imgpipe_batch_map: sample " + std::to_string(sample) + " of a batch of " +
                                  std::to_string(samples.size()));
    const imgpipe::SampleGeometry& g = samples[sample].geometry;
    const auto coords = stored ? imgpipe::ImageCoords::stored : imgpipe::ImageCoords::displayed;
    const imgpipe::Box box{in[0], in[1], in[2], in[3]};
    const imgpipe::Box r = to_image ? imgpipe::tensor_to_image(g, box, coords) : imgpipe::image_to_tensor(g, box, coords);
    out[0] = r.x, out[1] = r.y, out[2] = r.width, out[3] = r.height;
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_batch_wait(imgpipe_batch* b, void* consumer) {
  if (b == nullptr) return null_handle("batch");
  return guarded([&] {
    const imgpipe::DeviceBatch& d = b->batch.get();
    if (d.device < 0) return IMGPIPE_OK;
    imgpipe::capi::DeviceGuard guard(d.device);
    imgpipe::capi::stream_wait_event(consumer, d.ready);
    return IMGPIPE_OK;
  });
}

imgpipe_status imgpipe_batch_synchronize(imgpipe_batch* b) {
  if (b == nullptr) return null_handle("batch");
  return guarded([&] {
    const imgpipe::DeviceBatch& d = b->batch.get();
    if (d.device < 0) return IMGPIPE_OK;
    imgpipe::capi::DeviceGuard guard(d.device);
    imgpipe::capi::event_synchronize(d.ready);
    return IMGPIPE_OK;
  });
}

imgpipe_batch* imgpipe_batch_retain(imgpipe_batch* b) {
  if (b != nullptr) b->refs.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void imgpipe_batch_free(imgpipe_batch* b, void* after) {
  if (b == nullptr) return;
  if (after != nullptr && after != reinterpret_cast<void*>(-1)) {
    try {
      std::lock_guard lock(b->m);
      if (std::find(b->after.begin(), b->after.end(), after) == b->after.end()) b->after.push_back(after);
    } catch (...) {  // out of memory: the release will not wait for this stream
      imgpipe::logger()->error("imgpipe_batch_free: cannot record the consumer's stream");
    }
  }
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  const KeepDevice keep;
  release(b);
  delete b;
}

imgpipe_status imgpipe_batch_to_dlpack(imgpipe_batch* b, void* consumer, int versioned, void** out) {
  if (b == nullptr) return null_handle("batch");
  if (out == nullptr) return null_handle("out");
  *out = nullptr;
  return guarded([&] {
    // The tensor keeps the batch's address: a move out of the staging ring
    // keeps it too (docs/architecture.md, "Holding batches").
    *out = versioned ? make_dlpack<DLManagedTensorVersioned>(b, consumer) : make_dlpack<DLManagedTensor>(b, consumer);
    return IMGPIPE_OK;
  });
}

void imgpipe_dlpack_delete(void* tensor, int versioned) {
  if (tensor == nullptr) return;
  if (versioned) {
    auto* t = static_cast<DLManagedTensorVersioned*>(tensor);
    if (t->deleter) t->deleter(t);
  } else {
    auto* t = static_cast<DLManagedTensor*>(tensor);
    if (t->deleter) t->deleter(t);
  }
}

int64_t imgpipe_dlpack_layout(const char* name) {
  if (name == nullptr) return -1;
#define IMGPIPE_LAYOUT_ROW(type, field) {#type "." #field, static_cast<std::int64_t>(offsetof(type, field))}
  static const std::map<std::string, std::int64_t> rows = {
      {"sizeof(DLDevice)", sizeof(DLDevice)},
      {"sizeof(DLDataType)", sizeof(DLDataType)},
      {"sizeof(DLTensor)", sizeof(DLTensor)},
      {"sizeof(DLManagedTensor)", sizeof(DLManagedTensor)},
      {"sizeof(DLManagedTensorVersioned)", sizeof(DLManagedTensorVersioned)},
      IMGPIPE_LAYOUT_ROW(DLDevice, device_type),
      IMGPIPE_LAYOUT_ROW(DLDevice, device_id),
      IMGPIPE_LAYOUT_ROW(DLDataType, code),
      IMGPIPE_LAYOUT_ROW(DLDataType, bits),
      IMGPIPE_LAYOUT_ROW(DLDataType, lanes),
      IMGPIPE_LAYOUT_ROW(DLTensor, data),
      IMGPIPE_LAYOUT_ROW(DLTensor, device),
      IMGPIPE_LAYOUT_ROW(DLTensor, ndim),
      IMGPIPE_LAYOUT_ROW(DLTensor, dtype),
      IMGPIPE_LAYOUT_ROW(DLTensor, shape),
      IMGPIPE_LAYOUT_ROW(DLTensor, strides),
      IMGPIPE_LAYOUT_ROW(DLTensor, byte_offset),
      IMGPIPE_LAYOUT_ROW(DLManagedTensor, dl_tensor),
      IMGPIPE_LAYOUT_ROW(DLManagedTensor, manager_ctx),
      IMGPIPE_LAYOUT_ROW(DLManagedTensor, deleter),
      IMGPIPE_LAYOUT_ROW(DLManagedTensorVersioned, version),
      IMGPIPE_LAYOUT_ROW(DLManagedTensorVersioned, manager_ctx),
      IMGPIPE_LAYOUT_ROW(DLManagedTensorVersioned, deleter),
      IMGPIPE_LAYOUT_ROW(DLManagedTensorVersioned, flags),
      IMGPIPE_LAYOUT_ROW(DLManagedTensorVersioned, dl_tensor),
      {"sizeof(imgpipe_batch_info)", sizeof(imgpipe_batch_info)},
      IMGPIPE_LAYOUT_ROW(imgpipe_batch_info, shape),
      IMGPIPE_LAYOUT_ROW(imgpipe_batch_info, dtype),
      IMGPIPE_LAYOUT_ROW(imgpipe_batch_info, dl_code),
      IMGPIPE_LAYOUT_ROW(imgpipe_batch_info, stream),
      IMGPIPE_LAYOUT_ROW(imgpipe_batch_info, size),
      IMGPIPE_LAYOUT_ROW(imgpipe_batch_info, clip_length),
  };
#undef IMGPIPE_LAYOUT_ROW
  const auto it = rows.find(name);
  return it == rows.end() ? -1 : it->second;
}

}  // extern "C"
