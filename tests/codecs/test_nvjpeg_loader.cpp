// nvJPEG's run-time loader (everywhere; tests split from test_nvjpeg.cpp):
// IMGPIPE_NVJPEG=off, a bogus IMGPIPE_NVJPEG_LIB, a library without the
// symbols, and the default search all fail with a reason that says why; the
// status and backend names.
#include <doctest/doctest.h>

#include "nvjpeg_test_util.hpp"

using namespace nvjpeg_test;
using imgpipe::test::ScopedEnv;

// ============================================================ loader

TEST_CASE("nvjpeg loader: IMGPIPE_NVJPEG=off pretends the library is absent") {
  for (const char* off : {"off", "OFF", "0", "false", "no"}) {
    ScopedEnv sw("IMGPIPE_NVJPEG", off);
    const nvj::LoadOptions o = nvj::load_options_from_env();
    CHECK(o.disabled);
    std::string why;
    CHECK(nvj::load_api(o, &why) == nullptr);
    CHECK(contains(why, "disabled"));
    CHECK(contains(why, std::string("IMGPIPE_NVJPEG=") + off));
  }
  for (const char* on : {"on", "auto", "1", ""}) {
    ScopedEnv sw("IMGPIPE_NVJPEG", on);
    CHECK_FALSE(nvj::load_options_from_env().disabled);
  }
  // Disabled wins over a library path.
  ScopedEnv sw("IMGPIPE_NVJPEG", "off");
  ScopedEnv lib("IMGPIPE_NVJPEG_LIB", "/usr/local/cuda/lib64/libnvjpeg.so.13");
  std::string why;
  CHECK(nvj::load_api(nvj::load_options_from_env(), &why) == nullptr);
  CHECK(contains(why, "disabled"));
}

TEST_CASE("nvjpeg loader: a bogus IMGPIPE_NVJPEG_LIB is named in the reason") {
  ScopedEnv sw("IMGPIPE_NVJPEG", nullptr);
  const std::string bogus = "/nonexistent/imgpipe-test/libnvjpeg-bogus.so.13";
  ScopedEnv lib("IMGPIPE_NVJPEG_LIB", bogus.c_str());
  const nvj::LoadOptions o = nvj::load_options_from_env();
  CHECK(o.library == bogus);
  std::string why;
  CHECK(nvj::load_api(o, &why) == nullptr);
  CHECK(contains(why, bogus));
  CHECK(contains(why, "IMGPIPE_NVJPEG_LIB"));
  CHECK(contains(why, "No such file"));  // dlerror()'s text is passed on
}

TEST_CASE("nvjpeg loader: a library without the nvJPEG symbols names the missing one") {
  // libm exists everywhere and exports no nvjpeg* symbol.
  std::string why;
  nvj::LoadOptions o;
  o.library = "libm.so.6";
  CHECK(nvj::load_api(o, &why) == nullptr);
  CHECK(contains(why, "libm.so.6"));
  CHECK(contains(why, "lacks nvjpegGetProperty"));
}

TEST_CASE("nvjpeg loader: the default search reports every name tried, or a complete table") {
  std::string why;
  auto api = nvj::load_api(nvj::LoadOptions{}, &why);
  if (api == nullptr) {
    MESSAGE("libnvjpeg absent here: " << why);
    for (const char* name : nvj::default_library_names) CHECK(contains(why, name));
  } else {
    MESSAGE("libnvjpeg " << api->version[0] << "." << api->version[1] << "." << api->version[2] << " loaded as "
                         << api->library);
    CHECK(api->version[0] >= 11);
    CHECK(static_cast<bool>(api->nvjpegCreateExV2));
    CHECK(static_cast<bool>(api->nvjpegDecodeBatched));
    CHECK(static_cast<bool>(api->nvjpegDecodeBatchedPreAllocate));
    CHECK(static_cast<bool>(api->nvjpegGetHardwareDecoderInfo));
  }
  // The process-wide table agrees with a fresh load under this process's
  // environment (IMGPIPE_NVJPEG, IMGPIPE_NVJPEG_LIB as the run was started).
  std::string why_env, why_shared;
  const auto fresh = nvj::load_api(nvj::load_options_from_env(), &why_env);
  const nvj::Api* shared = nvj::api(&why_shared);
  CHECK((shared == nullptr) == (fresh == nullptr));
  if (shared == nullptr) {
    MESSAGE("process-wide table: none: " << why_shared);
    CHECK(why_shared == why_env);
  }
  CHECK(nvj::api() == shared);  // loaded once
}

TEST_CASE("nvjpeg: status names") {
  CHECK(std::string(nvj::status_name(nvj::NVJPEG_STATUS_BAD_JPEG)) == "NVJPEG_STATUS_BAD_JPEG");
  CHECK(std::string(nvj::status_name(10)) == "NVJPEG_STATUS_INCOMPLETE_BITSTREAM");
  CHECK(std::string(nvj::status_name(1234)) == "NVJPEG_STATUS_<unknown>");
  CHECK(kn::parse_jpeg_backend("hardware_device") == kn::JpegBackend::hardware_device);
  CHECK(kn::parse_jpeg_backend("gpu_hybrid") == kn::JpegBackend::gpu_hybrid);
  CHECK_FALSE(kn::parse_jpeg_backend("hybrid").has_value());
}
