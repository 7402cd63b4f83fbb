#include "pull_run.hpp"

#include <algorithm>
#include <stdexcept>

#include "memory/staging_ring.hpp"

namespace imgpipe::detail {

PullRun::~PullRun() { shut_down(); }

void PullRun::launch(std::function<Report(PullRun&)> body) {
  thread_ = std::thread([this, body = std::move(body)] {
    std::optional<Report> report;
    std::exception_ptr error;
    try {
      report = body(*this);
    } catch (const memory::RingAbandoned&) {
      // shut_down() while the caller held every slot: nothing more is wanted.
    } catch (...) {
      error = std::current_exception();
    }
    std::shared_ptr<stages::BatchResources> drop;
    {
      std::lock_guard lk(m_);
      if (report) {
        report->memory.held_batch_copies = copies_;
        report->memory.held_batch_copy_bytes = copy_bytes_;
      }
      report_ = std::move(report);
      error_ = error;
      ended_ = true;
      drop = unused_resources();
    }
    cv_.notify_all();
  });
}

void PullRun::set_resources(const std::shared_ptr<stages::BatchResources>& resources) {
  std::vector<std::vector<gpu::Event>> after;
  for (const auto& d : resources->devices()) {
    std::vector<gpu::Event> per_slot;
    for (int i = 0; i < resources->ring().slots(); ++i) per_slot.emplace_back(d->device, false);
    after.push_back(std::move(per_slot));
  }
  std::lock_guard lk(m_);
  res_ = resources;
  after_ = std::move(after);
}

std::string PullRun::stuck() const {
  if (!res_) return {};
  // The GPU ops stage may hold up to held_batches - 1 batches for one engine
  // call without passing them on: with the rest kept by the caller, the
  // packer would find no free slot.
  const int slots = res_->ring().slots();
  const int gathering = res_->layout().held_batches - 1;
  if (held_ < slots - gathering) return {};
  if (gathering <= 0) return "all " + std::to_string(held_) + " staging slots";
  return std::to_string(held_) + " of the " + std::to_string(slots) + " staging slots, and up to " +
         std::to_string(gathering) + " more may hold batches gathered for one call of the GPU's JPEG engines";
}

// The slot's device is read before the release: once the slot is free the
// packer may take it and write its fields.
void PullRun::give_back(stages::BatchSlot& b) {
  const auto dev = b.dev;
  res_->ring().release(b.slot, dev->stream);  // all or nothing
  --dev->in_flight;
}

void PullRun::give_back_or_wait(stages::BatchSlot& b) noexcept {
  const auto dev = b.dev;
  (void)res_->ring().release_or_wait(b.slot, dev->stream);
  --dev->in_flight;
}

bool PullRun::move_out_one() {
  // A batch the caller holds is a value to it: when the run needs its slot,
  // the batch leaves the ring with memory of its own (docs/architecture.md,
  // "Holding batches"). Its data is a buffer of the slot's own in every
  // mode (the kernels' output; the staged copy; in zero-copy mode with a
  // tensor the CPU made, the GPU's copy of the mapped slot): the batch keeps
  // that buffer, so its address (and every view of it) stays, and the slot
  // gets a new one of the same size. Nothing is copied.
  if (holding_.empty()) return false;
  HeldBatch& h = *holding_.front();
  stages::BatchSlot& b = *res_->slots().at(h.slot);
  stages::DeviceBuffers& buf = b.buffers();
  gpu::DeviceBuffer* slot_memory = nullptr;
  if (buf.d_output.get() != nullptr && h.batch.data == buf.d_output.get())
    slot_memory = &buf.d_output;
  else if (buf.d_input.get() != nullptr && h.batch.data == buf.d_input.get())
    slot_memory = &buf.d_input;
  if (slot_memory == nullptr)
    throw std::logic_error("BatchStream::next: a held batch's data is in no buffer of its slot");
  // What can throw comes before the slot changes hands; on a throw the
  // batch still holds its slot (its data in `own` already, or still in the
  // slot's buffer).
  gpu::Event ready(h.batch.device, false);
  gpu::DeviceBuffer fresh(slot_memory->device(), slot_memory->size());
  h.own = std::exchange(*slot_memory, std::move(fresh));
  // The slot's `ready` event is recorded again by its next batch: the held
  // batch gets its own, after its work on the slot's stream.
  if (h.batch.device >= 0) ready.record(b.dev->stream);
  h.ready = std::move(ready);
  h.batch.ready = h.ready.get();
  give_back(b);
  h.slot = -1;
  holding_.pop_front();
  --held_;
  ++copies_;
  copy_bytes_ += h.batch.bytes;
  cv_.notify_all();
  return true;
}

bool PullRun::hand_back_resources() {
  const gpu::CurrentDeviceGuard keep;  // first: it outlives `drop`
  std::shared_ptr<stages::BatchResources> drop;
  std::lock_guard lk(m_);
  if (!ended_) return false;
  if (!res_) return true;
  while (!ready_.empty()) {
    give_back(*ready_.front());
    ready_.pop_front();
  }
  while (move_out_one()) {
  }
  drop = unused_resources();
  return true;
}

std::shared_ptr<stages::BatchResources> PullRun::unused_resources() {
  // Once the run is over and no batch is held, the Pipeline may reuse its
  // resources (it keeps them only while nobody else does).
  if (ended_ && held_ == 0 && ready_.empty()) return std::move(res_);
  return nullptr;
}

void PullRun::hand_over(stages::BatchSlot& b) {
  {
    std::lock_guard lk(m_);
    if (!stopping_) {
      ready_.push_back(&b);
      cv_.notify_all();
      return;
    }
    give_back_or_wait(b);  // nobody will take it; a throw here could leave the packer waiting
  }
}

std::optional<Batch> PullRun::next(std::optional<std::chrono::milliseconds> timeout) {
  const gpu::CurrentDeviceGuard keep;  // a move out of the ring makes buffers and events here
  std::unique_lock lk(m_);
  auto can_answer = [&] { return !ready_.empty() || ended_ || shut_; };
  for (;;) {
    if (can_answer()) break;
    if (const std::string why = stuck(); !why.empty()) {
      if (move_out_one()) continue;
      throw std::logic_error("BatchStream::next: the caller holds " + why +
                             ", so no batch can come: release a Batch first, or raise staging.slots");
    }
    // Woken by a batch, the end, or a release (which may end the deadlock check above).
    if (!timeout) {
      cv_.wait(lk);
    } else if (cv_.wait_for(lk, *timeout) == std::cv_status::timeout && !can_answer()) {
      return std::nullopt;
    }
  }
  if (!ready_.empty()) {
    stages::BatchSlot* b = ready_.front();
    ready_.pop_front();
    auto h = std::make_shared<HeldBatch>();
    h->slot = b->slot;
    h->batch = b->batch;
    holding_.push_back(h.get());
    ++held_;
    Batch out;
    out.run_ = shared_from_this();
    out.batch_ = &h->batch;
    out.held_ = std::move(h);
    return out;
  }
  if (error_ && !error_seen_) {
    error_seen_ = true;
    std::rethrow_exception(error_);
  }
  return Batch();  // the end
}

void PullRun::release(HeldBatch& h, CUstream_st* after) {
  const gpu::CurrentDeviceGuard keep;  // first: it outlives `drop`, whose resources may be freed here
  std::shared_ptr<stages::BatchResources> drop;
  {
    std::unique_lock lk(m_);
    if (h.slot < 0) {
      // Moved out (for good): its memory goes with the handle, once `after`'s work is done.
      lk.unlock();
      if (after && h.batch.device >= 0) {
        gpu::set_device(h.batch.device);  // the default streams name this device's
        gpu::Event done(h.batch.device, false);
        done.record_on(after);
        done.synchronize();
      }
      return;
    }
    // Every call that can throw comes before anything changes: the ordering
    // after the caller's stream, then the ring's release (all or nothing).
    stages::BatchSlot& b = *res_->slots().at(h.slot);
    if (after && b.dev->device >= 0) {
      // The slot's reuse waits for the caller's stream too.
      gpu::set_device(b.dev->device);
      auto& devices = res_->devices();
      std::size_t d = 0;
      while (devices[d].get() != b.dev) ++d;
      gpu::Event& e = after_[d][static_cast<std::size_t>(h.slot)];
      e.record_on(after);
      gpu::stream_wait_event(b.dev->stream.get(), e);
    }
    give_back(b);
    holding_.erase(std::find(holding_.begin(), holding_.end(), &h));
    h.slot = -1;
    --held_;
    drop = unused_resources();
  }
  cv_.notify_all();
}

void PullRun::discard(HeldBatch& h) noexcept {
  const gpu::CurrentDeviceGuard keep;
  std::shared_ptr<stages::BatchResources> drop;
  {
    std::lock_guard lk(m_);
    if (h.slot < 0) return;  // moved out: its memory goes with the handle
    give_back_or_wait(*res_->slots()[static_cast<std::size_t>(h.slot)]);
    holding_.erase(std::find(holding_.begin(), holding_.end(), &h));
    h.slot = -1;
    --held_;
    drop = unused_resources();
  }
  cv_.notify_all();
}

void PullRun::let_go(Batch& b) noexcept {
  if (!b.run_) return;
  const gpu::CurrentDeviceGuard keep;  // the handle's memory and event are freed here too
  try {
    b.release();
  } catch (...) {
    // Still held (release() is all or nothing): its slot comes back once
    // the slot's stream is done (a sticky error meets the run's next call).
    b.run_->discard(*b.held_);
  }
  b.batch_ = nullptr;
  b.held_.reset();
  b.run_.reset();
}

void PullRun::stop() noexcept {
  std::lock_guard lk(m_);
  if (!ended_) stop_.store(true, std::memory_order_relaxed);
  stop_asked_ = true;
}

bool PullRun::done() const {
  std::lock_guard lk(m_);
  return ended_ && ready_.empty();
}

const Report& PullRun::report() {
  const gpu::CurrentDeviceGuard keep;
  std::unique_lock lk(m_);
  if (!ended_ && !stop_asked_)
    throw std::logic_error("BatchStream::report: the run has not ended: call next() until it returns no batch, "
                           "or stop() first");
  // Every slot held by the caller: the packer waits for one, so the run
  // cannot end (as next() says) unless held batches move out of the ring.
  while (!ended_ && !stuck().empty() && move_out_one()) {
  }
  if (const std::string why = ended_ ? std::string() : stuck(); !why.empty())
    throw std::logic_error("BatchStream::report: the caller holds " + why +
                           ", so the run cannot end: release a Batch first");
  // After stop(): the batches still coming are released as they arrive.
  while (!ended_ || !ready_.empty()) {
    while (!ready_.empty()) {
      give_back(*ready_.front());
      ready_.pop_front();
    }
    if (!ended_) cv_.wait(lk);
  }
  if (!report_) {
    if (error_) std::rethrow_exception(error_);
    throw std::logic_error("BatchStream::report: the run was abandoned; it has no report");
  }
  return *report_;
}

void PullRun::shut_down() noexcept {
  const gpu::CurrentDeviceGuard keep;
  std::shared_ptr<stages::BatchResources> drop;
  {
    std::unique_lock lk(m_);
    if (shut_) return;
    shut_ = true;
    stopping_ = true;
    if (!ended_) stop_.store(true, std::memory_order_relaxed);
    // A packer waiting for a slot that the caller holds gives up (the slots
    // not held come back: the batches not taken are released below).
    if (res_ && held_ > 0) res_->ring().abandon();
    while (!ended_ || !ready_.empty()) {
      while (!ready_.empty()) {
        give_back_or_wait(*ready_.front());  // noexcept here: a throw would end the process
        ready_.pop_front();
      }
      if (!ended_) cv_.wait(lk);
    }
    drop = unused_resources();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace imgpipe::detail

namespace imgpipe {

Batch::Batch() noexcept = default;
Batch::~Batch() { detail::PullRun::let_go(*this); }
Batch::Batch(Batch&& o) noexcept
    : run_(std::move(o.run_)), held_(std::move(o.held_)), batch_(std::exchange(o.batch_, nullptr)) {}
Batch& Batch::operator=(Batch&& o) noexcept {
  if (this != &o) {
    detail::PullRun::let_go(*this);
    run_ = std::move(o.run_);
    held_ = std::move(o.held_);
    batch_ = std::exchange(o.batch_, nullptr);
  }
  return *this;
}

const DeviceBatch& Batch::get() const {
  if (!batch_) throw std::logic_error("imgpipe::Batch: empty or released handle");
  return *batch_;
}

void Batch::release(CUstream_st* after) {
  if (!run_) return;
  const gpu::CurrentDeviceGuard keep;  // a moved-out batch's memory and event are freed here too
  run_->release(*held_, after);        // all or nothing: on a throw this handle still holds the batch
  batch_ = nullptr;
  held_.reset();
  run_.reset();
}

void Batch::pin() {}  // every batch keeps its address (move_out_one)

bool Batch::moved_out() const noexcept { return held_ && held_->slot < 0; }

BatchStream::BatchStream() noexcept = default;
BatchStream::~BatchStream() {
  if (!run_) return;
  const gpu::CurrentDeviceGuard keep;  // the run, and what it holds, may be freed here
  run_->shut_down();
  run_.reset();
}
BatchStream::BatchStream(BatchStream&&) noexcept = default;
BatchStream& BatchStream::operator=(BatchStream&& o) noexcept {
  if (this != &o) {
    if (run_) {
      const gpu::CurrentDeviceGuard keep;
      run_->shut_down();
      run_.reset();
    }
    run_ = std::move(o.run_);
  }
  return *this;
}

Batch BatchStream::next() {
  if (!run_) return Batch();
  return *run_->next(std::nullopt);
}

std::optional<Batch> BatchStream::next_for(std::chrono::milliseconds timeout) {
  if (!run_) return Batch();
  return run_->next(timeout);
}

void BatchStream::stop() noexcept {
  if (run_) run_->stop();
}

bool BatchStream::done() const noexcept {
  try {
    return !run_ || run_->done();
  } catch (...) {
    return true;
  }
}

const Report& BatchStream::report() {
  if (!run_) throw std::logic_error("BatchStream::report: an empty stream");
  return run_->report();
}

}  // namespace imgpipe
