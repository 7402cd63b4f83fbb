// imgpipe command line: run a pipeline from a config, or validate a config.
// Exit codes: 0 success (bad inputs skipped and reported count as success under
// on_error: skip, as long as one sample was delivered), 1 run failed (also:
// inputs given and none delivered, Report::nothing_delivered), 2 usage or config error (found before any
// work: the config, the inputs, the --report path), 130 interrupted.
// Messages go to stderr as "imgpipe: ..."; stdout carries only what was asked
// for (validate's verdict, --report -, bench-memory's figures).
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>
#include <spdlog/logger.h>
#include <yaml-cpp/yaml.h>

#include "memory/tools/bench_memory.hpp"
#include "core/diagnostics.hpp"
#include "core/fault.hpp"
#include "core/spelling.hpp"
#include "imgpipe/log.hpp"
#include "imgpipe/pipeline.hpp"

namespace {

// The Pipeline that a signal stops; set and cleared under the mutex, so the
// watcher never stops one that is being destroyed.
std::mutex g_pipeline_mutex;
imgpipe::Pipeline* g_pipeline = nullptr;
std::atomic<int> g_signals{0};

// SIGINT and SIGTERM are taken by one thread in sigwait() rather than by a
// handler: a handler runs on whichever thread the kernel picks, and a thread
// parked in a raw futex (oneTBB's idle workers, a stage waiting for a
// stalled stream) may not run it for a long time (under ThreadSanitizer,
// never). main() blocks the signals before it does anything else, so every
// thread started later inherits the mask and only the watcher receives them.
// A thread that a library started before main() (or that unblocked the
// signals itself) would still be picked by the kernel, and the default action
// would kill the process with no report (some machines do start such
// threads: docs/benchmarks.md#signals-on-library-threads): a handler is
// installed for that case, and it only passes the signal on to the watcher
// (pthread_kill is async-signal-safe), where it stays pending until sigwait()
// takes it. The first signal asks the run to stop (the in-flight frames
// finish, the report is printed); the second leaves at once, and so does the
// first while no pipeline runs (validate, bench-memory). SIGUSR2 from the
// destructor ends the watcher.
std::atomic<bool> g_stoppable{false};  // run(): a signal asks the Pipeline to stop
pthread_t g_watcher{};

extern "C" void forward_to_watcher(int sig) {
  const int saved = errno;
  pthread_kill(g_watcher, sig);
  errno = saved;
}

class SignalWatcher {
 public:
  SignalWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    thread_ = std::thread([this] {
      for (;;) {
        int sig = 0;
        if (sigwait(&set_, &sig) != 0 || sig == SIGUSR2) return;
        if (++g_signals > 1 || !g_stoppable) _exit(130);  // second Ctrl-C, or nothing to stop: leave now
        const std::lock_guard lock(g_pipeline_mutex);
        if (g_pipeline) g_pipeline->request_stop();
      }
    });
    g_watcher = thread_.native_handle();
    struct sigaction sa {};
    sa.sa_handler = forward_to_watcher;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &sa, &old_actions_[sig == SIGINT ? 0 : 1]);
  }
  ~SignalWatcher() {
    sigaction(SIGINT, &old_actions_[0], nullptr);
    sigaction(SIGTERM, &old_actions_[1], nullptr);
    pthread_kill(thread_.native_handle(), SIGUSR2);
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  sigset_t set_{}, old_{};
  struct sigaction old_actions_[2] {};
  std::thread thread_;
};


constexpr const char* kLogLevels[] = {"error", "warn", "info", "debug"};
constexpr spdlog::level::level_enum kSpdlogLevels[] = {spdlog::level::err, spdlog::level::warn,
                                                       spdlog::level::info, spdlog::level::debug};

// What the command line asked for.
struct Args {
  std::string config_path, report_path, device, validate_path;
  std::string log_level;  // empty: warn, or error with --quiet
  std::vector<std::string> inputs;
  bool quiet = false;
  bool progress = false;          // --progress: plain progress lines, also on a terminal
  double progress_interval = 5;   // --progress-interval
  std::optional<std::uint64_t> epoch;  // --epoch
  std::vector<std::string> sets;       // --set KEY=VALUE, in order
  bool overwrite = false;              // --overwrite: sink.overwrite
  std::string report_html_path;   // --report-html
  std::string command_line;       // argv, shell-quoted: the report's context
  imgpipe::BenchMemoryOptions bench;
  std::string bench_sizes;
  CLI::App* validate = nullptr;
  CLI::App* bench_memory = nullptr;
};

// `node` with the value at dotted `key` set to `value`, sections made as needed.
void set_key(YAML::Node node, const std::string& key, const YAML::Node& value) {
  const std::size_t dot = key.find('.');
  if (dot == std::string::npos) {
    node[key] = value;
    return;
  }
  const std::string section = key.substr(0, dot);
  if (!node[section] || !node[section].IsMap()) node[section] = YAML::Node(YAML::NodeType::Map);
  set_key(node[section], key.substr(dot + 1), value);
}

// The config: the file (its own errors name its lines), or the defaults
// without one; then each --set KEY=VALUE over it (a YAML value, as the file
// would give it: an error names the --set), the --input paths and
// --overwrite. Throws ConfigError.
imgpipe::Config load_config(const std::string& path, const Args& a) {
  using imgpipe::ConfigError;
  imgpipe::Config c = path.empty() ? imgpipe::Config{} : imgpipe::Config::from_yaml_file(path);
  if (!a.sets.empty()) {
    YAML::Node text(YAML::NodeType::Map);
    if (!path.empty()) {
      try {
        text = YAML::LoadFile(path);
      } catch (const YAML::Exception& e) {
        throw ConfigError("", 0, "YAML error: " + e.msg);
      }
      if (!text.IsMap()) text = YAML::Node(YAML::NodeType::Map);
    }
    std::vector<std::pair<std::string, std::string>> given;  // key, "--set KEY=VALUE"
    for (const std::string& kv : a.sets) {
      const std::size_t eq = kv.find('=');
      const std::string key = kv.substr(0, eq);
      if (eq == std::string::npos || key.empty() || key.front() == '.' || key.back() == '.' ||
          key.find("..") != std::string::npos)
        throw ConfigError("", 0, "--set " + kv + ": expected KEY=VALUE with a dotted key, e.g. --set batch.size=64");
      YAML::Node value;
      try {
        value = YAML::Load(kv.substr(eq + 1));
      } catch (const YAML::Exception& e) {
        throw ConfigError(key, 0, "malformed YAML value in --set " + kv + ": " + e.msg);
      }
      set_key(text, key, value);
      given.emplace_back(key, "--set " + kv);
    }
    YAML::Emitter out;
    out << text;
    try {
      c = imgpipe::Config::from_yaml_string(out.c_str());
    } catch (const ConfigError& e) {  // its lines are the merged text's: each issue names where it came from
      std::vector<ConfigError::Issue> issues = e.issues();
      for (ConfigError::Issue& i : issues) {
        i.line = 0;
        std::string from;
        for (const auto& [key, flag] : given)
          if (i.key == key || i.key.rfind(key + ".", 0) == 0 || key.rfind(i.key + ".", 0) == 0) from = flag;
        if (!from.empty()) i.reason += " [in " + from + "]";
      }
      throw ConfigError(std::move(issues));
    }
  }
  if (!a.inputs.empty()) c.input.paths = a.inputs;
  if (a.overwrite) c.sink.overwrite = true;
  c.validate();
  return c;
}

constexpr const char* kExitCodes =
    "Exit codes: 0 success (bad inputs skipped and reported under input.on_error: skip count as success\n"
    "            when one sample was delivered), 1 the run failed (also: inputs given and none delivered),\n"
    "            2 usage or config error (nothing ran), 130 interrupted (SIGINT/SIGTERM).";

// Every flag of `app` and its subcommands ("--report", "-c"), and the subcommands' names.
void collect_names(const CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
    collect_names(*sub, names);
  }
}

// "imgpipe: --reprot: did you mean --report?" for each unknown flag near a known one.
// "imgpipe: valdate: did you mean validate?" for a word near a subcommand;
// "imgpipe: --x is not an option of validate" for a flag that another
// command has.
std::string did_you_mean(const CLI::App& app) {
  std::vector<std::string> names, own, commands;
  const CLI::App* root = &app;
  while (root->get_parent() != nullptr) root = root->get_parent();
  collect_names(*root, names);
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) own.push_back("--" + l);
    for (const auto& s : o->get_snames()) own.push_back("-" + s);
  }
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  std::string text;
  bool first_word = true;
  for (const std::string& arg : app.remaining(true)) {
    if (arg.size() < 2 || arg[0] != '-') {
      if (first_word && !commands.empty())
        if (const std::string near = imgpipe::nearest_name(arg, commands); !near.empty() && near != arg)
          text += "imgpipe: " + arg + ": did you mean " + near + "?\n";
      first_word = false;
      continue;
    }
    const std::string flag = arg.substr(0, arg.find('='));
    const std::string near = imgpipe::nearest_name(flag, own.empty() ? names : own);
    if (!near.empty() && near != flag) {
      text += "imgpipe: " + flag + ": did you mean " + near + "?\n";
    } else if (std::find(names.begin(), names.end(), flag) != names.end() && app.get_parent() != nullptr) {
      text += "imgpipe: " + flag + " is not an option of " + app.get_name() + "\n";
    } else if (const std::string any = imgpipe::nearest_name(flag, names); !any.empty() && any != flag) {
      text += "imgpipe: " + flag + ": did you mean " + any + "?\n";
    }
  }
  return text;
}

void add_options(CLI::App& app, Args& a) {
  app.set_version_flag("--version", std::string("imgpipe ") + imgpipe::version());
  app.add_option("--config,-c", a.config_path, "pipeline config (YAML)")->check(CLI::ExistingFile);
  app.add_option("--input,-i", a.inputs,
                 "input file, folder, glob, stream URL (rtsp://, http://, file://, ...) or camera (camera:N) "
                 "(repeatable; replaces input.paths; relative to the current directory)");
  app.add_option("--report", a.report_path, "write the run report as JSON to this file ('-': to stdout)");
  app.add_option("--device", a.device,
                 "overrides devices: auto (the first GPU, else the host backend) | cpu (the host backend) | "
                 "all (every GPU) | a GPU ordinal such as 0 (several GPUs: devices: [0, 1] in the config)");
  app.add_option("--set", a.sets,
                 "set one config key over the file (or the defaults): --set KEY=VALUE, a dotted key and a YAML "
                 "value, e.g. --set batch.size=64 --set 'transform.resize={width: 224, height: 224}' (repeatable; "
                 "checked as the file is)");
  app.add_flag("--overwrite", a.overwrite,
               "sink: dump: replace an earlier run's batch files and manifest in sink.dir (sink.overwrite)");
  app.add_option("--epoch", a.epoch,
                 "run this epoch of the config (0, 1, ...): input.shuffle's order and the random crops and flips "
                 "a training loop's epoch E gets (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-level", a.log_level,
                 "messages shown: error | warn | info | debug (default warn; error with --quiet)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kLogLevels), std::end(kLogLevels))));
  app.add_flag("--quiet,-q", a.quiet,
               "nothing but errors: no progress line, no report table, no warnings (unless --log-level says "
               "otherwise); native libraries' messages (FFmpeg, oneTBB, libjpeg) go through the same log");
  app.footer(kExitCodes);
  // Parse errors carry the prefix of every other message.
  app.failure_message([](const CLI::App* parsed, const CLI::Error& e) {
    // An unknown word near a known one: the suggestion alone, not CLI11's list first.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
      if (const std::string near = did_you_mean(*parsed); !near.empty())
        return near + "Run with --help for more information.\n";
    return std::string("imgpipe: ") + e.what() + "\nRun with --help for more information.\n";
  });
  // The run report and progress (docs/report.md, "The run report").
  app.add_option("--report-html", a.report_html_path, "write the run report as one self-contained HTML page");
  app.add_flag("--progress", a.progress,
               "plain progress lines on stderr (the default when stderr is not a terminal), also on a terminal");
  app.add_option("--progress-interval", a.progress_interval, "seconds between plain progress lines (default 5)")
      ->check(CLI::Range(0.05, 86400.0));

  a.validate =
      app.add_subcommand("validate", "check a config and its inputs, count the inputs and exit (runs nothing)");
  a.validate->add_option("file,--config,-c", a.validate_path, "pipeline config (YAML; or --config FILE before validate)")
      ->check(CLI::ExistingFile);
  a.validate->add_option("--input,-i", a.inputs, "input paths (replace input.paths)");
  a.validate->add_option("--set", a.sets, "set one config key: --set KEY=VALUE (repeatable)");
  a.validate->add_option("--device", a.device, "checks a --device selection as a run would take it");

  // bench-memory: every host memory kind measured on this machine (memory/tools).
  a.bench_memory = app.add_subcommand("bench-memory", "measure every host memory kind on this machine");
  a.bench_memory->add_option("--json", a.bench.json_path, "write the results (the calibration object) to this JSON file");
  a.bench_memory->add_flag("--workloads", a.bench.workloads,
                           "also compare the policy's kinds with default pinned on 3 workloads");
  a.bench_memory->add_option("--sizes", a.bench_sizes, "copy sizes, e.g. 1M,16M,256M (binary units; a bare number is MiB)");
  a.bench_memory->add_option("--iterations", a.bench.iterations, "runs per figure (medians)")
      ->check(CLI::PositiveNumber);
}

// imgpipe's logger (the library's own, not spdlog's default) at the level asked for.
void configure_logging(const Args& a) {
  const auto log = imgpipe::logger();
  log->set_pattern("imgpipe: %^%l%$: %v");
  const std::string level = !a.log_level.empty() ? a.log_level : a.quiet ? "error" : "warn";
  for (std::size_t i = 0; i < std::size(kLogLevels); ++i)
    if (level == kLogLevels[i]) log->set_level(kSpdlogLevels[i]);
}

// A config error as the user wrote it: a key the command line overrides is
// named by its option; one found after loading (the inputs) gets the file
// name that the loader's own errors carry.
// Every issue of the error on its own line.
void print_config_error(const imgpipe::ConfigError& e, const Args& a, const std::string& config_path) {
  for (const imgpipe::ConfigError::Issue& i : e.issues()) {
    const bool names_file = i.reason.find(" [in ") != std::string::npos;
    if (!a.device.empty() && i.key == "devices") std::cerr << "imgpipe: --device: " << i.reason << "\n";
    else if (!a.inputs.empty() && i.key == "input.paths") std::cerr << "imgpipe: --input: " << i.reason << "\n";
    else if (names_file) std::cerr << "imgpipe: " << imgpipe::ConfigError::message(i) << "\n";
    else if (config_path.empty()) std::cerr << "imgpipe: " << imgpipe::ConfigError::message(i) << "\n";
    else std::cerr << "imgpipe: " << imgpipe::ConfigError::message(i) << " [in " << config_path << "]\n";
  }
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

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "1494 inputs: 1400 images, 94 videos[, 1 stream][, 2 that fail already (the first: 'x': reason)]"
std::string describe(const imgpipe::InputCounts& n) {
  std::string s = plural(n.total(), "input", "inputs") + ": " + plural(n.images, "image", "images") + ", " +
                  plural(n.videos, "video", "videos");
  if (n.streams > 0) s += ", " + plural(n.streams, "stream", "streams");
  if (!n.failures.empty())
    s += ", " + plural(n.failures.size(), "that fails", "that fail") + " already (the first: '" +
         n.failures.front().path + "': " + n.failures.front().reason + ")";
  return s;
}

int validate(const Args& a) {
  // `imgpipe validate FILE`, or the config named before it: `imgpipe --config FILE validate`.
  const std::string& path = a.validate_path.empty() ? a.config_path : a.validate_path;
  if (path.empty()) {
    std::cerr << "imgpipe: validate: name the config (imgpipe validate FILE)\n";
    return 2;
  }
  try {
    imgpipe::Config c = load_config(path, a);
    if (!a.device.empty()) c.devices = imgpipe::DeviceSelection::parse(a.device);
    const imgpipe::InputCounts n = imgpipe::count_inputs(c.input);
    std::cout << "config OK: " << path << " (" << describe(n) << ")\n";
    return 0;
  } catch (const imgpipe::ConfigError& e) {
    print_config_error(e, a, path);
    return 2;
  } catch (const imgpipe::Error& e) {
    std::cerr << "imgpipe: " << e.what() << "\n";
    return 2;
  }
}

// Empty when the report can be written to `path`, else why not (errno's
// words). Opens it for writing without truncating it, and removes a file the
// check itself created, so a run that then fails leaves nothing behind.
std::string report_unwritable(const std::string& path) {
  if (path == "-") return {};
  struct stat st {};
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) return std::strerror(EISDIR);
  if (existed && !S_ISREG(st.st_mode))  // a device or pipe: opening it could block
    return ::access(path.c_str(), W_OK) == 0 ? std::string() : std::strerror(errno);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (existed ? 0 : O_CREAT | O_EXCL), 0666);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
  return {};
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
  // Without --config the defaults run (docs/config.md), on the --input paths.
  if (a.config_path.empty() && a.inputs.empty()) {
    std::cerr << "imgpipe: nothing to run: give --input PATH (the defaults) or --config FILE "
                 "(try: imgpipe --config configs/pipeline.yaml)\n";
    return 2;
  }
  // Every output path is checked before the run: a report that cannot be
  // written is a usage error, not a run lost at its end.
  for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--report", &a.report_path},
                                   std::pair<const char*, const std::string*>{"--report-html", &a.report_html_path}}) {
    if (const std::string why = report_unwritable(*path); !path->empty() && !why.empty()) {
      std::cerr << "imgpipe: " << flag << ": cannot write '" << *path << "': " << why << "\n";
      return 2;
    }
  }
  try {
    imgpipe::fault::arm(imgpipe::Diagnostics::from_environment().fault);  // IMGPIPE_FAULT=stage:k, tests and drills
    pipeline.emplace(load_config(a.config_path, a));
    if (!a.device.empty()) opts.device = imgpipe::DeviceSelection::parse(a.device);
  } catch (const imgpipe::ConfigError& e) {
    print_config_error(e, a, a.config_path);
    return 2;
  } catch (const imgpipe::Error& e) {
    std::cerr << "imgpipe: " << e.what() << "\n";
    return 2;
  }
  opts.progress = progress_mode(a);
  opts.progress_interval_s = a.progress_interval;
  opts.epoch = a.epoch;
  return 0;
}

// The JSON report to a file, or to stdout for "-"; exit code 1 when it cannot be written.
int write_report(const imgpipe::Report& report, const std::string& path) {
  if (path == "-") {
    std::cout << report.to_json() << "\n" << std::flush;
    return std::cout ? 0 : 1;
  }
  std::ofstream out(path);
  out << report.to_json() << "\n";
  out.close();
  if (!out) {
    std::cerr << "imgpipe: cannot write report '" << path << "': " << std::strerror(errno) << "\n";
    return 1;
  }
  return 0;
}

int run(const Args& a) {
  imgpipe::RunOptions opts;
  std::optional<imgpipe::Pipeline> pipeline;
  g_stoppable = true;  // main()'s watcher now asks the Pipeline to stop
  if (const int rc = prepare(a, pipeline, opts)) return rc;
  struct Registered {  // the watcher's Pipeline until this scope ends, before `pipeline` goes
    explicit Registered(imgpipe::Pipeline& p) {
      const std::lock_guard lock(g_pipeline_mutex);
      g_pipeline = &p;
      if (g_signals) p.request_stop();  // a signal while the Pipeline was being made
    }
    ~Registered() {
      const std::lock_guard lock(g_pipeline_mutex);
      g_pipeline = nullptr;
    }
    Registered(const Registered&) = delete;
    Registered& operator=(const Registered&) = delete;
  } registered(*pipeline);
  imgpipe::Report report;
  try {
    report = pipeline->run({}, opts);
  } catch (const imgpipe::ConfigError& e) {  // found before any work: the inputs, a dump folder in use
    print_config_error(e, a, a.config_path);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "imgpipe: run failed: " << e.what() << "\n";
    return g_signals ? 130 : 1;
  }

  report.context.command_line = a.command_line;
  if (!a.quiet) report.print_table(std::cerr, a.report_path);
  if (!a.report_path.empty())
    if (const int rc = write_report(report, a.report_path)) return rc;
  if (!a.report_html_path.empty() && !write_file(a.report_html_path, report.to_html(), "HTML report")) return 1;
  if (report.interrupted || g_signals) return 130;
  if (report.nothing_delivered()) {
    std::cerr << "imgpipe: nothing delivered: " << plural(report.inputs.discovered, "input", "inputs") << ", "
              << report.inputs.failed << " failed, " << report.inputs.dropped << " dropped (batch.drop_last)\n";
    return 1;
  }
  return 0;
}

// `arg` as one shell word: as is when only safe characters, else in single quotes.
std::string shell_word(std::string_view arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                          std::string_view::npos)
    return std::string(arg);
  std::string w = "'";
  for (const char c : arg) w += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return w + "'";
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else (threads started later inherit the blocked signals);
  // destroyed after run()'s Pipeline, which the watcher may be stopping.
  const SignalWatcher signals;
  CLI::App app{"imgpipe: images and videos to normalised tensor batches on the GPU"};
  Args a;
  for (int i = 0; i < argc; ++i) a.command_line += (i ? " " : "") + shell_word(argv[i]);
  add_options(app, a);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  configure_logging(a);
  if (*a.bench_memory) return bench_memory(a);
  if (*a.validate) return validate(a);
  return run(a);
}
