// FramePool: the blocks video decoders write their frames into, kept and
// reused from file to file, and page-locked when asked, so that the staging
// copy of a frame is a DMA straight out of the decoder's buffer (no CPU copy
// into the write-combined slot: docs/video.md, "The frames' memory" and
// "Frames decoded into page-locked memory").
//
//   auto pool = std::make_shared<FramePool>(FramePoolOptions{.device = 0, .budget_bytes = 2u << 30});
//   FramePool::Block b = pool->allocate(bytes);   // an idle block of that size, else a new one
//   ... decode into b.data; if (b.direct) copy it to the device with cudaMemcpy2DAsync ...
//   pool->release(b.data);                        // idle again, kept for the next frame
//
// Blocks come from a HostMemoryChain asking for pinned memory (portable for
// several GPUs) within `budget_bytes`; past the budget, or when pinning
// fails, blocks are ordinary pageable memory (direct false: their frames are
// copied into the staging as before). A pool made with page_locked false
// hands out pageable blocks only (never direct): its use is the reuse.
// Released blocks are kept for reuse by size (a decoder asks for the same
// size frame after frame, and the next video of a folder for the same size
// again: libavcodec's own buffers are made afresh for every file, each page
// faulted in and zeroed); idle blocks of other sizes are freed when a new
// block would pass the budget or the idle blocks pass `idle_bytes`. On the
// host backend (device -1) a page-locked pool's blocks are pageable and
// direct (copies there are memcpy). Pinning and freeing (cudaHostAlloc,
// cudaFreeHost: milliseconds for a 1080p frame's block) happen outside the
// pool's lock, so the other decoders' threads go on taking idle blocks
// meanwhile. A Pipeline keeps its pool from run to run (begin_run() starts
// the figures of the next one), so a training loop pins its frames' memory
// once, not every epoch. Thread-safe; blocks may be released from any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memory/host_memory_chain.hpp"

namespace imgpipe::memory {

struct FramePoolOptions {
  int device = 0;                // -1: the host backend
  bool portable = false;         // several GPUs copy out of the blocks
  std::size_t budget_bytes = 0;  // page-locked bytes; 0: no limit
  bool page_locked = true;       // false: pageable blocks only, none direct
  std::size_t idle_bytes = std::size_t{256} << 20;  // idle blocks of other sizes past this are freed on a miss
  bool operator==(const FramePoolOptions&) const = default;
};

class FramePool {
 public:
  explicit FramePool(FramePoolOptions options);
  ~FramePool();  // frees every block; none may be in use
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  struct Block {
    void* data = nullptr;
    std::size_t bytes = 0;  // the request rounded up to whole pages
    bool direct = false;    // the device can copy out of it asynchronously (page-locked, or the host backend)
  };
  // A block of at least `bytes`, page-aligned. Throws AllocationError when no
  // kind of memory can be had, std::invalid_argument for 0 bytes.
  Block allocate(std::size_t bytes);
  // Makes a block allocate() returned idle again; other pointers are ignored.
  void release(void* p) noexcept;
  // Whether `p` is the start of a block in use whose frames the device can
  // copy directly (Block::direct).
  bool direct(const void* p) const;

  // The counts and the peak are since construction or the last begin_run().
  struct Figures {
    std::size_t page_locked_bytes = 0;       // held now, in use or idle
    std::size_t peak_page_locked_bytes = 0;
    std::uint64_t blocks_made = 0;           // allocations from the chain
    std::uint64_t pageable_blocks = 0;       // of them, past the budget or after a failed pin
    std::uint64_t blocks_freed = 0;          // idle blocks of another size freed for room
    std::uint64_t reused = 0;                // allocate() calls served by an idle block
    std::size_t idle_bytes = 0;              // held idle now
  };
  Figures figures() const;
  // Starts the figures of another run over the blocks held: counts from 0,
  // the peak from the page-locked bytes held now.
  void begin_run();
  const FramePoolOptions& options() const noexcept { return opt_; }

 private:
  struct Info {
    std::size_t bytes = 0;
    bool direct = false;
    bool locked = false;  // page-locked memory (counted in page_locked_bytes)
    bool idle = false;
  };
  // With m_ held: the idle blocks of sizes other than `bytes`, out of the
  // pool's books, for the caller to free after unlocking.
  std::vector<std::pair<void*, Info>> take_idle_other_than(std::size_t bytes);
  bool direct_kind(MemoryKind k) const noexcept;

  FramePoolOptions opt_;
  HostMemoryChain chain_;
  mutable std::mutex m_;
  std::unordered_map<const void*, Info> blocks_;    // every block held, in use or idle
  std::multimap<std::size_t, void*> idle_;          // idle blocks by size
  Figures figures_;
};

}  // namespace imgpipe::memory
