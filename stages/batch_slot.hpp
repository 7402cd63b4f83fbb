// The resources of one batch in flight, tied to one staging slot: the slot's
// device buffers, its events and the batch's metadata. A slot is reused only
// after its staging ring event (recorded by the sink once the batch is done).
#pragma once

#include <cstdint>
#include <vector>

#include "imgpipe/batch.hpp"
#include "imgpipe/gpu.hpp"

namespace imgpipe::stages {

struct BatchSlot {
  int slot = 0;                  // staging ring slot
  std::uint64_t index = 0;       // batch number
  int count = 0;                 // samples in this batch
  std::size_t frame_bytes = 0;   // bytes of one staged frame
  std::size_t out_sample_bytes = 0;  // bytes of one sample of the output tensor
  std::vector<SampleId> samples;  // size = batch.size; first `count` valid
  gpu::DeviceBuffer d_input;     // destination of the staging copy
  gpu::DeviceBuffer d_output;    // normalise output (empty when normalising on the CPU)
  gpu::DeviceBuffer d_checksum;  // 8 bytes
  gpu::Event copy_start, copy_end, ready;
  DeviceBatch batch;             // what the sink and the callback see

  const void* output() const { return d_output.get() ? d_output.get() : d_input.get(); }
};

}  // namespace imgpipe::stages
