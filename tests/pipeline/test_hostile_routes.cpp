// The hostile JPEG corpus (tests/hostile_jpegs.hpp) through the Pipeline on
// the CPU and the GPU route (issue 28): the same files delivered and the same
// failed; the files the engines decoded within 1 level of the CPU route.
// Runs where a GPU with nvJPEG's engines exists; elsewhere it skips visibly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <map>
#include <string>

#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
#include "common.hpp"
#include "hostile_jpegs.hpp"
#include "imgpipe/pipeline.hpp"

namespace fs = std::filesystem;
using namespace imgpipe;

namespace {

struct Routed {
  std::map<std::string, bool> on_gpu;  // delivered: decoded by the engines?
  std::map<std::string, std::vector<float>> tensor;
  std::map<std::string, std::string> failure;
  std::map<std::string, std::uint64_t> reasons;  // decode.cpu_route_reasons
};

std::uint64_t reason_count(const Routed& r, const std::string& reason) {
  const auto it = r.reasons.find(reason);
  return it == r.reasons.end() ? 0 : it->second;
}

Routed run_route(const fs::path& dir, const std::string& device, Where where) {
  Config c;
  c.input.paths = {dir.string()};
  c.batch.size = 8;
  c.decode.threads = 2;
  c.decode.where = where;
  c.decode.verify = Verify::full;  // the entropy-damage classes get libjpeg's verdict too
  c.decode.reduced = false;
  c.transform.resize.width = 64;
  c.transform.resize.height = 64;
  c.devices = DeviceSelection::parse(device);
  Pipeline p(c);
  Routed o;
  const Report r = p.run([&](const DeviceBatch& b) {
    const std::vector<unsigned char> host = test::batch_to_host(b);
    const std::size_t per = host.size() / b.size();
    for (std::size_t i = 0; i < b.size(); ++i) {
      const std::string name = fs::path(b.samples[i].path).filename().string();
      o.on_gpu[name] = b.samples[i].decoded_on_gpu;
      std::vector<float> t(per / sizeof(float));
      std::memcpy(t.data(), host.data() + i * per, per);
      o.tensor[name] = std::move(t);
    }
  });
  for (const auto& f : r.inputs.failures) o.failure[fs::path(f.path).filename().string()] = f.reason;
  for (const auto& [reason, n] : r.decode.cpu_route_reasons) o.reasons[reason] = n;
  return o;
}

}  // namespace

TEST_CASE("hostile routes (GPU): the corpus gets the CPU route's verdicts and pixels on the GPU route") {
  std::string why;
  const bool engines = test::have_gpu() && codecs::GpuJpegDecoder::probe(0, &why).has_value();
  IMGPIPE_SKIP_UNLESS(engines, test::have_gpu() ? why : std::string("no CUDA device"));
  test::TempDir dir;
  for (const auto& h : test::hostile_jpegs()) test::write_bytes(dir.path() / (h.name + ".jpg"), h.bytes);
  const Routed cpu = run_route(dir.path(), "0", Where::cpu);
  for (Where where : {Where::gpu, Where::automatic}) {
    const Routed gpu = run_route(dir.path(), "0", where);
    // The probe's checks counted by reason (with gpu every JPEG meets them;
    // with auto those probed before the engines are ready do not): both
    // oversubscribed tables, both RGB encodings, the three SOS classes.
    if (where == Where::gpu) {
      CHECK(reason_count(gpu, "huffman_oversubscribed") == 2);
      CHECK(reason_count(gpu, "colour_transform") == 2);
      CHECK(reason_count(gpu, "scan_components") == 3);
    }
    for (const auto& h : test::hostile_jpegs()) {
      const std::string name = h.name + ".jpg";
      CAPTURE(name);
      CHECK(cpu.failure.count(name) == gpu.failure.count(name));
      CHECK(cpu.tensor.count(name) == gpu.tensor.count(name));
      if (!gpu.on_gpu.count(name) || !gpu.on_gpu.at(name) || !cpu.tensor.count(name)) continue;
      const auto& a = gpu.tensor.at(name);
      const auto& b = cpu.tensor.at(name);
      REQUIRE(a.size() == b.size());
      const double most = test::max_level_diff(a, b);
      MESSAGE(name << " on the engines: max |diff| " << most << " levels");
      CHECK(most <= 1.0 + 1e-3);
    }
  }
}
