#include "imgpipe/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include "memory/gpu.hpp"
#include "handoff.hpp"
#include "memory/staging_ring.hpp"
#include "stages/decode.hpp"
#include "stages/gpu_ops.hpp"
#include "stages/input_order.hpp"
#include "stages/pack.hpp"
#include "stages/read.hpp"
#include "stages/sink.hpp"
#include "stages/source.hpp"
#include "stages/transfer.hpp"
#include "stages/transform.hpp"

#ifndef IMGPIPE_VERSION
#define IMGPIPE_VERSION "0.0.0"
#endif

namespace imgpipe {

const char* version() noexcept { return IMGPIPE_VERSION; }

struct Pipeline::Impl {
  Config config;
  std::atomic<bool> stop{false};
};

Pipeline::Pipeline(Config config) : impl_(std::make_unique<Impl>()) {
  config.validate();
  impl_->config = std::move(config);
}
Pipeline::~Pipeline() = default;
Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;

void Pipeline::request_stop() noexcept { impl_->stop.store(true, std::memory_order_relaxed); }
const Config& Pipeline::config() const noexcept { return impl_->config; }

namespace {

// Resolves the devices: {-1} is the host backend.
std::vector<int> select_devices(const DeviceSelection& sel) {
  using K = DeviceSelection::Kind;
  if (sel.kind == K::cpu) return {-1};
  std::string why;
  const int n = gpu::device_count(&why);
  auto need = [&](int ordinal) {
    if (ordinal >= n)
      throw Error(fmt::format("devices: GPU {} requested but {} ({})", ordinal,
                              n == 0 ? "no CUDA device is available" : fmt::format("only {} found", n),
                              n == 0 ? why : "ordinals start at 0"));
    return ordinal;
  };
  switch (sel.kind) {
    case K::ordinal: return {need(sel.ordinal)};
    case K::list: {
      std::vector<int> v;
      for (int o : sel.ordinals) v.push_back(need(o));
      return v;
    }
    case K::all: {
      if (n == 0) throw Error("devices: all GPUs requested but no CUDA device is available (" + why + ")");
      std::vector<int> v(n);
      for (int i = 0; i < n; ++i) v[i] = i;
      return v;
    }
    default: break;
  }
  if (n == 0) {
    static std::once_flag once;
    std::call_once(once, [&] { spdlog::warn("no CUDA device found ({}); running the host backend", why); });
    return {-1};
  }
  // Under a launcher (torchrun, mpirun, srun) each local rank takes its own GPU.
  if (const auto local = stages::local_rank_from_environment()) return {*local % n};
  return {0};
}

// Pool of Work items: one per token in flight.
class WorkPool {
 public:
  explicit WorkPool(int n) {
    items_.reserve(n);
    free_.reserve(n);
    for (int i = 0; i < n; ++i) {
      items_.push_back(std::make_unique<stages::Work>());
      free_.push_back(items_.back().get());
    }
  }
  stages::Work* acquire() {
    std::lock_guard lk(m_);
    if (free_.empty()) throw std::logic_error("WorkPool exhausted: more tokens in flight than work items");
    stages::Work* w = free_.back();
    free_.pop_back();
    return w;
  }
  void release(stages::Work* w) {
    std::lock_guard lk(m_);
    free_.push_back(w);
  }

 private:
  std::mutex m_;
  std::vector<std::unique_ptr<stages::Work>> items_;
  std::vector<stages::Work*> free_;
};

// Prints "imgpipe: 1234/5000 images, 567 img/s" on a terminal every 250 ms.
class Progress {
 public:
  Progress(bool on, std::size_t total, const std::atomic<std::uint64_t>& done) : total_(total), done_(done) {
    if (on) t_ = std::thread([this] { loop(); });
  }
  ~Progress() {
    if (t_.joinable()) {
      {
        std::lock_guard lk(m_);
        quit_ = true;
      }
      cv_.notify_all();
      t_.join();
      std::fprintf(stderr, "\r\033[K");
    }
  }

 private:
  void loop() {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lk(m_);
    while (!cv_.wait_for(lk, std::chrono::milliseconds(250), [&] { return quit_; })) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto d = done_.load();
      std::fprintf(stderr, "\r\033[Kimgpipe: %llu/%zu inputs, %.0f img/s", static_cast<unsigned long long>(d), total_,
                   s > 0 ? d / s : 0.0);
      std::fflush(stderr);
    }
  }
  std::size_t total_;
  const std::atomic<std::uint64_t>& done_;
  std::thread t_;
  std::mutex m_;
  std::condition_variable cv_;
  bool quit_ = false;
};

StageReport make_stage_report(const stages::StageStats& s, int concurrency, double wall) {
  StageReport r;
  r.name = s.name;
  r.parallel = s.parallel;
  r.concurrency = s.parallel ? concurrency : 1;
  r.items = s.items.load();
  // For stages whose work runs on the GPU, the device time bounds the stage
  // when it exceeds the host time spent enqueuing.
  r.busy_s = std::max(s.busy_ns.load() * 1e-9, s.device_ns.load() * 1e-9);
  r.wait_s = s.wait_ns.load() * 1e-9;
  r.bytes = static_cast<double>(s.bytes.load());
  const double work_s = std::max(r.busy_s - r.wait_s, 0.0);
  r.items_per_s = work_s > 0 ? r.items / work_s : 0;
  r.capacity_items_per_s = r.items_per_s * r.concurrency;
  r.mb_per_s = work_s > 0 ? r.bytes / work_s / 1e6 * r.concurrency : 0;
  const double capacity = wall * r.concurrency;
  r.utilization = capacity > 0 ? work_s / capacity : 0;
  r.idle_s = std::max(capacity - r.busy_s, 0.0);
  return r;
}

}  // namespace

Report Pipeline::run(const BatchCallback& callback, const RunOptions& options) {
  const Config& cfg = impl_->config;
  // A stop requested before or during this run applies to it (a signal can
  // arrive while inputs are being discovered); the request is spent when the
  // run ends, however it ends, so the next run starts afresh.
  struct ClearStop {
    std::atomic<bool>& stop;
    ~ClearStop() { stop.store(false); }
  } clear_stop{impl_->stop};
  const auto t_start = std::chrono::steady_clock::now();

  const std::vector<int> device_ids = select_devices(options.device.value_or(cfg.devices));
  const int device = device_ids.front();  // allocates the staging; -1 = host backend
  gpu::set_device(device);
  const bool gpu_normalize =
      cfg.transform.normalize.where == Where::gpu ||
      (cfg.transform.normalize.where == Where::automatic && device >= 0);
  // resize.where auto resizes on the CPU: measured on the H200 machine (W1,
  // 16 threads, 2026-11-30) the CPU resize ran 620 img/s against 453 img/s
  // for the GPU resize, because staging whole decoded frames (6.2 MB at
  // 1920x1080 against 1.2 MB at 640x640) through write-combined memory costs
  // the decode threads more memory bandwidth than the resize it saves. gpu
  // stays available for hosts whose CPUs are short of compute, not bandwidth.
  const bool gpu_interp = cfg.transform.resize.interpolation == Interpolation::linear ||
                          cfg.transform.resize.interpolation == Interpolation::nearest;
  const bool gpu_resize = gpu_normalize && gpu_interp && cfg.transform.resize.where == Where::gpu;

  Report report;
  report.version = version();
  for (int d : device_ids) {
    if (!report.backend.empty()) report.backend += "; ";
    report.backend += d >= 0 ? fmt::format("cuda:{} {}", d, gpu::device_description(d)) : "host";
  }
  report.normalize_where = gpu_normalize ? "gpu" : "cpu";
  report.resize_where = gpu_resize ? "gpu" : "cpu";

  const stages::InputList input_list = stages::build_input_list(cfg.input);
  const std::vector<stages::InputItem>& inputs = input_list.items;
  report.shard = {input_list.shard.rank, input_list.shard.world_size, input_list.shard.origin};
  if (inputs.empty()) {
    std::string paths;
    for (const auto& p : cfg.input.paths) paths += (paths.empty() ? "'" : ", '") + p + "'";
    throw Error("no inputs found in input.paths (" + (paths.empty() ? std::string("empty") : paths) + ")");
  }

  const int threads = cfg.decode.threads > 0 ? cfg.decode.threads
                                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int wanted_tokens = cfg.pipeline.max_tokens > 0 ? cfg.pipeline.max_tokens : std::max(4, 2 * threads);
  // The packer reuses a staging slot, with its BatchSlot (device buffers,
  // metadata), `slots` batches later, and StagingRing::acquire() only waits
  // for the slot's release event, which the sink records once the batch and
  // its callback are done. The item that completes batch k stays in flight
  // until then, so with at most (slots - 1) x batch.size + 1 tokens the packer
  // cannot start batch k + slots before the sink has released batch k.
  const std::int64_t safe_tokens = static_cast<std::int64_t>(cfg.staging.slots - 1) * cfg.batch.size + 1;
  const int tokens = static_cast<int>(std::min<std::int64_t>(wanted_tokens, safe_tokens));
  if (tokens < wanted_tokens)
    spdlog::info("frames in flight limited to {} (staging.slots {} x batch.size {}); raise staging.slots for more",
                 tokens, cfg.staging.slots, cfg.batch.size);

  stages::StageStats st_source("source"), st_read("read", true), st_decode("decode", true),
      st_transform("transform", true), st_pack("pack"), st_copy("pack_copy", true), st_transfer("transfer"),
      st_gpu("gpu_ops"), st_sink("sink");

  // A staged frame may take up to this many bytes when the GPU resizes: a
  // 1920x1088 frame, or the target if larger. Bigger frames are resized on the
  // CPU first (Transform::cpu_resized).
  const std::size_t gpu_frame_budget = std::size_t{1920} * 1088 * 3;
  stages::Transform transform(cfg.transform, !gpu_normalize, st_transform, gpu_resize, gpu_frame_budget);
  const std::size_t frame_bytes = transform.frame_bytes();
  const std::size_t slot_bytes = frame_bytes * cfg.batch.size;
  const kernels::NormalizeParams norm = transform.normalize_params();
  const std::int64_t H = cfg.transform.resize.height, W = cfg.transform.resize.width;
  const std::size_t out_sample_bytes = static_cast<std::size_t>(W) * H * 3 * dtype_size(cfg.transform.dtype);
  kernels::ResizeBatch resize;
  resize.channels = 3;
  resize.width = static_cast<int>(W);
  resize.height = static_cast<int>(H);
  resize.interp = cfg.transform.resize.interpolation == Interpolation::nearest ? kernels::Interp::nearest
                                                                               : kernels::Interp::linear;
  resize.fit = cfg.transform.resize.mode == ResizeMode::letterbox     ? kernels::Fit::letterbox
               : cfg.transform.resize.mode == ResizeMode::center_crop ? kernels::Fit::center_crop
                                                                      : kernels::Fit::stretch;
  resize.pad_value = static_cast<std::uint8_t>(cfg.transform.resize.pad_value);

  memory::StagingOptions so;
  so.device = device;
  so.slots = cfg.staging.slots;
  so.slot_bytes = slot_bytes;
  so.memory = cfg.staging.memory;
  so.transfer = cfg.staging.transfer;
  so.portable = device_ids.size() > 1;
  so.budget_bytes = static_cast<std::size_t>(cfg.memory.pinned_budget_mb) << 20;
  so.fallback = cfg.memory.fallback;
  so.track = cfg.memory.track;
  memory::StagingRing ring(so);
  const bool kernels_write_output = gpu_normalize;  // else the staged tensor is the output
  std::vector<std::unique_ptr<stages::DeviceContext>> devices;
  std::size_t device_bytes = 0;
  for (int d : device_ids) {
    auto ctx = std::make_unique<stages::DeviceContext>();
    ctx->device = d;
    ctx->stream = gpu::Stream(d);
    for (int i = 0; i < ring.slots(); ++i) {
      stages::DeviceBuffers b;
      if (!ring.zero_copy()) b.d_input = gpu::DeviceBuffer(d, slot_bytes);
      if (kernels_write_output) b.d_output = gpu::DeviceBuffer(d, out_sample_bytes * cfg.batch.size);
      b.d_checksum = gpu::DeviceBuffer(d, sizeof(std::uint64_t));
      b.copy_start = gpu::Event(d, true);
      b.copy_end = gpu::Event(d, true);
      b.ready = gpu::Event(d, false);
      device_bytes += b.d_input.size() + b.d_output.size() + b.d_checksum.size();
      ctx->buffers.push_back(std::move(b));
    }
    devices.push_back(std::move(ctx));
  }
  gpu::set_device(device);
  std::vector<std::unique_ptr<stages::BatchSlot>> slots;
  for (int i = 0; i < ring.slots(); ++i) {
    auto s = std::make_unique<stages::BatchSlot>();
    s->slot = i;
    s->samples.resize(cfg.batch.size);
    if (gpu_resize) s->images.resize(cfg.batch.size);
    s->out_sample_bytes = out_sample_bytes;
    DeviceBatch& b = s->batch;
    b.shape = cfg.transform.layout == Layout::nchw ? std::vector<std::int64_t>{cfg.batch.size, 3, H, W}
                                                   : std::vector<std::int64_t>{cfg.batch.size, H, W, 3};
    b.dtype = cfg.transform.dtype;
    b.layout = cfg.transform.layout;
    b.samples.reserve(cfg.batch.size);
    slots.push_back(std::move(s));
  }

  // On any exit, the GPUs finish with the buffers before they are freed.
  struct SyncOnExit {
    const std::vector<std::unique_ptr<stages::DeviceContext>>& devices;
    ~SyncOnExit() {
      for (const auto& d : devices) {
        try {
          d->stream.synchronize();
        } catch (...) {
          // A sticky error was already reported by the call that hit it.
        }
      }
    }
  } sync_on_exit{devices};

  using Op = stages::GpuOps::Op;
  WorkPool pool(tokens);
  stages::Source source(inputs, cfg.input.video, std::max(2, threads / 4), st_source, impl_->stop);
  stages::Read read(st_read);
  stages::Decode decode(cfg.decode, cfg.transform, st_decode);
  stages::Pack pack(ring, slots, devices, cfg.dispatch, cfg.batch, cfg.input.on_error, st_pack);
  stages::PackCopy pack_copy(st_copy);
  stages::Transfer transfer(ring, st_transfer);
  stages::GpuOps gpu_ops(norm, resize, gpu_resize ? Op::resize_normalize : gpu_normalize ? Op::normalize : Op::none,
                         st_gpu);
  stages::Sink sink(cfg.sink, ring, callback, st_sink, st_transfer);

  std::atomic<std::uint64_t> finished{0};
  const auto t_pipe = std::chrono::steady_clock::now();
  report.setup_s = std::chrono::duration<double>(t_pipe - t_start).count();
  {
    Progress progress(options.progress, inputs.size(), finished);
    tbb::task_arena arena(threads);
    // Keys for the serial filters' own ordering, the filters' set-up and the
    // end of the run (see handoff.hpp).
    struct Keys {
      char setup, source, pack, transfer, gpu, sink, end;
    } keys{};
    detail::handoff_release(&keys.source);  // this thread's set-up, seen by the first source call
    {
      // What the filters wrote, seen by this thread once they are done
      // (also when one threw).
      const detail::AcquireOnExit end{&keys.end};
      arena.execute([&] {
        using tbb::filter_mode;
        using Tok = stages::Work*;
        using detail::handoff;
        auto next = [&](tbb::flow_control& fc) -> Tok {
          const detail::ReleaseOnExit e{&keys.end};
          detail::handoff_acquire(&keys.source);
          const detail::ReleaseOnExit s{&keys.source};
          Tok w = source.next([&] { return pool.acquire(); });
          if (!w) fc.stop();
          detail::handoff_release(w);
          return w;
        };
        auto finish = [&](Tok w) {
          const detail::ReleaseOnExit e{&keys.end};
          detail::handoff_acquire(w);
          detail::handoff_acquire(&keys.sink);
          const detail::ReleaseOnExit s{&keys.sink};
          sink(w);
          if (!w->flush) ++finished;
          pool.release(w);
        };
        const auto f_read = handoff<Tok>(read, nullptr, &keys.end);
        const auto f_decode = handoff<Tok>(decode, nullptr, &keys.end);
        const auto f_transform = handoff<Tok>(transform, nullptr, &keys.end);
        const auto f_pack = handoff<Tok>(pack, &keys.pack, &keys.end);
        const auto f_copy = handoff<Tok>(pack_copy, nullptr, &keys.end);
        const auto f_transfer = handoff<Tok>(transfer, &keys.transfer, &keys.end);
        const auto f_gpu = handoff<Tok>(gpu_ops, &keys.gpu, &keys.end);
        // oneTBB copies each filter body: hand it over through the set-up key.
        auto over = [&](const auto& f) {
          return detail::HandedOver<std::remove_cvref_t<decltype(f)>>(&f, &keys.setup);
        };
        tbb::parallel_pipeline(static_cast<std::size_t>(tokens),
                               tbb::make_filter<void, Tok>(filter_mode::serial_in_order, over(next)) &
                                   tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_read)) &
                                   tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_decode)) &
                                   tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_transform)) &
                                   tbb::make_filter<Tok, Tok>(filter_mode::serial_in_order, over(f_pack)) &
                                   tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_copy)) &
                                   tbb::make_filter<Tok, Tok>(filter_mode::serial_in_order, over(f_transfer)) &
                                   tbb::make_filter<Tok, Tok>(filter_mode::serial_in_order, over(f_gpu)) &
                                   tbb::make_filter<Tok, void>(filter_mode::serial_in_order, over(finish)));
      });
    }
    ring.drain();
    for (const auto& d : devices) d->stream.synchronize();
  }
  const auto t_end = std::chrono::steady_clock::now();
  report.wall_s = std::chrono::duration<double>(t_end - t_start).count();
  const double pipe_s = std::chrono::duration<double>(t_end - t_pipe).count();
  report.pipeline_s = pipe_s;

  report.interrupted = impl_->stop.load() && !source.complete();
  // One entry per image, video frame or failed video handed out, plus the
  // items never reached (a video counts once).
  report.inputs.discovered = source.emitted() + source.not_reached();
  report.inputs.delivered = sink.delivered();
  report.inputs.failures = pack.failures();
  report.inputs.failed = pack.failures().size();
  report.inputs.dropped = pack.dropped();
  report.inputs.not_processed = source.not_reached();
  report.inputs.cpu_resized = gpu_resize ? transform.cpu_resized() : 0;
  report.batches = sink.records().size();
  report.batch_records = sink.records();
  report.images_per_s = report.wall_s > 0 ? report.inputs.delivered / report.wall_s : 0;
  report.steady_images_per_s = pipe_s > 0 ? report.inputs.delivered / pipe_s : 0;

  for (const stages::StageStats* s : {&st_source, &st_read, &st_decode, &st_transform, &st_pack, &st_copy,
                                      &st_transfer, &st_gpu, &st_sink})
    report.stages.push_back(make_stage_report(*s, threads, pipe_s));
  const auto bottleneck = std::max_element(report.stages.begin(), report.stages.end(),
                                           [](const auto& a, const auto& b) { return a.utilization < b.utilization; });
  report.bottleneck = bottleneck->name;

  const memory::PoolStats ps = ring.pool().stats();
  report.memory.staging_kind = std::string(memory::to_string(ring.kind()));
  report.memory.staging_bytes = ring.slot_bytes() * ring.slots();
  report.memory.pinned_bytes = ps.pinned_bytes;
  report.memory.pinned_peak = ps.pinned_peak;
  report.memory.pool_hits = ps.hits;
  report.memory.pool_misses = ps.misses;
  report.memory.device_bytes = device >= 0 ? device_bytes : 0;
  report.memory.slots = ring.slots();
  report.memory.slot_wait_s = ring.wait_seconds();
  report.memory.fallbacks = ring.fallbacks();
  report.memory.fallback_reason = ring.fallback_reason();

  report.transfer.mode = device < 0                               ? "host memcpy"
                         : ring.zero_copy()                       ? "zero_copy"
                         : cfg.staging.memory == StagingMemory::pageable ? "pageable"
                                                                  : "copy";
  report.transfer.bytes = st_transfer.bytes.load();
  report.transfer.seconds = device >= 0 ? sink.transfer_seconds() : st_transfer.busy_ns.load() * 1e-9;
  report.transfer.gb_per_s = report.transfer.seconds > 0 ? report.transfer.bytes / report.transfer.seconds / 1e9 : 0;
  for (const auto& d : devices) {
    Report::Device rd;
    rd.device = d->device;
    rd.batches = d->batches;
    rd.bytes = d->bytes;
    rd.copy_s = d->copy_s;
    rd.gb_per_s = d->copy_s > 0 ? d->bytes / d->copy_s / 1e9 : 0;
    report.devices.push_back(rd);
  }
  return report;
}

}  // namespace imgpipe
