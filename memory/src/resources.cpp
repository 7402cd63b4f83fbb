#include "imgpipe/memory/resources.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/logger.h>

#include "imgpipe/error.hpp"
#include "imgpipe/log.hpp"
#include "memory/gpu.hpp"
#include "memory/fault_injection.hpp"

#if IMGPIPE_HAS_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda_check.hpp"
#endif

namespace imgpipe::memory {
namespace {

constexpr std::size_t kPinnedAlignment = 4096;  // cudaHostAlloc returns page-aligned memory

bool is_power_of_two(std::size_t x) noexcept { return x && (x & (x - 1)) == 0; }

[[maybe_unused]] std::size_t page_size() noexcept {
  static const std::size_t p = [] {
    const long v = ::sysconf(_SC_PAGESIZE);
    return v > 0 ? static_cast<std::size_t>(v) : std::size_t{4096};
  }();
  return p;
}

[[noreturn, maybe_unused]] void throw_no_cuda(const char* what) {
  throw std::logic_error(std::string(what) +
                         ": imgpipe was built without CUDA (IMGPIPE_WITH_CUDA=off or no nvcc); "
                         "only pageable memory exists in this build");
}

#if IMGPIPE_HAS_CUDA
// Mapped memory needs a device that can map host memory and, on drivers
// without unified addressing, cudaDeviceMapHost set before the context
// exists. CUDA >= 4 with unified addressing maps every page-locked block
// anyway, so a context that already exists (cudaErrorSetOnActiveProcess on old
// drivers) is not an error. Done once per device.
void enable_host_mapping() {
  int dev = 0;
  IMGPIPE_CUDA_TRY(cudaGetDevice(&dev));
  static std::mutex m;
  static std::vector<int> done;
  std::lock_guard lock(m);
  if (std::find(done.begin(), done.end(), dev) != done.end()) return;
  int can_map = 0;
  IMGPIPE_CUDA_TRY(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, dev));
  if (!can_map)
    throw Error(fmt::format("device {} cannot map host memory (cudaDevAttrCanMapHostMemory is 0): no mapped/zero-copy memory",
                            dev));
  unsigned flags = 0;
  if (cudaGetDeviceFlags(&flags) == cudaSuccess && (flags & cudaDeviceMapHost) == 0) {
    // Keep the scheduling flags someone else chose; add cudaDeviceMapHost.
    const unsigned keep = flags & (cudaDeviceScheduleMask | cudaDeviceLmemResizeToMax);
    const cudaError_t e = cudaSetDeviceFlags(keep | cudaDeviceMapHost);
    if (e != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it
      if (e != cudaErrorSetOnActiveProcess)
        imgpipe::logger()->debug(
            "cudaSetDeviceFlags(cudaDeviceMapHost) on device {}: {} (relying on unified addressing)", dev,
            cudaGetErrorName(e));
    }
  } else {
    cudaGetLastError();
  }
  done.push_back(dev);
}

bool current_device_can_map() noexcept {
  int dev = 0, can_map = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return can_map != 0;
}
#endif

// Page-locked memory can be had here (a CUDA device), and mapped memory too
// when asked for (the current device can map host memory).
bool page_locked_available(bool mapped) noexcept {
#if IMGPIPE_HAS_CUDA
  if (!pinned_unavailable_reason().empty()) return false;
  return !mapped || current_device_can_map();
#else
  (void)mapped;
  return false;
#endif
}

}  // namespace

// ---------------------------------------------------------------- kinds
std::string_view to_string(MemoryKind k) noexcept {
  switch (k) {
    case MemoryKind::pageable: return "pageable";
    case MemoryKind::pinned: return "pinned";
    case MemoryKind::portable: return "portable";
    case MemoryKind::write_combined: return "write_combined";
    case MemoryKind::mapped: return "mapped";
    case MemoryKind::host_registered: return "host_registered";
  }
  return "unknown";
}

std::optional<MemoryKind> parse_memory_kind(std::string_view s) noexcept {
  for (MemoryKind k : all_memory_kinds)
    if (s == to_string(k)) return k;
  if (s == "default") return MemoryKind::pinned;
  if (s == "wc" || s == "write-combined") return MemoryKind::write_combined;
  if (s == "registered" || s == "host-registered") return MemoryKind::host_registered;
  return std::nullopt;
}

std::string_view pinned_unavailable_reason() noexcept {
  static const std::string reason = [] {
    if (!gpu::built_with_cuda()) return std::string("imgpipe was built without CUDA");
    std::string why;
    if (gpu::device_count(&why) > 0) return std::string();
    return "no CUDA device (" + why + ")";
  }();
  return reason;
}

void* device_pointer(const void* h) {
#if IMGPIPE_HAS_CUDA
  void* d = nullptr;
  IMGPIPE_CUDA_TRY(cudaHostGetDevicePointer(&d, const_cast<void*>(h), 0));
  return d;
#else
  (void)h;
  throw_no_cuda("device_pointer");
#endif
}

// ---------------------------------------------------------------- pageable
void* PageableResource::allocate(std::size_t bytes, std::size_t alignment) {
  if (!is_power_of_two(alignment)) throw std::invalid_argument("PageableResource: alignment must be a power of two");
  bytes = fault_injection::check(MemoryKind::pageable, bytes);
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded ? rounded : alignment);
  if (!p) throw std::bad_alloc();
  return p;
}

void PageableResource::deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }

// ---------------------------------------------------------------- cudaHostAlloc
std::string_view PinnedResource::name() const noexcept {
  switch (flags_) {
    case none: return "pinned";
    case portable: return "portable";
    case mapped: return "mapped";
    case write_combined: return "write_combined";
    case portable | write_combined: return "portable|write_combined";
    case portable | mapped: return "portable|mapped";
    case mapped | write_combined: return "mapped|write_combined";
    default: return "portable|mapped|write_combined";
  }
}

MemoryKind PinnedResource::kind() const noexcept {
  if (flags_ & write_combined) return MemoryKind::write_combined;
  if (flags_ & mapped) return MemoryKind::mapped;
  if (flags_ & portable) return MemoryKind::portable;
  return MemoryKind::pinned;
}

bool PinnedResource::is_available() const noexcept {
  return page_locked_available(is_mapped());
}

void* PinnedResource::allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment > kPinnedAlignment || !is_power_of_two(alignment))
    throw std::invalid_argument("PinnedResource: alignment must be a power of two no larger than 4096");
  bytes = fault_injection::check(kind(), bytes);
#if IMGPIPE_HAS_CUDA
  if (is_mapped()) enable_host_mapping();
  void* p = nullptr;
  IMGPIPE_CUDA_TRY(cudaHostAlloc(&p, bytes ? bytes : 1, flags_));
  return p;
#else
  (void)bytes;
  throw_no_cuda("PinnedResource");
#endif
}

void PinnedResource::deallocate(void* p, std::size_t, std::size_t) noexcept {
#if IMGPIPE_HAS_CUDA
  if (p) IMGPIPE_CUDA_TRY_NOTHROW(cudaFreeHost(p));
#else
  (void)p;
#endif
}

void* PinnedResource::device_pointer(const void* p) const {
  if (!is_mapped()) throw std::logic_error(std::string("device_pointer: ") + std::string(name()) + " memory is not mapped");
  return memory::device_pointer(p);
}

// ---------------------------------------------------------------- cudaHostRegister
std::string_view HostRegisteredResource::name() const noexcept {
  switch (flags_) {
    case none: return "host_registered";
    case portable: return "host_registered|portable";
    case mapped: return "host_registered|mapped";
    default: return "host_registered|portable|mapped";
  }
}

bool HostRegisteredResource::is_available() const noexcept {
  return page_locked_available(is_mapped());
}

void* HostRegisteredResource::allocate(std::size_t bytes, std::size_t alignment) {
  if (!is_power_of_two(alignment)) throw std::invalid_argument("HostRegisteredResource: alignment must be a power of two");
  const std::size_t ask = fault_injection::check(MemoryKind::host_registered, bytes);
#if IMGPIPE_HAS_CUDA
  // Whole pages: cudaHostRegister locks pages, and a neighbour sharing our
  // first or last page could not be registered separately.
  const std::size_t align = std::max(alignment, page_size());
  const std::size_t rounded = std::max<std::size_t>((bytes + align - 1) / align * align, align);
  void* p = std::aligned_alloc(align, rounded);
  if (!p) throw std::bad_alloc();
  try {
    if (is_mapped()) enable_host_mapping();
    IMGPIPE_CUDA_TRY(cudaHostRegister(p, ask == bytes ? rounded : ask, flags_));
  } catch (...) {
    std::free(p);
    throw;
  }
  return p;
#else
  (void)ask;
  throw_no_cuda("HostRegisteredResource");
#endif
}

void HostRegisteredResource::deallocate(void* p, std::size_t, std::size_t) noexcept {
  if (!p) return;
#if IMGPIPE_HAS_CUDA
  IMGPIPE_CUDA_TRY_NOTHROW(cudaHostUnregister(p));
#endif
  std::free(p);
}

void* HostRegisteredResource::device_pointer(const void* p) const {
  if (!is_mapped()) throw std::logic_error("device_pointer: host_registered memory without the mapped flag");
  return memory::device_pointer(p);
}

HostRegistration::HostRegistration(void* p, std::size_t bytes, unsigned flags) : flags_(flags & 3u) {
  if (!p || bytes == 0) throw std::invalid_argument("HostRegistration: null pointer or zero bytes");
  const std::size_t ask = fault_injection::check(MemoryKind::host_registered, bytes);
#if IMGPIPE_HAS_CUDA
  if (flags_ & HostRegisteredResource::mapped) enable_host_mapping();
  IMGPIPE_CUDA_TRY(cudaHostRegister(p, ask, flags_));
  p_ = p;
  bytes_ = bytes;
#else
  (void)ask;
  throw_no_cuda("HostRegistration");
#endif
}

HostRegistration::~HostRegistration() { reset(); }

HostRegistration& HostRegistration::operator=(HostRegistration&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    flags_ = o.flags_;
  }
  return *this;
}

void HostRegistration::reset() noexcept {
#if IMGPIPE_HAS_CUDA
  if (p_) IMGPIPE_CUDA_TRY_NOTHROW(cudaHostUnregister(p_));
#endif
  p_ = nullptr;
  bytes_ = 0;
}

void* HostRegistration::device_pointer() const {
  if (!(flags_ & HostRegisteredResource::mapped))
    throw std::logic_error("HostRegistration::device_pointer: registered without the mapped flag");
  return memory::device_pointer(p_);
}

// ---------------------------------------------------------------- HostBuffer
HostBuffer::HostBuffer(MemoryKind kind, std::size_t bytes, unsigned extra_flags) : kind_(kind) {
  extra_flags &= PinnedResource::portable | PinnedResource::mapped;
  switch (kind) {
    case MemoryKind::pageable: flags_ = 0; p_ = PageableResource{}.allocate(bytes, 4096); break;
    case MemoryKind::host_registered:
      flags_ = extra_flags;  // cudaHostRegisterPortable / Mapped have the same values
      p_ = HostRegisteredResource(flags_).allocate(bytes, 4096);
      break;
    default: {
      unsigned f = extra_flags;
      if (kind == MemoryKind::portable) f |= PinnedResource::portable;
      if (kind == MemoryKind::write_combined) f |= PinnedResource::write_combined;
      if (kind == MemoryKind::mapped) f |= PinnedResource::mapped;
      flags_ = f;
      p_ = PinnedResource(f).allocate(bytes, 4096);
    }
  }
  bytes_ = bytes;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    kind_ = o.kind_;
    flags_ = o.flags_;
  }
  return *this;
}

bool HostBuffer::is_mapped() const noexcept {
  return kind_ != MemoryKind::pageable && (flags_ & PinnedResource::mapped) != 0;
}

void* HostBuffer::device_pointer() const {
  if (!is_mapped()) throw std::logic_error("HostBuffer::device_pointer: the block is not mapped");
  return memory::device_pointer(p_);
}

void HostBuffer::reset() noexcept {
  if (!p_) return;
  switch (kind_) {
    case MemoryKind::pageable: PageableResource{}.deallocate(p_, bytes_, 4096); break;
    case MemoryKind::host_registered: HostRegisteredResource(flags_).deallocate(p_, bytes_, 4096); break;
    default: PinnedResource(flags_).deallocate(p_, bytes_, 4096);
  }
  p_ = nullptr;
  bytes_ = 0;
}

}  // namespace imgpipe::memory
