#include "imgpipe/error.hpp"

namespace imgpipe {

InputError::InputError(std::string path, std::int64_t frame, std::string reason)
    : Error(path + (frame >= 0 ? " frame " + std::to_string(frame) : std::string()) + ": " + reason),
      path_(std::move(path)),
      frame_(frame),
      reason_(std::move(reason)) {}

CudaError::CudaError(std::string call, const char* file, int line, int code, std::string name, std::string text)
    : Error(call + " failed at " + file + ":" + std::to_string(line) + ": " + name + " (" + text + ")"),
      code_(code),
      name_(std::move(name)) {}

}  // namespace imgpipe
