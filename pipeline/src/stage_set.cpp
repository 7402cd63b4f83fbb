#include "stage_set.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include "codecs/video/video_devices.hpp"
#include "handoff.hpp"

namespace imgpipe::detail {

namespace {
// The share of GPU-able JPEGs sent to the engines before the first
// measurements (decode.where auto): all of them, so that the first window
// measures the engines unslowed by the CPU route; the steering then tries
// the CPU route (codecs/route/route_steering.hpp).
constexpr double kInitialGpuShare = 1.0;

// Each video file's decoder (input.video.where): NVDEC on the run's GPUs
// when the GPU resizes (its frames go from device memory to the fused
// kernel), else the CPU.
std::unique_ptr<codecs::VideoRouter> make_video_router(const Config& cfg, const RunPlan& plan,
                                                       const stages::InputList& inputs) {
  const bool files = std::any_of(inputs.items.begin(), inputs.items.end(),
                                 [](const stages::InputItem& i) { return i.video && !stages::is_live_input(i.path); });
  if (!files) return nullptr;
  codecs::VideoRouter::Options o;
  const VideoConfig& v = cfg.input.video;
  o.where = v.where == Where::cpu ? codecs::VideoWhere::cpu
            : v.where == Where::gpu ? codecs::VideoWhere::gpu : codecs::VideoWhere::auto_;
  o.orientation = v.orientation;
  o.cpu_slots = plan.threads;
  o.cpu_prior_fps = 110.0 * plan.threads;  // one 1080p H.264 stream a core (docs/video.md)
  if (o.where != codecs::VideoWhere::cpu) {
    if (plan.devices.empty() || plan.devices.front() < 0) {
      o.off_reason = "no GPU in the run";
    } else if (!plan.resize_on_gpu && cfg.transform.resize.boxed()) {
      o.off_reason = cfg.transform.resize.mode == ResizeMode::random_crop
                         ? "transform.resize.mode random_crop cuts its boxes from frames the CPU converts"
                         : "transform.resize.short_side cuts its box from frames the CPU converts";
    } else if (!plan.resize_on_gpu) {
      o.off_reason = "the CPU resizes (transform.resize.where), and NVDEC frames stay on the GPU";
    } else {
      for (const int d : plan.devices) {
        std::string why;
        codecs::NvdecCaps caps = codecs::nvdec_caps(d, why);
        if (caps.empty()) {
          o.off_reason = why;
          break;
        }
        o.devices.push_back(d);
        o.caps.push_back(std::move(caps));
        const int mb = cfg.memory.nvdec_frames_mb;
        codecs::set_nvdec_frame_budget(d, mb > 0 ? static_cast<std::uint64_t>(mb) << 20 : gpu::device_memory(d) / 8);
      }
      if (!o.off_reason.empty()) {
        o.devices.clear();
        o.caps.clear();
      }
    }
    if (o.where == codecs::VideoWhere::gpu && !o.off_reason.empty())
      throw ConfigError("input.video.where", 0, "gpu, but NVDEC cannot be used: " + o.off_reason);
  }
  return std::make_unique<codecs::VideoRouter>(std::move(o));
}

}  // namespace

std::optional<memory::FramePoolOptions> video_frame_options(const RunPlan& plan,
                                                            const stages::BatchResources& resources) {
  if (!plan.video_frame_pool) return std::nullopt;
  memory::FramePoolOptions o;
  o.page_locked = plan.video_frames_bytes > 0 && !resources.ring().zero_copy();
  o.device = plan.devices.front();
  // Pinned for every context: the readers' threads allocate them with
  // whatever device is current there, and every GPU of the run copies out.
  o.portable = true;
  o.budget_bytes = plan.video_frames_bytes;
  // Idle page-locked blocks of another size are kept up to the budget:
  // pinning a block again costs far more than holding it (a folder mixes
  // 360p, 720p and 1080p files, and each size comes back).
  if (o.page_locked) o.idle_bytes = std::max(o.idle_bytes, o.budget_bytes);
  return o;
}

StageSet::StageSet(const Config& cfg, const RunPlan& plan, const stages::InputList& inputs,
                   stages::BatchResources& resources, const BatchCallback& callback, const std::atomic<bool>& stop,
                   const RunHooks& hooks)
    : steering(plan.gpu_decode_adaptive, kInitialGpuShare, plan.threads, static_cast<int>(plan.devices.size())),
      video_router(make_video_router(cfg, plan, inputs)),
      video_frames(hooks.video_frames),
      source(inputs.items, cfg.input.video, plan.threads, stop, hooks.live, video_router.get(), video_frames,
             static_cast<std::uint64_t>(cfg.transform.seed), inputs.epoch),
      decode(cfg.decode, cfg.transform, cfg.input.video.orientation, plan.resize_on_gpu ? plan.frame_budget : 0,
             inputs.epoch),
      transform(cfg.transform, !plan.normalize_on_gpu, plan.resize_on_gpu, plan.frame_budget, inputs.epoch),
      pack(resources, cfg.dispatch, cfg.batch, cfg.input.on_error, plan.layout.decode_bytes,
           cfg.sink.type == SinkType::discard),
      transfer(resources),
      gpu_ops(transform.normalize_params(), plan.resize, plan.gpu_op),
      sink(cfg.sink, inputs.shard, resources.ring(), callback, hooks.handoff),
      live(hooks.live.pushed != nullptr || hooks.live.batch_timeout.count() > 0) {
  pack.set_failure_log(&failure_log);
  gpu_ops.set_failure_log(&failure_log);
  const auto videos = std::count_if(inputs.items.begin(), inputs.items.end(), [](const auto& i) { return i.video; });
  has_videos = videos > 0;
  if (has_videos) sample_unit = static_cast<std::size_t>(videos) == inputs.items.size() ? "frames" : "samples";
  clip_run = cfg.input.video.clips.on();  // the stage rows count its frames; the report, clips
  if (!plan.gpu_decode) return;
  if (plan.gpu_decode_adaptive && plan.diagnostics.gpu_share >= 0) steering.fix(plan.diagnostics.gpu_share);
  stages::ProbeLimits limits;
  limits.wait_for_engines = !plan.gpu_decode_adaptive;
  limits.accept_truncated = cfg.decode.accept_truncated;
  limits.exif_orientation = cfg.decode.exif_orientation;
  limits.max_pixels = cfg.decode.max_pixels;
  limits.max_bitstream = plan.frame_bytes;
  limits.max_frame_bytes = plan.max_decoded_frame;
  limits.resize = cfg.transform.resize;
  limits.transform = cfg.transform;
  limits.epoch = inputs.epoch;
  limits.verify_entropy = cfg.decode.verify == Verify::full;
  // The threads' other work: every stage on them but decode, transform, the
  // probe itself (it counts its own) and the GPU ops stage (the steering
  // counts its engine calls apart).
  probe = std::make_unique<stages::Probe>(
      limits, *resources.devices().front()->jpeg, steering, decode.stats(), transform.stats(), gpu_decode,
      std::vector<const stages::StageStats*>{&source.stats(), &read.stats(), &pack.stats(), &pack_copy.stats(),
                                             &transfer.stats(), &sink.stats()});
  steering.set_cycle(plan.gpu_cycle, cfg.batch.size, plan.gpu_cycle_free);
  gpu_ops.enable_gpu_decode(gpu_decode, cfg.decode, cfg.input.on_error, plan.gpu_group, plan.gpu_group_held,
                            plan.gpu_cycle, plan.diagnostics.trace_calls);
}

std::vector<const stages::StageStats*> StageSet::stats() const {
  std::vector<const stages::StageStats*> v;
  if (const stages::VideoDecodeStats* video = source.video_decode()) {
    v.push_back(&video->cpu);
    v.push_back(&video->nvdec);
  }
  v.push_back(&source.stats());
  v.push_back(&read.stats());
  if (probe) v.push_back(&probe->stats());
  for (const stages::StageStats* st : {&decode.stats(), &transform.stats(), &pack.stats(), &pack_copy.stats(),
                                       &transfer.stats(), &gpu_ops.stats(), &sink.stats()})
    v.push_back(st);
  return v;
}

std::vector<const stages::StageStats*> StageSet::reported_stats() const {
  std::vector<const stages::StageStats*> v = stats();
  if (const stages::VideoDecodeStats* video = source.video_decode(); video && video->nvdec.items.load() == 0)
    std::erase(v, &video->nvdec);
  return v;
}

int StageSet::concurrency(const stages::StageStats& st, int threads) const {
  const stages::VideoDecodeStats* video = source.video_decode();
  if (!video || (&st != &video->cpu && &st != &video->nvdec)) return threads;
  const std::uint64_t videos = (&st == &video->cpu ? video->cpu_videos : video->nvdec_videos).load();
  return static_cast<int>(std::clamp<std::uint64_t>(videos, 1, static_cast<std::uint64_t>(source.interleave())));
}

namespace {

// The tokens: one Work per token in flight, recycled after the sink.
class WorkPool {
 public:
  explicit WorkPool(int n) {
    for (int i = 0; i < n; ++i) items_.push_back(std::make_unique<stages::Work>());
    for (auto& w : items_) free_.push_back(w.get());
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

// Keys for the serial filters' own ordering, the filters' set-up and the end
// of the run (see handoff.hpp; no code without TSan).
struct Keys {
  char setup, source, pack, transfer, gpu, sink, end;
};

}  // namespace

void run_filter_chain(const RunPlan& plan, StageSet& s) {
  using Tok = stages::Work*;
  using tbb::filter_mode;
  WorkPool pool(plan.tokens);
  Keys keys{};
  handoff_release(&keys.source);  // this thread's set-up, seen by the first source call
  // What the filters wrote, seen by this thread once they are done (also when one threw).
  const AcquireOnExit end{&keys.end};
  auto next = [&](tbb::flow_control& fc) -> Tok {
    const ReleaseOnExit e{&keys.end};
    handoff_acquire(&keys.source);
    const ReleaseOnExit k{&keys.source};
    Tok w = s.source.next([&] { return pool.acquire(); });
    if (!w) fc.stop();
    handoff_release(w);
    return w;
  };
  auto finish = [&](Tok w) {
    const ReleaseOnExit e{&keys.end};
    handoff_acquire(w);
    handoff_acquire(&keys.sink);
    const ReleaseOnExit k{&keys.sink};
    s.sink(w);
    if (w->failed()) ++s.failed;
    if (w->is_sample()) ++s.finished;
    pool.release(w);
  };
  const auto f_read = handoff<Tok>(s.read, nullptr, &keys.end);
  auto probe = [&s](Tok w) { return s.probe ? (*s.probe)(w) : w; };
  const auto f_probe = handoff<Tok>(probe, nullptr, &keys.end);
  const auto f_decode = handoff<Tok>(s.decode, nullptr, &keys.end);
  const auto f_transform = handoff<Tok>(s.transform, nullptr, &keys.end);
  const auto f_pack = handoff<Tok>(s.pack, &keys.pack, &keys.end);
  const auto f_copy = handoff<Tok>(s.pack_copy, nullptr, &keys.end);
  const auto f_transfer = handoff<Tok>(s.transfer, &keys.transfer, &keys.end);
  const auto f_gpu = handoff<Tok>(s.gpu_ops, &keys.gpu, &keys.end);
  // oneTBB copies each filter body: hand it over through the set-up key.
  auto over = [&](const auto& f) { return HandedOver<std::remove_cvref_t<decltype(f)>>(&f, &keys.setup); };
  // Batches cut short (batch.timeout_ms) can outnumber the slots the token
  // limit assumes, so the packer may wait for a slot that only the stages
  // after it release: never with a single thread.
  // No more than the process may run on (an explicit decode.threads above it
  // would only make oneTBB print a warning past --quiet), save the live case's 2.
  const int threads = std::min(plan.threads, std::max(1, tbb::info::default_concurrency()));
  tbb::task_arena arena(s.live ? std::max(2, threads) : threads);
  arena.execute([&] {
    tbb::parallel_pipeline(static_cast<std::size_t>(plan.tokens),
                           tbb::make_filter<void, Tok>(filter_mode::serial_in_order, over(next)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_read)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_probe)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_decode)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_transform)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::serial_in_order, over(f_pack)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::parallel, over(f_copy)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::serial_in_order, over(f_transfer)) &
                               tbb::make_filter<Tok, Tok>(filter_mode::serial_in_order, over(f_gpu)) &
                               tbb::make_filter<Tok, void>(filter_mode::serial_in_order, over(finish)));
  });
}

}  // namespace imgpipe::detail
