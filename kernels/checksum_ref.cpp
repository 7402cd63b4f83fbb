#include <cstring>

#include "checksum.hpp"

namespace imgpipe::kernels {

std::uint64_t checksum_ref(const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t words = bytes / 4;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    sum += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(i) + 1);
  }
  if (bytes % 4) {
    std::uint32_t w = 0;
    std::memcpy(&w, p + 4 * words, bytes % 4);
    sum += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(words) + 1);
  }
  return sum;
}

}  // namespace imgpipe::kernels
