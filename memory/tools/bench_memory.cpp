#include "memory/tools/bench_memory.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "memory/gpu.hpp"
#include "memory/tools/calibration.hpp"
#include "memory/tools/policy.hpp"
#include "imgpipe/memory/resources.hpp"
#include "kernels/memread.hpp"

namespace imgpipe {
namespace {

using memory::Calibration;
using memory::HostBuffer;
using memory::MemoryKind;
using memory::UsagePattern;
using nlohmann::json;
using steady = std::chrono::steady_clock;

std::string human(std::size_t b) {
  if (b >= (std::size_t{1} << 30) && b % (std::size_t{1} << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (std::size_t{1} << 20) && b % (std::size_t{1} << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string fig(double v, int precision = 1) { return v > 0 ? fmt::format("{:.{}f}", v, precision) : "-"; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ms_since(steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(steady::now() - t0).count();
}

// Distinct, deterministic contents (not a memset, so sums catch misplaced bytes).
void fill_pattern(void* p, std::size_t bytes, std::uint64_t seed) {
  auto* w = static_cast<std::uint64_t*>(p);
  for (std::size_t i = 0; i < bytes / 8; ++i) w[i] = (i + seed) * 0x9E3779B97F4A7C15ull;
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = bytes / 8 * 8; i < bytes; ++i) b[i] = static_cast<unsigned char>(i);
}

// ---------------------------------------------------------------- workloads
struct Workload {
  std::string name;
  std::string description;
  std::string note;
  std::string policy_explain;
  MemoryKind policy_kind = MemoryKind::pinned;
  MemoryKind baseline_kind = MemoryKind::pinned;
  std::string policy_method;    // how the policy's kind was used
  std::string baseline_method;
  double useful_bytes = 0;      // bytes the workload needs (for effective GB/s)
  double policy_ms = 0, baseline_ms = 0;
  std::string error;
  double policy_gbps() const { return policy_ms > 0 ? useful_bytes / (policy_ms * 1e6) : 0; }
  double baseline_gbps() const { return baseline_ms > 0 ? useful_bytes / (baseline_ms * 1e6) : 0; }
  double reduction_pct() const { return baseline_ms > 0 ? (baseline_ms - policy_ms) / baseline_ms * 100.0 : 0; }
  json to_json() const {
    return json{{"name", name},
                {"description", description},
                {"note", note},
                {"policy", policy_explain},
                {"policy_kind", memory::to_string(policy_kind)},
                {"baseline_kind", memory::to_string(baseline_kind)},
                {"policy_method", policy_method},
                {"baseline_method", baseline_method},
                {"useful_bytes", useful_bytes},
                {"policy_ms", policy_ms},
                {"baseline_ms", baseline_ms},
                {"policy_gbps", policy_gbps()},
                {"baseline_gbps", baseline_gbps()},
                {"time_reduction_pct", reduction_pct()},
                {"error", error}};
  }
};

// (a) One host block shared by every GPU: copied to each device at once.
double shared_block_ms(MemoryKind kind, std::size_t bytes, int devices, int iterations) {
  HostBuffer h(kind, bytes);
  fill_pattern(h.get(), bytes, 1);
  std::vector<gpu::DeviceBuffer> d;
  std::vector<gpu::Stream> s;
  for (int i = 0; i < devices; ++i) {
    d.emplace_back(i, bytes);
    s.emplace_back(i);
  }
  std::vector<double> v;
  for (int it = -1; it < iterations; ++it) {  // it = -1: warm-up
    const auto t0 = steady::now();
    for (int i = 0; i < devices; ++i) gpu::copy_h2d_async(d[i].get(), h.get(), bytes, s[i]);
    for (int i = 0; i < devices; ++i) s[i].synchronize();
    if (it >= 0) v.push_back(ms_since(t0));
  }
  return median(v);
}

// (b) The CPU writes a chunk (memcpy from cached memory), then it is copied to
// the GPU; two buffers, so writing chunk i+1 overlaps copying chunk i.
class Streaming {
 public:
  Streaming(MemoryKind kind, std::size_t chunk, int rounds, int device)
      : chunk_(chunk), rounds_(rounds), src_(MemoryKind::pageable, chunk),
        h_{HostBuffer(kind, chunk), HostBuffer(kind, chunk)},
        d_{gpu::DeviceBuffer(device, chunk), gpu::DeviceBuffer(device, chunk)}, s_(device),
        done_{gpu::Event(device, false), gpu::Event(device, false)} {
    fill_pattern(src_.get(), chunk, 2);
  }
  double run_ms() {
    const auto t0 = steady::now();
    for (int r = 0; r < rounds_; ++r) {
      const int i = r & 1;
      done_[i].synchronize();  // the copy that read this buffer last is done
      std::memcpy(h_[i].get(), src_.get(), chunk_);
      gpu::copy_h2d_async(d_[i].get(), h_[i].get(), chunk_, s_);
      done_[i].record(s_);
    }
    s_.synchronize();
    return ms_since(t0);
  }

 private:
  std::size_t chunk_;
  int rounds_;
  HostBuffer src_;
  HostBuffer h_[2];
  gpu::DeviceBuffer d_[2];
  gpu::Stream s_;
  gpu::Event done_[2];
};

// Both variants set up first, then timed alternately (one warm-up each), so
// that drift of the shared machine falls on both alike.
std::pair<double, double> streaming_ms(MemoryKind policy, MemoryKind baseline, std::size_t chunk, int rounds,
                                       int device, int repeats) {
  Streaming a(policy, chunk, rounds, device), b(baseline, chunk, rounds, device);
  std::vector<double> va, vb;
  for (int rep = -1; rep < repeats; ++rep) {
    const double ta = a.run_ms(), tb = b.run_ms();
    if (rep >= 0) {
      va.push_back(ta);
      vb.push_back(tb);
    }
  }
  return {median(va), median(vb)};
}

// (c) A kernel reads a random 5% of the records of a large host array: in
// place through the mapped device pointer (zero-copy), or after copying the
// whole array to the GPU. Checks the sum against the CPU twin.
struct SparseSetup {
  std::size_t array_bytes;
  std::size_t record_bytes = 4096;
  std::vector<std::uint32_t> indices;
  std::uint64_t expected = 0;
};

double sparse_ms(MemoryKind kind, bool zero_copy, const SparseSetup& su, int device, int iterations,
                 std::string* check) {
  HostBuffer h(kind, su.array_bytes, zero_copy ? unsigned{memory::PinnedResource::mapped} : 0u);
  fill_pattern(h.get(), su.array_bytes, 3);
  gpu::Stream s(device);
  gpu::DeviceBuffer idx(device, su.indices.size() * sizeof(std::uint32_t));
  gpu::copy_h2d_async(idx.get(), su.indices.data(), su.indices.size() * sizeof(std::uint32_t), s);
  gpu::DeviceBuffer result(device, sizeof(std::uint64_t));
  gpu::DeviceBuffer d_array;
  if (!zero_copy) d_array = gpu::DeviceBuffer(device, su.array_bytes);
  const void* d_src = zero_copy ? h.device_pointer() : d_array.get();
  gpu::Event a(device, true), b(device, true);
  std::vector<double> v;
  for (int it = -1; it < iterations; ++it) {
    a.record(s);
    if (!zero_copy) gpu::copy_h2d_async(d_array.get(), h.get(), su.array_bytes, s);
    kernels::gather_read_gpu(d_src, su.record_bytes, static_cast<const std::uint32_t*>(idx.get()), su.indices.size(),
                             static_cast<std::uint64_t*>(result.get()), s.get());
    b.record(s);
    b.synchronize();
    if (it >= 0) v.push_back(gpu::Event::elapsed_ms(a, b));
  }
  std::uint64_t got = 0;
  gpu::copy_d2h_async(&got, result.get(), sizeof got, s);
  s.synchronize();
  if (got != su.expected)
    *check = fmt::format("checksum mismatch ({}): {:#x} != {:#x}", zero_copy ? "zero-copy" : "copy", got, su.expected);
  return median(v);
}

// A workload named `name` with the kind the policy picks for `pattern`.
Workload workload(const char* name, UsagePattern pattern, const Calibration& c) {
  Workload x;
  x.name = name;
  const auto d = memory::choose_memory_kind(pattern, &c);
  x.policy_kind = d.kind;
  x.policy_explain = d.explain();
  return x;
}

// (a) one host block copied to every GPU at once.
Workload shared_block_workload(const Calibration& c, const BenchMemoryOptions& o) {
  const std::size_t max = c.sizes.back();
  const int dev = c.device;
  Workload x = workload("shared_block", UsagePattern::multi_device, c);
  const int n = std::max(1, c.device_count);
  x.description = fmt::format("one {} host block copied to each of {} GPU(s) at once", human(max), n);
  if (n < 2) x.note = "only one GPU: measuring the single-GPU case (one device's copy)";
  x.policy_method = x.baseline_method = "cudaMemcpyAsync to every device, one stream each";
  x.useful_bytes = static_cast<double>(max) * n;
  try {
    x.policy_ms = shared_block_ms(x.policy_kind, max, n, o.iterations);
    x.baseline_ms = shared_block_ms(MemoryKind::pinned, max, n, o.iterations);
  } catch (const std::exception& e) {
    x.error = e.what();
  }
  gpu::set_device(dev);
  return x;
}

// (b) the CPU writes chunks that are copied to the GPU, double-buffered.
Workload streaming_workload(const Calibration& c, const BenchMemoryOptions& o) {
  const std::size_t max = c.sizes.back();
  const int dev = c.device;
  Workload x = workload("h2d_streaming", UsagePattern::h2d_streaming, c);
  const std::size_t chunk = std::min<std::size_t>(max, std::size_t{32} << 20);
  const int rounds = 32;
  x.description = fmt::format("CPU writes {} (memcpy from cached memory), then H2D copy; {} rounds, double-buffered",
                              human(chunk), rounds);
  x.policy_method = x.baseline_method = "two host buffers, an event per buffer";
  x.useful_bytes = static_cast<double>(chunk) * rounds;
  try {
    std::tie(x.policy_ms, x.baseline_ms) =
        streaming_ms(x.policy_kind, MemoryKind::pinned, chunk, rounds, dev, std::max(5, o.iterations));
    if (x.policy_kind == MemoryKind::pinned)
      x.note = "the policy chose default pinned here: both runs use the same kind, so the difference is the "
               "machine's run-to-run spread";
  } catch (const std::exception& e) {
    x.error = e.what();
  }
  return x;
}

// (c) a kernel reads a random 5% of a large host array.
Workload sparse_read_workload(const Calibration& c, const BenchMemoryOptions& o) {
  const std::size_t max = c.sizes.back();
  const int dev = c.device;
  Workload x = workload("sparse_device_read", UsagePattern::device_access_only, c);
  SparseSetup su;
  su.array_bytes = std::max<std::size_t>(max / su.record_bytes * su.record_bytes, su.record_bytes);
  const std::size_t records = su.array_bytes / su.record_bytes;
  const std::size_t count = std::max<std::size_t>(1, records * 5 / 100);
  std::vector<std::uint32_t> all(records);
  std::iota(all.begin(), all.end(), 0u);
  std::mt19937 rng(42);
  std::shuffle(all.begin(), all.end(), rng);
  su.indices.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
  {
    HostBuffer ref(MemoryKind::pageable, su.array_bytes);
    fill_pattern(ref.get(), su.array_bytes, 3);
    su.expected = kernels::gather_read_ref(ref.get(), su.record_bytes, su.indices.data(), count);
  }
  x.description = fmt::format("a kernel reads a random 5% ({} of {} records of {}) of a {} host array",
                              count, records, human(su.record_bytes), human(su.array_bytes));
  const bool zero_copy = x.policy_kind == MemoryKind::mapped;
  x.policy_method = zero_copy ? "zero-copy: the kernel reads the mapped host array in place"
                              : "copy the whole array, then the kernel reads device memory";
  x.baseline_method = "copy the whole array (default pinned), then the kernel reads device memory";
  if (!zero_copy) x.note = "the policy did not choose mapped memory: both runs copy first";
  x.useful_bytes = static_cast<double>(count * su.record_bytes);
  try {
    std::string check;
    x.policy_ms = sparse_ms(x.policy_kind, zero_copy, su, dev, o.iterations, &check);
    x.baseline_ms = sparse_ms(MemoryKind::pinned, false, su, dev, o.iterations, &check);
    if (!check.empty()) x.error = check;
  } catch (const std::exception& e) {
    x.error = e.what();
  }
  return x;
}

void print_workloads(const std::vector<Workload>& w, const BenchMemoryOptions& o, std::ostream& out) {
  out << "\nworkloads: the policy's kind against plain default pinned memory (medians of " << o.iterations
      << " runs)\n";
  for (const Workload& x : w) {
    out << fmt::format("\n({}) {}: {}\n", x.name == "shared_block" ? 'a' : x.name == "h2d_streaming" ? 'b' : 'c',
                       x.name, x.description);
    out << "    policy: " << x.policy_explain << "\n";
    if (!x.note.empty()) out << "    note: " << x.note << "\n";
    if (!x.error.empty()) {
      out << "    FAILED: " << x.error << "\n";
      continue;
    }
    out << fmt::format("    policy   {:<16} {:9.3f} ms  {:7.2f} GB/s effective  ({})\n", memory::to_string(x.policy_kind),
                       x.policy_ms, x.policy_gbps(), x.policy_method);
    out << fmt::format("    baseline {:<16} {:9.3f} ms  {:7.2f} GB/s effective  ({})\n",
                       memory::to_string(x.baseline_kind), x.baseline_ms, x.baseline_gbps(), x.baseline_method);
    const double r = x.reduction_pct();
    out << fmt::format("    time reduction {:+.1f}% ({})\n", r,
                       std::abs(r) < memory::kPolicyTolerance * 100 ? "the same within 3%"
                       : r > 0                                     ? "the policy is faster"
                                                                   : "the policy is slower");
  }
}


std::vector<Workload> run_workloads(const Calibration& c, const BenchMemoryOptions& o, std::ostream& out) {
  std::vector<Workload> w;
  w.push_back(shared_block_workload(c, o));
  w.push_back(streaming_workload(c, o));
  w.push_back(sparse_read_workload(c, o));
  print_workloads(w, o, out);
  return w;
}

// ---------------------------------------------------------------- printing
void print_tables(const Calibration& c, std::ostream& out) {
  out << "imgpipe bench-memory\n";
  out << "  device : " << c.device_description;
  if (c.has_device()) out << fmt::format(" (device {} of {})", c.device, c.device_count);
  out << "\n  key    : " << c.key.to_string() << "\n";
  const memory::KindMeasurement* first = c.kinds.empty() ? nullptr : &c.kinds.front();
  out << fmt::format("  method : medians of {} runs; copies timed with CUDA events on one stream; CPU write/read = "
                     "one-thread memcpy of {} from/to cached memory\n",
                     c.iterations, human(first ? first->cpu_bytes : 0));
  if (!c.has_device())
    out << "\nNO CUDA DEVICE: " << c.device_description
        << ".\nOnly host-side figures (pageable memory) are measured; page-locked kinds, copies, the mapped kernel "
           "read and the workloads need a GPU.\n";

  const std::size_t max = c.sizes.back();
  out << fmt::format("\nhost memory kinds (alloc/free of {}; copies at {}):\n", human(max), human(max));
  out << fmt::format("{:<16} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>12}\n", "kind", "alloc ms", "free ms", "H2D GB/s",
                     "D2H GB/s", "CPU write", "CPU read", "kernel read");
  for (const auto& m : c.kinds) {
    if (!m.available) {
      out << fmt::format("{:<16} not available: {}\n", memory::to_string(m.kind),
                         m.error == c.device_description ? std::string("no CUDA device") : m.error);
      continue;
    }
    out << fmt::format("{:<16} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>12}\n", memory::to_string(m.kind),
                       fig(m.alloc_ms, 2), fig(m.free_ms, 2), fig(m.h2d_gbps), fig(m.d2h_gbps), fig(m.cpu_write_gbps),
                       fig(m.cpu_read_gbps), m.kind == MemoryKind::mapped ? fig(m.kernel_read_gbps) : "");
    if (!m.error.empty()) out << "                 (partly measured: " << m.error << ")\n";
  }
  out << "  CPU write/read in GB/s; kernel read: a kernel reading mapped host memory in place (zero-copy)\n";
  if (const auto* p = c.find(MemoryKind::pageable); p && p->available)
    out << "  pageable alloc is lazy: its pages fault in on first touch\n";

  if (c.has_device()) {
    for (int dir = 0; dir < 2; ++dir) {
      out << (dir == 0 ? "\nH2D GB/s by size:\n" : "\nD2H GB/s by size:\n");
      out << fmt::format("{:<16}", "kind");
      for (std::size_t s : c.sizes) out << fmt::format(" {:>9}", human(s));
      out << "\n";
      for (const auto& m : c.kinds) {
        if (!m.available) continue;
        out << fmt::format("{:<16}", memory::to_string(m.kind));
        const auto& v = dir == 0 ? m.h2d_gbps_by_size : m.d2h_gbps_by_size;
        for (double g : v) out << fmt::format(" {:>9}", fig(g));
        out << "\n";
      }
    }
    if (c.multi_device.empty()) {
      out << fmt::format("\nmulti-GPU: {} GPU on this machine: the per-device copies of one block need two or more\n",
                         c.device_count);
    } else {
      out << fmt::format("\none {} block copied to each device (H2D GB/s):\n", human(max));
      for (const auto& m : c.multi_device) {
        out << fmt::format("{:<16}", memory::to_string(m.kind));
        for (std::size_t i = 0; i < m.per_device_gbps.size(); ++i)
          out << fmt::format(" GPU{} {:>6}", i, fig(m.per_device_gbps[i]));
        out << fmt::format("   all at once {} GB/s\n", fig(m.concurrent_gbps));
      }
    }
  }

  out << "\npolicy (usage pattern -> kind):\n";
  for (UsagePattern p : {UsagePattern::single_device, UsagePattern::multi_device, UsagePattern::h2d_streaming,
                         UsagePattern::device_access_only})
    out << "  " << memory::choose_memory_kind(p, &c).explain() << "\n";
}

}  // namespace

std::vector<std::size_t> parse_byte_sizes(std::string_view list) {
  std::vector<std::size_t> r;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    std::string_view item = list.substr(pos, comma - pos);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (item.empty()) throw std::invalid_argument("sizes: empty item in '" + std::string(list) + "'");
    double value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || end == item.data() || !(value > 0))
      throw std::invalid_argument("sizes: '" + std::string(item) + "' is not a positive size");
    std::string unit(end, item.data() + item.size());
    for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    double mult;
    if (unit.empty() || unit == "M" || unit == "MB" || unit == "MIB") mult = 1 << 20;
    else if (unit == "B") mult = 1;
    else if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1 << 10;
    else if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1 << 30;
    else throw std::invalid_argument("sizes: unknown unit in '" + std::string(item) + "' (use B, K, M or G)");
    const double bytes = std::round(value * mult);
    if (bytes < 1 || bytes > 1e15) throw std::invalid_argument("sizes: '" + std::string(item) + "' is out of range");
    r.push_back(static_cast<std::size_t>(bytes));
    pos = comma + 1;
  }
  return r;
}

int run_bench_memory(const BenchMemoryOptions& o, std::ostream& out) {
  memory::CalibrationOptions co;
  co.device = o.device;
  if (!o.sizes.empty()) co.sizes = o.sizes;
  co.iterations = o.iterations;
  Calibration c;
  try {
    c = memory::measure_calibration(co);
  } catch (const std::exception& e) {
    out << "imgpipe bench-memory: measuring failed: " << e.what() << "\n";
    return 1;
  }
  print_tables(c, out);

  std::vector<Workload> w;
  if (o.workloads) {
    if (c.has_device()) {
      try {
        w = run_workloads(c, o, out);
      } catch (const std::exception& e) {
        out << "imgpipe bench-memory: workloads failed: " << e.what() << "\n";
        return 1;
      }
    } else {
      out << "\nworkloads: skipped, there is no CUDA device\n";
    }
  }

  int rc = 0;
  if (!o.cache_path.empty()) {
    try {
      memory::save_calibration(o.cache_path, c);
      out << "\ncalibration stored in " << o.cache_path << "\n";
    } catch (const std::exception& e) {
      out << "imgpipe bench-memory: " << e.what() << "\n";
      rc = 1;
    }
  }
  if (!o.json_path.empty()) {
    json j = c.to_json();
    j["policy"] = json::array();
    for (UsagePattern p : {UsagePattern::single_device, UsagePattern::multi_device, UsagePattern::h2d_streaming,
                           UsagePattern::device_access_only}) {
      const auto d = memory::choose_memory_kind(p, &c);
      j["policy"].push_back({{"pattern", memory::to_string(p)},
                             {"kind", memory::to_string(d.kind)},
                             {"measured", d.measured},
                             {"explain", d.explain()}});
    }
    if (o.workloads) {
      j["workloads"] = json::array();
      for (const Workload& x : w) j["workloads"].push_back(x.to_json());
    }
    std::ofstream f(o.json_path, std::ios::trunc);
    f << j.dump(2) << "\n";
    if (!f) {
      out << "imgpipe bench-memory: cannot write '" << o.json_path << "'\n";
      return 1;
    }
    out << "\nresults written to " << o.json_path << "\n";
  }
  return rc;
}

}  // namespace imgpipe
