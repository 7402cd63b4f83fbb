#include "codecs/route/route_steering.hpp"

#include <algorithm>
#include <cmath>

namespace imgpipe::codecs {

RouteSteering::RouteSteering(bool adaptive, double initial_share, int cpu_threads, int engine_devices)
    : adaptive_(adaptive), cpu_threads_(std::max(1, cpu_threads)), engine_devices_(std::max(1, engine_devices)),
      share_(adaptive ? std::clamp(initial_share, 0.0, 1.0) : 1.0), start_share_(share_) {}

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
  // How busy the engine threads were: the model does not see them starve.
  const double busy = now.busy_s >= 0 ? now.busy_s - std::max(0.0, was.busy_s) : dgs;
  // Over the window, or from the engines' first call when that began in it
  // (the first window starts at the steering's making).
  const double span = now.engines_from_s >= 0 ? now.wall_s - std::max(was.wall_s, now.engines_from_s) : dt;
  const bool cycle = cycle_batches_ > 0;
  const bool idle = busy < (cycle ? kCycleEnginesBusy : kEnginesBusy) * span * engine_devices_;
  if (idle) {
    // The engines limit the run: every GPU-able JPEG goes to them, for a
    // while.
    share_ = 1.0;
    hold_until_ = now.wall_s + (cycle ? kCycleHoldS : kHoldS);
  } else if (now.wall_s < hold_until_) {
    share_ = 1.0;
  } else if (d_ <= 0) {
    // The CPU route's cost not known yet: a little of it, to measure.
    if (share_ >= 1.0) share_ = 1.0 - kProbeStep;
  } else {
    // Damped: half-way to the model's balance each window, and never quite 0
    // or 1, so that both rates keep being measured.
    const double balance = G * (o + d_) / (cpu_util_ * cpu_threads_ + G * d_);
    share_ = std::clamp(0.5 * share_ + 0.5 * balance, kLeastShare, kMostShare);
  }
  history_.push_back(share_);
  last_ = now;
}

void RouteSteering::fix(double share) {
  std::lock_guard lk(m_);
  adaptive_ = false;
  share_ = start_share_ = std::clamp(share, 0.0, 1.0);
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

}  // namespace imgpipe::codecs
