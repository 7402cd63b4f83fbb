// Fault injection for tests and drills (not for production use): makes one
// stage throw at one item, or makes the GPU ops stage launch a kernel that
// traps (a sticky CUDA error), so that tests can check that the pipeline
// drains, frees every buffer and reports the reason. Unarmed, a check costs
// one relaxed atomic load.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace imgpipe::fault {

// Arms a fault: stage `stage` ("source", "read", "decode", "transform",
// "pack", "pack_copy", "transfer", "gpu_ops", "sink", or "gpu_trap") throws
// imgpipe::Error("injected fault in <stage> at item <k>") when it handles
// item k: the input's sequence number for the per-frame stages, the batch
// index for transfer, gpu_ops, sink and gpu_trap. Two drills change what the
// NVDEC route does instead of throwing: "nvdec_skip" (NVDEC's decode
// callback leaves the k-th picture of each file, in decode order from 0,
// undecoded, as the parser does with a damaged one, and the parser still
// displays it) and "frame_copy" (every NVDEC frame is copied on the batch's
// device as if another GPU had decoded it, behind a k-millisecond stall of
// the copy's stream). Throws std::invalid_argument for an unknown stage name.
void inject(std::string_view stage, std::uint64_t k);
void clear() noexcept;
// Arms the fault that `spec` ("stage:k") names: the diagnostic IMGPIPE_FAULT
// (core/diagnostics.hpp), which the CLI arms. Empty: nothing. Throws
// imgpipe::Error naming IMGPIPE_FAULT for a malformed spec or an unknown stage.
void arm(std::string_view spec);

// For the stages: throws when armed for (stage, k).
void check(std::string_view stage, std::uint64_t k);
// True when gpu_trap is armed for batch k.
bool trap(std::uint64_t batch) noexcept;
// True when `stage` is armed for item k (the drills that do not throw).
bool hit(std::string_view stage, std::uint64_t k) noexcept;
// The item `stage` is armed for, or -1 when it is not armed.
std::int64_t armed_item(std::string_view stage) noexcept;

}  // namespace imgpipe::fault
