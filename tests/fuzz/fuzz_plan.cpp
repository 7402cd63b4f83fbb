// libFuzzer target: config -> run plan. Every config the loader accepts must
// give a plan whose sizes are in range and consistent (tokens never more than
// the staging ring holds safely, slots large enough for their frames, the
// device frame area large enough for its frames), on a host without a GPU and
// on one with a GPU and nvJPEG; or a clear ConfigError. Never a crash, an
// overflow or another exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "imgpipe/config.hpp"
#include "pipeline/src/run_plan.hpp"

namespace {

void check(const imgpipe::Config& c, const imgpipe::detail::RunPlan& p) {
  const auto& l = p.layout;
  if (p.threads < 1 || p.tokens < 1 || p.tokens > p.wanted_tokens) std::abort();
  if (static_cast<std::int64_t>(p.tokens) > static_cast<std::int64_t>(p.slots - 1) * c.batch.size + 1) std::abort();
  if (p.slots < c.staging.slots || l.staging.slots != p.slots) std::abort();
  if (p.frame_bytes == 0 || l.staging.slot_bytes / static_cast<std::size_t>(c.batch.size) < p.frame_bytes) std::abort();
  const std::size_t pixels = static_cast<std::size_t>(c.transform.resize.width) * c.transform.resize.height;
  if (l.out_sample_bytes != pixels * 3 * imgpipe::dtype_size(c.transform.dtype)) std::abort();
  if (p.gpu_decode) {
    if (l.decode_bytes / static_cast<std::size_t>(c.batch.size) < p.max_decoded_frame) std::abort();
    if (!l.per_image_geometry || p.gpu_op != imgpipe::stages::GpuOps::Op::resize_normalize) std::abort();
  } else if (l.decode_bytes != 0) {
    std::abort();
  }
  // Batches held for engine calls: only with GPU decode, and the ring has
  // their slots on top of the tokens' (GpuOps holds fewer than held_batches).
  // GPU decode without a group (a batch alone reaches decode.gpu_batch: a
  // call each) still holds the calls ahead, with a slot each.
  constexpr int kAhead = imgpipe::stages::GpuOps::kCallsAhead;
  if (p.gpu_group > 0) {
    if (!p.gpu_decode || p.gpu_group_held < 1 || p.gpu_group_held > 8) std::abort();
    if (l.held_batches != (kAhead + 1) * p.gpu_group_held) std::abort();
    if (p.slots < c.staging.slots + l.held_batches) std::abort();
  } else if (p.gpu_group_held != 1 || l.held_batches != (p.gpu_decode ? kAhead + 1 : 1)) {
    std::abort();
  } else if (p.gpu_decode && p.slots < c.staging.slots + kAhead) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  imgpipe::Config c;
  try {
    c = imgpipe::Config::from_yaml_string(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const imgpipe::ConfigError&) {
    return 0;
  }
  imgpipe::detail::HostFacts host;
  host.hardware_threads = 16;
  host.physical_memory = 128ull << 30;
  imgpipe::detail::HostFacts gpu = host;
  gpu.device_memory = 140ull << 30;
  gpu.nvjpeg = true;
  for (const auto& [devices, facts] : {std::pair{std::vector<int>{-1}, host}, std::pair{std::vector<int>{0}, gpu},
                                       std::pair{std::vector<int>{0, 1}, gpu}}) {
    try {
      check(c, imgpipe::detail::RunPlan::make(c, devices, facts));
    } catch (const imgpipe::ConfigError&) {
    }
  }
  return 0;
}
