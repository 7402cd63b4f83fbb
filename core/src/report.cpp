#include "imgpipe/report.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report_format.hpp"

namespace imgpipe {

namespace {

using report_format::count;
using report_format::mib;
using report_format::number;
using report_format::unit_for;

void print_stage_rows(const Report& r, std::ostream& os) {
  os << fmt::format("{:<11} {:>4}  {:<16} {:>8} {:>8} {:>19} {:>8} {:>5} {:>8}\n", "stage", "thr", "items", "busy s",
                    "wait s", "rate", "MB/s", "util", "idle s");
  for (const auto& s : r.stages) {
    // The count right-aligned, its unit after it ("   20 images").
    const std::string items = fmt::format("{:>7} {:<8}", s.items, unit_for(s.items, s.unit));
    const std::string rate =
        s.items_per_s ? fmt::format("{:>9} {:<9}", number(*s.items_per_s), s.unit + "/s") : fmt::format("{:>9} {:<9}", "–", "");
    const std::string mb = s.mb_per_s ? number(*s.mb_per_s) : "–";
    os << fmt::format("{:<11} {:>4}  {} {:>8.3f} {:>8.3f} {} {:>8} {:>4.0f}% {:>8.3f}{}\n", s.name, s.concurrency, items,
                      s.busy_s, s.wait_s, rate, mb, 100.0 * s.utilization, s.idle_s,
                      !r.bottleneck.empty() && s.name == r.bottleneck ? "  <- bottleneck" : "");
  }
  if (r.bottleneck.empty())
    os << (r.inputs.delivered == 0 ? "  bottleneck: none (nothing was delivered)\n"
                                   : "  bottleneck: none (no stage did enough work to rate)\n");
  os << fmt::format("  rate and MB/s: what the stage sustains on its own, all its threads, waits excluded; "
                    "–: too little work to rate (under {:.0f} ms or {} items)\n"
                    "  util: share of the run its threads worked; wait s: blocked inside the stage (free staging "
                    "slot, GPU);\n  idle s: starved by upstream or held by the token limit\n",
                    kMinRatedWorkSeconds * 1e3, kMinRatedItems);
  if (std::any_of(r.stages.begin(), r.stages.end(), [](const StageReport& s) { return is_video_decoder_row(s.name); }))
    os << "  video cpu, video nvdec: decoding the videos (libavcodec, NVDEC), thr: videos at once; "
          "the source's time leaves out its waits for their frames\n";
}

void print_inputs(const Report& r, std::ostream& os, const std::string& json_path) {
  const auto& in = r.inputs;
  os << fmt::format("inputs: {} discovered = {} delivered + {} failed", in.discovered, in.delivered, in.failed);
  if (in.dropped) os << fmt::format(" + {} dropped (batch.drop_last)", in.dropped);
  if (in.not_processed) os << fmt::format(" + {} not processed (interrupted)", in.not_processed);
  os << "\n";
  if (in.cpu_resized)
    os << fmt::format("  {} over the staging frame budget {} resized on the CPU before staging\n",
                      count(in.cpu_resized, "frames"), in.cpu_resized == 1 ? "was" : "were");
  const std::size_t shown = std::min<std::size_t>(in.failures.size(), 20);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& f = in.failures[i];
    os << "  failed: " << f.path;
    if (f.frame >= 0) os << " frame " << f.frame;
    os << ": " << f.reason << "\n";
  }
  if (in.failures.size() > shown) {
    const std::string where = json_path.empty() ? std::string("the JSON report lists every one: --report FILE, "
                                                              "Report::to_json(), Python's report()")
                              : json_path == "-" ? std::string("the JSON report on stdout lists every one")
                                                 : "the JSON report " + json_path + " lists every one";
    os << fmt::format("  ... and {} more ({})\n", in.failures.size() - shown, where);
  }
}

void print_memory_and_decode(const Report& r, std::ostream& os) {
  const auto& m = r.memory;
  os << fmt::format("memory: staging {} x {} {} ({} pinned, peak {}; {}, {}), device {}, slot wait {:.3f} s", m.slots,
                    mib(m.slots ? static_cast<double>(m.staging_bytes) / m.slots : 0), m.staging_kind,
                    mib(m.pinned_bytes), mib(m.pinned_peak), count(m.slot_reuses, "slot reuses"),
                    count(m.slot_allocations, "allocations"), mib(m.device_bytes), m.slot_wait_s);
  if (m.fallbacks) os << fmt::format(", {}: {}", count(m.fallbacks, "fallbacks"), m.fallback_reason);
  if (m.held_batch_copies)
    os << fmt::format(", held batches moved out of the ring: {} ({})", m.held_batch_copies,
                      mib(m.held_batch_copy_bytes));
  os << "\n";
  if (r.transfer.mode == "in place" && r.transfer.bytes == 0)
    os << "transfer: none, each batch is its staging slot (host backend, tensor made by the CPU)\n";
  else
    os << fmt::format("transfer: {} {} in {:.3f} s = {:.2f} GB/s\n", r.transfer.mode, mib(r.transfer.bytes),
                      r.transfer.seconds, r.transfer.gb_per_s);
  if (const auto& v = r.video; v.nvdec_files + v.cpu_files > 0) {
    os << fmt::format("video: NVDEC {} ({}) | CPU {} ({})", count(v.nvdec_files, "files"),
                      count(v.nvdec_frames, "frames"), count(v.cpu_files, "files"), count(v.cpu_frames, "frames"));
    if (v.decoders_made + v.decoders_reused > 0)
      os << fmt::format(" | NVDEC decoders made {}, reused {}", v.decoders_made, v.decoders_reused);
    if (v.direct_frames > 0)
      os << fmt::format(" | CPU frames copied from page-locked decoder memory: {} (peak {:.0f} MiB, {} blocks made{})",
                        v.direct_frames, v.frame_memory_peak_mib, v.frame_blocks_made,
                        v.frame_blocks_pageable ? fmt::format(", {} blocks past the budget", v.frame_blocks_pageable)
                                                : std::string());
    for (const auto& [why, n] : v.cpu_reasons) os << fmt::format(" | on the CPU ({}): {}", n, why);
    if (v.cpu_decoded > v.cpu_delivered || v.nvdec_decoded > v.nvdec_delivered)
      os << fmt::format(" | decoded per frame delivered: CPU {:.2f}, NVDEC {:.2f}",
                        Report::Video::amplification(v.cpu_decoded, v.cpu_delivered),
                        Report::Video::amplification(v.nvdec_decoded, v.nvdec_delivered));
    if (v.clips + v.short_skipped > 0)
      os << fmt::format(" | {}; shorter than a clip: {} skipped, {} padded, {} looped", count(v.clips, "clips"),
                        v.short_skipped, v.short_padded, v.short_looped);
    os << "\n";
  }
  const auto& d = r.decode;
  if (d.where == "cpu") {
    os << "decode: cpu" << (d.note.empty() ? "" : " (GPU route off: " + d.note + ")") << "\n";
  } else {
    os << fmt::format("decode: {} | GPU ({} JPEG engines): {} in {} at {:.0f} img/s | CPU: {} at {:.0f} img/s"
                      " | {}, {} rejected by the engines and decoded on the CPU",
                      d.where, d.jpeg_engines, count(d.gpu, "images"), count(d.gpu_calls, "calls"),
                      d.gpu_images_per_s, count(d.cpu, "images"), d.cpu_images_per_s,
                      count(d.gpu_able, "GPU-able JPEGs"), d.gpu_fallbacks);
    if (d.verify == "full")
      os << fmt::format(" | entropy check: {} checked, {} kept on the CPU", d.entropy_checked, d.entropy_to_cpu);
    else
      os << fmt::format(" | {} decoded on the engines without entropy check (decode.verify: markers)",
                        count(d.unchecked_on_engines, "JPEGs"));
    if (!d.cpu_route_reasons.empty()) {
      os << " | kept on the CPU by the probe's checks:";
      for (const auto& [reason, n] : d.cpu_route_reasons) os << fmt::format(" {} {}", reason, n);
    }
    if (d.gpu_share.size() > 1)
      os << fmt::format(" | GPU share {:.2f} -> {:.2f}", d.gpu_share.front(), d.gpu_share.back());
    if (d.engines_ready_s > 0) os << fmt::format(" | engines ready {:.2f} s into the run", d.engines_ready_s);
    if (d.gpu_call_s > 0)
      os << fmt::format(" | engine threads: {:.3f} s in calls ({:.3f} s submitting, {:.3f} s for the previous call,"
                        " {:.3f} s in {} re-initialising), {:.3f} s waiting for copies",
                        d.gpu_call_s, d.gpu_submit_s, d.gpu_previous_wait_s, d.gpu_initialize_s,
                        count(d.gpu_initializations, "calls"), d.gpu_input_wait_s);
    os << "\n";
  }
  if (r.latency.samples)
    os << fmt::format("latency (source -> batch ready), {}: p50 {:.1f} ms, p95 {:.1f} ms, p99 {:.1f} ms, max {:.1f} ms\n",
                      count(r.latency.samples, "samples"), r.latency.p50_ms, r.latency.p95_ms, r.latency.p99_ms,
                      r.latency.max_ms);
  if (r.devices.size() > 1)
    for (const auto& dev : r.devices)
      os << fmt::format("  device {}: {}, {} copied in {:.3f} s = {:.2f} GB/s\n", dev.device,
                        count(dev.batches, "batches"), mib(static_cast<double>(dev.bytes)), dev.copy_s, dev.gb_per_s);
}

nlohmann::json rate(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json reasons_json(const std::vector<std::pair<std::string, std::uint64_t>>& reasons) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [reason, n] : reasons) j[reason] = n;
  return j;
}

nlohmann::json timeline_json(const Timeline& t) {
  nlohmann::json ticks = nlohmann::json::array();
  for (const auto& k : t.ticks)
    ticks.push_back({{"t_s", k.t_s},
                     {"items", k.items},
                     {"busy_s", k.busy_s},
                     {"wait_s", k.wait_s},
                     {"done", k.done},
                     {"failed", k.failed},
                     {"ring_in_use", k.ring_in_use},
                     {"rss_bytes", k.rss_bytes}});
  return {{"interval_s", t.interval_s}, {"stages", t.stages}, {"ticks", ticks}};
}

}  // namespace

void Report::print_table(std::ostream& os, const std::string& json_path) const {
  os << fmt::format("imgpipe {} | backend: {} | resize on {}, normalize on {}{}\n", version, backend,
                    resize_where, normalize_where, interrupted ? " | INTERRUPTED" : "");
  print_stage_rows(*this, os);
  os << fmt::format("run: {:.3f} s ({:.3f} s set-up), {}, {:.1f} {}/s end to end, "
                    "{:.1f} {}/s after set-up, {}\n",
                    wall_s, setup_s,
                    report_format::delivered(inputs.delivered, samples.unit, samples.images, samples.frames),
                    samples_per_s, samples.unit, steady_samples_per_s, samples.unit, count(batches, "batches"));
  if (!diagnostics.empty()) {
    std::string set;
    for (const auto& [name, value] : diagnostics) set += fmt::format("{}{}={}", set.empty() ? "" : ", ", name, value);
    os << fmt::format("diagnostics: {} ({}, not a normal run)\n", set,
                      diagnostics.size() == 1 ? "a measurement knob" : "measurement knobs");
  }
  if (shard.world_size > 1) {
    os << fmt::format("shard: rank {} of {} (from {}), remainder {}", shard.rank, shard.world_size, shard.origin,
                      shard.remainder);
    if (shard.padded > 0) os << fmt::format(": {} repeated", count(shard.padded, "item"));
    if (shard.dropped > 0) os << fmt::format(": {} left out", count(shard.dropped, "item"));
    os << "\n";
  }
  if (epoch > 0) os << fmt::format("epoch: {}\n", epoch);
  if (!classes.empty()) os << fmt::format("classes: {} (input.labels: folders)\n", classes.size());
  print_inputs(*this, os, json_path);
  print_memory_and_decode(*this, os);
}

namespace {
// Sections of Report::to_json.
nlohmann::json stages_json(const std::vector<StageReport>& stages) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : stages) {
    out.push_back({{"name", s.name},
                   {"parallel", s.parallel},
                   {"concurrency", s.concurrency},
                   {"items", s.items},
                   {"unit", s.unit},
                   {"busy_s", s.busy_s},
                   {"wait_s", s.wait_s},
                   {"work_s", s.work_s},
                   {"idle_s", s.idle_s},
                   {"bytes", s.bytes},
                   {"items_per_s", rate(s.items_per_s)},
                   {"items_per_s_per_thread", rate(s.items_per_s_per_thread)},
                   {"mb_per_s", rate(s.mb_per_s)},
                   {"utilization", s.utilization}});
  }
  return out;
}

nlohmann::json memory_json(const Report::Memory& memory) {
  return {{"staging_kind", memory.staging_kind}, {"staging_bytes", memory.staging_bytes},
          {"pinned_bytes", memory.pinned_bytes}, {"pinned_peak", memory.pinned_peak},
          {"slot_reuses", memory.slot_reuses},       {"slot_allocations", memory.slot_allocations},
          {"device_bytes", memory.device_bytes},
          {"slots", memory.slots},               {"slot_wait_s", memory.slot_wait_s},
          {"fallbacks", memory.fallbacks},       {"fallback_reason", memory.fallback_reason},
          {"held_batch_copies", memory.held_batch_copies},
          {"held_batch_copy_bytes", memory.held_batch_copy_bytes}};
}

nlohmann::json video_json(const Report::Video& video) {
  return {{"nvdec_files", video.nvdec_files},
          {"nvdec_frames", video.nvdec_frames},
          {"cpu_files", video.cpu_files},
          {"cpu_frames", video.cpu_frames},
          {"cpu_reasons", reasons_json(video.cpu_reasons)},
          {"decoders_made", video.decoders_made},
          {"decoders_reused", video.decoders_reused},
          {"direct_frames", video.direct_frames},
          {"frame_memory_peak_mib", video.frame_memory_peak_mib},
          {"frame_blocks_pageable", video.frame_blocks_pageable},
          {"frame_blocks_made", video.frame_blocks_made},
          {"cpu_decoded", video.cpu_decoded},
          {"nvdec_decoded", video.nvdec_decoded},
          {"cpu_delivered", video.cpu_delivered},
          {"nvdec_delivered", video.nvdec_delivered},
          {"cpu_amplification", Report::Video::amplification(video.cpu_decoded, video.cpu_delivered)},
          {"nvdec_amplification", Report::Video::amplification(video.nvdec_decoded, video.nvdec_delivered)},
          {"clips", video.clips},
          {"short_skipped", video.short_skipped},
          {"short_padded", video.short_padded},
          {"short_looped", video.short_looped}};
}

nlohmann::json decode_json(const Report::Decode& decode) {
  return {{"where", decode.where},
          {"note", decode.note},
          {"jpeg_engines", decode.jpeg_engines},
          {"engines_ready_s", decode.engines_ready_s},
          {"gpu_able", decode.gpu_able},
          {"cpu_route_reasons", reasons_json(decode.cpu_route_reasons)},
          {"gpu", decode.gpu},
          {"cpu", decode.cpu},
          {"gpu_fallbacks", decode.gpu_fallbacks},
          {"verify", decode.verify},
          {"entropy_checked", decode.entropy_checked},
          {"entropy_to_cpu", decode.entropy_to_cpu},
          {"unchecked_on_engines", decode.unchecked_on_engines},
          {"gpu_calls", decode.gpu_calls},
          {"gpu_images_per_s", decode.gpu_images_per_s},
          {"gpu_call_s", decode.gpu_call_s},
          {"gpu_submit_s", decode.gpu_submit_s},
          {"gpu_previous_wait_s", decode.gpu_previous_wait_s},
          {"gpu_input_wait_s", decode.gpu_input_wait_s},
          {"gpu_initializations", decode.gpu_initializations},
          {"gpu_initialize_s", decode.gpu_initialize_s},
          {"cpu_images_per_s", decode.cpu_images_per_s},
          {"gpu_share", decode.gpu_share}};
}

nlohmann::json context_json(const RunContext& c) {
  return {{"command_line", c.command_line}, {"hostname", c.hostname},         {"os", c.os},
          {"cpu_model", c.cpu_model},       {"cpu_count", c.cpu_count},       {"gpus", c.gpus},
          {"cuda_driver", c.cuda_driver},   {"cuda_runtime", c.cuda_runtime}, {"opencv", c.opencv},
          {"onetbb", c.onetbb},             {"config", c.config}};
}
}  // namespace

std::string Report::to_json(int indent) const {
  nlohmann::json j;
  j["version"] = version;
  j["backend"] = backend;
  j["interrupted"] = interrupted;
  j["nothing_delivered"] = nothing_delivered();
  j["wall_s"] = wall_s;
  j["setup_s"] = setup_s;
  j["pipeline_s"] = pipeline_s;
  j["samples"] = {
      {"unit", samples.unit}, {"images", samples.images}, {"frames", samples.frames}, {"clips", samples.clips}};
  j["samples_per_s"] = samples_per_s;
  j["steady_samples_per_s"] = steady_samples_per_s;
  j["images_per_s"] = samples_per_s;  // deprecated aliases (docs/report.md)
  j["steady_images_per_s"] = steady_samples_per_s;
  j["cpu_s"] = cpu_s;
  j["normalize_where"] = normalize_where;
  j["resize_where"] = resize_where;
  j["bottleneck"] = bottleneck;
  j["diagnostics"] = nlohmann::json::object();
  for (const auto& [name, value] : diagnostics) j["diagnostics"][name] = value;
  j["stages"] = stages_json(stages);
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : inputs.failures) failures.push_back({{"path", f.path}, {"frame", f.frame}, {"reason", f.reason}});
  j["shard"] = {{"rank", shard.rank},           {"world_size", shard.world_size}, {"origin", shard.origin},
                {"remainder", shard.remainder}, {"padded", shard.padded},         {"dropped", shard.dropped}};
  j["epoch"] = epoch;
  j["classes"] = classes;
  j["inputs"] = {{"discovered", inputs.discovered}, {"delivered", inputs.delivered},
                 {"failed", inputs.failed},         {"dropped", inputs.dropped},
                 {"not_processed", inputs.not_processed}, {"cpu_resized", inputs.cpu_resized},
                 {"failures", failures}};
  j["memory"] = memory_json(memory);
  j["transfer"] = {{"mode", transfer.mode}, {"bytes", transfer.bytes}, {"seconds", transfer.seconds},
                   {"gb_per_s", transfer.gb_per_s}};
  j["devices"] = nlohmann::json::array();
  for (const auto& d : devices)
    j["devices"].push_back({{"device", d.device}, {"batches", d.batches}, {"bytes", d.bytes}, {"copy_s", d.copy_s},
                            {"gb_per_s", d.gb_per_s}});
  j["video"] = video_json(video);
  j["decode"] = decode_json(decode);
  j["latency"] = {{"samples", latency.samples}, {"p50_ms", latency.p50_ms}, {"p95_ms", latency.p95_ms},
                  {"p99_ms", latency.p99_ms}, {"max_ms", latency.max_ms}};
  j["batches"] = batches;
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : batch_records)
    recs.push_back({{"index", r.index}, {"samples", r.samples}, {"checksum", fmt::format("{:016x}", r.checksum)}});
  j["batch_records"] = recs;
  j["timeline"] = timeline_json(timeline);
  j["context"] = context_json(context);
  // Paths are bytes: one that is not UTF-8 gets U+FFFD rather than failing the report.
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace imgpipe
