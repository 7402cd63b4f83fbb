#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::err);  // tests check failures through reports, not logs
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
