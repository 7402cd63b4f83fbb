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

// What the command line asked for.
struct Args {
  std::string config_path, report_path, device, validate_path;
  std::vector<std::string> inputs;
  bool quiet = false;
  bool progress = false;          // --progress: plain progress lines, also on a terminal
  double progress_interval = 5;   // --progress-interval
  std::string report_html_path;   // --report-html
  imgpipe::BenchMemoryOptions bench;
  std::string bench_sizes;
  CLI::App* validate = nullptr;
  CLI::App* bench_memory = nullptr;
};

void add_options(CLI::App& app, Args& a) {
  app.set_version_flag("--version", std::string("imgpipe ") + imgpipe::version());
  app.add_option("--config,-c", a.config_path, "pipeline config (YAML)")->check(CLI::ExistingFile);
  app.add_option("--input,-i", a.inputs, "input file, folder or glob (repeatable; replaces input.paths)");
  app.add_option("--report", a.report_path, "write the run report as JSON to this file");
  app.add_option("--device", a.device, "auto | cpu | GPU ordinal (overrides devices:)");
  app.add_flag("--quiet,-q", a.quiet, "no progress line and no report table");
  // The run report and progress (README: "The run report").
  app.add_option("--report-html", a.report_html_path, "write the run report as one self-contained HTML page");
  app.add_flag("--progress", a.progress,
               "plain progress lines on stderr (the default when stderr is not a terminal), also on a terminal");
  app.add_option("--progress-interval", a.progress_interval, "seconds between plain progress lines (default 5)")
      ->check(CLI::Range(0.05, 86400.0));

  a.validate = app.add_subcommand("validate", "check a config and exit (runs nothing)");
  a.validate->add_option("--config,-c", a.validate_path, "pipeline config (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  a.validate->add_option("--input,-i", a.inputs, "input paths (replace input.paths)");

  // bench-memory: every host memory kind measured on this machine (memory/tools).
  a.bench_memory = app.add_subcommand("bench-memory", "measure every host memory kind on this machine");
  a.bench_memory->add_option("--json", a.bench.json_path, "write the results (the calibration object) to this JSON file");
  a.bench_memory->add_flag("--workloads", a.bench.workloads,
                           "also compare the policy's kinds with default pinned on 3 workloads");
  a.bench_memory->add_option("--sizes", a.bench_sizes, "copy sizes, e.g. 1M,16M,256M (binary units; a bare number is MiB)");
  a.bench_memory->add_option("--iterations", a.bench.iterations, "runs per figure (medians)")
      ->check(CLI::PositiveNumber);
}

int bench_memory(Args& a) {
  try {
    if (!a.bench_sizes.empty()) a.bench.sizes = imgpipe::parse_byte_sizes(a.bench_sizes);
  } catch (const std::invalid_argument& e) {
    std::cerr << "imgpipe: --sizes: " << e.what() << "\n";
    return 2;
  }
  return imgpipe::run_bench_memory(a.bench, std::cout);
}

int validate(const Args& a) {
  try {
    const imgpipe::Config c = load_config(a.validate_path, a.inputs);
    std::cout << "config OK: " << a.validate_path << "\n";
    return 0;
  } catch (const imgpipe::Error& e) {
    std::cerr << "imgpipe: " << e.what() << "\n";
    return 2;
  }
}

// --quiet: none; --progress: plain lines; else redrawn on a terminal, plain lines elsewhere (logs).
imgpipe::RunOptions::Progress progress_mode(const Args& a) {
  using P = imgpipe::RunOptions::Progress;
  if (a.quiet) return P::off;
  return a.progress || !::isatty(STDERR_FILENO) ? P::lines : P::redraw;
}

// Writes `text` to `path`; false (with a message) when it cannot.
bool write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream out(path);
  out << text;
  if (!out) std::cerr << "imgpipe: cannot write " << what << " '" << path << "'\n";
  return static_cast<bool>(out);
}

// The pipeline and its run options from the arguments; exit code 2 on a usage or config error.
int prepare(const Args& a, std::optional<imgpipe::Pipeline>& pipeline, imgpipe::RunOptions& opts) {
  if (a.config_path.empty()) {
    std::cerr << "imgpipe: --config is required (try: imgpipe --config configs/pipeline.yaml)\n";
    return 2;
  }
  try {
    imgpipe::fault::from_environment();  // IMGPIPE_FAULT=stage:k, for tests and drills
    pipeline.emplace(load_config(a.config_path, a.inputs));
    if (!a.device.empty()) opts.device = imgpipe::DeviceSelection::parse(a.device);
  } catch (const imgpipe::ConfigError& e) {
    std::cerr << "imgpipe: " << (a.device.empty() || e.key() != "devices" ? e.what() : "--device: " + e.reason())
              << "\n";
    return 2;
  } catch (const imgpipe::Error& e) {
    std::cerr << "imgpipe: " << e.what() << "\n";
    return 2;
  }
  opts.progress = progress_mode(a);
  opts.progress_interval_s = a.progress_interval;
  return 0;
}

int run(const Args& a) {
  imgpipe::RunOptions opts;
  std::optional<imgpipe::Pipeline> pipeline;
  if (const int rc = prepare(a, pipeline, opts)) return rc;
  if (a.quiet) spdlog::set_level(spdlog::level::err);
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

  if (!a.quiet) report.print_table(std::cerr);
  if (!a.report_path.empty()) {
    std::ofstream out(a.report_path);
    out << report.to_json() << "\n";
    if (!out) {
      std::cerr << "imgpipe: cannot write report '" << a.report_path << "'\n";
      return 1;
    }
  }
  if (!a.report_html_path.empty() && !write_file(a.report_html_path, report.to_html(), "HTML report")) return 1;
  return report.interrupted || g_signals ? 130 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("imgpipe");
  logger->set_pattern("imgpipe: %^%l%$: %v");
  spdlog::set_default_logger(logger);

  CLI::App app{"imgpipe: images and videos to normalised tensor batches on the GPU"};
  Args a;
  add_options(app, a);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (*a.bench_memory) return bench_memory(a);
  if (*a.validate) return validate(a);
  return run(a);
}
