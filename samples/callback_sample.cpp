// Using imgpipe as a library: run a pipeline from a YAML file and receive each
// batch in device memory. Usage: imgpipe_sample_callback CONFIG [INPUT...]
#include <iostream>

#include "imgpipe/pipeline.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " CONFIG.yaml [INPUT...]\n";
    return 2;
  }
  try {
    imgpipe::Config cfg = imgpipe::Config::from_yaml_file(argv[1]);
    if (argc > 2) cfg.input.paths.assign(argv + 2, argv + argc);
    imgpipe::Pipeline pipeline(cfg);
    const imgpipe::Report report = pipeline.run([](const imgpipe::DeviceBatch& b) {
      // A model would enqueue its work on b.stream here, or wait on b.ready.
      std::cout << "batch " << b.index << ": " << b.size() << " x [";
      for (std::size_t i = 1; i < b.shape.size(); ++i) std::cout << (i > 1 ? "," : "") << b.shape[i];
      std::cout << "] " << imgpipe::to_string(b.dtype) << " " << imgpipe::to_string(b.layout) << " on "
                << (b.device >= 0 ? "cuda:" + std::to_string(b.device) : std::string("host")) << ", first: "
                << b.samples.front().path << "\n";
    });
    std::cout << report.inputs.delivered << " images delivered, " << report.inputs.failed << " failed, "
              << report.images_per_s << " images/s\n";
    return 0;
  } catch (const imgpipe::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "run failed: " << e.what() << "\n";
    return 1;
  }
}
