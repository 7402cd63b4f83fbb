#include "probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "decode.hpp"
#include "geometry.hpp"
#include "jpeg_engines.hpp"

namespace imgpipe::stages {

namespace {

unsigned be16(std::span<const unsigned char> b, std::size_t i) noexcept { return (b[i] << 8) | b[i + 1]; }

std::string classify_subsampling(const JpegLayout& j, const unsigned char* factors) {
  if (j.components == 1) return "gray";
  if (j.components != 3) return "other";
  // Chroma components must share one sampling (1x1) and luma holds the maximum.
  const int h0 = factors[0] >> 4, v0 = factors[0] & 15;
  for (int c = 1; c < 3; ++c)
    if ((factors[c] >> 4) != 1 || (factors[c] & 15) != 1) return "other";
  if (h0 == 1 && v0 == 1) return "444";
  if (h0 == 2 && v0 == 1) return "422";
  if (h0 == 2 && v0 == 2) return "420";
  if (h0 == 1 && v0 == 2) return "440";
  if (h0 == 4 && v0 == 1) return "411";
  if (h0 == 4 && v0 == 2) return "410";
  return "other";
}

// Reads a frame header (SOFn) whose body (after the 2 length bytes) starts
// at `i` and whose length field says `len`: P, Y (2), X (2), Nf, then Nf x
// (id, H << 4 | V, Tq).
void read_frame(std::span<const unsigned char> b, std::size_t i, unsigned len, int marker, JpegLayout& j) {
  if (len < 8) return;
  j.sof = marker - 0xC0;
  j.precision = b[i];
  j.height = static_cast<int>(be16(b, i + 1));
  j.width = static_cast<int>(be16(b, i + 3));
  j.components = b[i + 5];
  if (j.components < 1 || len < 8 + 3u * static_cast<unsigned>(j.components)) {
    j.components = 0;
    return;
  }
  unsigned char factors[4] = {0x11, 0x11, 0x11, 0x11};
  for (int c = 0; c < j.components; ++c) {
    const unsigned char f = b[i + 6 + 3 * static_cast<std::size_t>(c) + 1];
    if (c < 4) factors[c] = f;
    j.h_max = std::max(j.h_max, f >> 4);
    j.v_max = std::max(j.v_max, f & 15);
  }
  j.subsampling = classify_subsampling(j, factors);
}

}  // namespace

JpegLayout parse_jpeg_layout(std::span<const unsigned char> b) noexcept {
  JpegLayout j;
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return j;
  std::size_t i = 2;
  bool frame = false;
  while (i + 4 <= b.size()) {
    if (b[i] != 0xFF) return j;  // not at a marker: damaged
    const int marker = b[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0xD8 || marker == 0xD9 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) return j;
    const unsigned len = be16(b, i + 2);
    if (len < 2 || i + 2 + len > b.size()) return j;
    const std::size_t body = i + 4;
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof && !frame) {
      read_frame(b, body, len, marker, j);
      frame = true;
    } else if (marker == 0xDD && len >= 4) {
      j.restart_interval = static_cast<int>(be16(b, body));
    } else if (marker == 0xDA) {
      j.valid = frame && j.components > 0 && j.width > 0 && j.height > 0;
      return j;
    }
    i += 2 + len;
  }
  return j;
}

std::string gpu_route_refusal(const JpegLayout& j) {
  if (!j.valid) return "header not understood";
  if (j.sof == 2 || j.sof == 6 || j.sof == 10 || j.sof == 14) return "progressive";
  if (j.sof == 3 || j.sof == 7 || j.sof == 11 || j.sof == 15) return "lossless";
  if (j.sof >= 9) return "arithmetic coding";
  if (j.sof != 0 && j.sof != 1) return "hierarchical";
  if (j.precision != 8) return std::to_string(j.precision) + "-bit samples";
  if (j.components == 4) return "4 components (CMYK/YCCK)";
  if (j.components != 1 && j.components != 3) return std::to_string(j.components) + " components";
  if (j.subsampling == "411" || j.subsampling == "410" || j.subsampling == "other")
    return "chroma subsampling " + j.subsampling;
  return {};
}

// ---------------------------------------------------------------- steering

RouteSteering::RouteSteering(bool adaptive, double initial_share, int cpu_threads, int engine_devices)
    : adaptive_(adaptive), cpu_threads_(std::max(1, cpu_threads)), engine_devices_(std::max(1, engine_devices)),
      share_(adaptive ? std::clamp(initial_share, 0.0, 1.0) : 1.0), start_share_(share_) {}

void GpuDecodeMeter::call_begins(std::int64_t t0_ns) {
  std::lock_guard lk(calls_m_);
  ++in_call_;
  started_sum_ += t0_ns;
  if (first_begin_ < 0) first_begin_ = t0_ns;
}

std::int64_t GpuDecodeMeter::first_begin_ns() const {
  std::lock_guard lk(calls_m_);
  return first_begin_;
}

void GpuDecodeMeter::call_ends(std::int64_t t0_ns, std::int64_t t1_ns) {
  std::lock_guard lk(calls_m_);
  --in_call_;
  started_sum_ -= t0_ns;
  ns += t1_ns - t0_ns;
}

double GpuDecodeMeter::busy_s(std::int64_t now_ns) const {
  std::lock_guard lk(calls_m_);
  return static_cast<double>(ns.load() + in_call_ * now_ns - started_sum_) * 1e-9;
}

bool RouteSteering::take_gpu() {
  std::lock_guard lk(m_);
  acc_ += share_;
  if (acc_ >= 1.0) {
    acc_ -= 1.0;
    return true;
  }
  return false;
}

void RouteSteering::set_cycle(int cycle_batches, int batch_size, int free_batches) {
  std::lock_guard lk(m_);
  free_batches_ = std::max(0, free_batches);
  cycle_batches_ = cycle_batches > 0 && batch_size > 0 ? cycle_batches : 0;
  batch_size_ = batch_size;
}

void RouteSteering::set_cpu_util(double u) {
  std::lock_guard lk(m_);
  cpu_util_ = std::clamp(u, 0.05, 1.0);
}

bool RouteSteering::take_gpu(std::uint64_t seq) {
  std::unique_lock lk(m_);
  if (cycle_batches_ <= 0) {
    lk.unlock();
    return take_gpu();
  }
  if (share_ >= 1.0) return true;
  const std::uint64_t cycle = static_cast<std::uint64_t>(cycle_batches_) * static_cast<std::uint64_t>(batch_size_);
  const std::uint64_t window =
      static_cast<std::uint64_t>(std::max(1, cycle_batches_ - free_batches_)) * static_cast<std::uint64_t>(batch_size_);
  const auto q = std::min(window, static_cast<std::uint64_t>(std::llround(static_cast<double>(cycle) * (1.0 - share_))));
  const std::uint64_t p = seq % cycle;
  if (p >= window) return true;
  return (p + 1) * q / window == p * q / window;  // error diffusion of q picks over the window
}

void RouteSteering::update(const SteeringSample& now) {
  std::lock_guard lk(m_);
  if (!adaptive_) return;
  const SteeringSample& was = last_;
  const double dc = static_cast<double>(now.cpu_images - was.cpu_images), dcs = now.cpu_s - was.cpu_s;
  const double dg = static_cast<double>(now.gpu_images - was.gpu_images), dgs = now.gpu_s - was.gpu_s;
  const double dn = static_cast<double>(now.samples - was.samples), dos = now.other_s - was.other_s;
  const double dt = now.wall_s - was.wall_s;
  // Too little in this window to judge the engines (16 of their images, 20 ms).
  if (dg < 16 || dgs <= 0 || dt < 0.02) return;
  // The CPU route's cost: this window's when it ran enough, else the run's.
  if (dc >= 16 && dcs > 0)
    d_ = dcs / dc;
  else if (now.cpu_images >= 16 && now.cpu_s > 0)
    d_ = now.cpu_s / static_cast<double>(now.cpu_images);
  const double G = dg / dgs;
  const double o = dn > 0 && dos > 0 ? dos / dn : 0.0;
  // How busy the engine threads were, and how fast the engines went: the
  // model sees neither their starving nor the CPU route slowing them.
  const double busy = now.busy_s >= 0 ? now.busy_s - std::max(0.0, was.busy_s) : dgs;
  best_g_ = std::max(best_g_, G);
  // Over the window, or from the engines' first call when that began in it
  // (the first window starts at the steering's making).
  const double span = now.engines_from_s >= 0 ? now.wall_s - std::max(was.wall_s, now.engines_from_s) : dt;
  const bool cycle = cycle_batches_ > 0;
  const bool idle = busy < (cycle ? kCycleEnginesBusy : kEnginesBusy) * span * engine_devices_;
  const bool slowed =
      hold_when_slowed_ && dc > 0 && G < (cycle ? kCycleEnginesSlowed : kEnginesSlowed) * best_g_;
  if (idle || slowed) {
    // The engines limit the run: every GPU-able JPEG goes to them, for a
    // while (their rate unslowed is what the next try is judged against).
    share_ = 1.0;
    hold_until_ = now.wall_s + (cycle ? kCycleHoldS : kHoldS);
  } else if (now.wall_s < hold_until_) {
    share_ = 1.0;
  } else if (d_ <= 0) {
    // The CPU route's cost not known yet: a little of it, to measure.
    if (share_ >= 1.0) share_ = 1.0 - kProbeStep;
    balance_share_ = share_;
  } else {
    // Damped: half-way to the model's balance each window, and never quite 0
    // or 1, so that both rates keep being measured.
    const double balance = G * (o + d_) / (cpu_util_ * cpu_threads_ + G * d_);
    share_ = std::clamp(0.5 * share_ + 0.5 * balance, kLeastShare, kMostShare);
    balance_share_ = share_;
  }
  history_.push_back(share_);
  last_ = now;
}

void RouteSteering::fix(double share) {
  std::lock_guard lk(m_);
  adaptive_ = false;
  share_ = start_share_ = std::clamp(share, 0.0, 1.0);
}

SteeringMemory RouteSteering::memory() const {
  std::lock_guard lk(m_);
  return {balance_share_, d_, best_g_};
}

void RouteSteering::recall(const SteeringMemory& m) {
  std::lock_guard lk(m_);
  if (!adaptive_ || m.share < 0) return;
  share_ = start_share_ = balance_share_ = std::clamp(m.share, kLeastShare, 1.0);
  d_ = m.d;
  best_g_ = m.best_g;
}

void RouteSteering::set_hold_when_slowed(bool on) {
  std::lock_guard lk(m_);
  hold_when_slowed_ = on;
}

double RouteSteering::share() const {
  std::lock_guard lk(m_);
  return share_;
}

double RouteSteering::started_at() const {
  std::lock_guard lk(m_);
  return start_share_;
}

std::vector<double> RouteSteering::history() const {
  std::lock_guard lk(m_);
  return history_;
}

// ---------------------------------------------------------------- stage

Probe::Probe(const ProbeLimits& limits, const JpegEngines& engines, RouteSteering& steering,
             const StageStats& decode, const StageStats& transform, const GpuDecodeMeter& gpu,
             std::vector<const StageStats*> others)
    : Stage("probe", true), limits_(limits), engines_(engines), steering_(steering), decode_(decode),
      transform_(transform), gpu_(gpu), others_(std::move(others)) {}

bool Probe::gpu_able(const Work& w, int& width, int& height) const {
  const kernels::GpuJpegDecoder* decoder = limits_.wait_for_engines ? engines_.wait() : engines_.ready();
  if (!decoder) return false;  // not made yet, or GPU decode failed to start
  const std::span<const unsigned char> b(w.pixels.bytes);
  const ImageHeader h = sniff_header(b);
  if (h.format != "jpeg") return false;
  // What the CPU route checks or does that the engines would not: these stay there.
  if (limits_.accept_truncated || !jpeg_has_eoi(b)) return false;
  if (limits_.exif_orientation && h.orientation != 1) return false;
  const JpegLayout j = parse_jpeg_layout(b);
  if (!gpu_route_refusal(j).empty()) return false;
  const std::size_t frame = static_cast<std::size_t>(j.width) * static_cast<std::size_t>(j.height) * 3;
  if (j.width > limits_.max_pixels / j.height || frame > limits_.max_frame_bytes || b.size() > limits_.max_bitstream)
    return false;
  const kernels::JpegInfo info = decoder->parse(b.data(), b.size());
  if (!info.valid || !info.batch_supported || info.width != j.width || info.height != j.height) return false;
  width = j.width;
  height = j.height;
  return true;
}

void Probe::steer() {
  SteeringSample m;
  m.cpu_images = decode_.items.load();
  m.cpu_s = (decode_.busy_ns.load() + transform_.busy_ns.load()) * 1e-9;
  m.gpu_images = gpu_.images.load();
  m.gpu_s = gpu_.ns.load() * 1e-9;
  m.samples = seen_.load();
  std::int64_t other = 0;
  for (const StageStats* st : others_) other += st->busy_ns.load() - st->wait_ns.load();
  other += stats().busy_ns.load() - stats().wait_ns.load();  // this stage's own
  m.other_s = static_cast<double>(other) * 1e-9;
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  m.wall_s = std::chrono::duration<double>(now).count();
  m.busy_s = gpu_.busy_s(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  const std::int64_t first = gpu_.first_begin_ns();
  m.engines_from_s = first >= 0 ? static_cast<double>(first) * 1e-9 : -1.0;
  steering_.update(m);
}

Tally Probe::run(Work& w) {
  int width = 0, height = 0;
  if ((++seen_ & 63) == 0) steer();
  // A pushed image stays on the CPU: a JPEG the engines reject is decoded
  // again on the CPU from its file, and a pushed one has none.
  if (w.preloaded) return {1, 0};
  if (!gpu_able(w, width, height)) return {1, 0};
  ++gpu_able_;
  if (!steering_.take_gpu(w.sample.seq)) return {1, 0};
  ++to_gpu_;
  w.route = Route::gpu_jpeg;
  w.pixels.out = {w.pixels.bytes.data(), w.pixels.bytes.size(), width, height};
  // The engines decode at full size without rotating (rotated JPEGs stay on
  // the CPU); the fused kernel resizes with kernels::placement.
  w.sample.geometry = decoded_geometry(width, height, 1, 1);
  complete_geometry(w.sample.geometry, width, height, limits_.resize);
  return {1, w.pixels.bytes.size()};
}

}  // namespace imgpipe::stages
