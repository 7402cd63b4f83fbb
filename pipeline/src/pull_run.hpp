// The pull API's run (Pipeline::start): the pipeline runs on its own thread;
// its sink hands each batch over (stages::BatchHandoff) into a queue that
// BatchStream::next() takes from. A taken batch keeps its staging slot until
// its Batch handle releases it; the staging ring then hands the slot to the
// packer again, so at most staging.slots batches exist at once and a slow
// consumer slows the pipeline instead of filling memory.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "imgpipe/pipeline.hpp"
#include "memory/gpu.hpp"
#include "stages/batch_slot.hpp"

namespace imgpipe::detail {

// What a Batch handle points to: the batch as the holder sees it. While
// `slot` >= 0 its data is the staging slot's; once moved out of the ring
// (docs/architecture.md, "Holding batches") `own` holds the slot's buffer
// that `batch` points into, for as long as the handle lives.
struct HeldBatch {
  int slot = -1;
  DeviceBatch batch;
  gpu::DeviceBuffer own;  // the moved-out buffer (device memory, host memory on the host backend)
  gpu::Event ready;       // recorded at the move, after the batch's work (GPU batches)
};

struct PullRun : std::enable_shared_from_this<PullRun> {
 public:
  // `stop`: the Pipeline's stop flag, which the run reads.
  explicit PullRun(std::atomic<bool>& stop) : stop_(stop) {}
  ~PullRun();  // shut_down()
  PullRun(const PullRun&) = delete;
  PullRun& operator=(const PullRun&) = delete;

  // Starts the run's thread, which calls `body` (the Pipeline's run with
  // this run's hooks) and keeps its report or its exception.
  void launch(std::function<Report(PullRun&)> body);

  // The run's thread, before the first input.
  void set_resources(const std::shared_ptr<stages::BatchResources>& resources);
  // The sink's thread: a delivered batch; its slot is this run's to release.
  void hand_over(stages::BatchSlot& b);

  // BatchStream's and Batch's calls, on the caller's thread: each leaves its
  // CUDA device and context as it found them (gpu::CurrentDeviceGuard).
  // `timeout` empty: wait as long as it takes.
  std::optional<Batch> next(std::optional<std::chrono::milliseconds> timeout);
  // Gives h's slot back, ordered after `after` (a stream of h's device; the
  // legacy and per-thread default streams name that device's). All or
  // nothing: when a CUDA call throws, h still holds its batch and its slot.
  void release(HeldBatch& h, CUstream_st* after);
  // For a handle going away after release() threw: gives h's slot back
  // without the GPU's ordering, once the slot's stream is done (host wait).
  void discard(HeldBatch& h) noexcept;
  // Batch's destructor and move assignment: b.release(), or discard() when
  // that throws; b is empty after.
  static void let_go(Batch& b) noexcept;
  void stop() noexcept;
  bool done() const;
  // Once the run has ended, before the Pipeline's next run: the batches not
  // taken go back to the ring and the ones the caller still holds move out
  // of it (each keeps its memory, the slot gets a new buffer), so that the
  // next run reuses the staging, streams and decoders as run() does instead
  // of making its own beside them (a training loop keeps the last batch of
  // an epoch in its loop variable when the next one starts). Drops this
  // run's hold on them. False (nothing changed) while the run goes on.
  bool hand_back_resources();
  const Report& report();
  // Stops the run, releases the batches not taken, makes a packer waiting
  // for a slot the caller holds give up, and joins the run's thread.
  // Batches the caller holds stay valid. Idempotent. A release that fails
  // here (a sticky CUDA error) frees its slot after a host wait instead.
  void shut_down() noexcept;

 private:
  // Why no batch can come while the caller keeps its batches (under m_); empty: one can.
  std::string stuck() const;
  // The slot to the ring (lock held). All or nothing: when the ring's
  // release throws, the slot and the device's in-flight count are as they were.
  void give_back(stages::BatchSlot& b);
  void give_back_or_wait(stages::BatchSlot& b) noexcept;  // the same, for paths that cannot throw
  // Lock held: moves the oldest held batch out of the ring (it keeps its
  // slot's buffer, the slot gets a new one) and gives its slot back; false
  // when no batch is held.
  bool move_out_one();
  std::shared_ptr<stages::BatchResources> unused_resources();  // lock held: what to drop once nothing is held

  std::atomic<bool>& stop_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::shared_ptr<stages::BatchResources> res_;
  std::vector<std::vector<gpu::Event>> after_;  // [device context][slot]: Batch::release(after)
  std::deque<stages::BatchSlot*> ready_;        // handed over, not yet taken
  int held_ = 0;                                // taken and not released, still in their slots
  std::deque<HeldBatch*> holding_;              // those, oldest first
  std::uint64_t copies_ = 0, copy_bytes_ = 0;   // held batches moved out of the ring
  bool ended_ = false, stop_asked_ = false, stopping_ = false, shut_ = false;
  std::exception_ptr error_;
  bool error_seen_ = false;
  std::optional<Report> report_;
  std::thread thread_;
};

}  // namespace imgpipe::detail
