// libFuzzer target: the config loader must either accept a document or throw
// ConfigError; never crash, hang, leak or throw anything else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "imgpipe/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  try {
    const imgpipe::Config c = imgpipe::Config::from_yaml_string(yaml);
    // An accepted config must survive its own round trip.
    const imgpipe::Config again = imgpipe::Config::from_yaml_string(c.to_yaml());
    if (again.batch.size != c.batch.size || again.transform.resize.width != c.transform.resize.width) std::abort();
  } catch (const imgpipe::ConfigError&) {
  }
  return 0;
}
