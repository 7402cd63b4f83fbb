// Host memory resources, one small class per kind (RMM style):
// allocate(bytes, alignment) / deallocate(p, bytes, alignment). No inheritance
// forest; code that needs memory takes a resource by reference or template
// parameter. Every resource answers the same questions:
//   kind()          the MemoryKind it hands out (see below)
//   name()          "pinned", "portable|write_combined", ...
//   is_available()  whether allocate() can work in this process (a CUDA build
//                   with a device; for mapped kinds, a device that can map
//                   host memory). Pinned kinds are unavailable on the host
//                   backend.
//   cpu_readable()  false for write-combined memory: the CPU must never read
//                   it (uncached reads are extremely slow on bare metal).
//   is_pinned()     page-locked memory (DMA without staging)
//   is_mapped()     the device can address it (device_pointer())
//
// Every allocate() first consults fault_injection (fault_injection.hpp), so
// tests can make it fail without touching CUDA.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace imgpipe::memory {

// The kinds of host memory imgpipe distinguishes. Page-locked kinds from
// cudaHostAlloc (pinned, portable, write_combined, mapped) may be combined
// through PinnedResource flags; the MemoryKind of a combination is its most
// constraining flag (write_combined, then mapped, then portable).
enum class MemoryKind : std::uint8_t { pageable, pinned, portable, write_combined, mapped, host_registered };
inline constexpr std::size_t memory_kind_count = 6;
inline constexpr std::array<MemoryKind, memory_kind_count> all_memory_kinds{
    MemoryKind::pageable, MemoryKind::pinned,  MemoryKind::portable,
    MemoryKind::write_combined, MemoryKind::mapped, MemoryKind::host_registered};

std::string_view to_string(MemoryKind k) noexcept;
// Accepts the to_string names and "wc", "registered", "default" (= pinned).
std::optional<MemoryKind> parse_memory_kind(std::string_view s) noexcept;
// True for every kind except pageable.
constexpr bool is_page_locked(MemoryKind k) noexcept { return k != MemoryKind::pageable; }

// Why a pinned kind cannot be used in this process, or an empty string when it
// can: "imgpipe was built without CUDA" or "no CUDA device (...)".
std::string_view pinned_unavailable_reason() noexcept;

// The device pointer of mapped host memory (cudaHostGetDevicePointer) from a
// mapped PinnedResource or a mapped HostRegisteredResource / HostRegistration.
// With unified addressing it equals the host pointer. Throws CudaError when `h`
// is not mapped memory, std::logic_error in a build without CUDA.
void* device_pointer(const void* h);

// Ordinary cached, pageable memory (aligned_alloc). Any power-of-two alignment.
class PageableResource {
 public:
  static constexpr std::string_view name() { return "pageable"; }
  static constexpr MemoryKind kind() noexcept { return MemoryKind::pageable; }
  // Throws std::bad_alloc (also when injected), std::invalid_argument for an
  // alignment that is not a power of two.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;
  static constexpr bool is_available() noexcept { return true; }
  static constexpr bool cpu_readable() noexcept { return true; }
  static constexpr bool is_pinned() noexcept { return false; }
  static constexpr bool is_mapped() noexcept { return false; }
};

// Page-locked memory from cudaHostAlloc with a combination of flags (values
// as in the CUDA runtime: cudaHostAllocPortable, ...Mapped, ...WriteCombined).
// Write-combined memory must only be written by the CPU; mapped memory also
// has a device address (device_pointer). For mapped flags the first
// allocation checks cudaDevAttrCanMapHostMemory on the current device and asks
// for cudaDeviceMapHost (a no-op where unified addressing already maps every
// page-locked block; tolerated when the context already exists).
// Memory is page-aligned: alignments up to 4096 are honoured.
class PinnedResource {
 public:
  enum Flags : unsigned { none = 0, portable = 1, mapped = 2, write_combined = 4 };
  explicit PinnedResource(unsigned flags = none) : flags_(flags & 7u) {}
  std::string_view name() const noexcept;
  MemoryKind kind() const noexcept;
  // Throws CudaError (e.g. cudaErrorMemoryAllocation when pinned memory runs
  // out, or an injected failure), std::bad_alloc (injected), imgpipe::Error when
  // the device cannot map host memory, std::invalid_argument for alignment
  // above 4096, std::logic_error in a build without CUDA.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;
  // The device address of `p` (from this resource). Throws std::logic_error
  // when this resource is not mapped.
  void* device_pointer(const void* p) const;
  unsigned flags() const noexcept { return flags_; }
  bool is_available() const noexcept;
  bool cpu_readable() const noexcept { return (flags_ & write_combined) == 0; }
  static constexpr bool is_pinned() noexcept { return true; }
  bool is_mapped() const noexcept { return (flags_ & mapped) != 0; }

 private:
  unsigned flags_;
};

// The named single-flag kinds, for code and tests that want a type per kind.
class PortableResource : public PinnedResource {
 public:
  PortableResource() : PinnedResource(portable) {}
};
class WriteCombinedResource : public PinnedResource {
 public:
  WriteCombinedResource() : PinnedResource(write_combined) {}
};
class MappedResource : public PinnedResource {
 public:
  MappedResource() : PinnedResource(mapped) {}
};

// Ordinary memory that this resource allocates itself (page-aligned, size
// rounded up to whole pages) and then page-locks with cudaHostRegister.
// Flags as in cudaHostRegister: portable (cudaHostRegisterPortable), mapped
// (cudaHostRegisterMapped). Registration is much cheaper than cudaHostAlloc
// for large blocks but still a system call: not for the hot path.
class HostRegisteredResource {
 public:
  enum Flags : unsigned { none = 0, portable = 1, mapped = 2 };
  explicit HostRegisteredResource(unsigned flags = none) : flags_(flags & 3u) {}
  std::string_view name() const noexcept;
  static constexpr MemoryKind kind() noexcept { return MemoryKind::host_registered; }
  // Throws as PinnedResource::allocate (the memory is freed again when
  // registration fails), std::bad_alloc.
  void* allocate(std::size_t bytes, std::size_t alignment = 256);
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept;
  void* device_pointer(const void* p) const;
  unsigned flags() const noexcept { return flags_; }
  bool is_available() const noexcept;
  static constexpr bool cpu_readable() noexcept { return true; }
  static constexpr bool is_pinned() noexcept { return true; }
  bool is_mapped() const noexcept { return (flags_ & mapped) != 0; }

 private:
  unsigned flags_;
};

// RAII page-locking of memory the caller owns (cudaHostRegister /
// cudaHostUnregister). The caller keeps ownership of the bytes and must keep
// them alive while the registration exists. Move-only. Throws as
// HostRegisteredResource::allocate.
class HostRegistration {
 public:
  HostRegistration() = default;
  HostRegistration(void* p, std::size_t bytes, unsigned flags = HostRegisteredResource::none);
  ~HostRegistration();
  HostRegistration(HostRegistration&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), flags_(o.flags_) {}
  HostRegistration& operator=(HostRegistration&& o) noexcept;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

  void* get() const noexcept { return p_; }
  std::size_t size() const noexcept { return bytes_; }
  // Throws std::logic_error unless registered with the mapped flag.
  void* device_pointer() const;
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  void reset() noexcept;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  unsigned flags_ = 0;
};

// RAII: one block of a kind chosen at run time (benchmarks, tools, the
// staging ring). `extra_flags` (PinnedResource::portable / mapped) are added
// to page-locked kinds, as the fallback chain does; ignored for pageable. Throws like
// the kind's resource. Move-only.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(MemoryKind kind, std::size_t bytes, unsigned extra_flags = 0);
  ~HostBuffer() { reset(); }
  HostBuffer(HostBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), kind_(o.kind_), flags_(o.flags_) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void* get() const noexcept { return p_; }
  std::size_t size() const noexcept { return bytes_; }
  MemoryKind kind() const noexcept { return kind_; }
  unsigned flags() const noexcept { return flags_; }  // cudaHostAlloc / cudaHostRegister flags
  bool is_mapped() const noexcept;
  bool cpu_readable() const noexcept { return kind_ != MemoryKind::write_combined; }
  // Throws std::logic_error when the block is not mapped.
  void* device_pointer() const;
  explicit operator bool() const noexcept { return p_ != nullptr; }
  void reset() noexcept;

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::pageable;
  unsigned flags_ = 0;
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
