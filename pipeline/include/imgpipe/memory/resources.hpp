// Host memory resources, one small class per kind (RMM style):
// allocate(bytes, alignment) / deallocate(p, bytes, alignment). No inheritance;
// code that needs memory takes a resource by reference or template parameter.
#pragma once

#include <cstddef>
#include <string_view>

namespace imgpipe::memory {

// Ordinary cached, pageable memory (aligned_alloc).
class PageableResource {
 public:
  static constexpr std::string_view name() { return "pageable"; }
  // Throws std::bad_alloc.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;
  bool is_pinned() const noexcept { return false; }
};

// Page-locked memory from cudaHostAlloc with a combination of flags (values
// as in the CUDA runtime). Write-combined memory must only be written by the
// CPU; mapped memory also has a device address (see device_pointer).
class PinnedResource {
 public:
  enum Flags : unsigned { none = 0, portable = 1, mapped = 2, write_combined = 4 };
  explicit PinnedResource(unsigned flags = none) : flags_(flags) {}
  std::string_view name() const noexcept;
  // Throws CudaError (e.g. cudaErrorMemoryAllocation when pinned memory runs
  // out) or std::logic_error in a build without CUDA.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;
  unsigned flags() const noexcept { return flags_; }
  bool is_pinned() const noexcept { return true; }

 private:
  unsigned flags_;
};

// RAII: one allocation from a resource. Move-only.
template <typename Resource>
class Allocation {
 public:
  Allocation() = default;
  Allocation(Resource& r, std::size_t bytes, std::size_t alignment = 256)
      : r_(&r), p_(r.allocate(bytes, alignment)), bytes_(bytes), alignment_(alignment) {}
  ~Allocation() { reset(); }
  Allocation(Allocation&& o) noexcept { swap(o); }
  Allocation& operator=(Allocation&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  void* get() const noexcept { return p_; }
  std::size_t size() const noexcept { return bytes_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  void reset() noexcept {
    if (p_) r_->deallocate(p_, bytes_, alignment_);
    p_ = nullptr;
    bytes_ = 0;
  }

 private:
  void swap(Allocation& o) noexcept {
    std::swap(r_, o.r_);
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    std::swap(alignment_, o.alignment_);
  }
  Resource* r_ = nullptr;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t alignment_ = 256;
};

}  // namespace imgpipe::memory
