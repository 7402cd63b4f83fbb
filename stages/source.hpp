// Source stage: turns input.paths (files, folders, glob patterns) into the
// ordered input list. Order is stable: paths in config order; inside a folder,
// entries sorted by name (byte order), recursively when input.recursive.
// Folders contribute files whose extension is in input.extensions
// (case-insensitive); files named explicitly are always taken. A path that
// does not exist, or a folder that cannot be listed, becomes a failed item
// with the reason. Duplicates (the same file reached twice) are delivered once.
#pragma once

#include <atomic>
#include <vector>

#include "imgpipe/config.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

std::vector<InputItem> discover_inputs(const InputConfig& cfg);

// The serial input filter: hands out pooled Work items in input order, then
// one flush item. Stops early when `stop` becomes true.
class Source {
 public:
  Source(const std::vector<InputItem>& items, StageStats& stats, const std::atomic<bool>& stop)
      : items_(items), stats_(stats), stop_(stop) {}
  // Returns the next item to process, or nullptr at the end (after the flush
  // item). `acquire` supplies a pooled Work.
  template <typename Acquire>
  Work* next(Acquire&& acquire) {
    BusyTimer t(stats_);
    if (done_) return nullptr;
    if (next_ >= items_.size() || stop_.load(std::memory_order_relaxed)) {
      done_ = true;
      Work* w = acquire();
      w->reset_for(next_, nullptr);
      w->flush = true;
      return w;
    }
    Work* w = acquire();
    w->reset_for(next_, &items_[next_]);
    ++next_;
    ++stats_.items;
    return w;
  }
  std::size_t emitted() const noexcept { return next_; }

 private:
  const std::vector<InputItem>& items_;
  StageStats& stats_;
  const std::atomic<bool>& stop_;
  std::size_t next_ = 0;
  bool done_ = false;
};

}  // namespace imgpipe::stages
