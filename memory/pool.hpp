// A pool of page-locked host blocks with a byte budget, size classes, reuse
// guarded by CUDA events, statistics, a leak tracker and the fallback chain.
//
//   PinnedPool pool({.kind = MemoryKind::write_combined, .budget_bytes = 1 << 30});
//   pool.reserve({slot_bytes, slot_bytes, slot_bytes});   // at start-up: cudaHostAlloc here
//   void* p = pool.allocate(slot_bytes);                   // hot path: a free-list hit
//   ... cudaMemcpyAsync(d, p, n, H2D, stream) ...
//   pool.deallocate(p, stream);  // reusable once the work queued on `stream` so far is done
//
// Size classes: powers of two from 4 KiB to 1 MiB, then quarter-octave steps
// (2^(k + i/4), rounded up to 4 KiB): at most ~19% slack for large blocks
// instead of up to 50% with powers of two.
//
// Fallback chain (fallback_chain()): when a new block cannot be had in the
// requested kind (allocation failure, device cannot map, or the budget), the
// pool tries the next kind: write_combined -> pinned -> host_registered ->
// pageable (portable -> host_registered|portable -> pageable, mapped ->
// host_registered|mapped -> pageable). Each step taken is counted, logged once
// per pool with its reason (spdlog::warn), and listed by fallbacks(). A kind
// that failed for a reason other than the budget is not asked again (no
// failing cudaHostAlloc on every request) until trim() or retry_failed_kinds().
// On the host backend (device -1, a build without CUDA, or no CUDA device)
// page-locked kinds fail with the reason "no CUDA device (...)" and the chain
// goes straight to pageable. With fallback = false the first failure throws
// AllocationError instead.
//
// Budget: bytes (by size class) held in page-locked blocks — live, free and
// waiting on events. For a pool whose kind is pageable the budget counts
// pageable blocks instead. Pageable fallback blocks of a page-locked pool are
// outside the budget (they are not the scarce resource). Before a budget
// failure the pool frees idle free blocks to make room.
//
// Thread-safe (one mutex). Blocks handed out stay owned by the pool: the
// destructor frees every block, including leaked ones (reported first).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"
#include "imgpipe/memory/resources.hpp"

namespace imgpipe::memory {

// Where an allocation was made, for the leak report. Like std::source_location
// (which clang 14 with libstdc++ 12 lacks), built from the compiler builtins
// that gcc and clang both evaluate at the call site of a default argument.
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


// The kinds tried for a request of `first`, `first` included, in order.
std::vector<MemoryKind> fallback_chain(MemoryKind first);

struct PoolOptions {
  MemoryKind kind = MemoryKind::pinned;  // the kind asked for (start of the chain)
  // PinnedResource::portable and/or PinnedResource::mapped, added to every
  // page-locked step (e.g. write_combined + mapped for zero-copy staging,
  // write_combined + portable for staging shared by several GPUs).
  unsigned extra_flags = 0;
  std::size_t budget_bytes = 0;  // 0: no budget
  bool fallback = true;          // false: a failure of `kind` throws AllocationError
  bool track = false;            // record each live block's allocation site (leak_report)
  // -1: host backend (no CUDA call at all). >= 0: page-locked kinds are used
  // when CUDA has a device; blocks are allocated in the calling thread's
  // current context (page-locked memory is visible to every device under
  // unified addressing; use kind portable to be explicit), and mapped blocks
  // get the current device's address. The pool never changes the current device.
  int device = 0;
  std::string name = "pinned pool";  // in log lines and errors
};

// No memory of the requested kind (fallback off), or none of any kind in the
// chain. Names the kind, the size, the budget and why.
class AllocationError : public Error {
 public:
  AllocationError(const std::string& pool, MemoryKind kind, std::size_t bytes, std::size_t budget,
                  std::size_t held, std::string reason, bool fallback);
  MemoryKind kind() const noexcept { return kind_; }
  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t budget() const noexcept { return budget_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  MemoryKind kind_;
  std::size_t bytes_;
  std::size_t budget_;
  std::string reason_;
};

// One step of the chain as taken by this pool: `count` new blocks (`bytes` by
// size class in total) went from `from` to `to`; `reason` is the first
// failure's.
struct FallbackRecord {
  MemoryKind from = MemoryKind::pinned;
  MemoryKind to = MemoryKind::pageable;
  std::string reason;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

// A block as handed out.
struct PoolBlock {
  void* host = nullptr;
  void* device = nullptr;      // device address for mapped blocks, else nullptr
  std::size_t bytes = 0;       // as requested
  std::size_t capacity = 0;    // its size class (usable bytes)
  MemoryKind kind = MemoryKind::pageable;  // what it really is, after any fallback
  unsigned flags = 0;          // cudaHostAlloc / cudaHostRegister flags
  bool cpu_readable() const noexcept { return kind != MemoryKind::write_combined; }
};

struct PoolStats {
  std::size_t pinned_bytes = 0;    // page-locked bytes held now (live + free + pending), by size class
  std::size_t pinned_peak = 0;     // the most pinned_bytes ever
  std::size_t pageable_bytes = 0;  // pageable bytes held now
  std::size_t budget_bytes = 0;    // 0: none
  std::size_t live_bytes = 0, free_bytes = 0, pending_bytes = 0;
  std::size_t live_blocks = 0, free_blocks = 0, pending_blocks = 0;
  std::uint64_t requests = 0;         // allocate() calls that returned a block
  std::uint64_t hits = 0;             // served from the free list
  std::uint64_t misses = 0;           // needed a new allocation (reserve() not counted)
  std::uint64_t fallbacks = 0;        // chain steps taken by new allocations
  std::uint64_t failures = 0;         // allocate() calls that threw AllocationError
  std::uint64_t reserved_blocks = 0;  // blocks made by reserve()
  std::uint64_t evicted_blocks = 0;   // free blocks released to stay in the budget
  std::uint64_t trimmed_bytes = 0;    // released by trim(), in total
  std::array<std::size_t, memory_kind_count> bytes_by_kind{};  // held now, per kind
  std::size_t bytes(MemoryKind k) const noexcept { return bytes_by_kind[static_cast<std::size_t>(k)]; }
};

class PinnedPool {
 public:
  explicit PinnedPool(PoolOptions options = {});
  // Waits for blocks still guarded by events, reports leaks (spdlog::warn,
  // with allocation sites when track is on) and frees every block.
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // A block of at least `bytes`, aligned to `alignment` (a power of two up to
  // 4096; blocks are page-aligned). Throws AllocationError (see above),
  // std::invalid_argument for a bad alignment, CudaError when polling an event
  // reports an earlier asynchronous failure.
  void* allocate(std::size_t bytes, std::size_t alignment = 256,
                 SourceSite where = SourceSite::current());
  PoolBlock allocate_block(std::size_t bytes, std::size_t alignment = 256,
                           SourceSite where = SourceSite::current());

  // Returns the block to the free list now: the caller promises no GPU work
  // still uses it. Unknown pointers are logged and ignored (never throws, so
  // Allocation<PinnedPool> works).
  void deallocate(void* p, std::size_t bytes = 0, std::size_t alignment = 256) noexcept;
  // Returns the block once the work queued on `stream` so far has completed
  // (an event recorded now, polled with cudaEventQuery on later calls). On the
  // host backend (stream device -1): at once. Throws std::invalid_argument for
  // an unknown pointer, CudaError.
  void deallocate(void* p, const gpu::Stream& stream);
  // The same with an event the caller recorded; the pool takes it over. An
  // empty or unrecorded event means "now".
  void deallocate(void* p, gpu::Event&& done);

  // Allocates one block per size now (start-up), onto the free list, so that
  // later requests of those sizes are hits: no cudaHostAlloc on the hot path.
  // Follows the fallback chain; throws like allocate().
  void reserve(std::span<const std::size_t> sizes);
  void reserve(std::initializer_list<std::size_t> sizes) { reserve(std::span(sizes.begin(), sizes.size())); }

  // Moves blocks whose events have completed to the free list; returns their bytes.
  std::size_t reclaim();
  // Frees every free block (after reclaim()) and forgets failed kinds;
  // returns the bytes released. Blocks in use or still guarded stay.
  std::size_t trim();
  // Forgets kinds that failed, so the next request asks CUDA again.
  void retry_failed_kinds();

  PoolStats stats() const;
  std::vector<FallbackRecord> fallbacks() const;
  // Empty when nothing is live; else one line per live block: size, kind and
  // (with track) file:line and function of its allocate() call.
  std::string leak_report() const;

  const PoolOptions& options() const noexcept;
  // True when page-locked kinds cannot be used here (see above).
  bool host_backend() const noexcept;
  // The kind / device address of a live block; throws std::invalid_argument
  // for a pointer the pool did not hand out. device_pointer is nullptr for
  // blocks that are not mapped.
  MemoryKind kind_of(const void* p) const;
  void* device_pointer(const void* p) const;

  // The size class (capacity) for a request of `bytes`.
  static std::size_t size_class(std::size_t bytes) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace imgpipe::memory
