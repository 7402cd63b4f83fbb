#include "core/fault.hpp"

#include <array>
#include <atomic>
#include <charconv>
#include <mutex>
#include <stdexcept>

#include "imgpipe/error.hpp"

namespace imgpipe::fault {

namespace {
constexpr std::array<std::string_view, 12> kStages = {"source",   "read",     "decode",   "transform",  "pack",
                                                      "pack_copy", "transfer", "gpu_ops",  "sink",       "gpu_trap",
                                                      "nvdec_skip", "frame_copy"};
std::atomic<int> g_stage{-1};  // index into kStages; -1 unarmed
std::atomic<std::uint64_t> g_item{0};

int index_of(std::string_view s) {
  for (std::size_t i = 0; i < kStages.size(); ++i)
    if (kStages[i] == s) return static_cast<int>(i);
  return -1;
}
}  // namespace

void inject(std::string_view stage, std::uint64_t k) {
  const int i = index_of(stage);
  if (i < 0) throw std::invalid_argument("fault::inject: unknown stage '" + std::string(stage) + "'");
  g_item.store(k);
  g_stage.store(i);
}

void clear() noexcept { g_stage.store(-1); }

void arm(std::string_view s) {
  if (s.empty()) return;
  const auto colon = s.find(':');
  std::uint64_t k = 0;
  if (colon == std::string_view::npos ||
      std::from_chars(s.data() + colon + 1, s.data() + s.size(), k).ec != std::errc())
    throw Error("IMGPIPE_FAULT='" + std::string(s) + "': expected STAGE:ITEM, e.g. decode:3");
  try {
    inject(s.substr(0, colon), k);
  } catch (const std::invalid_argument& e) {
    throw Error(std::string("IMGPIPE_FAULT: ") + e.what());
  }
}

void check(std::string_view stage, std::uint64_t k) {
  const int armed = g_stage.load(std::memory_order_relaxed);
  if (armed < 0 || kStages[armed] != stage || g_item.load() != k) return;
  throw Error("injected fault in " + std::string(stage) + " at item " + std::to_string(k));
}

bool trap(std::uint64_t batch) noexcept { return hit("gpu_trap", batch); }

bool hit(std::string_view stage, std::uint64_t k) noexcept {
  const int armed = g_stage.load(std::memory_order_relaxed);
  return armed >= 0 && kStages[armed] == stage && g_item.load() == k;
}

std::int64_t armed_item(std::string_view stage) noexcept {
  const int armed = g_stage.load(std::memory_order_relaxed);
  if (armed < 0 || kStages[armed] != stage) return -1;
  return static_cast<std::int64_t>(g_item.load());
}

}  // namespace imgpipe::fault
