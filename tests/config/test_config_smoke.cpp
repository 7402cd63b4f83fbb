#include <doctest/doctest.h>

#include "imgpipe/config.hpp"

TEST_CASE("config: empty document gives the defaults") {
  const imgpipe::Config c = imgpipe::Config::from_yaml_string("");
  CHECK(c.batch.size == 32);
  CHECK(c.staging.slots == 2);
}
