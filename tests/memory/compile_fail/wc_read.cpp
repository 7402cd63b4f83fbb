// Compile-fail fixture (tests/CMakeLists.txt, staging_address_*): a host read of a
// staging slot's device address must not build. The slot is write-combined
// memory, which the CPU reads uncached; gpu::DeviceAddress has no
// dereference and no conversion to a pointer, so each WC_READ variant below
// fails to compile, with an error on its line that names DeviceAddress.
// WC_READ=0 is the control twin: what the address is for (gpu::copy_* and
// kernel arguments) must build, so the failing variants cannot pass because
// the fixture itself is broken.
#include <cstddef>
#include <cstring>

#include "memory/gpu.hpp"
#include "memory/staging_ring.hpp"
#include "stages/batch_slot.hpp"

#ifndef WC_READ
#error "compile with -DWC_READ=<variant>"
#endif

namespace fixture {

void read_staging(const imgpipe::memory::StagingRing& ring, imgpipe::stages::BatchSlot& b, void* host, void* d_dst,
                  std::size_t n, const imgpipe::gpu::Stream& stream) {
#if WC_READ == 1  // a memcpy out of the ring's slot address
  std::memcpy(host, ring.device_pointer(0), n);
#elif WC_READ == 2  // a memcpy out of a batch's staged data (the sink's mistake)
  std::memcpy(host, b.staged, n);
#elif WC_READ == 3  // a dereference of a batch's staged data
  const unsigned char first = *b.staged;
  static_cast<unsigned char*>(host)[0] = first;
#elif WC_READ == 4  // a cast of the address to a pointer, then a read
  const auto* p = static_cast<const unsigned char*>(ring.device_pointer(0));
  static_cast<unsigned char*>(host)[0] = p[0];
#else  // the control: copies on the GPU and a kernel argument
  imgpipe::gpu::copy_d2h_async(host, ring.device_pointer(0) + 16, n, stream);
  imgpipe::gpu::copy_d2d_async(d_dst, b.staged, n, stream);
  const void* kernel_argument = b.staged.for_device();
  (void)kernel_argument;
#endif
  (void)ring, (void)b, (void)host, (void)d_dst, (void)n, (void)stream;
}

}  // namespace fixture
