// The C API's errors: the calling thread's last error, set from what the
// C++ side throws (capi/src/handles.hpp).
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "handles.hpp"
#include "imgpipe/error.hpp"

namespace imgpipe::capi {
namespace {

thread_local LastError t_error;
}  // namespace

LastError& last_error() noexcept { return t_error; }

imgpipe_status fail(imgpipe_status status, const char* cls, std::string message,
                    std::map<std::string, std::string> fields) noexcept {
  try {
    t_error.message = std::move(message);
    t_error.cls = cls;
    t_error.fields = std::move(fields);
  } catch (...) {
  }
  return status;
}

// The status and last error for the exception being handled.
imgpipe_status from_exception() noexcept {
  try {
    throw;
  } catch (const imgpipe::ConfigError& e) {
    return fail(IMGPIPE_E_CONFIG, "ConfigError", e.what(),
                {{"key", e.key()}, {"line", std::to_string(e.line())}, {"reason", e.reason()}});
  } catch (const imgpipe::InputError& e) {
    return fail(IMGPIPE_E_INPUT, "InputError", e.what(),
                {{"path", e.path()}, {"frame", std::to_string(e.frame())}, {"reason", e.reason()}});
  } catch (const imgpipe::CudaError& e) {
    return fail(IMGPIPE_E_CUDA, "CudaError", e.what(), {{"name", e.name()}, {"code", std::to_string(e.code())}});
  } catch (const imgpipe::Interrupted& e) {
    return fail(IMGPIPE_E_INTERRUPTED, "Interrupted", e.what());
  } catch (const imgpipe::Error& e) {
    return fail(IMGPIPE_E_ERROR, "Error", e.what());
  } catch (const std::logic_error& e) {  // std::invalid_argument too
    return fail(IMGPIPE_E_USAGE, "UsageError", e.what());
  } catch (const std::exception& e) {
    return fail(IMGPIPE_E_INTERNAL, "InternalError", e.what());
  } catch (...) {
    return fail(IMGPIPE_E_INTERNAL, "InternalError", "unknown exception");
  }
}

imgpipe_status null_handle(const char* what) noexcept {
  return fail(IMGPIPE_E_USAGE, "UsageError", std::string(what) + " is NULL");
}

}  // namespace imgpipe::capi
