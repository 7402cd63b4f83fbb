#include "imgpipe/report.hpp"

#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace imgpipe {

namespace {
std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }
}  // namespace

void Report::print_table(std::ostream& os) const {
  os << fmt::format("imgpipe {} | backend: {} | resize on {}, normalize on {}{}\n", version, backend,
                    resize_where, normalize_where, interrupted ? " | INTERRUPTED" : "");
  os << fmt::format("{:<10} {:>5} {:>8} {:>9} {:>9} {:>12} {:>10} {:>6} {:>9}\n", "stage", "thr", "items", "busy s",
                    "wait s", "items/s", "MB/s", "util", "idle s");
  for (const auto& s : stages) {
    os << fmt::format("{:<10} {:>5} {:>8} {:>9.3f} {:>9.3f} {:>12.1f} {:>10.1f} {:>5.0f}% {:>9.3f}{}\n", s.name,
                      s.concurrency, s.items, s.busy_s, s.wait_s, s.items_per_s, s.mb_per_s,
                      100.0 * s.utilization, s.idle_s, s.name == bottleneck ? "  <- bottleneck" : "");
  }
  os << "  items/s and MB/s: what the stage sustains on its own, all its threads, waits excluded;\n"
        "  wait s: blocked inside the stage (free staging slot, GPU); idle s: starved or held by the token limit\n";
  os << fmt::format("run: {:.3f} s ({:.3f} s set-up), {} images delivered, {:.1f} images/s end to end, "
                    "{:.1f} images/s after set-up, {} batches\n",
                    wall_s, setup_s, inputs.delivered, images_per_s, steady_images_per_s, batches);
  if (shard.world_size > 1)
    os << fmt::format("shard: rank {} of {} (from {})\n", shard.rank, shard.world_size, shard.origin);
  os << fmt::format("inputs: {} discovered = {} delivered + {} failed", inputs.discovered, inputs.delivered,
                    inputs.failed);
  if (inputs.dropped) os << fmt::format(" + {} dropped (batch.drop_last)", inputs.dropped);
  if (inputs.not_processed) os << fmt::format(" + {} not processed (interrupted)", inputs.not_processed);
  os << "\n";
  if (inputs.cpu_resized)
    os << fmt::format("  {} frames over the staging frame budget were resized on the CPU before staging\n", inputs.cpu_resized);
  const std::size_t shown = std::min<std::size_t>(inputs.failures.size(), 20);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& f = inputs.failures[i];
    os << "  failed: " << f.path;
    if (f.frame >= 0) os << " frame " << f.frame;
    os << ": " << f.reason << "\n";
  }
  if (inputs.failures.size() > shown)
    os << fmt::format("  ... and {} more (see the JSON report)\n", inputs.failures.size() - shown);
  os << fmt::format("memory: staging {} x {} {} ({} pinned, peak {}; {} slot reuses, {} allocations), device {}, "
                    "slot wait {:.3f} s",
                    memory.slots, mib(memory.slots ? static_cast<double>(memory.staging_bytes) / memory.slots : 0),
                    memory.staging_kind, mib(memory.pinned_bytes), mib(memory.pinned_peak), memory.slot_reuses,
                    memory.slot_allocations, mib(memory.device_bytes), memory.slot_wait_s);
  if (memory.fallbacks) os << fmt::format(", {} fallback(s): {}", memory.fallbacks, memory.fallback_reason);
  os << "\n";
  os << fmt::format("transfer: {} {} in {:.3f} s = {:.2f} GB/s\n", transfer.mode, mib(transfer.bytes),
                    transfer.seconds, transfer.gb_per_s);
  if (decode.where == "cpu") {
    os << "decode: cpu" << (decode.note.empty() ? "" : " (GPU route off: " + decode.note + ")") << "\n";
  } else {
    os << fmt::format("decode: {} | GPU ({} JPEG engines): {} images at {:.0f} img/s | CPU: {} images at {:.0f} img/s"
                      " | {} GPU-able JPEGs, {} rejected by the engines and decoded on the CPU",
                      decode.where, decode.jpeg_engines, decode.gpu, decode.gpu_images_per_s, decode.cpu,
                      decode.cpu_images_per_s, decode.gpu_able, decode.gpu_fallbacks);
    if (!decode.gpu_share.empty())
      os << fmt::format(" | GPU share {:.2f} -> {:.2f}", decode.gpu_share.front(), decode.gpu_share.back());
    if (decode.engines_ready_s > 0) os << fmt::format(" | engines ready {:.2f} s into the run", decode.engines_ready_s);
    os << "\n";
  }
  if (devices.size() > 1)
    for (const auto& d : devices)
      os << fmt::format("  device {}: {} batches, {} copied in {:.3f} s = {:.2f} GB/s\n", d.device, d.batches,
                        mib(static_cast<double>(d.bytes)), d.copy_s, d.gb_per_s);
}

std::string Report::to_json(int indent) const {
  nlohmann::json j;
  j["version"] = version;
  j["backend"] = backend;
  j["interrupted"] = interrupted;
  j["wall_s"] = wall_s;
  j["setup_s"] = setup_s;
  j["pipeline_s"] = pipeline_s;
  j["images_per_s"] = images_per_s;
  j["steady_images_per_s"] = steady_images_per_s;
  j["normalize_where"] = normalize_where;
  j["resize_where"] = resize_where;
  j["bottleneck"] = bottleneck;
  j["stages"] = nlohmann::json::array();
  for (const auto& s : stages) {
    j["stages"].push_back({{"name", s.name},
                           {"parallel", s.parallel},
                           {"concurrency", s.concurrency},
                           {"items", s.items},
                           {"busy_s", s.busy_s},
                           {"wait_s", s.wait_s},
                           {"work_s", s.work_s},
                           {"idle_s", s.idle_s},
                           {"bytes", s.bytes},
                           {"items_per_s", s.items_per_s},
                           {"items_per_s_per_thread", s.items_per_s_per_thread},
                           {"mb_per_s", s.mb_per_s},
                           {"utilization", s.utilization}});
  }
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : inputs.failures) failures.push_back({{"path", f.path}, {"frame", f.frame}, {"reason", f.reason}});
  j["shard"] = {{"rank", shard.rank}, {"world_size", shard.world_size}, {"origin", shard.origin}};
  j["inputs"] = {{"discovered", inputs.discovered}, {"delivered", inputs.delivered},
                 {"failed", inputs.failed},         {"dropped", inputs.dropped},
                 {"not_processed", inputs.not_processed}, {"cpu_resized", inputs.cpu_resized},
                 {"failures", failures}};
  j["memory"] = {{"staging_kind", memory.staging_kind}, {"staging_bytes", memory.staging_bytes},
                 {"pinned_bytes", memory.pinned_bytes}, {"pinned_peak", memory.pinned_peak},
                 {"slot_reuses", memory.slot_reuses},       {"slot_allocations", memory.slot_allocations},
                 {"device_bytes", memory.device_bytes},
                 {"slots", memory.slots},               {"slot_wait_s", memory.slot_wait_s},
                 {"fallbacks", memory.fallbacks},       {"fallback_reason", memory.fallback_reason}};
  j["transfer"] = {{"mode", transfer.mode}, {"bytes", transfer.bytes}, {"seconds", transfer.seconds},
                   {"gb_per_s", transfer.gb_per_s}};
  j["devices"] = nlohmann::json::array();
  for (const auto& d : devices)
    j["devices"].push_back({{"device", d.device}, {"batches", d.batches}, {"bytes", d.bytes}, {"copy_s", d.copy_s},
                            {"gb_per_s", d.gb_per_s}});
  j["decode"] = {{"where", decode.where},
                 {"note", decode.note},
                 {"jpeg_engines", decode.jpeg_engines},
                 {"engines_ready_s", decode.engines_ready_s},
                 {"gpu_able", decode.gpu_able},
                 {"gpu", decode.gpu},
                 {"cpu", decode.cpu},
                 {"gpu_fallbacks", decode.gpu_fallbacks},
                 {"gpu_images_per_s", decode.gpu_images_per_s},
                 {"cpu_images_per_s", decode.cpu_images_per_s},
                 {"gpu_share", decode.gpu_share}};
  j["batches"] = batches;
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : batch_records)
    recs.push_back({{"index", r.index}, {"samples", r.samples}, {"checksum", fmt::format("{:016x}", r.checksum)}});
  j["batch_records"] = recs;
  return j.dump(indent);
}

}  // namespace imgpipe
