// The default config as YAML, every key: imgpipe::core alone (the value
// types), without the pipeline.
#include <iostream>

#include <imgpipe/config.hpp>

int main() {
  std::cout << imgpipe::Config{}.to_yaml();
  return 0;
}
