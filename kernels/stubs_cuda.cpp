#include <cstdio>

#include "core/cuda_check.hpp"

namespace imgpipe::detail {
void report_cuda_nothrow(const char* call, const char* file, int line, const char* name) noexcept {
  std::fprintf(stderr, "imgpipe: %s failed at %s:%d: %s (ignored during cleanup)\n", call, file, line, name);
}
}  // namespace imgpipe::detail
