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
// index for transfer, gpu_ops, sink and gpu_trap. Throws std::invalid_argument
// for an unknown stage name.
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

}  // namespace imgpipe::fault
