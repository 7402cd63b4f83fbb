// An address the device reads that host code must not: the staging ring's
// slots as kernels and copies see them (the mapped slot in zero-copy mode,
// else the device buffer the slot was copied to). Slots are write-combined
// memory by default, which the CPU reads uncached, a few bytes per bus
// transaction; a host read of one compiles into a silent slowdown, so this
// type makes it fail to compile instead (tests/memory/compile_fail).
//
// It has no operator*, operator->, operator[] and no conversion to a
// pointer: a std::memcpy from it, or a dereference, does not build. The
// gpu::copy_* calls (memory/gpu.hpp) take it as a source; kernel launchers
// get the raw address through for_device(), a name that says what it is
// for. On the host backend (device -1) the address is ordinary host memory
// that the kernels' CPU twins read through for_device() the same way.
#pragma once

#include <cstddef>

namespace imgpipe::gpu {

class DeviceAddress {
 public:
  constexpr DeviceAddress() noexcept = default;
  constexpr DeviceAddress(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): "no address"
  // Wraps `p`: device memory, mapped host memory, or host memory on the host backend.
  explicit constexpr DeviceAddress(const void* p) noexcept : p_(p) {}

  // The raw address, for CUDA copies and kernel arguments only (and the
  // CPU twins on the host backend): never for a host read of GPU-run data.
  constexpr const void* for_device() const noexcept { return p_; }

  // The address `bytes` further on (a sample or a bitstream inside a slot).
  DeviceAddress operator+(std::size_t bytes) const noexcept {
    return DeviceAddress(static_cast<const unsigned char*>(p_) + bytes);
  }
  constexpr explicit operator bool() const noexcept { return p_ != nullptr; }
  friend constexpr bool operator==(const DeviceAddress&, const DeviceAddress&) noexcept = default;

 private:
  const void* p_ = nullptr;
};

}  // namespace imgpipe::gpu
