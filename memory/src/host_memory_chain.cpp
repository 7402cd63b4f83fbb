#include "memory/host_memory_chain.hpp"

#include <utility>

#include "memory/limiting_adaptor.hpp"

namespace imgpipe::memory {
namespace {

// Why no page-locked kind can be used here, or "" when they can.
std::string host_backend_reason(int device) {
  if (device < 0) return "no CUDA device (the host backend was selected)";
  std::string why(pinned_unavailable_reason());
  if (!why.empty() && why.rfind("no CUDA device", 0) != 0) why = "no CUDA device (" + why + ")";
  return why;
}

// cudaHostAlloc flags for a cudaHostAlloc step of kind `k` with `extra` flags.
unsigned pinned_flags(MemoryKind k, unsigned extra) {
  unsigned f = extra;
  if (k == MemoryKind::write_combined) f |= PinnedResource::write_combined;
  if (k == MemoryKind::portable) f |= PinnedResource::portable;
  if (k == MemoryKind::mapped) f |= PinnedResource::mapped;
  return f;
}

// cudaHostRegister flags of the registered step in the chain of `first`
// (HostRegisteredResource's portable/mapped share PinnedResource's values).
unsigned registered_flags(MemoryKind first, unsigned extra) {
  unsigned f = extra;
  if (first == MemoryKind::portable) f |= HostRegisteredResource::portable;
  if (first == MemoryKind::mapped) f |= HostRegisteredResource::mapped;
  return f;
}

}  // namespace

// The page-locked kinds of the chain, counted, within the budget. Members in
// dependency order: each refers only to members declared above it.
struct HostMemoryChain::PageLocked {
  PinnedResource first;   // the kind asked for (unused when that is host_registered)
  PinnedResource plain;   // default pinned, the step after write_combined
  HostRegisteredResource registered;
  FallbackResource kinds;
  StatisticsAdaptor<FallbackResource> counted{kinds};
  using Budget = LimitingAdaptor<StatisticsAdaptor<FallbackResource>>;
  Budget budgeted;

  PageLocked(const HostChainOptions& o, unsigned extra)
      : first(pinned_flags(o.kind, extra)),
        plain(pinned_flags(MemoryKind::pinned, extra)),
        registered(registered_flags(o.kind, extra)),
        kinds(o.name, steps(o.kind), o.fallback),
        budgeted(counted, o.budget_bytes ? o.budget_bytes : Budget::unlimited) {}

  std::vector<FallbackStep> steps(MemoryKind requested) {
    std::vector<FallbackStep> v;
    for (MemoryKind k : fallback_chain(requested)) {
      if (k == MemoryKind::pageable) continue;  // outside the budget: the outer chain's last step
      if (k == MemoryKind::host_registered) {
        v.push_back({k, registered, registered.is_mapped(), {}});
      } else {
        PinnedResource& r = k == requested ? first : plain;
        // Named by what it really is (pinned + the mapped flag is mapped memory).
        v.push_back({r.kind(), r, r.is_mapped(), {}});
      }
    }
    return v;
  }
};

HostMemoryChain::HostMemoryChain(HostChainOptions options) : opt_(std::move(options)) {
  const unsigned extra = opt_.extra_flags & (PinnedResource::portable | PinnedResource::mapped);
  std::vector<FallbackStep> steps;
  if (is_page_locked(opt_.kind)) {
    const std::string why = host_backend_reason(opt_.device);
    host_backend_ = !why.empty();
    locked_ = std::make_unique<PageLocked>(opt_, extra);
    steps.push_back({locked_->kinds.requested(), locked_->budgeted, false, why});
  } else {
    host_backend_ = !host_backend_reason(opt_.device).empty();
  }
  steps.push_back({MemoryKind::pageable, pageable_, false, {}});
  chain_ = std::make_unique<FallbackResource>(opt_.name, std::move(steps), opt_.fallback);
}

HostMemoryChain::~HostMemoryChain() {
  chain_.reset();  // frees what is still live, through the page-locked part
  locked_.reset();
}

void* HostMemoryChain::allocate(std::size_t bytes, std::size_t alignment) { return chain_->allocate(bytes, alignment); }

void HostMemoryChain::deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  chain_->deallocate(p, bytes, alignment);
}

MemoryKind HostMemoryChain::kind_of(const void* p) const {
  if (locked_ && locked_->kinds.owns(p)) return locked_->kinds.kind_of(p);
  return chain_->kind_of(p);
}

void* HostMemoryChain::device_pointer(const void* p) const {
  if (locked_ && locked_->kinds.owns(p)) return locked_->kinds.device_pointer(p);
  return chain_->device_pointer(p);
}

AllocationStats HostMemoryChain::page_locked() const { return locked_ ? locked_->counted.stats() : AllocationStats{}; }

std::vector<FallbackRecord> HostMemoryChain::fallbacks() const {
  std::vector<FallbackRecord> r = locked_ ? locked_->kinds.records() : std::vector<FallbackRecord>{};
  for (auto& rec : chain_->records()) r.push_back(std::move(rec));
  return r;
}

std::uint64_t HostMemoryChain::fallback_count() const {
  return (locked_ ? locked_->kinds.fallbacks() : 0) + chain_->fallbacks();
}

std::uint64_t HostMemoryChain::failures() const { return chain_->failures(); }

}  // namespace imgpipe::memory
