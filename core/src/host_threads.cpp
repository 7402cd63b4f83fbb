#include "core/host_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "imgpipe/error.hpp"

namespace imgpipe::host {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

ThreadTuning read_thread_tuning() {
  ThreadTuning t;
  if (const char* v = env("IMGPIPE_WORKER_NICE")) {
    const std::string_view s(v);
    if (std::from_chars(s.data(), s.data() + s.size(), t.worker_nice).ec != std::errc() || t.worker_nice < 0 ||
        t.worker_nice > 19)
      throw Error("IMGPIPE_WORKER_NICE='" + std::string(s) + "': expected a nice value 0..19");
  }
  if (const char* v = env("IMGPIPE_ENGINE_CPU")) {
    const std::string_view s(v);
    if (s == "reserve") t.reserve_engine_cpu = true;
    else if (s != "shared") throw Error("IMGPIPE_ENGINE_CPU='" + std::string(s) + "': expected reserve or shared");
  }
  if (const char* v = env("IMGPIPE_CUDA_SCHEDULE")) {
    const std::string_view s(v);
    if (s == "auto") t.cuda_schedule = 0;
    else if (s == "spin") t.cuda_schedule = 1;
    else if (s == "yield") t.cuda_schedule = 2;
    else if (s == "blocking") t.cuda_schedule = 4;
    else throw Error("IMGPIPE_CUDA_SCHEDULE='" + std::string(s) + "': expected auto, spin, yield or blocking");
  }
  if (const char* v = env("IMGPIPE_TRACE_CALLS")) t.trace_calls = v;
  if (const char* v = env("IMGPIPE_ROUTE")) {
    const std::string_view s(v);
    int n = 2;
    if (s.starts_with("early:") &&
        (std::from_chars(s.data() + 6, s.data() + s.size(), n).ec != std::errc() || n < 1 || n > 6))
      throw Error("IMGPIPE_ROUTE='" + std::string(s) + "': expected early:N with N 1..6");
    if (s == "early" || s.starts_with("early:")) t.early_route = n;
    else if (s != "spread") throw Error("IMGPIPE_ROUTE='" + std::string(s) + "': expected early or spread");
  }
  if (const char* v = env("IMGPIPE_CALLS_AHEAD")) {
    const std::string_view s(v);
    if (std::from_chars(s.data(), s.data() + s.size(), t.calls_ahead).ec != std::errc() || t.calls_ahead < 1 ||
        t.calls_ahead > 8)
      throw Error("IMGPIPE_CALLS_AHEAD='" + std::string(s) + "': expected 1..8");
  }
  if (const char* v = env("IMGPIPE_GPU_SHARE")) {
    char* end = nullptr;
    t.fixed_share = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(t.fixed_share >= 0 && t.fixed_share <= 1))
      throw Error(std::string("IMGPIPE_GPU_SHARE='") + v + "': expected a share 0..1");
  }
  return t;
}

namespace {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}
std::vector<int> parse_cpu_list(const std::string& s) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < s.size()) {
    int a = 0, b = 0;
    auto r = std::from_chars(s.data() + i, s.data() + s.size(), a);
    if (r.ec != std::errc()) break;
    b = a;
    const char* p = r.ptr;
    if (p < s.data() + s.size() && *p == '-') {
      r = std::from_chars(p + 1, s.data() + s.size(), b);
      if (r.ec != std::errc()) break;
      p = r.ptr;
    }
    for (int c = a; c <= b && c - a < 4096; ++c) out.push_back(c);
    i = static_cast<std::size_t>(p - s.data());
    if (i < s.size() && s[i] == ',') ++i;
    else break;
  }
  return out;
}

}  // namespace

const ThreadTuning& thread_tuning() {
  static const ThreadTuning t = read_thread_tuning();
  return t;
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> core_of(int cpu) {
  std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
  std::string line;
  std::vector<int> out;
  if (f && std::getline(f, line)) out = parse_cpu_list(line);
  if (std::find(out.begin(), out.end(), cpu) == out.end()) out = {cpu};
  return out;
}

std::vector<int> engine_cpus(int k) {
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> taken;
  std::vector<int> mine;
  int cores = 0;
  for (auto it = allowed.rbegin(); it != allowed.rend() && cores <= k; ++it) {
    if (std::find(taken.begin(), taken.end(), *it) != taken.end()) continue;
    std::vector<int> core = core_of(*it);
    std::erase_if(core, [&](int c) { return std::find(allowed.begin(), allowed.end(), c) == allowed.end(); });
    if (cores == k) mine = core;
    taken.insert(taken.end(), core.begin(), core.end());
    ++cores;
  }
  if (allowed.size() < taken.size() + 2) return {};
  return mine;
}

std::vector<int> worker_cpus(int engines) {
  std::vector<int> cpus = allowed_cpus();
  for (int k = 0; k < engines; ++k)
    for (int c : engine_cpus(k)) std::erase(cpus, c);
  return cpus;
}

bool bind_current_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace imgpipe::host
