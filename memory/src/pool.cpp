#include "memory/pool.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace imgpipe::memory {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kOctaveStart = std::size_t{1} << 20;  // quarter-octave classes above 1 MiB

std::string human_bytes(std::size_t b) {
  if (b >= (std::size_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(1 << 30));
  if (b >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  if (b >= (std::size_t{1} << 10)) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

// One kind of the chain with the CUDA flags it is allocated with.
struct Step {
  MemoryKind kind;
  unsigned flags;  // PinnedResource or HostRegisteredResource flags
};

std::vector<Step> make_chain(MemoryKind first, unsigned extra) {
  extra &= PinnedResource::portable | PinnedResource::mapped;
  std::vector<Step> steps;
  for (MemoryKind k : fallback_chain(first)) {
    switch (k) {
      case MemoryKind::pageable: steps.push_back({k, 0}); break;
      case MemoryKind::host_registered: {
        unsigned f = extra;  // HostRegistered portable/mapped share PinnedResource's values
        if (first == MemoryKind::portable) f |= HostRegisteredResource::portable;
        if (first == MemoryKind::mapped) f |= HostRegisteredResource::mapped;
        steps.push_back({k, f});
        break;
      }
      default: {
        unsigned f = extra;
        if (k == MemoryKind::write_combined) f |= PinnedResource::write_combined;
        if (k == MemoryKind::portable) f |= PinnedResource::portable;
        if (k == MemoryKind::mapped) f |= PinnedResource::mapped;
        // Name the step by what it really is (pinned + mapped flag is mapped memory).
        steps.push_back({PinnedResource(f).kind(), f});
      }
    }
  }
  return steps;
}

bool step_is_mapped(const Step& s) {
  if (s.kind == MemoryKind::pageable) return false;
  if (s.kind == MemoryKind::host_registered) return (s.flags & HostRegisteredResource::mapped) != 0;
  return (s.flags & PinnedResource::mapped) != 0;
}

std::string describe(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "std::bad_alloc (out of memory)";
  return e.what();
}

}  // namespace

std::vector<MemoryKind> fallback_chain(MemoryKind first) {
  using K = MemoryKind;
  switch (first) {
    case K::write_combined: return {K::write_combined, K::pinned, K::host_registered, K::pageable};
    case K::pinned: return {K::pinned, K::host_registered, K::pageable};
    case K::portable: return {K::portable, K::host_registered, K::pageable};
    case K::mapped: return {K::mapped, K::host_registered, K::pageable};
    case K::host_registered: return {K::host_registered, K::pageable};
    case K::pageable: return {K::pageable};
  }
  return {K::pageable};
}

AllocationError::AllocationError(const std::string& pool, MemoryKind kind, std::size_t bytes, std::size_t budget,
                                 std::size_t held, std::string reason, bool fallback)
    : Error(fmt::format("{}: cannot allocate {} bytes ({}) of {} host memory (budget {}, {} held): {}{}", pool, bytes,
                        human_bytes(bytes), to_string(kind),
                        budget ? fmt::format("{} bytes ({})", budget, human_bytes(budget)) : std::string("none"),
                        human_bytes(held), reason,
                        fallback ? "" : "; fallback is off (memory fallback disabled), so this is an error")),
      kind_(kind),
      bytes_(bytes),
      budget_(budget),
      reason_(std::move(reason)) {}

// ---------------------------------------------------------------- size classes
std::size_t PinnedPool::size_class(std::size_t bytes) noexcept {
  if (bytes <= kPage) return kPage;
  if (bytes <= kOctaveStart) return std::bit_ceil(bytes);
  const int k = std::bit_width(bytes) - 1;  // 2^k <= bytes < 2^(k+1)
  const std::size_t base = std::size_t{1} << k;
  if (bytes == base) return base;
  for (int i = 1; i < 4; ++i) {
    const double c = std::ldexp(std::exp2(i / 4.0), k);
    const std::size_t cls = (static_cast<std::size_t>(std::ceil(c)) + kPage - 1) / kPage * kPage;
    if (cls >= bytes) return cls;
  }
  return base << 1;
}

// ---------------------------------------------------------------- state
struct PinnedPool::Impl {
  struct Block {
    void* p = nullptr;
    void* device = nullptr;
    std::size_t capacity = 0;
    std::size_t requested = 0;
    int step = 0;  // index into chain
    SourceSite where{};
    bool tracked = false;
  };
  struct Pending {
    Block block;
    gpu::Event done;
    int event_device;  // >= -1: the pool's own event, recycled; -2: the caller's
  };

  PoolOptions opt;
  std::vector<Step> chain;
  bool host_backend = false;
  std::vector<std::string> sticky;  // per step: why it must not be asked again ("" = ask)

  mutable std::mutex m;
  std::unordered_map<void*, Block> live;
  std::map<std::pair<int, std::size_t>, std::vector<Block>> free;  // (step, capacity)
  std::deque<Pending> pending;
  std::vector<std::pair<int, gpu::Event>> spare_events;

  PoolStats st;
  std::vector<FallbackRecord> records;  // one per (from, to)

  bool budgeted(int step) const {
    return is_page_locked(chain[step].kind) || opt.kind == MemoryKind::pageable;
  }
  std::size_t held_budgeted() const { return opt.kind == MemoryKind::pageable ? st.pageable_bytes : st.pinned_bytes; }

  void account(const Block& b, bool add) {
    const MemoryKind k = chain[b.step].kind;
    std::size_t& slot = is_page_locked(k) ? st.pinned_bytes : st.pageable_bytes;
    std::size_t& per_kind = st.bytes_by_kind[static_cast<std::size_t>(k)];
    if (add) {
      slot += b.capacity;
      per_kind += b.capacity;
      st.pinned_peak = std::max(st.pinned_peak, st.pinned_bytes);
    } else {
      slot -= b.capacity;
      per_kind -= b.capacity;
    }
  }

  void* raw_allocate(const Step& s, std::size_t cap) {
    switch (s.kind) {
      case MemoryKind::pageable: return PageableResource{}.allocate(cap, kPage);
      case MemoryKind::host_registered: return HostRegisteredResource(s.flags).allocate(cap, kPage);
      default: return PinnedResource(s.flags).allocate(cap, kPage);
    }
  }
  void raw_free(const Block& b) noexcept {
    const Step& s = chain[b.step];
    switch (s.kind) {
      case MemoryKind::pageable: PageableResource{}.deallocate(b.p, b.capacity, kPage); break;
      case MemoryKind::host_registered: HostRegisteredResource(s.flags).deallocate(b.p, b.capacity, kPage); break;
      default: PinnedResource(s.flags).deallocate(b.p, b.capacity, kPage);
    }
  }
  void release(const Block& b) noexcept {
    account(b, false);
    raw_free(b);
  }

  // A new block for `step`, or the reason it cannot be had.
  // reserve() does not evict: it would only churn its own blocks.
  std::string try_new(int step, std::size_t cap, Block& out, bool allow_evict) {
    if (!sticky[step].empty()) return sticky[step];
    if (budgeted(step) && opt.budget_bytes) {
      if (allow_evict && held_budgeted() + cap > opt.budget_bytes) evict_for(cap);
      if (held_budgeted() + cap > opt.budget_bytes)
        return fmt::format("budget of {} exceeded ({} held, {} more requested)", human_bytes(opt.budget_bytes),
                           human_bytes(held_budgeted()), human_bytes(cap));
    }
    const Step& s = chain[step];
    void* p = nullptr;
    try {
      p = raw_allocate(s, cap);
    } catch (const std::exception& e) {
      // Page-locked kinds that failed are not asked again (a failing
      // cudaHostAlloc is slow and pinned memory rarely comes back by itself);
      // a failed malloc may well succeed next time.
      if (!is_page_locked(s.kind)) return describe(e);
      sticky[step] = describe(e);
      return sticky[step];
    }
    out = Block{};
    out.p = p;
    out.capacity = cap;
    out.step = step;
    if (step_is_mapped(s)) {
      try {
        out.device = memory::device_pointer(p);
      } catch (const std::exception& e) {
        raw_free(out);
        sticky[step] = describe(e);
        return sticky[step];
      }
    }
    account(out, true);
    return {};
  }

  // Frees idle free blocks that count against the budget until `cap` more fits.
  void evict_for(std::size_t cap) {
    for (auto it = free.begin(); it != free.end() && held_budgeted() + cap > opt.budget_bytes;) {
      if (!budgeted(it->first.first)) {
        ++it;
        continue;
      }
      auto& v = it->second;
      while (!v.empty() && held_budgeted() + cap > opt.budget_bytes) {
        release(v.back());
        v.pop_back();
        ++st.evicted_blocks;
      }
      it = v.empty() ? free.erase(it) : std::next(it);
    }
  }

  bool take_free(int step, std::size_t cap, Block& out) {
    auto it = free.find({step, cap});
    if (it == free.end() || it->second.empty()) return false;
    out = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) free.erase(it);
    return true;
  }

  void put_free(Block b) {
    b.tracked = false;
    b.requested = 0;
    free[{b.step, b.capacity}].push_back(b);
  }

  void note_fallback(int from, int to, const std::string& reason, std::size_t cap, std::size_t bytes) {
    const MemoryKind kf = chain[from].kind, kt = chain[to].kind;
    ++st.fallbacks;
    for (auto& r : records) {
      if (r.from == kf && r.to == kt) {
        ++r.count;
        r.bytes += cap;
        return;
      }
    }
    records.push_back({kf, kt, reason, 1, cap});
    spdlog::warn("{}: {} allocation of {} failed: {}; falling back to {} (further fallbacks of this step are "
                 "counted, not logged)",
                 opt.name, to_string(kf), human_bytes(bytes), reason, to_string(kt));
  }

  // The chain walk shared by allocate() and reserve().
  Block obtain(std::size_t bytes, bool from_free_list, bool* hit) {
    const std::size_t cap = size_class(bytes);
    std::vector<std::string> reasons;
    const int steps = opt.fallback ? static_cast<int>(chain.size()) : 1;
    for (int i = 0; i < steps; ++i) {
      Block b;
      if (from_free_list && take_free(i, cap, b)) {
        *hit = true;
        return b;
      }
      std::string why = try_new(i, cap, b, from_free_list);
      if (why.empty()) {
        for (int j = 0; j < i; ++j) note_fallback(j, j + 1, reasons[j], cap, bytes);
        *hit = false;
        return b;
      }
      reasons.push_back(std::move(why));
    }
    ++st.failures;
    std::string reason;
    if (!opt.fallback) {
      reason = reasons.front();
    } else {
      for (std::size_t j = 0; j < reasons.size(); ++j)
        reason += fmt::format("{}{}: {}", j ? "; " : "", to_string(chain[j].kind), reasons[j]);
    }
    throw AllocationError(opt.name, opt.kind, bytes, opt.budget_bytes, held_budgeted(), std::move(reason),
                          opt.fallback);
  }

  std::size_t reclaim_locked() {
    std::size_t bytes = 0;
    for (auto it = pending.begin(); it != pending.end();) {
      if (!it->done.ready()) {
        ++it;
        continue;
      }
      bytes += it->block.capacity;
      put_free(it->block);
      if (it->event_device >= -1) spare_events.emplace_back(it->event_device, std::move(it->done));
      it = pending.erase(it);
    }
    return bytes;
  }

  Block take_live(void* p) {
    auto it = live.find(p);
    if (it == live.end())
      throw std::invalid_argument(fmt::format("{}: deallocate of a pointer the pool did not hand out ({})", opt.name, p));
    Block b = it->second;
    live.erase(it);
    return b;
  }
};

// ---------------------------------------------------------------- PinnedPool
PinnedPool::PinnedPool(PoolOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.opt = std::move(options);
  s.chain = make_chain(s.opt.kind, s.opt.extra_flags);
  s.sticky.assign(s.chain.size(), {});
  s.st.budget_bytes = s.opt.budget_bytes;
  std::string why;
  if (s.opt.device < 0) {
    why = "no CUDA device (the host backend was selected)";
  } else if (!pinned_unavailable_reason().empty()) {
    why = std::string(pinned_unavailable_reason());
    if (why.rfind("no CUDA device", 0) != 0) why = "no CUDA device (" + why + ")";
  }
  if (!why.empty()) {
    // No page-locked kind can work here: the chain is the requested kind
    // (failing with `why`, so that the step is counted and logged) and pageable.
    s.host_backend = true;
    if (s.chain.size() > 1) s.chain = {s.chain.front(), s.chain.back()};
    s.sticky.assign(s.chain.size(), {});
    for (std::size_t i = 0; i < s.chain.size(); ++i)
      if (is_page_locked(s.chain[i].kind)) s.sticky[i] = why;
  }
}

PinnedPool::~PinnedPool() {
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  for (auto& pe : s.pending) {
    try {
      pe.done.synchronize();
    } catch (const std::exception& e) {
      spdlog::warn("{}: waiting for a block's event at shutdown: {}", s.opt.name, e.what());
    }
    s.release(pe.block);
  }
  s.pending.clear();
  for (auto& [key, v] : s.free)
    for (const auto& b : v) s.release(b);
  s.free.clear();
  if (!s.live.empty()) {
    // Cannot call leak_report() (it locks): build it here.
    std::size_t bytes = 0;
    for (const auto& [p, b] : s.live) bytes += b.capacity;
    spdlog::warn("{}: {} block(s) ({}) still allocated at destruction; freeing them{}", s.opt.name, s.live.size(),
                 human_bytes(bytes), s.opt.track ? ":" : " (set track=true to record where they were allocated)");
    if (s.opt.track)
      for (const auto& [p, b] : s.live)
        spdlog::warn("  {} {} at {}:{} in {}", human_bytes(b.requested), to_string(s.chain[b.step].kind),
                     b.where.file_name(), b.where.line_number(), b.where.function_name());
    for (const auto& [p, b] : s.live) s.release(b);
    s.live.clear();
  }
}

const PoolOptions& PinnedPool::options() const noexcept { return impl_->opt; }
bool PinnedPool::host_backend() const noexcept { return impl_->host_backend; }

PoolBlock PinnedPool::allocate_block(std::size_t bytes, std::size_t alignment, SourceSite where) {
  if (alignment == 0 || (alignment & (alignment - 1)) || alignment > kPage)
    throw std::invalid_argument("PinnedPool: alignment must be a power of two no larger than 4096");
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  s.reclaim_locked();
  bool hit = false;
  Impl::Block b = s.obtain(bytes, true, &hit);
  ++s.st.requests;
  ++(hit ? s.st.hits : s.st.misses);
  b.requested = bytes;
  if (s.opt.track) {
    b.where = where;
    b.tracked = true;
  }
  s.live.emplace(b.p, b);
  const Step& step = s.chain[b.step];
  return PoolBlock{b.p, b.device, bytes, b.capacity, step.kind, step.flags};
}

void* PinnedPool::allocate(std::size_t bytes, std::size_t alignment, SourceSite where) {
  return allocate_block(bytes, alignment, where).host;
}

void PinnedPool::deallocate(void* p, std::size_t, std::size_t) noexcept {
  if (!p) return;
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  auto it = s.live.find(p);
  if (it == s.live.end()) {
    spdlog::error("{}: deallocate of a pointer the pool did not hand out ({}); ignored", s.opt.name, p);
    return;
  }
  s.put_free(it->second);
  s.live.erase(it);
}

void PinnedPool::deallocate(void* p, const gpu::Stream& stream) {
  if (!p) return;
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  Impl::Block b = s.take_live(p);
  if (stream.device() < 0) {
    s.put_free(b);
    return;
  }
  gpu::Event e;
  auto spare = std::find_if(s.spare_events.begin(), s.spare_events.end(),
                            [&](const auto& pr) { return pr.first == stream.device(); });
  try {
    if (spare != s.spare_events.end()) {
      e = std::move(spare->second);
      s.spare_events.erase(spare);
    } else {
      e = gpu::Event(stream.device(), false);
    }
    e.record(stream);
  } catch (...) {
    s.live.emplace(b.p, b);  // still the caller's: nothing changed
    throw;
  }
  s.pending.push_back({b, std::move(e), stream.device()});
}

void PinnedPool::deallocate(void* p, gpu::Event&& done) {
  if (!p) return;
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  Impl::Block b = s.take_live(p);
  if (!done.get() || !done.recorded()) {
    s.put_free(b);
    return;
  }
  s.pending.push_back({b, std::move(done), -2});
}

void PinnedPool::reserve(std::span<const std::size_t> sizes) {
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  for (std::size_t bytes : sizes) {
    bool hit = false;
    Impl::Block b = s.obtain(bytes, false, &hit);
    ++s.st.reserved_blocks;
    s.put_free(b);
  }
}

std::size_t PinnedPool::reclaim() {
  std::lock_guard lock(impl_->m);
  return impl_->reclaim_locked();
}

std::size_t PinnedPool::trim() {
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  s.reclaim_locked();
  std::size_t bytes = 0;
  for (auto& [key, v] : s.free)
    for (const auto& b : v) {
      bytes += b.capacity;
      s.release(b);
    }
  s.free.clear();
  s.st.trimmed_bytes += bytes;
  if (!s.host_backend) std::fill(s.sticky.begin(), s.sticky.end(), std::string());
  return bytes;
}

void PinnedPool::retry_failed_kinds() {
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  if (!s.host_backend) std::fill(s.sticky.begin(), s.sticky.end(), std::string());
}

PoolStats PinnedPool::stats() const {
  const Impl& s = *impl_;
  std::lock_guard lock(s.m);
  PoolStats r = s.st;
  r.live_blocks = s.live.size();
  for (const auto& [p, b] : s.live) r.live_bytes += b.capacity;
  for (const auto& [key, v] : s.free) {
    r.free_blocks += v.size();
    r.free_bytes += v.size() * key.second;
  }
  r.pending_blocks = s.pending.size();
  for (const auto& pe : s.pending) r.pending_bytes += pe.block.capacity;
  return r;
}

std::vector<FallbackRecord> PinnedPool::fallbacks() const {
  std::lock_guard lock(impl_->m);
  return impl_->records;
}

std::string PinnedPool::leak_report() const {
  const Impl& s = *impl_;
  std::lock_guard lock(s.m);
  if (s.live.empty()) return {};
  std::vector<const Impl::Block*> blocks;
  std::size_t bytes = 0;
  for (const auto& [p, b] : s.live) {
    blocks.push_back(&b);
    bytes += b.capacity;
  }
  std::sort(blocks.begin(), blocks.end(), [](const Impl::Block* a, const Impl::Block* b) {
    return std::make_tuple(std::string_view(a->where.file_name()), a->where.line_number(), a->p) <
           std::make_tuple(std::string_view(b->where.file_name()), b->where.line_number(), b->p);
  });
  std::ostringstream os;
  os << fmt::format("{}: {} block(s) ({}) still allocated", s.opt.name, blocks.size(), human_bytes(bytes));
  if (!s.opt.track) os << " (set track=true to record where they were allocated)";
  os << ":\n";
  for (const Impl::Block* b : blocks) {
    os << fmt::format("  {} bytes ({} class) of {} at {}", b->requested, human_bytes(b->capacity),
                      to_string(s.chain[b->step].kind), b->p);
    if (b->tracked)
      os << fmt::format(", allocated at {}:{} in {}", b->where.file_name(), b->where.line_number(), b->where.function_name());
    os << "\n";
  }
  return os.str();
}

MemoryKind PinnedPool::kind_of(const void* p) const {
  std::lock_guard lock(impl_->m);
  auto it = impl_->live.find(const_cast<void*>(p));
  if (it == impl_->live.end()) throw std::invalid_argument("PinnedPool::kind_of: not a live block of this pool");
  return impl_->chain[it->second.step].kind;
}

void* PinnedPool::device_pointer(const void* p) const {
  std::lock_guard lock(impl_->m);
  auto it = impl_->live.find(const_cast<void*>(p));
  if (it == impl_->live.end()) throw std::invalid_argument("PinnedPool::device_pointer: not a live block of this pool");
  return it->second.device;
}

}  // namespace imgpipe::memory
