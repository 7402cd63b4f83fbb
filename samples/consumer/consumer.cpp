// imgpipe from an application's side: a pipeline whose config is built in
// code, over the image folders (or files) named on the command line, each
// batch described as it arrives. Exits 0 when at least one image came
// through, 1 when none did or the run failed, 2 on a config error.
//
//   imgpipe_consumer [PATH...]   (default: the sample images installed with imgpipe)
#include <iostream>

#include <imgpipe/pipeline.hpp>

int main(int argc, char** argv) try {
  imgpipe::Config cfg;
  if (argc > 1) cfg.input.paths.assign(argv + 1, argv + argc);
  else cfg.input.paths = {IMGPIPE_SAMPLE_IMAGES};
  cfg.transform.resize.width = 224;
  cfg.transform.resize.height = 224;
  cfg.batch.size = 8;

  imgpipe::Pipeline pipeline(cfg);
  const imgpipe::Report report = pipeline.run([](const imgpipe::DeviceBatch& b) {
    // A model would enqueue its work on b.stream here (or wait for b.ready).
    std::cout << "batch " << b.index << ": " << b.size() << " x [";
    for (std::size_t i = 1; i < b.shape.size(); ++i) std::cout << (i > 1 ? "," : "") << b.shape[i];
    std::cout << "] " << imgpipe::to_string(b.dtype) << " " << imgpipe::to_string(b.layout) << " on "
              << (b.device >= 0 ? "cuda:" + std::to_string(b.device) : std::string("host")) << "\n";
  });
  std::cout << "imgpipe " << imgpipe::version() << " (" << report.backend << "): " << report.inputs.delivered
            << " images delivered in " << report.batches << " batches, " << report.inputs.failed << " failed\n";
  for (const auto& f : report.inputs.failures) std::cout << "  failed: " << f.path << ": " << f.reason << "\n";
  return report.inputs.delivered > 0 ? 0 : 1;
} catch (const imgpipe::ConfigError& e) {
  std::cerr << "imgpipe_consumer: " << e.what() << "\n";
  return 2;
} catch (const imgpipe::Error& e) {  // an input error (on_error: fail), CUDA, ...
  std::cerr << "imgpipe_consumer: " << e.what() << "\n";
  return 1;
}
