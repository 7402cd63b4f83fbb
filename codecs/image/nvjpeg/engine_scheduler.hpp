// The engine scheduler: one thread per device that makes the engine calls
// queued to it, one after the other, so that the JPEG engines go from one
// call to the next while the pipeline's threads go on (an engine call holds
// its thread for a while: on a stage's own thread it held up every token
// behind it). The GPU ops stage (stages/gpu_ops.hpp) makes the calls from
// its batches and hands them here; the design: docs/gpu-decode.md.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codecs/route/decode_meter.hpp"
#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "memory/gpu.hpp"

namespace imgpipe::codecs {

// The engine calls' timeline, written when the IMGPIPE_TRACE_CALLS
// diagnostic is set (steady_clock ns): each call's times, and the batches'
// arrivals at the stage that makes the calls.
struct CallTrace {
  std::mutex m;
  std::vector<std::array<std::int64_t, 4>> calls;     // queued, begun, ended, JPEGs
  std::vector<std::array<std::int64_t, 3>> arrivals;  // time, JPEGs, samples
  std::int64_t first_token = 0, end_token = 0;        // the first token seen; the end's, done with
  // Appends one JSON line to `path`: {"calls":[[queued,begun,ended,JPEGs]...],
  // "arrivals":[[t,JPEGs,samples]...],"end":t}, times in us from the first
  // event. Nothing when the file cannot be opened, or nothing was traced.
  void append_to(const std::string& path) const;
};

// One engine call: bitstreams decoded by one device's engines into frames
// the caller placed. The caller fills the inputs and keeps the call (at the
// same address) until it is done; the engine thread writes the results,
// then `done` (under its mutex: read it through EngineScheduler::done/wait).
struct EngineCall {
  int device = -1;
  GpuJpegDecoder* decoder = nullptr;  // null only with a scheduler's own EngineWork (tests)
  const gpu::Stream* stream = nullptr;  // where the decode is enqueued (the device's upload stream)
  std::vector<const std::uint8_t*> data;
  std::vector<std::size_t> sizes;
  std::vector<DecodedFrame> frames;
  std::vector<const gpu::Event*> uploads;  // the copies of the bitstreams: waited for before the call
  int max_w = 0, max_h = 0;                // the largest frame (the decoder's pre-allocation)
  gpu::Event decoded;                      // recorded on `stream` after the call
  std::int64_t queued_ns = 0;              // set by submit()
  // By the engine thread:
  std::vector<int> status;  // per image: 0, or the nvJPEG status of its failure
  std::exception_ptr error;
  bool done = false;
};

class EngineThread;

// The call itself, on its engine thread once the call's uploads are done:
// returns the images decoded, fills c.status; throws what the call throws.
// The default decodes with c.decoder (decode_batch on c.stream, then records
// c.decoded) and throws std::invalid_argument for a call without a decoder.
// Tests give their own to watch the scheduling without a GPU: for a call
// without a decoder the engine thread then sets no device and reads no
// decoder's counters.
using EngineWork = std::function<int(EngineCall& c)>;

// The engine threads of one run, one per device (made at its first call),
// counting into `meter` (and `trace` when not null): each call's time
// (call_begins/call_ends), the images it decoded, the decoder's counters it
// moved, the wait for its uploads. A call's exception is carried back in
// EngineCall::error, and the thread goes on with the next call. Its
// destructor drops the calls still queued and joins the threads: a call in
// progress ends first. Calls are submitted and waited for from one thread.
class EngineScheduler {
 public:
  explicit EngineScheduler(GpuDecodeMeter& meter, CallTrace* trace = nullptr, EngineWork work = {});
  ~EngineScheduler();
  EngineScheduler(const EngineScheduler&) = delete;
  EngineScheduler& operator=(const EngineScheduler&) = delete;

  // Queues `c` to its device's engine thread.
  void submit(EngineCall& c);
  // Whether `c` is done (never blocks), and waiting for it.
  bool done(const EngineCall& c);
  void wait(const EngineCall& c);
  // Engine calls made so far (those that did not throw); any thread.
  std::uint64_t calls() const noexcept { return calls_.load(); }

 private:
  EngineThread& of(int device);
  GpuDecodeMeter& meter_;
  CallTrace* trace_;
  EngineWork work_;
  std::atomic<std::uint64_t> calls_{0};
  std::vector<std::unique_ptr<EngineThread>> threads_;
};

}  // namespace imgpipe::codecs
