#include "memory/fault_injection.hpp"

#include <array>
#include <atomic>
#include <deque>
#include <algorithm>
#include <mutex>
#include <new>
#include <string>

#include "imgpipe/error.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
static_assert(cudaErrorMemoryAllocation == 2, "fault injection reports cudaErrorMemoryAllocation as code 2");
static_assert(cudaErrorInvalidResourceHandle == 400, "fault injection reports cudaErrorInvalidResourceHandle as code 400");
#endif

namespace imgpipe::memory::fault_injection {
namespace {

// An allocation let through before the failures queued after it.
constexpr int kPass = -1;

struct State {
  std::mutex m;
  // Pending entries per kind, in order: a Failure, or kPass (one success).
  std::array<std::deque<int>, memory_kind_count> pending;
  int releases = 0;  // pending release failures
  // Fast path: allocations check this before taking the lock.
  std::atomic<int> total{0};
  std::atomic<long long> fired{0};
};

State& state() {
  static State s;
  return s;
}

}  // namespace

void fail_next(MemoryKind kind, int count, Failure failure, int skip) {
  if (count <= 0) return;
  State& s = state();
  std::lock_guard lock(s.m);
  auto& q = s.pending[static_cast<std::size_t>(kind)];
  for (int i = 0; i < skip; ++i) q.push_back(kPass);
  for (int i = 0; i < count; ++i) q.push_back(static_cast<int>(failure));
  s.total += count + std::max(skip, 0);
}

int pending(MemoryKind kind) noexcept {
  State& s = state();
  std::lock_guard lock(s.m);
  const auto& q = s.pending[static_cast<std::size_t>(kind)];
  return static_cast<int>(std::count_if(q.begin(), q.end(), [](int e) { return e != kPass; }));
}

void fail_next_release(int count) {
  if (count <= 0) return;
  State& s = state();
  std::lock_guard lock(s.m);
  s.releases += count;
  s.total += count;
}

int pending_releases() noexcept {
  State& s = state();
  std::lock_guard lock(s.m);
  return s.releases;
}

void check_release() {
  State& s = state();
  if (s.total.load(std::memory_order_relaxed) == 0) return;
  {
    std::lock_guard lock(s.m);
    if (s.releases == 0) return;
    --s.releases;
    --s.total;
    ++s.fired;
  }
  // cudaErrorInvalidResourceHandle: what cudaEventRecord answers for a
  // stream of another device.
  throw CudaError("staging slot release (fault_injection)", __FILE__, __LINE__, 400, "cudaErrorInvalidResourceHandle",
                  "invalid resource handle (injected)");
}

long long fired() noexcept { return state().fired.load(); }

void clear() noexcept {
  State& s = state();
  std::lock_guard lock(s.m);
  for (auto& q : s.pending) q.clear();
  s.releases = 0;
  s.total = 0;
  s.fired = 0;
}

std::size_t check(MemoryKind kind, std::size_t bytes) {
  State& s = state();
  if (s.total.load(std::memory_order_relaxed) == 0) return bytes;
  Failure f;
  {
    std::lock_guard lock(s.m);
    auto& q = s.pending[static_cast<std::size_t>(kind)];
    if (q.empty()) return bytes;
    const int e = q.front();
    q.pop_front();
    --s.total;
    if (e == kPass) return bytes;
    f = static_cast<Failure>(e);
    ++s.fired;
  }
  if (f == Failure::real_call) return impossible_bytes;
  if (f == Failure::bad_alloc) throw std::bad_alloc();
  const std::string call = "allocation of " + std::to_string(bytes) + " bytes of " + std::string(to_string(kind)) +
                           " memory (fault_injection)";
  throw CudaError(call, __FILE__, __LINE__, 2, "cudaErrorMemoryAllocation", "out of memory (injected)");
}

}  // namespace imgpipe::memory::fault_injection
