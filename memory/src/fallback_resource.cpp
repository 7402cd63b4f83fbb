#include "memory/fallback_resource.hpp"

#include <mutex>
#include <new>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <spdlog/logger.h>

#include "imgpipe/log.hpp"

namespace imgpipe::memory {
namespace {

constexpr std::size_t kMaxAlignment = 4096;  // what every kind honours (cudaHostAlloc is page-aligned)

std::string describe(const std::exception& e) {
  if (const auto* a = dynamic_cast<const AllocationError*>(&e)) return a->reason();  // a nested chain
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

struct FallbackResource::Impl {
  struct Live {
    std::size_t step;
    std::size_t bytes;
    std::size_t alignment;
    void* device;
  };

  std::string name;
  std::vector<FallbackStep> steps;
  bool fallback = true;
  std::vector<std::string> failed;  // per step: why it is not asked again ("" = ask)

  mutable std::mutex m;
  std::unordered_map<const void*, Live> live;
  std::vector<FallbackRecord> records;
  std::uint64_t fallbacks = 0;
  std::uint64_t failures = 0;

  // Asks step `i` for a block; on success fills `out` and returns "", else the reason.
  std::string try_step(std::size_t i, std::size_t bytes, std::size_t alignment, void*& p, Live& out) {
    const FallbackStep& s = steps[i];
    if (!s.unavailable.empty()) return s.unavailable;
    if (!failed[i].empty()) return failed[i];
    try {
      p = s.resource.allocate(bytes, alignment);
    } catch (const BudgetError& e) {
      return e.what();  // the budget may have room next time
    } catch (const std::exception& e) {
      std::string why = describe(e);
      if (is_page_locked(s.kind)) failed[i] = why;
      return why;
    }
    out = Live{i, bytes, alignment, nullptr};
    if (s.mapped) {
      try {
        out.device = memory::device_pointer(p);
      } catch (const std::exception& e) {
        steps[i].resource.deallocate(p, bytes, alignment);
        failed[i] = describe(e);
        return failed[i];
      }
    }
    return {};
  }

  void note_step(std::size_t from, const std::string& reason, std::size_t bytes) {
    const MemoryKind kf = steps[from].kind, kt = steps[from + 1].kind;
    ++fallbacks;
    for (auto& r : records) {
      if (r.from == kf && r.to == kt) {
        ++r.count;
        r.bytes += bytes;
        return;
      }
    }
    records.push_back({kf, kt, reason, 1, bytes});
    imgpipe::logger()->warn(
        "{}: {} allocation of {} failed: {}; falling back to {} (further fallbacks of this step are "
        "counted, not logged)",
        name, to_string(kf), human_bytes(bytes), reason, to_string(kt));
  }

  [[noreturn]] void fail(std::size_t bytes, const std::vector<std::string>& reasons) {
    ++failures;
    std::string reason;
    if (!fallback) {
      reason = reasons.front();
    } else {
      for (std::size_t j = 0; j < reasons.size(); ++j)
        reason += fmt::format("{}{}: {}", j ? "; " : "", to_string(steps[j].kind), reasons[j]);
    }
    throw AllocationError(name, steps.front().kind, bytes, std::move(reason), fallback);
  }
};

FallbackResource::FallbackResource(std::string name, std::vector<FallbackStep> steps, bool fallback)
    : impl_(std::make_unique<Impl>()) {
  if (steps.empty()) throw std::invalid_argument("FallbackResource: a chain needs at least one step");
  impl_->name = std::move(name);
  impl_->steps = std::move(steps);
  impl_->fallback = fallback;
  impl_->failed.assign(impl_->steps.size(), {});
}

FallbackResource::~FallbackResource() {
  Impl& s = *impl_;
  if (s.live.empty()) return;
  std::size_t bytes = 0;
  for (const auto& [p, b] : s.live) bytes += b.bytes;
  imgpipe::logger()->warn("{}: {} block(s) ({}) still allocated at destruction; freeing them", s.name, s.live.size(),
                          human_bytes(bytes));
  for (const auto& [p, b] : s.live) s.steps[b.step].resource.deallocate(const_cast<void*>(p), b.bytes, b.alignment);
}

void* FallbackResource::allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kMaxAlignment)
    throw std::invalid_argument(impl_->name + ": alignment must be a power of two no larger than 4096");
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  std::vector<std::string> reasons;
  const std::size_t steps = s.fallback ? s.steps.size() : 1;
  for (std::size_t i = 0; i < steps; ++i) {
    void* p = nullptr;
    Impl::Live block{};
    std::string why = s.try_step(i, bytes, alignment, p, block);
    if (why.empty()) {
      try {
        s.live.emplace(p, block);
      } catch (...) {
        s.steps[i].resource.deallocate(p, bytes, alignment);
        throw;
      }
      for (std::size_t j = 0; j < i; ++j) s.note_step(j, reasons[j], bytes);
      return p;
    }
    reasons.push_back(std::move(why));
  }
  // Every step failed: the steps taken between them count too (an upstream
  // chain, such as HostMemoryChain's pageable step, goes on from here).
  for (std::size_t j = 0; j + 1 < reasons.size(); ++j) s.note_step(j, reasons[j], bytes);
  s.fail(bytes, reasons);
}

void FallbackResource::deallocate(void* p, std::size_t, std::size_t) noexcept {
  if (!p) return;
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  auto it = s.live.find(p);
  if (it == s.live.end()) {
    imgpipe::logger()->error("{}: deallocate of a pointer this resource did not hand out ({}); ignored", s.name, p);
    return;
  }
  // The size and alignment the step was asked for, whatever the caller passes.
  s.steps[it->second.step].resource.deallocate(p, it->second.bytes, it->second.alignment);
  s.live.erase(it);
}

bool FallbackResource::owns(const void* p) const {
  std::lock_guard lock(impl_->m);
  return impl_->live.count(p) != 0;
}

MemoryKind FallbackResource::kind_of(const void* p) const {
  std::lock_guard lock(impl_->m);
  auto it = impl_->live.find(p);
  if (it == impl_->live.end())
    throw std::invalid_argument(impl_->name + ": kind_of a pointer that is not a live block");
  return impl_->steps[it->second.step].kind;
}

void* FallbackResource::device_pointer(const void* p) const {
  std::lock_guard lock(impl_->m);
  auto it = impl_->live.find(p);
  if (it == impl_->live.end())
    throw std::invalid_argument(impl_->name + ": device_pointer of a pointer that is not a live block");
  return it->second.device;
}

std::vector<FallbackRecord> FallbackResource::records() const {
  std::lock_guard lock(impl_->m);
  return impl_->records;
}

std::uint64_t FallbackResource::fallbacks() const {
  std::lock_guard lock(impl_->m);
  return impl_->fallbacks;
}

std::uint64_t FallbackResource::failures() const {
  std::lock_guard lock(impl_->m);
  return impl_->failures;
}

MemoryKind FallbackResource::requested() const noexcept { return impl_->steps.front().kind; }
bool FallbackResource::fallback() const noexcept { return impl_->fallback; }
const std::string& FallbackResource::name() const noexcept { return impl_->name; }

}  // namespace imgpipe::memory
