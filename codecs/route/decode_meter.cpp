#include "codecs/route/decode_meter.hpp"

namespace imgpipe::codecs {

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

}  // namespace imgpipe::codecs
