// A training loop's view: one Pipeline run once per epoch over the same
// inputs, as an application does (set_epoch(e) before each run, so that
// input.shuffle, random crops and flips draw epoch e's). Prints one JSON
// object per epoch (the run's end-to-end rate, its set-up, when the GPU JPEG
// decoder was ready, the routes) and one for the whole process, from main()
// to the last epoch's end, construction included. With input.video.clips
// the samples are clips: "images" and "images_per_s" count them (the
// report's delivered samples; "samples_unit" says "clips"), and "video"
// gives the files and frames each route decoded and delivered, whose ratio
// is the decode amplification.
//
//   imgpipe_bench_epochs --config C [--input PATH]... [--epochs 3] [--where auto|cpu|gpu] [--verify markers|full]
//                        [--gpu-batch N] [--json FILE]
#include <chrono>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <spdlog/logger.h>

#include "imgpipe/log.hpp"
#include "imgpipe/pipeline.hpp"

namespace {

const auto t_main = std::chrono::steady_clock::now();

double since_main() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_main).count(); }

// Each stage's own work and its waits, in thread-seconds.
nlohmann::json stages_json(const imgpipe::Report& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const imgpipe::StageReport& s : r.stages) j[s.name] = {{"work_s", s.work_s}, {"wait_s", s.wait_s}, {"idle_s", s.idle_s}};
  return j;
}

// Video files by route, and frames decoded against delivered (the decode amplification).
nlohmann::json video_json(const imgpipe::Report::Video& v) {
  using V = imgpipe::Report::Video;
  nlohmann::json reasons = nlohmann::json::object();
  for (const auto& [why, n] : v.cpu_reasons) reasons[why] = n;
  return {{"cpu_files", v.cpu_files},
          {"nvdec_files", v.nvdec_files},
          {"cpu_decoded", v.cpu_decoded},
          {"nvdec_decoded", v.nvdec_decoded},
          {"cpu_delivered", v.cpu_delivered},
          {"nvdec_delivered", v.nvdec_delivered},
          {"cpu_amplification", V::amplification(v.cpu_decoded, v.cpu_delivered)},
          {"nvdec_amplification", V::amplification(v.nvdec_decoded, v.nvdec_delivered)},
          {"amplification", V::amplification(v.cpu_decoded + v.nvdec_decoded, v.cpu_delivered + v.nvdec_delivered)},
          {"clips", v.clips},
          {"short_skipped", v.short_skipped},
          {"short_padded", v.short_padded},
          {"cpu_reasons", reasons}};
}

nlohmann::json epoch_json(int epoch, const imgpipe::Report& r) {
  return {{"epoch", epoch},
          {"pipeline_epoch", r.epoch},
          {"classes", r.classes.size()},
          {"images", r.inputs.delivered},
          {"failed", r.inputs.failed},
          {"images_per_s", r.images_per_s},
          {"samples_unit", r.samples.unit},
          {"clips", r.samples.clips},
          {"frames", r.samples.frames},
          {"wall_s", r.wall_s},
          {"setup_s", r.setup_s},
          {"after_setup_images_per_s", r.pipeline_s > 0 ? r.inputs.delivered / r.pipeline_s : 0.0},
          {"decode_where", r.decode.where},
          {"gpu_images", r.decode.gpu},
          {"verify", r.decode.verify},
          {"entropy_checked", r.decode.entropy_checked},
          {"entropy_to_cpu", r.decode.entropy_to_cpu},
          {"cpu_images", r.decode.cpu},
          {"gpu_images_per_s", r.decode.gpu_images_per_s},
          {"gpu_calls", r.decode.gpu_calls},
          {"pipeline_s", r.pipeline_s},
          {"gpu_call_s", r.decode.gpu_call_s},
          {"gpu_submit_s", r.decode.gpu_submit_s},
          {"gpu_previous_wait_s", r.decode.gpu_previous_wait_s},
          {"gpu_input_wait_s", r.decode.gpu_input_wait_s},
          {"gpu_initializations", r.decode.gpu_initializations},
          {"gpu_initialize_s", r.decode.gpu_initialize_s},
          {"engines_ready_s", r.decode.engines_ready_s},
          {"gpu_share_start", r.decode.gpu_share.empty() ? 0.0 : r.decode.gpu_share.front()},
          {"gpu_share_end", r.decode.gpu_share.empty() ? 0.0 : r.decode.gpu_share.back()},
          {"video", video_json(r.video)},
          {"stages", stages_json(r)}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"imgpipe_bench_epochs: one Pipeline, one run per epoch"};
  std::string config, json_path, where, verify, log_level;
  std::vector<std::string> inputs;
  int epochs = 3;
  int gpu_batch = -1;
  app.add_option("--config", config, "pipeline config (YAML)")->required()->check(CLI::ExistingFile);
  app.add_option("--input", inputs, "inputs (replace input.paths)");
  app.add_option("--epochs", epochs, "runs of the same Pipeline")->check(CLI::PositiveNumber);
  app.add_option("--where", where, "decode.where (auto | cpu | gpu); default: the config's");
  app.add_option("--verify", verify, "decode.verify (markers | full); default: the config's")
      ->check(CLI::IsMember({"markers", "full"}));
  app.add_option("--gpu-batch", gpu_batch, "decode.gpu_batch (JPEGs per engine call; 0 = auto); default: the config's")
      ->check(CLI::Range(0, 4096));
  app.add_option("--json", json_path, "write every epoch and the totals to this file");
  app.add_option("--log-level", log_level, "the library's log level (debug: each run's set-up steps with their seconds)")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  CLI11_PARSE(app, argc, argv);
  if (!log_level.empty()) imgpipe::logger()->set_level(spdlog::level::from_str(log_level));
  try {
    imgpipe::Config cfg = imgpipe::Config::from_yaml_file(config);
    if (!inputs.empty()) cfg.input.paths = inputs;
    if (!where.empty()) cfg.decode.where = where == "cpu" ? imgpipe::Where::cpu
                                           : where == "gpu" ? imgpipe::Where::gpu
                                                            : imgpipe::Where::automatic;
    if (gpu_batch >= 0) cfg.decode.gpu_batch = gpu_batch;
    if (!verify.empty()) cfg.decode.verify = verify == "full" ? imgpipe::Verify::full : imgpipe::Verify::markers;
    const double t_construct = since_main();
    imgpipe::Pipeline pipeline(cfg);
    nlohmann::json out = {{"epochs", nlohmann::json::array()}};
    std::uint64_t images = 0;
    for (int e = 1; e <= epochs; ++e) {
      pipeline.set_epoch(static_cast<std::uint64_t>(e - 1));  // as a training loop's sampler.set_epoch
      const imgpipe::Report r = pipeline.run();
      images += r.inputs.delivered;
      out["epochs"].push_back(epoch_json(e, r));
      std::cout << out["epochs"].back().dump() << std::endl;
    }
    const double total = since_main();
    out["process"] = {{"images", images},
                      {"seconds_from_main", total},
                      {"construct_at_s", t_construct},
                      {"images_per_s_from_main", images / total}};
    std::cout << out["process"].dump() << std::endl;
    if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "imgpipe_bench_epochs: " << e.what() << "\n";
    return 1;
  }
}
