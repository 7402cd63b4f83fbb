#include "gpu_ops.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

#include <fmt/format.h>

#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "decode.hpp"
#include "kernels/trap.hpp"
#include "read.hpp"

namespace imgpipe::stages {

struct GpuOps::Use {
  gpu::Event kernels_done;  // on the batch stream, after the kernels of the batches whose frames lie there
  bool recorded = false;    // those kernels are enqueued (their job finished)
};

struct GpuOps::Area {
  explicit Area(DeviceContext& d) : dev(&d), ring(d.frames.size()) {}
  DeviceContext* dev;
  FrameRing<std::shared_ptr<Use>> ring;  // each engine call's frames
};

// One engine call (codecs::EngineCall) and what the stage knows of it: the
// batches its images belong to and the frames' range.
struct GpuOps::Call {
  DeviceContext* dev = nullptr;
  codecs::EngineCall engine;
  std::vector<std::pair<BatchSlot*, int>> owners;  // (batch, index into its jpegs) per image
  std::shared_ptr<Use> use;                        // the frames' range
};

struct GpuOps::Job {
  std::vector<BatchSlot*> batches;
  std::vector<std::unique_ptr<Call>> calls;  // one per device with JPEGs in the group
};

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

GpuOps::GpuOps(const kernels::NormalizeParams& params, const kernels::ResizeBatch& resize, Op work)
    : Stage("gpu_ops", false), params_(params), resize_(resize), work_(work) {}
GpuOps::~GpuOps() {
  engines_.reset();  // joined: the trace is complete
  if (trace_) trace_->append_to(trace_path_);
}

void GpuOps::enable_gpu_decode(codecs::GpuDecodeMeter& meter, const DecodeConfig& cpu_decode, OnError on_error,
                               int group, int max_held, int cycle_batches, const std::string& trace_calls) {
  meter_ = &meter;
  cpu_decode_ = cpu_decode;
  cpu_decode_.reduced = false;  // the frame must have the JPEG's own size
  on_error_ = on_error;
  group_ = std::max(0, group);
  max_held_ = static_cast<std::size_t>(std::max(1, max_held));
  cycle_batches_ = std::max(0, cycle_batches);
  if (!trace_calls.empty()) {
    trace_ = std::make_unique<codecs::CallTrace>();
    trace_path_ = trace_calls;
  }
  engines_ = std::make_unique<codecs::EngineScheduler>(meter, trace_.get());
}

GpuOps::Area& GpuOps::area_of(DeviceContext& dev) {
  for (auto& a : areas_)
    if (a->dev == &dev) return *a;
  if (dev.frames.get() == nullptr) throw std::logic_error("gpu_ops: GPU-route JPEGs for a device without a frame area");
  areas_.push_back(std::make_unique<Area>(dev));
  return *areas_.back();
}

// Decodes one JPEG on the CPU, from its file (the slot is write-combined
// memory and the token's bytes are gone), into its place in the device frame
// area. Returns the reason on failure.
std::string GpuOps::decode_on_cpu(const DeviceContext& dev, BatchSlot& b, const GpuJpegSample& j,
                                  std::uint8_t* d_frame) {
  const std::string& path = b.samples[j.index].path;
  if (std::string err = Read::read_file(path, bytes_); !err.empty()) return err;
  const Decode decoder(cpu_decode_, TransformConfig{});
  if (std::string err = decoder.decode(bytes_, frame_); !err.empty()) return err;
  if (frame_.cols != j.width || frame_.rows != j.height || !frame_.isContinuous())
    return fmt::format("decoded to {}x{} on the CPU, {}x{} expected (file changed?)", frame_.cols, frame_.rows,
                       j.width, j.height);
  gpu::copy_h2d_async(d_frame, frame_.data, frame_.total() * frame_.elemSize(), dev.upload);
  dev.upload.synchronize();  // frame_ is reused for the next one
  return {};
}

namespace {
constexpr std::size_t align256(std::size_t n) { return (n + 255) & ~std::size_t{255}; }

// The frame-area bytes of the JPEG frames of `batches` on `dev`, each batch's
// frames 256-byte aligned after the previous batch's (as make_call places them).
std::size_t frame_bytes_on(const std::vector<BatchSlot*>& batches, const DeviceContext* dev) {
  std::size_t bytes = 0;
  for (const BatchSlot* b : batches)
    if (b->dev == dev && !b->jpegs.empty()) bytes = align256(bytes) + b->frame_bytes;
  return bytes;
}
}  // namespace

// The engine call for the JPEGs of `batches` on `dev`: their frames get one
// range of its frame area, after the kernels that read that range last are
// done (the engines write when called, whatever the streams hold).
std::unique_ptr<GpuOps::Call> GpuOps::make_call(DeviceContext& dev, const std::vector<BatchSlot*>& batches) {
  // Ready: the probe routes JPEGs to the GPU only once the first device's
  // decoder is; another device's may still be in the making.
  codecs::GpuJpegDecoder* engines = dev.jpeg ? dev.jpeg->wait() : nullptr;
  if (!engines) throw Error("GPU JPEG decode: no decoder on device " + std::to_string(dev.device) + ": " +
                            (dev.jpeg ? dev.jpeg->error() : std::string("not made")));
  auto c = std::make_unique<Call>();
  c->dev = &dev;
  codecs::EngineCall& e = c->engine;
  e.device = dev.device;
  e.decoder = engines;
  e.stream = &dev.upload;
  e.decoded = gpu::Event(dev.device, false);
  c->use = std::make_shared<Use>();
  c->use->kernels_done = gpu::Event(dev.device, false);
  Area& area = area_of(dev);
  const std::size_t at = area.ring.place(frame_bytes_on(batches, &dev), c->use, [&](std::shared_ptr<Use>& u) {
    // A range whose kernels are not enqueued yet belongs to a group still
    // waiting for its call: finish the groups before this one first.
    while (!u->recorded && !jobs_.empty()) finish_front();
    if (!u->recorded) throw std::logic_error("gpu_ops: a frame range in use by no group");
    const auto t0 = std::chrono::steady_clock::now();
    u->kernels_done.synchronize();
    own_stats().add_wait(std::chrono::steady_clock::now() - t0);
  });
  auto* range = static_cast<std::uint8_t*>(dev.frames.get()) + at;
  std::size_t first = 0;  // the batch's first frame, from the range's start
  for (BatchSlot* b : batches) {
    if (b->dev != &dev || b->jpegs.empty()) continue;
    first = align256(first);
    const auto* input = static_cast<const std::uint8_t*>(b->staged.for_device());  // the engines read it
    e.uploads.push_back(&b->buffers().copy_end);
    for (std::size_t k = 0; k < b->jpegs.size(); ++k) {
      const GpuJpegSample& j = b->jpegs[k];
      std::uint8_t* frame = range + first + j.frame_offset;
      e.data.push_back(input + j.offset);
      e.sizes.push_back(j.size);
      e.frames.push_back({frame, static_cast<std::size_t>(j.width) * 3, j.width, j.height});
      c->owners.emplace_back(b, static_cast<int>(k));
      b->images[j.index].data = frame;
      e.max_w = std::max(e.max_w, j.width);
      e.max_h = std::max(e.max_h, j.height);
    }
    first += b->frame_bytes;
  }
  e.status.assign(e.data.size(), 0);
  return c;
}

bool GpuOps::fits_gathering(const BatchSlot& b) const {
  if (b.jpegs.empty()) return true;
  return align256(frame_bytes_on(gathering_, b.dev)) + b.frame_bytes <= b.dev->frames.size();
}

// The gathered batches become a job: one engine call per device with JPEGs
// among them, handed to the engine scheduler.
void GpuOps::submit() {
  if (gathering_.empty()) return;
  while (jobs_.size() >= static_cast<std::size_t>(kCallsAhead)) finish_front();
  auto job = std::make_unique<Job>();
  job->batches = std::move(gathering_);
  gathering_.clear();
  gathering_jpegs_ = 0;
  for (BatchSlot* b : job->batches) {
    if (b->jpegs.empty()) continue;
    const bool have = std::any_of(job->calls.begin(), job->calls.end(), [&](const auto& c) { return c->dev == b->dev; });
    if (!have) job->calls.push_back(make_call(*b->dev, job->batches));
  }
  for (auto& c : job->calls) engines_->submit(c->engine);
  jobs_.push_back(std::move(job));
}

bool GpuOps::front_done() {
  const Job& j = *jobs_.front();
  return std::all_of(j.calls.begin(), j.calls.end(), [&](const auto& c) { return engines_->done(c->engine); });
}

// Waits for the oldest job's calls, deals with what the engines rejected,
// enqueues its batches' kernels and adds them to what run() passes on.
void GpuOps::finish_front() {
  std::unique_ptr<Job> job = std::move(jobs_.front());
  jobs_.pop_front();
  // Every call done before any error is thrown: the job, and its calls, go
  // with this frame.
  for (auto& c : job->calls) {
    const auto t0 = std::chrono::steady_clock::now();
    engines_->wait(c->engine);
    own_stats().add_wait(std::chrono::steady_clock::now() - t0);
  }
  for (auto& c : job->calls)
    if (c->engine.error) std::rethrow_exception(c->engine.error);
  // Rejected by the engines: the CPU tries; what it rejects too leaves its batch.
  std::vector<std::pair<BatchSlot*, int>> drop;
  for (auto& c : job->calls) {
    const std::vector<int>& status = c->engine.status;
    for (std::size_t i = 0; i < status.size(); ++i) {
      if (status[i] == 0) continue;
      auto [b, k] = c->owners[i];
      const GpuJpegSample& j = b->jpegs[k];
      const std::string err = decode_on_cpu(*c->dev, *b, j, c->engine.frames[i].d_rgb);
      if (err.empty()) {
        ++meter_->fallbacks;
        b->samples[j.index].decoded_on_gpu = false;
        continue;
      }
      const SampleId& s = b->samples[j.index];
      const std::string reason = fmt::format("{} (GPU decode: {})", err, codecs::gpu_jpeg_status_name(status[i]));
      failures_.push_back({s.path, s.frame, reason});
      if (log_) log_->failed(failures_.back());
      failed_count_.fetch_add(1, std::memory_order_relaxed);
      if (on_error_ == OnError::fail) throw InputError(s.path, s.frame, reason);
      drop.emplace_back(b, j.index);
    }
  }
  for (auto it = drop.rbegin(); it != drop.rend(); ++it) it->first->remove(it->second);  // last first
  for (BatchSlot* b : job->batches) {
    const Call* call = nullptr;
    for (const auto& c : job->calls)
      if (c->dev == b->dev) call = c.get();
    out_bytes_ += launch(*b, b->jpegs.empty() ? nullptr : call);
    out_.push_back(b);
  }
  // Each call's frames are free once these kernels are done.
  for (auto& c : job->calls) {
    c->use->kernels_done.record(c->dev->stream);
    c->use->recorded = true;
  }
}

// The batch's kernels on its stream, after its copy and the engine call that
// decoded its JPEGs. Returns the output bytes.
std::size_t GpuOps::launch(BatchSlot& b, const Call* call) {
  DeviceBuffers& buf = b.buffers();
  const gpu::Stream& stream = b.dev->stream;
  const bool on_gpu = stream.device() >= 0;
  if (b.staged && b.staged == buf.d_input.address()) gpu::stream_wait_event(stream.get(), buf.copy_end);
  if (b.frames_copied) gpu::stream_wait_event(stream.get(), buf.frames_copied);  // NVDEC frames from another GPU
  if (call != nullptr) gpu::stream_wait_event(stream.get(), call->engine.decoded);
  if (on_gpu && fault::trap(b.index)) kernels::trap_gpu(stream.get());
  std::size_t bytes = 0;
  if (b.count == 0) {  // every sample failed
    buf.ready.record(stream);
    return 0;
  }
  // The launches (their CPU twins on the host backend).
  const nvtx::Range range("kernels", b.index);
  if (work_ == Op::normalize) {
    kernels::NormalizeParams p = params_;
    p.batch = b.count;
    p.src = static_cast<const std::uint8_t*>(b.staged.for_device());  // the kernel's (or CPU twin's) input
    p.src_pitch = 0;
    p.dst = buf.d_output.get();
    if (on_gpu) kernels::normalize_gpu(p, stream.get());
    else kernels::normalize_ref(p, /*parallel=*/true);
    bytes = kernels::output_bytes(p);
  } else if (work_ == Op::resize_normalize) {
    kernels::FusedParams f;
    f.in = resize_;
    f.in.src = static_cast<const std::uint8_t*>(b.staged.for_device());
    f.in.images = b.images.data();
    f.in.batch = b.count;
    f.dst = buf.d_output.get();
    f.layout = params_.layout;
    f.dtype = params_.dtype;
    f.swap_rb = params_.swap_rb;
    f.scale = params_.scale;
    f.mean = params_.mean;
    f.std = params_.std;
    if (on_gpu) kernels::fused_gpu(f, stream.get());
    else kernels::fused_ref(f, /*parallel=*/true);
    bytes = kernels::output_bytes(f);
  }
  buf.ready.record(stream);
  return bytes;
}

Tally GpuOps::run(Work& w) {
  BatchSlot* arrived = w.batch;
  w.batch = nullptr;
  out_.clear();
  out_bytes_ = 0;
  const bool end = w.kind == Work::Kind::flush || w.kind == Work::Kind::cut;
  if (trace_ && trace_->first_token == 0) trace_->first_token = now_ns();
  if (arrived != nullptr) {
    if (trace_) {
      std::lock_guard lk(trace_->m);
      trace_->arrivals.push_back({now_ns(), static_cast<std::int64_t>(arrived->jpegs.size()),
                                  static_cast<std::int64_t>(arrived->count)});
    }
    if (!fits_gathering(*arrived)) submit();  // its frames and the gathered ones' would not fit the frame area
    gathering_.push_back(arrived);
    gathering_jpegs_ += arrived->jpegs.size();
  }
  // Gathered batches without a JPEG gain nothing by waiting (CPU-only
  // inputs, the engines not ready yet) unless groups before them wait for
  // their calls: then they go with the next group.
  const bool full = cycle_batches_ > 0
                        ? arrived != nullptr && (arrived->index + 1) % static_cast<std::uint64_t>(cycle_batches_) == 0
                        : gathering_jpegs_ >= static_cast<std::size_t>(group_);
  if (end || (gathering_jpegs_ == 0 && jobs_.empty()) || full || gathering_.size() >= max_held_) submit();
  // What the engines are done with goes on, in order; at the end, everything.
  while (!jobs_.empty() && (end || front_done())) finish_front();
  if (trace_ && end) trace_->end_token = now_ns();
  for (std::size_t i = 0; i < out_.size(); ++i) out_[i]->then = i + 1 < out_.size() ? out_[i + 1] : nullptr;
  w.batch = out_.empty() ? nullptr : out_.front();
  return {out_.size(), out_bytes_};
}

}  // namespace imgpipe::stages
