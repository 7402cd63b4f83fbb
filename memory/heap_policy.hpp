// The C library's heap under decoders that allocate afresh for every file.
// libavcodec makes a decoder's tables anew for each video (a 1080p H.264
// decoder's are several MiB, zeroed), and glibc hands large freed blocks
// back to the kernel (munmap past M_MMAP_THRESHOLD, trimming past
// M_TRIM_THRESHOLD), which faults in and zeroes those pages again for the
// next file: in a run of short clips that is most of its system time, and
// threads faulting together wait on the process's memory map lock
// (docs/video.md, "The C library's heap"). keep_freed_heap() has glibc keep
// freed blocks up to 32 MiB in its heap, and keep up to 1 GiB free at its
// top, so that the next file reuses pages already faulted in.
//
//   const std::string what = memory::keep_freed_heap(diagnostics.heap);  // for the set-up log
//
// Process-wide and once per process (the first run with video files asks):
// it leaves the heap alone where the process chose already (GLIBC_TUNABLES
// names a malloc tunable) or where `asked` is "system" (the IMGPIPE_HEAP
// diagnostic), and without glibc.
#pragma once

#include <string>

namespace imgpipe::memory {

// `asked`: "" (imgpipe's default: keep), "keep" or "system". Returns the
// policy in effect, in words. Throws Error for another value.
std::string keep_freed_heap(const std::string& asked = {});

// Transparent huge pages for large blocks of ordinary host memory (the host
// backend's staging slots and buffers: gpu::advise_huge_pages), process-wide,
// set by each run: `asked` "" (imgpipe's default: off), "off" or "on" (the
// IMGPIPE_HUGE_PAGES diagnostic). Returns the choice in words. Throws Error
// for another value.
std::string huge_pages_policy(const std::string& asked = {});

}  // namespace imgpipe::memory
