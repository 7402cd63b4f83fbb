// The resources of batches in flight. A BatchSlot is tied to one staging slot
// (its metadata and the device it was dispatched to); each device keeps, per
// staging slot, the device buffers and events of the batch that uses it. A
// slot is reused only after its staging ring release (recorded by the sink
// once the batch and its callback are done). BatchResources owns all of it
// for one run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "imgpipe/batch.hpp"
#include "imgpipe/config.hpp"
#include "codecs/image/nvjpeg/jpeg_engines.hpp"
#include "kernels/checksum.hpp"
#include "kernels/resize.hpp"
#include "memory/gpu.hpp"
#include "memory/staging_ring.hpp"

namespace imgpipe::stages {

struct DeviceBuffers {
  gpu::DeviceBuffer d_input;     // destination of the staging copy (unused in zero-copy mode)
  // The batch's tensor: the kernels' output, or, when the CPU produced the
  // tensor in a mapped (zero-copy) slot, the GPU's copy of it, so that the
  // consumer never gets write-combined memory. Empty when the CPU produced
  // the tensor and it was copied to d_input.
  gpu::DeviceBuffer d_output;
  gpu::DeviceBuffer d_checksum;  // 8 bytes
  // input.video.clips, layout cthw: the tensor with each clip's frames
  // regrouped by channel (stages/sink.cpp), made when the first such batch comes.
  gpu::DeviceBuffer d_clips;
  gpu::Event copy_start, copy_end, ready;
  // After the copies of the batch's NVDEC frames that another GPU decoded
  // (Pack, on the upload stream): the kernels wait for it in every transfer
  // mode (in zero_copy no staging copy on the upload stream, and so no
  // copy_end wait, orders them after those copies).
  gpu::Event frames_copied;
  std::size_t copy_bytes = 0;  // the copy bracketed by copy_start/copy_end
  bool copy_timed = false;     // that copy's duration is not yet in DeviceTransferStats
};

// The transfer stage's figures for one device.
struct DeviceTransferStats {
  std::uint64_t batches = 0;
  std::uint64_t bytes = 0;
  double copy_s = 0;  // the copies' own durations (CUDA events)
};

// One GPU (or the host backend, device -1) and its stream.
struct DeviceContext {
  int device = -1;
  gpu::Stream stream;
  std::vector<DeviceBuffers> buffers;  // one per staging slot
  std::atomic<int> in_flight{0};       // batches dispatched, not yet through the sink
  DeviceTransferStats transfer;        // written by the transfer stage only
  std::shared_ptr<codecs::JpegEngines> jpeg;   // GPU JPEG decode (made in the background); null when off
  // The staging copies (H2D) and the JPEG engines' work; the batch's
  // kernels, the sink and the consumer use `stream`, which waits for this
  // one's events. Apart, so that the decoder's host barrier waits only for
  // the uploads, not for the kernels of the batches before.
  gpu::Stream upload;
  // GPU decode: the decoded frames (BatchLayout::decode_bytes), one area per
  // device used as a ring by the GPU ops stage (stages/frame_ring.hpp): each
  // engine call's frames follow the previous call's, and the engines write
  // a range only after the kernels that read it last are done.
  gpu::DeviceBuffer frames;
};

// A JPEG of the batch that the GPU decodes: its bitstream in the slot, its
// decoded BGR frame in the device's frame area (DeviceContext::frames).
struct GpuJpegSample {
  int index = 0;                 // position in the batch
  std::size_t offset = 0;        // of the bitstream, from the slot's (and d_input's) start
  std::size_t size = 0;          // bitstream bytes
  std::size_t frame_offset = 0;  // of the decoded frame, from the batch's first frame (pack places them)
  int width = 0, height = 0;
};

// A decoded video frame's planes as they are gathered: plane k is rows[k]
// rows of row_bytes[k] bytes, src_pitch[k] apart (FrameView::Yuv adds where
// they go in the slot).
struct YuvPlanes {
  const std::uint8_t* src[3] = {nullptr, nullptr, nullptr};
  std::size_t src_pitch[3] = {0, 0, 0};
  std::size_t row_bytes[3] = {0, 0, 0};
  int rows[3] = {0, 0, 0};
};

// A video frame of the batch that the transfer copies to the device straight
// out of the decoder's page-locked buffer (codecs::VideoFrame::direct), to
// where the staging copy would have put it: its planes dense, one after the
// other, from `offset`.
struct DirectFrame {
  std::size_t offset = 0;  // from d_input's start
  YuvPlanes planes;
};

// A sample's checksum parts, summed by PackCopy as it writes the sample
// (BatchSlot::sums): its three equal thirds (a channel each of an nchw
// frame), so that the sink can place them where the clips' regrouping puts
// them. `bytes` 0: not summed.
struct SampleChecksum {
  std::size_t offset = 0, bytes = 0;  // the sample's place in the slot
  kernels::ChecksumPart part[3];
};

struct BatchSlot {
  int slot = 0;                   // staging ring slot
  std::uint64_t index = 0;        // batch number
  int count = 0;                  // samples in this batch
  int room = 0;                   // samples the slot and dev's buffers for it hold now (BatchResources::make_room)
  std::size_t staged_bytes = 0;   // bytes written into the slot
  std::size_t out_sample_bytes = 0;
  std::vector<SampleId> samples;  // size = batch.size; first `count` valid
  // When each sample left the source (Sample::t0), for the latency figures.
  std::vector<std::chrono::steady_clock::time_point> t0;
  std::vector<kernels::SrcImage> images;  // GPU resize: where each sample's frame is (from d_input)
  std::vector<GpuJpegSample> jpegs;       // GPU decode: this batch's JPEGs for the engines
  std::size_t frame_bytes = 0;            // GPU decode: bytes the batch's decoded frames take
  // What the batch's kernels read in place (NVDEC's frames in device
  // memory), kept until the slot is reused: its batch is done by then.
  std::vector<std::shared_ptr<const void>> holds;
  // The slot's bytes the CPU wrote, as (offset, bytes) runs: the transfer
  // copies these and the direct frames between them (held in `holds`).
  std::vector<std::pair<std::size_t, std::size_t>> written;
  std::vector<DirectFrame> direct;
  // The host backend with the tensor made by the CPU and a sink that
  // checksums (Pack::Pack): each sample's parts, so that the sink need not
  // read the batch again; batch.size entries, else empty.
  std::vector<SampleChecksum> sums;
  bool frames_copied = false;     // DeviceBuffers::frames_copied was recorded for this batch
  DeviceContext* dev = nullptr;   // where the batch was dispatched
  // The staged data as kernels and copies read it: d_input, or the mapped
  // slot in zero-copy mode (host memory on the host backend, read by the
  // CPU twins). Not a pointer: the host must not read a write-combined slot.
  gpu::DeviceAddress staged;
  DeviceBatch batch;              // what the sink and the callback see
  // The next batch the same token carries (the GPU ops stage emits the
  // batches of one engine call together); null for the last. Pack resets it.
  BatchSlot* then = nullptr;

  DeviceBuffers& buffers() const { return dev->buffers[slot]; }
  // Takes sample `i` out of the batch (it failed after packing): the later
  // samples move up one place.
  void remove(int i);
};

// What BatchResources allocates: sizes decided by the run plan.
struct BatchLayout {
  std::vector<int> devices{-1};     // CUDA ordinals; {-1} = the host backend
  memory::StagingOptions staging;   // slots, slot bytes, memory kind, transfer, budget
  int batch_size = 32;
  std::size_t out_sample_bytes = 0;  // bytes of one sample of the output tensor
  // The most bytes one sample takes in a staging slot (RunPlan::frame_bytes;
  // 0: staging.slot_bytes / batch_size). A slot's room in samples is its
  // capacity over this, at most batch_size; its device buffers are sized
  // from that room and grow with the slot.
  std::size_t staged_sample_bytes = 0;
  // The host backend with the tensor made by the CPU: a batch is its
  // staging slot itself when the slot is one block of plain memory
  // (StagingRing::host_block): no device buffers, no transfer copy.
  bool batch_in_slot = false;
  // Kernels write d_output; false: the CPU made the tensor, and the staged
  // data is the output (copied into d_output on a GPU in zero-copy mode).
  bool device_output = true;
  bool per_image_geometry = false;  // GPU resize: each batch records where its frames are
  std::size_t decode_bytes = 0;     // GPU decode: the device frame area (at least one batch's frames), per device
  codecs::GpuJpegOptions jpeg;     // GPU decode: the decoder made for each device
  // The most batches the GPU ops stage holds to gather an engine call's
  // JPEGs (RunPlan::gpu_group_held; 1: none held). The ring has that many
  // slots more than the tokens need: a consumer that keeps batches may keep
  // staging.slots - (held - 1) of them before no more can come.
  int held_batches = 1;
  std::vector<std::int64_t> shape;  // of a full batch
  // input.video.clips: frames per clip (0: none) and the clip's layout; the
  // slots hold batch_size frames, clip after clip (T x C x H x W, or
  // T x H x W x C), and the sink lays out cthw (stages/sink.cpp).
  int clip_length = 0;
  ClipLayout clip_layout = ClipLayout::cthw;
  DType dtype = DType::float32;
  Layout layout = Layout::nchw;
};

// Owns the staging ring, the batch slots and the per-device streams and
// buffers of one run. The constructor allocates the room the layout asks for
// (layout.staging: every slot whole, or less for a run that carries less);
// a slot and its buffers grow only through make_room(), by the packer, for
// the slot it holds. The destructor waits for every device's stream before
// anything is freed, however the run ended, and makes each decoder forget
// this run's streams. Throws what the allocations throw (CudaError,
// AllocationError, std::bad_alloc).
class BatchResources {
 public:
  explicit BatchResources(const BatchLayout& layout, const codecs::EngineSource& engines = {});

  // Whether these resources serve `layout` as they are (a Pipeline keeps them
  // from run to run: allocating the ring and the device buffers is most of
  // a run's set-up).
  bool fits(const BatchLayout& layout) const;
  // Before another run, after one that ended normally (finish() done):
  // per-run figures start from zero, each device's decoder is asked of
  // `engines` again (it may have been remade), and the slots let go of the
  // last run's frames (BatchSlot::holds: their work is done), so that their
  // pools serve the next run.
  void begin_run(const codecs::EngineSource& engines);
  // For the packer, which holds b's staging slot (acquired, not released)
  // and has dispatched its batch (b.dev): room in the slot for `samples`
  // samples and `bytes` staged bytes, growing the ring's slot
  // (StagingRing::grow) and b.dev's buffers for it (d_input: the slot's
  // room; d_output: its samples' tensor), and b.room set. The buffers are
  // replaced, not copied: the batch's data reaches them only later
  // (transfer, kernels), the work that used them last is done (acquire()
  // waited for the slot's release), and a batch the caller still holds
  // keeps its slot held (or moved out with its buffer). Returns the slot's
  // writer when the slot grew. Throws what the allocations throw,
  // std::out_of_range past the slot's most (staging.slot_bytes).
  std::optional<memory::SlotWriter> make_room(BatchSlot& b, int samples, std::size_t bytes);
  // How long the constructor took for each part (the run's set-up log).
  struct MadeIn {
    double decoders_s = 0;  // starting the JPEG decoders (made in the background)
    double staging_s = 0;   // the staging ring
    double buffers_s = 0;   // streams, events, device buffers, batch slots
  };
  const MadeIn& made_in() const noexcept { return made_in_; }
  // The ring's figures for this run (since construction or begin_run).
  memory::StagingStats ring_stats() const;
  double ring_wait_seconds() const;
  ~BatchResources();
  BatchResources(const BatchResources&) = delete;
  BatchResources& operator=(const BatchResources&) = delete;

  const BatchLayout& layout() const noexcept { return layout_; }
  memory::StagingRing& ring() noexcept { return *ring_; }
  const memory::StagingRing& ring() const noexcept { return *ring_; }
  std::vector<std::unique_ptr<BatchSlot>>& slots() noexcept { return slots_; }
  std::vector<std::unique_ptr<DeviceContext>>& devices() noexcept { return devices_; }
  const std::vector<std::unique_ptr<DeviceContext>>& devices() const noexcept { return devices_; }
  // Device memory allocated, all devices (0 on the host backend). Any thread.
  std::size_t device_bytes() const noexcept { return device_bytes_.load(std::memory_order_relaxed); }
  // The device buffers' bytes on the host backend (its "device" memory is
  // host memory). Any thread.
  std::size_t host_buffer_bytes() const noexcept { return host_buffer_bytes_.load(std::memory_order_relaxed); }
  // Waits for every slot's and device's outstanding work; throws a sticky CUDA error.
  void finish();

 private:
  BatchLayout layout_;
  memory::StagingStats ring_base_;  // the ring's figures when this run began
  double ring_wait_base_ = 0;
  std::unique_ptr<memory::StagingRing> ring_;
  std::vector<std::unique_ptr<DeviceContext>> devices_;
  std::vector<std::unique_ptr<BatchSlot>> slots_;
  std::atomic<std::size_t> device_bytes_{0};
  std::atomic<std::size_t> host_buffer_bytes_{0};
  MadeIn made_in_;
  int room_of(std::size_t capacity) const noexcept;
  void fit_buffers(DeviceContext& dev, int slot);
  void replace(gpu::DeviceBuffer& buffer, int device, std::size_t bytes);
};

}  // namespace imgpipe::stages
