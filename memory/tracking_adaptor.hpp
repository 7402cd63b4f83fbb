// TrackingAdaptor: a debug tracker that records, for each live block, its
// size and where it was allocated (RMM's tracking_resource_adaptor), and
// lists the blocks still live as a leak report.
//
//   TrackingAdaptor<FixedSlotResource> tracked(slots, "staging");
//   void* p = tracked.allocate(n, 4096);   // records this file:line and function
//   ...
//   tracked.leak_report();                 // "" when every block came back
//
// The site is that of the call to TrackingAdaptor::allocate (a default
// argument evaluated by the caller); through a HostResourceRef it is the
// reference's forwarding call, so call the adaptor itself where the site
// matters. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "memory/resource_ref.hpp"

namespace imgpipe::memory {

// Where an allocation was made. Like std::source_location (which clang 14 with
// libstdc++ 12 lacks), built from the compiler builtins that gcc and clang
// both evaluate at the call site of a default argument.
struct SourceSite {
  const char* file = "";
  int line = 0;
  const char* function = "";
  static constexpr SourceSite current(const char* f = __builtin_FILE(), int l = __builtin_LINE(),
                                      const char* fn = __builtin_FUNCTION()) noexcept {
    return SourceSite{f, l, fn};
  }
  const char* file_name() const noexcept { return file; }
  int line_number() const noexcept { return line; }
  const char* function_name() const noexcept { return function; }
};

// The tracker's book of live blocks (the part of TrackingAdaptor that does not
// depend on the upstream's type). Thread-safe.
class AllocationLedger {
 public:
  explicit AllocationLedger(std::string name);
  ~AllocationLedger();
  AllocationLedger(const AllocationLedger&) = delete;
  AllocationLedger& operator=(const AllocationLedger&) = delete;

  // Records a live block. Throws std::bad_alloc.
  void add(void* p, std::size_t bytes, SourceSite where);
  // Forgets a block; false (and an error logged) for a pointer never added.
  bool remove(void* p) noexcept;
  std::size_t live_blocks() const;
  std::size_t live_bytes() const;
  // Empty when nothing is live; else a header line ("<name>: N block(s) (X)
  // still allocated:") and one line per live block, ordered by site:
  // "  <bytes> bytes at <address>, allocated at <file>:<line> in <function>".
  std::string report() const;
  const std::string& name() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

template <HostResource Upstream>
class TrackingAdaptor {
 public:
  // Does not own `upstream`: it must outlive the adaptor. `name` starts the
  // leak report's lines.
  explicit TrackingAdaptor(Upstream& upstream, std::string name = "tracked memory")
      : upstream_(upstream), ledger_(std::move(name)) {}
  // Blocks still live are reported (imgpipe::logger(), warn, with their sites) but not
  // freed: the tracker does not own them.
  ~TrackingAdaptor() = default;
  TrackingAdaptor(const TrackingAdaptor&) = delete;
  TrackingAdaptor& operator=(const TrackingAdaptor&) = delete;

  // Throws what the upstream throws, std::bad_alloc (the block is returned
  // to the upstream first).
  void* allocate(std::size_t bytes, std::size_t alignment = 256, SourceSite where = SourceSite::current()) {
    void* p = upstream_.allocate(bytes, alignment);
    try {
      ledger_.add(p, bytes, where);
    } catch (...) {
      upstream_.deallocate(p, bytes, alignment);
      throw;
    }
    return p;
  }

  // Forwards to the upstream; a pointer the tracker never saw is logged.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept {
    ledger_.remove(p);
    upstream_.deallocate(p, bytes, alignment);
  }

  std::string leak_report() const { return ledger_.report(); }
  std::size_t live_blocks() const { return ledger_.live_blocks(); }
  std::size_t live_bytes() const { return ledger_.live_bytes(); }
  Upstream& upstream() const noexcept { return upstream_; }

 private:
  Upstream& upstream_;
  AllocationLedger ledger_;
};

}  // namespace imgpipe::memory
