#include "memory/fault_injection.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <new>
#include <string>

#include "imgpipe/error.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>
static_assert(cudaErrorMemoryAllocation == 2, "fault injection reports cudaErrorMemoryAllocation as code 2");
#endif

namespace imgpipe::memory::fault_injection {
namespace {

struct State {
  std::mutex m;
  // Pending failures per kind, in order (each entry is one failure).
  std::array<std::deque<Failure>, memory_kind_count> pending;
  // Fast path: allocations check this before taking the lock.
  std::atomic<int> total{0};
  std::atomic<long long> fired{0};
};

State& state() {
  static State s;
  return s;
}

}  // namespace

void fail_next(MemoryKind kind, int count, Failure failure) {
  if (count <= 0) return;
  State& s = state();
  std::lock_guard lock(s.m);
  auto& q = s.pending[static_cast<std::size_t>(kind)];
  for (int i = 0; i < count; ++i) q.push_back(failure);
  s.total += count;
}

int pending(MemoryKind kind) noexcept {
  State& s = state();
  std::lock_guard lock(s.m);
  return static_cast<int>(s.pending[static_cast<std::size_t>(kind)].size());
}

long long fired() noexcept { return state().fired.load(); }

void clear() noexcept {
  State& s = state();
  std::lock_guard lock(s.m);
  for (auto& q : s.pending) q.clear();
  s.total = 0;
  s.fired = 0;
}

void check(MemoryKind kind, std::size_t bytes) {
  State& s = state();
  if (s.total.load(std::memory_order_relaxed) == 0) return;
  Failure f;
  {
    std::lock_guard lock(s.m);
    auto& q = s.pending[static_cast<std::size_t>(kind)];
    if (q.empty()) return;
    f = q.front();
    q.pop_front();
    --s.total;
    ++s.fired;
  }
  if (f == Failure::bad_alloc) throw std::bad_alloc();
  const std::string call = "allocation of " + std::to_string(bytes) + " bytes of " + std::string(to_string(kind)) +
                           " memory (fault_injection)";
  throw CudaError(call, __FILE__, __LINE__, 2, "cudaErrorMemoryAllocation", "out of memory (injected)");
}

}  // namespace imgpipe::memory::fault_injection
