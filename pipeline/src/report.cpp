#include "report.hpp"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <oneapi/tbb/version.h>
#include <opencv2/core/version.hpp>

#include "codecs/video/video_devices.hpp"
#include "imgpipe/pipeline.hpp"
#include "stages/failure_log.hpp"

namespace imgpipe::detail {

StageReport make_stage_report(const stages::StageStats& s, int concurrency, double pipeline_s,
                              const std::string& sample_unit) {
  StageReport r;
  r.name = s.name;
  r.unit = s.counts == stages::Counts::batches  ? "batches"
           : s.counts == stages::Counts::images ? "images"
           : s.counts == stages::Counts::frames ? "frames"
                                                : sample_unit;
  r.parallel = s.parallel;
  r.concurrency = s.parallel ? concurrency : 1;
  r.items = s.items.load();
  // For stages whose work runs on the GPU, the device time bounds the stage
  // when it exceeds the host time spent enqueuing.
  r.busy_s = std::max(s.busy_ns.load() * 1e-9, s.device_ns.load() * 1e-9);
  r.wait_s = std::min(s.wait_ns.load() * 1e-9, r.busy_s);
  r.work_s = r.busy_s - r.wait_s;
  r.bytes = static_cast<double>(s.bytes.load());
  if (rateable(r.items, r.work_s)) {
    r.items_per_s_per_thread = r.items / r.work_s;
    r.items_per_s = *r.items_per_s_per_thread * r.concurrency;
    if (r.bytes > 0) r.mb_per_s = r.bytes / r.work_s / 1e6 * r.concurrency;  // none for a stage that moves no bytes
  }
  const double capacity = pipeline_s * r.concurrency;
  r.utilization = capacity > 0 ? r.work_s / capacity : 0;
  r.idle_s = std::max(capacity - r.busy_s, 0.0);
  return r;
}

std::string pick_bottleneck(const std::vector<StageReport>& stages, std::uint64_t delivered) {
  if (delivered == 0) return {};  // nothing ran through: no stage bounded anything
  const StageReport* b = nullptr;
  for (const auto& st : stages)
    if (st.items_per_s && (!b || st.utilization > b->utilization)) b = &st;
  return b ? b->name : std::string();
}

namespace {

double seconds(RunTimes::clock::duration d) { return std::chrono::duration<double>(d).count(); }

double process_cpu_s() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

void add_inputs(Report& r, const StageSet& s, bool resize_on_gpu) {
  // One entry per image, video frame or failed video handed out, plus the
  // items never reached (a video counts once).
  r.inputs.discovered = s.source.emitted() + s.source.not_reached();
  r.inputs.delivered = s.sink.delivered();
  r.inputs.failures = s.pack.failures();
  r.inputs.failures.insert(r.inputs.failures.end(), s.gpu_ops.failures().begin(), s.gpu_ops.failures().end());
  r.inputs.failed = r.inputs.failures.size();
  // Each was said as it happened (the first 20: StageSet::failure_log); the count of the rest.
  s.failure_log.finish(r.inputs.failures.size());
  r.inputs.dropped = s.pack.dropped();
  r.inputs.not_processed = s.source.not_reached();
  r.inputs.cpu_resized = resize_on_gpu ? s.transform.cpu_resized() : 0;
  r.samples.frames = s.sink.delivered_frames();
  if (s.clip_run) {  // every sample a clip (run_plan's check_clip_inputs)
    r.samples.clips = r.inputs.delivered;
    r.samples.unit = "clips";
    r.batches = s.sink.records().size();
    r.batch_records = s.sink.records();
    return;
  }
  r.samples.images = r.inputs.delivered - r.samples.frames;
  r.samples.unit = r.samples.images == 0 && r.samples.frames == 0 ? s.sample_unit  // what the inputs were
                   : r.samples.frames == 0                        ? "images"
                   : r.samples.images == 0                        ? "frames"
                                                                  : "samples";
  r.batches = s.sink.records().size();
  r.batch_records = s.sink.records();
}

void add_stages(Report& r, const StageSet& s, int threads) {
  for (const stages::StageStats* st : s.reported_stats())
    r.stages.push_back(make_stage_report(*st, s.concurrency(*st, threads), r.pipeline_s, s.sample_unit));
  r.bottleneck = pick_bottleneck(r.stages, r.inputs.delivered);
}

void add_memory_and_transfer(Report& r, const Config& cfg, const StageSet& s, const stages::BatchResources& res) {
  const memory::StagingRing& ring = res.ring();
  const memory::StagingStats ps = res.ring_stats();  // this run's
  r.memory.staging_kind = std::string(memory::to_string(ring.kind()));
  // The room the slots hold (a run that carries less than full batches, or
  // whose count is not known, has less than staging.slots full ones), and
  // how many slots hold any.
  r.memory.staging_bytes = ring.staged_bytes();
  r.memory.pinned_bytes = ps.pinned_bytes;
  r.memory.pinned_peak = ps.pinned_peak;
  r.memory.slot_reuses = ps.hits;
  r.memory.slot_allocations = ps.misses;
  r.memory.device_bytes = res.device_bytes();
  r.memory.slots = 0;
  for (int i = 0; i < ring.slots(); ++i) r.memory.slots += ring.capacity(i) > 0 ? 1 : 0;
  r.memory.slot_wait_s = res.ring_wait_seconds();
  r.memory.fallbacks = ring.fallbacks();
  r.memory.fallback_reason = ring.fallback_reason();

  const bool on_gpu = res.devices().front()->device >= 0;
  // The host backend's batches stay in their slots when the CPU made the
  // tensor (BatchLayout::batch_in_slot): no transfer at all.
  const bool in_place = !on_gpu && res.layout().batch_in_slot && !ring.zero_copy();
  r.transfer.mode = in_place                                        ? "in place"
                    : !on_gpu                                       ? "host memcpy"
                    : ring.zero_copy()                              ? "zero_copy"
                    : cfg.staging.memory == StagingMemory::pageable ? "pageable"
                                                                    : "copy";
  r.transfer.bytes = s.transfer.stats().bytes.load();
  for (const auto& d : res.devices()) {
    const stages::DeviceTransferStats& t = d->transfer;
    r.devices.push_back({d->device, t.batches, t.bytes, t.copy_s, t.copy_s > 0 ? t.bytes / t.copy_s / 1e9 : 0});
    r.transfer.seconds += t.copy_s;
  }
  if (!on_gpu) r.transfer.seconds = s.transfer.stats().busy_ns.load() * 1e-9;
  r.transfer.gb_per_s = r.transfer.seconds > 0 ? r.transfer.bytes / r.transfer.seconds / 1e9 : 0;
}

void add_decode(Report& r, const Config& cfg, const RunPlan& plan, const StageSet& s,
                const stages::BatchResources& res, const RunTimes& t) {
  Report::Decode& d = r.decode;
  d.verify = std::string(enum_name(verify_names, cfg.decode.verify));
  d.where = !plan.gpu_decode ? "cpu" : plan.gpu_decode_adaptive ? "cpu+gpu" : "gpu";
  d.note = plan.decode_note;
  // The engines as found while the run started (waits for the making to end,
  // as freeing the resources would).
  if (const auto& e = res.devices().front()->jpeg) {
    if (e->wait()) {
      d.jpeg_engines = e->info().engines * std::max(1u, e->info().cores_per_engine);
      d.engines_ready_s = std::max(0.0, seconds(e->ready_at() - t.start));
    } else {
      d.note = e->error();
    }
  }
  if (s.video_router) {
    const codecs::VideoRouter::Figures f = s.video_router->figures();
    r.video = {f.nvdec_files, f.nvdec_frames, f.cpu_files, f.cpu_frames, {f.cpu_reasons.begin(), f.cpu_reasons.end()}};
    const codecs::NvdecFigures n = codecs::nvdec_figures();
    r.video.decoders_made = n.made;
    r.video.decoders_reused = n.reused;
    r.video.direct_frames = s.pack.direct_frames();
    if (s.video_frames) {
      const memory::FramePool::Figures p = s.video_frames->figures();
      r.video.frame_memory_peak_mib = static_cast<double>(p.peak_page_locked_bytes) / (1 << 20);
      r.video.frame_blocks_pageable = p.pageable_blocks;
      r.video.frame_blocks_made = p.blocks_made;
    }
  }
  if (const stages::VideoDecodeStats* v = s.source.video_decode()) {
    r.video.cpu_decoded = v->cpu_decoded.load();
    r.video.nvdec_decoded = v->nvdec_decoded.load();
    r.video.cpu_delivered = v->cpu.items.load();
    r.video.nvdec_delivered = v->nvdec.items.load();
    r.video.clips = v->clips.load();
    r.video.short_skipped = v->short_skipped.load();
    r.video.short_padded = v->short_padded.load();
    r.video.short_looped = v->short_looped.load();
  }
  d.gpu_fallbacks = s.gpu_decode.fallbacks.load();
  d.gpu = s.gpu_decode.images.load();
  d.gpu_calls = s.gpu_ops.engine_calls();
  d.cpu = s.decode.stats().items.load() + d.gpu_fallbacks;
  const double gpu_s = s.gpu_decode.ns.load() * 1e-9;
  d.gpu_call_s = gpu_s;
  d.gpu_submit_s = s.gpu_decode.submit_ns.load() * 1e-9;
  d.gpu_previous_wait_s = s.gpu_decode.previous_wait_ns.load() * 1e-9;
  d.gpu_input_wait_s = s.gpu_decode.input_wait_ns.load() * 1e-9;
  d.gpu_initializations = s.gpu_decode.initializations.load();
  d.gpu_initialize_s = s.gpu_decode.initialize_ns.load() * 1e-9;
  d.gpu_images_per_s = gpu_s > 0 ? d.gpu / gpu_s : 0;
  const double cpu_s = (s.decode.stats().busy_ns.load() + s.transform.stats().busy_ns.load()) * 1e-9;
  d.cpu_images_per_s = cpu_s > 0 ? plan.threads * s.decode.stats().items.load() / cpu_s : 0;
  if (s.probe) {
    d.gpu_able = s.probe->gpu_able();
    d.entropy_checked = s.probe->entropy_checked();
    d.entropy_to_cpu = s.probe->entropy_to_cpu();
    if (cfg.decode.verify == Verify::markers) d.unchecked_on_engines = d.gpu;
    d.cpu_route_reasons = s.probe->cpu_route_reasons();
    d.gpu_share = s.steering.history();
    d.gpu_share.insert(d.gpu_share.begin(), s.steering.started_at());
  }
}

// The host, the GPUs and the versions (docs/report.md, "The run report").
RunContext run_context(const Config& cfg, const RunPlan& plan) {
  RunContext c;
  char host[256] = {};
  c.hostname = ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  if (utsname u{}; ::uname(&u) == 0) c.os = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; c.cpu_model.empty() && std::getline(cpuinfo, line);)
    if (const auto colon = line.find(':'); line.rfind("model name", 0) == 0 && colon != std::string::npos) {
      c.cpu_model = line.substr(colon + 1);
      c.cpu_model.erase(0, c.cpu_model.find_first_not_of(" \t"));
    }
  c.cpu_count = std::thread::hardware_concurrency();
  for (int d : plan.devices)
    if (d >= 0) c.gpus.push_back(fmt::format("cuda:{} {}", d, gpu::device_description(d)));
  const gpu::CudaVersions v = gpu::cuda_versions();
  c.cuda_driver = v.driver;
  c.cuda_runtime = v.runtime;
  c.opencv = CV_VERSION;
  c.onetbb = TBB_runtime_version();
  c.config = cfg.to_yaml();
  return c;
}

}  // namespace

Report assemble_report(const Config& cfg, const RunPlan& plan, const StageSet& s,
                       const stages::BatchResources& res, const RunTimes& t, bool stop_requested) {
  Report r;
  r.version = version();
  for (int d : plan.devices) {
    if (!r.backend.empty()) r.backend += "; ";
    r.backend += d >= 0 ? fmt::format("cuda:{} {}", d, gpu::device_description(d)) : "host";
  }
  r.normalize_where = plan.normalize_on_gpu ? "gpu" : "cpu";
  r.resize_where = plan.resize_on_gpu ? "gpu" : "cpu";
  r.diagnostics = plan.diagnostics.set;
  r.interrupted = stop_requested && !s.source.complete();
  r.setup_s = seconds(t.pipeline - t.start);
  r.pipeline_s = seconds(t.end - t.pipeline);
  r.wall_s = seconds(t.end - t.start);
  add_inputs(r, s, plan.resize_on_gpu);
  r.samples_per_s = r.wall_s > 0 ? r.inputs.delivered / r.wall_s : 0;
  r.steady_samples_per_s = r.pipeline_s > 0 ? r.inputs.delivered / r.pipeline_s : 0;
  r.images_per_s = r.samples_per_s;  // the deprecated names
  r.steady_images_per_s = r.steady_samples_per_s;
  r.cpu_s = process_cpu_s();
  add_stages(r, s, plan.threads);
  add_memory_and_transfer(r, cfg, s, res);
  add_decode(r, cfg, plan, s, res, t);
  r.context = run_context(cfg, plan);
  return r;
}

}  // namespace imgpipe::detail
