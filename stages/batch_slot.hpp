// The resources of batches in flight. A BatchSlot is tied to one staging slot
// (its metadata and the device it was dispatched to); each device keeps, per
// staging slot, the device buffers and events of the batch that uses it. A
// slot is reused only after its staging ring release (recorded by the sink
// once the batch and its callback are done).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "imgpipe/batch.hpp"
#include "memory/gpu.hpp"
#include "kernels/resize.hpp"

namespace imgpipe::stages {

struct DeviceBuffers {
  gpu::DeviceBuffer d_input;     // destination of the staging copy (unused in zero-copy mode)
  gpu::DeviceBuffer d_output;    // kernel output (empty when the CPU produced the final tensor)
  gpu::DeviceBuffer d_checksum;  // 8 bytes
  gpu::Event copy_start, copy_end, ready;
};

// One GPU (or the host backend, device -1) and its stream.
struct DeviceContext {
  int device = -1;
  gpu::Stream stream;
  std::vector<DeviceBuffers> buffers;  // one per staging slot
  std::atomic<int> in_flight{0};       // batches dispatched, not yet through the sink
  std::uint64_t batches = 0;           // sink-side statistics
  std::uint64_t bytes = 0;
  double copy_s = 0;
};

struct BatchSlot {
  int slot = 0;                   // staging ring slot
  std::uint64_t index = 0;        // batch number
  int count = 0;                  // samples in this batch
  std::size_t staged_bytes = 0;   // bytes written into the slot
  std::size_t out_sample_bytes = 0;
  std::vector<SampleId> samples;  // size = batch.size; first `count` valid
  std::vector<kernels::SrcImage> images;  // GPU resize: where each staged frame is
  DeviceContext* dev = nullptr;   // where the batch was dispatched
  const void* staged = nullptr;   // device-visible staged data (d_input, or the mapped slot)
  DeviceBatch batch;              // what the sink and the callback see

  DeviceBuffers& buffers() const { return dev->buffers[slot]; }
};

}  // namespace imgpipe::stages
