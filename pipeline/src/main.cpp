// imgpipe command line: run a pipeline from a config, or validate a config.
// Exit codes: 0 success (bad inputs skipped and reported count as success under
// on_error: skip), 1 run failed, 2 usage or config error, 130 interrupted.
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "memory/tools/bench_memory.hpp"
#include "core/fault.hpp"
#include "imgpipe/pipeline.hpp"

namespace {

std::atomic<imgpipe::Pipeline*> g_pipeline{nullptr};
volatile std::sig_atomic_t g_signals = 0;

extern "C" void on_signal(int) {
  g_signals = g_signals + 1;
  if (g_signals > 1) _exit(130);  // second Ctrl-C: leave now
  if (imgpipe::Pipeline* p = g_pipeline.load()) p->request_stop();
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

imgpipe::Config load_config(const std::string& path, const std::vector<std::string>& inputs) {
  imgpipe::Config c = imgpipe::Config::from_yaml_file(path);
  if (!inputs.empty()) c.input.paths = inputs;
  c.validate();
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("imgpipe");
  logger->set_pattern("imgpipe: %^%l%$: %v");
  spdlog::set_default_logger(logger);

  CLI::App app{"imgpipe: images and videos to normalised tensor batches on the GPU"};
  app.set_version_flag("--version", std::string("imgpipe ") + imgpipe::version());
  std::string config_path, report_path, device;
  std::vector<std::string> inputs;
  bool quiet = false;
  app.add_option("--config,-c", config_path, "pipeline config (YAML)")->check(CLI::ExistingFile);
  app.add_option("--input,-i", inputs, "input file, folder or glob (repeatable; replaces input.paths)");
  app.add_option("--report", report_path, "write the run report as JSON to this file");
  app.add_option("--device", device, "auto | cpu | GPU ordinal (overrides devices:)");
  app.add_flag("--quiet,-q", quiet, "no progress line and no report table");

  CLI::App* validate = app.add_subcommand("validate", "check a config and exit (runs nothing)");
  std::string validate_path;
  validate->add_option("--config,-c", validate_path, "pipeline config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  validate->add_option("--input,-i", inputs, "input paths (replace input.paths)");

  // ---- bench-memory: every host memory kind measured on this machine (memory layer)
  CLI::App* bench = app.add_subcommand("bench-memory", "measure every host memory kind on this machine");
  imgpipe::BenchMemoryOptions bench_opts;
  std::string bench_sizes;
  bench->add_option("--json", bench_opts.json_path, "write the results (the calibration object) to this JSON file");
  bench->add_flag("--workloads", bench_opts.workloads, "also compare the policy's kinds with default pinned on 3 workloads");
  bench->add_option("--sizes", bench_sizes, "copy sizes, e.g. 1M,16M,256M (binary units; a bare number is MiB)");
  bench->add_option("--iterations", bench_opts.iterations, "runs per figure (medians)")->check(CLI::PositiveNumber);
  // ---- end bench-memory

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  if (*bench) {  // bench-memory
    try {
      if (!bench_sizes.empty()) bench_opts.sizes = imgpipe::parse_byte_sizes(bench_sizes);
    } catch (const std::invalid_argument& e) {
      std::cerr << "imgpipe: --sizes: " << e.what() << "\n";
      return 2;
    }
    return imgpipe::run_bench_memory(bench_opts, std::cout);
  }

  if (*validate) {
    try {
      const imgpipe::Config c = load_config(validate_path, inputs);
      std::cout << "config OK: " << validate_path << "\n";
      return 0;
    } catch (const imgpipe::Error& e) {
      std::cerr << "imgpipe: " << e.what() << "\n";
      return 2;
    }
  }

  if (config_path.empty()) {
    std::cerr << "imgpipe: --config is required (try: imgpipe --config configs/pipeline.yaml)\n";
    return 2;
  }

  try {
    imgpipe::fault::from_environment();  // IMGPIPE_FAULT=stage:k, for tests and drills
  } catch (const imgpipe::Error& e) {
    std::cerr << "imgpipe: " << e.what() << "\n";
    return 2;
  }
  imgpipe::RunOptions opts;
  std::optional<imgpipe::Pipeline> pipeline;
  try {
    pipeline.emplace(load_config(config_path, inputs));
    if (!device.empty()) opts.device = imgpipe::DeviceSelection::parse(device);
  } catch (const imgpipe::ConfigError& e) {
    std::cerr << "imgpipe: " << (device.empty() || e.key() != "devices" ? e.what() : "--device: " + e.reason())
              << "\n";
    return 2;
  } catch (const imgpipe::Error& e) {
    std::cerr << "imgpipe: " << e.what() << "\n";
    return 2;
  }
  if (quiet) spdlog::set_level(spdlog::level::err);
  opts.progress = !quiet && ::isatty(STDERR_FILENO);

  g_pipeline.store(&*pipeline);
  install_signal_handlers();
  imgpipe::Report report;
  try {
    report = pipeline->run({}, opts);
  } catch (const std::exception& e) {
    g_pipeline.store(nullptr);
    std::cerr << "imgpipe: run failed: " << e.what() << "\n";
    return g_signals ? 130 : 1;
  }
  g_pipeline.store(nullptr);

  if (!quiet) report.print_table(std::cerr);
  if (!report_path.empty()) {
    std::ofstream out(report_path);
    out << report.to_json() << "\n";
    if (!out) {
      std::cerr << "imgpipe: cannot write report '" << report_path << "'\n";
      return 1;
    }
  }
  if (report.interrupted || g_signals) return 130;
  return 0;
}
