#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/logger.h>

#include <cstdlib>

#include "common.hpp"
#include "imgpipe/log.hpp"

int main(int argc, char** argv) {
  imgpipe::logger()->set_level(spdlog::level::err);  // tests check failures through reports, not logs
  // A suite started by a launcher (srun, torchrun) must not shard its inputs.
  for (const auto& v : imgpipe::test::launcher_variables()) ::unsetenv(v.c_str());
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
