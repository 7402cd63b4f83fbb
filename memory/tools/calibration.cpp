#include "memory/tools/calibration.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "imgpipe/error.hpp"
#include "imgpipe/log.hpp"
#include "memory/gpu.hpp"
#include "kernels/memread.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace imgpipe::memory {
namespace {

using steady = std::chrono::steady_clock;

double ms_since(steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(steady::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double gbps(std::size_t bytes, double ms) { return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0; }

// Keeps the compiler from proving a copy's destination dead.
inline void clobber(void* p) { asm volatile("" : : "r"(p) : "memory"); }

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Median GB/s of `iterations` copies of `bytes`, timed with CUDA events.
double time_copy(void* dst, const void* src, std::size_t bytes, bool h2d, const gpu::Stream& s, int iterations) {
  gpu::Event a(s.device(), true), b(s.device(), true);
  auto copy = [&] {
    if (h2d)
      gpu::copy_h2d_async(dst, src, bytes, s);
    else
      gpu::copy_d2h_async(dst, src, bytes, s);
  };
  copy();  // warm-up
  s.synchronize();
  std::vector<double> v;
  for (int i = 0; i < iterations; ++i) {
    a.record(s);
    copy();
    b.record(s);
    b.synchronize();
    v.push_back(gbps(bytes, gpu::Event::elapsed_ms(a, b)));
  }
  return median(v);
}

double time_cpu_copy(void* dst, const void* src, std::size_t bytes, int iterations) {
  std::memcpy(dst, src, bytes);  // warm-up
  clobber(dst);
  std::vector<double> v;
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = steady::now();
    std::memcpy(dst, src, bytes);
    clobber(dst);
    v.push_back(gbps(bytes, ms_since(t0)));
  }
  return median(v);
}

double time_kernel_read(const void* d_src, std::size_t bytes, const gpu::Stream& s, int iterations) {
  gpu::DeviceBuffer result(s.device(), sizeof(std::uint64_t));
  auto* d_sum = static_cast<std::uint64_t*>(result.get());
  gpu::Event a(s.device(), true), b(s.device(), true);
  kernels::memread_gpu(d_src, bytes, d_sum, s.get());  // warm-up
  s.synchronize();
  std::vector<double> v;
  for (int i = 0; i < iterations; ++i) {
    a.record(s);
    kernels::memread_gpu(d_src, bytes, d_sum, s.get());
    b.record(s);
    b.synchronize();
    v.push_back(gbps(bytes, gpu::Event::elapsed_ms(a, b)));
  }
  return median(v);
}

KindMeasurement measure_kind(MemoryKind kind, const CalibrationOptions& o, const Calibration& c,
                             const std::vector<unsigned char*>& cached, std::size_t cpu_bytes, void* d_buf,
                             const gpu::Stream* s) {
  KindMeasurement m;
  m.kind = kind;
  m.h2d_gbps_by_size.assign(c.sizes.size(), 0.0);
  m.d2h_gbps_by_size.assign(c.sizes.size(), 0.0);
  const std::size_t max = c.sizes.back();
  if (!c.has_device() && kind != MemoryKind::pageable) {
    m.error = c.device_description;
    return m;
  }
  try {
    auto t0 = steady::now();
    HostBuffer h(kind, max);
    m.alloc_ms = ms_since(t0);
    m.alloc_bytes = max;
    m.available = true;
    std::memset(h.get(), 0x5a, max);  // a write (allowed for WC); faults pageable pages in
    m.cpu_bytes = cpu_bytes;
    m.cpu_write_gbps = time_cpu_copy(h.get(), cached[0], cpu_bytes, o.iterations);
    // Reading write-combined memory from the CPU is measured on purpose: it
    // is the figure that shows (or not) the penalty the API guards against.
    m.cpu_read_gbps = time_cpu_copy(cached[1], h.get(), cpu_bytes, o.iterations);
    if (s) {
      for (std::size_t i = 0; i < c.sizes.size(); ++i) {
        m.h2d_gbps_by_size[i] = time_copy(d_buf, h.get(), c.sizes[i], true, *s, o.iterations);
        m.d2h_gbps_by_size[i] = time_copy(h.get(), d_buf, c.sizes[i], false, *s, o.iterations);
      }
      m.h2d_gbps = m.h2d_gbps_by_size.back();
      m.d2h_gbps = m.d2h_gbps_by_size.back();
      if (h.is_mapped()) m.kernel_read_gbps = time_kernel_read(h.device_pointer(), max, *s, o.iterations);
    }
    t0 = steady::now();
    h.reset();
    m.free_ms = ms_since(t0);
  } catch (const std::exception& e) {
    // A failure part-way (e.g. the kernel read) keeps the figures measured so
    // far, marked by the error; a failed allocation leaves the kind unavailable.
    m.available = m.h2d_gbps > 0 || m.cpu_write_gbps > 0;
    m.error = e.what();
    imgpipe::logger()->warn("calibration: {} memory: {}", to_string(kind), e.what());
  }
  return m;
}

void measure_multi_device(const CalibrationOptions& o, Calibration& c) {
  const std::size_t bytes = c.sizes.back();
  const int n = c.device_count;
  for (MemoryKind kind : {MemoryKind::pinned, MemoryKind::portable}) {
    DeviceCopyMeasurement m;
    m.kind = kind;
    m.bytes = bytes;
    try {
      gpu::set_device(c.device);
      HostBuffer h(kind, bytes);
      std::memset(h.get(), 0x3c, bytes);
      std::vector<gpu::DeviceBuffer> d;
      std::vector<gpu::Stream> s;
      for (int i = 0; i < n; ++i) {
        d.emplace_back(i, bytes);
        s.emplace_back(i);
        m.per_device_gbps.push_back(time_copy(d.back().get(), h.get(), bytes, true, s.back(), o.iterations));
      }
      std::vector<double> v;
      for (int it = 0; it < o.iterations; ++it) {
        const auto t0 = steady::now();
        for (int i = 0; i < n; ++i) gpu::copy_h2d_async(d[i].get(), h.get(), bytes, s[i]);
        for (int i = 0; i < n; ++i) s[i].synchronize();
        v.push_back(gbps(bytes * n, ms_since(t0)));
      }
      m.concurrent_gbps = median(v);
    } catch (const std::exception& e) {
      imgpipe::logger()->warn("calibration: {} block copied to {} devices: {}", to_string(kind), n, e.what());
    }
    gpu::set_device(c.device);
    c.multi_device.push_back(std::move(m));
  }
}

// ---- JSON
json kind_to_json(const KindMeasurement& m) {
  return json{{"kind", to_string(m.kind)},
              {"available", m.available},
              {"error", m.error},
              {"alloc_bytes", m.alloc_bytes},
              {"alloc_ms", m.alloc_ms},
              {"free_ms", m.free_ms},
              {"cpu_bytes", m.cpu_bytes},
              {"cpu_write_gbps", m.cpu_write_gbps},
              {"cpu_read_gbps", m.cpu_read_gbps},
              {"h2d_gbps_by_size", m.h2d_gbps_by_size},
              {"d2h_gbps_by_size", m.d2h_gbps_by_size},
              {"h2d_gbps", m.h2d_gbps},
              {"d2h_gbps", m.d2h_gbps},
              {"kernel_read_gbps", m.kernel_read_gbps}};
}

MemoryKind kind_from_json(const json& j) {
  const std::string s = j.get<std::string>();
  const auto k = parse_memory_kind(s);
  if (!k) throw Error("calibration: unknown memory kind '" + s + "'");
  return *k;
}

constexpr const char* kFormat = "imgpipe-calibration";
constexpr int kVersion = 1;

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return json();
  return json::parse(in);  // throws json::parse_error
}

}  // namespace

// ---------------------------------------------------------------- key
std::string CalibrationKey::to_string() const {
  return fmt::format("{}, driver {}, host {}", gpu_name, driver_version, hostname);
}

CalibrationKey current_calibration_key(int device) noexcept {
  CalibrationKey k{"none", "none", "unknown"};
  try {
    k.hostname = host_name();
#if IMGPIPE_HAS_CUDA
    if (device >= 0 && device < gpu::device_count()) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, device) == cudaSuccess) k.gpu_name = p.name;
      k.driver_version = gpu::cuda_versions().driver;
      cudaGetLastError();
    }
#else
    (void)device;
#endif
  } catch (...) {
  }
  return k;
}

// ---------------------------------------------------------------- Calibration
const KindMeasurement* Calibration::find(MemoryKind k) const noexcept {
  for (const auto& m : kinds)
    if (m.kind == k) return &m;
  return nullptr;
}

json Calibration::to_json() const {
  json j;
  j["key"] = {{"gpu", key.gpu_name}, {"driver", key.driver_version}, {"host", key.hostname}};
  j["device"] = device;
  j["device_description"] = device_description;
  j["device_count"] = device_count;
  j["measured_at"] = measured_at;
  j["iterations"] = iterations;
  j["sizes"] = sizes;
  j["kinds"] = json::array();
  for (const auto& m : kinds) j["kinds"].push_back(kind_to_json(m));
  j["multi_device"] = json::array();
  for (const auto& m : multi_device)
    j["multi_device"].push_back({{"kind", to_string(m.kind)},
                                 {"bytes", m.bytes},
                                 {"per_device_gbps", m.per_device_gbps},
                                 {"concurrent_gbps", m.concurrent_gbps}});
  return j;
}

Calibration Calibration::from_json(const json& j) {
  try {
    Calibration c;
    const json& k = j.at("key");
    c.key = {k.at("gpu").get<std::string>(), k.at("driver").get<std::string>(), k.at("host").get<std::string>()};
    c.device = j.at("device").get<int>();
    c.device_description = j.value("device_description", std::string());
    c.device_count = j.value("device_count", 0);
    c.measured_at = j.value("measured_at", std::string());
    c.iterations = j.value("iterations", 0);
    c.sizes = j.at("sizes").get<std::vector<std::size_t>>();
    for (const json& e : j.at("kinds")) {
      KindMeasurement m;
      m.kind = kind_from_json(e.at("kind"));
      m.available = e.at("available").get<bool>();
      m.error = e.value("error", std::string());
      m.alloc_bytes = e.value("alloc_bytes", std::size_t{0});
      m.alloc_ms = e.value("alloc_ms", 0.0);
      m.free_ms = e.value("free_ms", 0.0);
      m.cpu_bytes = e.value("cpu_bytes", std::size_t{0});
      m.cpu_write_gbps = e.value("cpu_write_gbps", 0.0);
      m.cpu_read_gbps = e.value("cpu_read_gbps", 0.0);
      m.h2d_gbps_by_size = e.value("h2d_gbps_by_size", std::vector<double>{});
      m.d2h_gbps_by_size = e.value("d2h_gbps_by_size", std::vector<double>{});
      m.h2d_gbps = e.value("h2d_gbps", 0.0);
      m.d2h_gbps = e.value("d2h_gbps", 0.0);
      m.kernel_read_gbps = e.value("kernel_read_gbps", 0.0);
      c.kinds.push_back(std::move(m));
    }
    if (j.contains("multi_device"))
      for (const json& e : j.at("multi_device")) {
        DeviceCopyMeasurement m;
        m.kind = kind_from_json(e.at("kind"));
        m.bytes = e.value("bytes", std::size_t{0});
        m.per_device_gbps = e.value("per_device_gbps", std::vector<double>{});
        m.concurrent_gbps = e.value("concurrent_gbps", 0.0);
        c.multi_device.push_back(std::move(m));
      }
    return c;
  } catch (const json::exception& e) {
    throw Error(std::string("calibration: malformed JSON: ") + e.what());
  }
}

// ---------------------------------------------------------------- measuring
Calibration measure_calibration(const CalibrationOptions& o) {
  if (o.sizes.empty()) throw std::invalid_argument("calibration: no sizes");
  if (o.iterations < 1) throw std::invalid_argument("calibration: iterations must be at least 1");
  Calibration c;
  c.key = current_calibration_key(o.device);
  c.measured_at = now_iso();
  c.iterations = o.iterations;
  c.sizes = o.sizes;
  std::sort(c.sizes.begin(), c.sizes.end());
  c.sizes.erase(std::unique(c.sizes.begin(), c.sizes.end()), c.sizes.end());
  if (c.sizes.front() == 0) throw std::invalid_argument("calibration: a size of 0 bytes");
  std::string why;
  c.device_count = gpu::device_count(&why);
  if (o.device >= 0 && o.device < c.device_count) {
    c.device = o.device;
    c.device_description = gpu::device_description(o.device);
  } else if (o.device < 0) {
    c.device_description = "no CUDA device (the host backend was selected)";
  } else if (c.device_count == 0) {
    c.device_description = "no CUDA device (" + why + ")";
  } else {
    c.device_description = fmt::format("no CUDA device {} ({} present)", o.device, c.device_count);
  }

  const std::size_t max = c.sizes.back();
  const std::size_t cpu_bytes = std::min(max, std::max<std::size_t>(o.cpu_bytes_max, 1));
  // Cached source and destination of the CPU copies, faulted in.
  HostBuffer src(MemoryKind::pageable, cpu_bytes), dst(MemoryKind::pageable, cpu_bytes);
  std::memset(src.get(), 0x11, cpu_bytes);
  std::memset(dst.get(), 0x22, cpu_bytes);
  const std::vector<unsigned char*> cached{static_cast<unsigned char*>(src.get()), static_cast<unsigned char*>(dst.get())};

  std::optional<gpu::Stream> stream;
  gpu::DeviceBuffer d_buf;
  if (c.has_device()) {
    gpu::set_device(c.device);
    stream.emplace(c.device);
    d_buf = gpu::DeviceBuffer(c.device, max);
  }
  for (MemoryKind k : o.kinds)
    c.kinds.push_back(measure_kind(k, o, c, cached, cpu_bytes, d_buf.get(), stream ? &*stream : nullptr));
  if (c.has_device() && o.multi_device && c.device_count >= 2) measure_multi_device(o, c);
  return c;
}

// ---------------------------------------------------------------- cache
fs::path default_calibration_path() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x && fs::path(x).is_absolute())
    return fs::path(x) / "imgpipe" / "calibration.json";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "imgpipe" / "calibration.json";
  return fs::path("imgpipe-calibration.json");
}

std::optional<Calibration> load_calibration(const fs::path& path, const CalibrationKey& key) {
  try {
    const json j = read_json_file(path);
    if (j.is_null()) return std::nullopt;
    if (j.value("format", std::string()) != kFormat || j.value("version", 0) != kVersion) {
      imgpipe::logger()->warn("calibration cache {}: not an imgpipe calibration file of version {}; ignored",
                              path.string(), kVersion);
      return std::nullopt;
    }
    for (const json& e : j.at("entries")) {
      Calibration c = Calibration::from_json(e);
      if (c.key == key) return c;
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    imgpipe::logger()->warn("calibration cache {}: {}; ignored", path.string(), e.what());
    return std::nullopt;
  }
}

void save_calibration(const fs::path& path, const Calibration& c) {
  json entries = json::array();
  try {
    const json old = read_json_file(path);
    if (old.is_object() && old.value("format", std::string()) == kFormat && old.contains("entries"))
      for (const json& e : old.at("entries"))
        if (Calibration::from_json(e).key != c.key) entries.push_back(e);
  } catch (const std::exception& e) {
    imgpipe::logger()->warn("calibration cache {}: {}; replacing it", path.string(), e.what());
  }
  entries.push_back(c.to_json());
  const json out{{"format", kFormat}, {"version", kVersion}, {"entries", entries}};
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << out.dump(2) << "\n";
    if (!f) throw Error("calibration: cannot write " + tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("calibration: cannot write " + path.string());
  }
}

Calibration load_or_measure_calibration(const fs::path& path, const CalibrationOptions& options, bool* measured) {
  if (auto c = load_calibration(path, current_calibration_key(options.device))) {
    if (measured) *measured = false;
    return *c;
  }
  Calibration c = measure_calibration(options);
  if (measured) *measured = true;
  try {
    save_calibration(path, c);
  } catch (const std::exception& e) {
    imgpipe::logger()->warn("{}", e.what());
  }
  return c;
}

}  // namespace imgpipe::memory
