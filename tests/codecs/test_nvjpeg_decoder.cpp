// nvJPEG's batched GPU decoder (where a CUDA device and libnvjpeg exist: the
// GPU machine; tests split from test_nvjpeg.cpp), part one: without a GPU or
// libnvjpeg it says why; the test JPEGs are what they claim; probe() reports
// the JPEG engines; parse() reads headers, from many threads at once,
// progressive and 4:1:1 reported unsupported by the hardware check.
// The GPU cases skip only when there is no CUDA device or no libnvjpeg, and
// say why (test::skip_unless: CTest reports them skipped).
// IMGPIPE_TEST_REQUIRE_NVJPEG_HW=1 (set on the GPU machine) turns a missing
// JPEG engine from a skip into a failure.
#include <doctest/doctest.h>

#include "nvjpeg_test_util.hpp"

using namespace nvjpeg_test;

// ============================================================ decoder

TEST_CASE("nvjpeg decoder: without a GPU or libnvjpeg it reports why and does not crash") {
  const std::string reason = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(!reason.empty(), "a CUDA device and libnvjpeg exist: this case checks their absence");
  MESSAGE("GPU decode unavailable: " << reason);
  std::string why;
  CHECK_FALSE(kn::GpuJpegDecoder::probe(0, &why).has_value());
  CHECK_FALSE(why.empty());
  for (kn::JpegBackend b : {kn::JpegBackend::hardware_device, kn::JpegBackend::hardware, kn::JpegBackend::gpu_hybrid}) {
    kn::GpuJpegOptions o;
    o.backend = b;
    try {
      kn::GpuJpegDecoder d(0, o);
      FAIL("a decoder was created without a GPU or libnvjpeg");
    } catch (const imgpipe::Error& e) {
      CHECK(contains(e.what(), "unavailable"));
    }
  }
}

TEST_CASE("nvjpeg test data: the JPEGs have the subsampling and encoding asked for") {
  using C = kn::ChromaSubsampling;
  std::vector<Sample> all = baseline_samples();
  all.push_back(progressive_sample());
  all.push_back(css411_sample());
  for (const Sample& s : all) {
    CAPTURE(s.name);
    const HeaderFacts f = read_header(s.jpeg);
    CHECK(f.components == s.components);
    CHECK(f.progressive == s.progressive);
    if (s.components == 3) {
      CHECK(f.h1 == 1);
      CHECK(f.v1 == 1);
    }
    const int h = s.css == C::css420 || s.css == C::css422 ? 2 : s.css == C::css411 ? 4 : 1;
    const int v = s.css == C::css420 || s.css == C::css440 ? 2 : 1;
    if (s.components == 3) {
      CHECK(f.h0 == h);
      CHECK(f.v0 == v);
    }
    // The OpenCV reference is the picture, not noise: libjpeg at q90.
    CHECK(s.reference.cols == s.width);
    CHECK(s.reference.rows == s.height);
  }
}

#if IMGPIPE_HAS_CUDA

TEST_CASE("nvjpeg decoder: probe reports the JPEG engines") {
  const std::string no_gpu = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  std::string why;
  const auto info = kn::GpuJpegDecoder::probe(0, &why);
  if (!info) {
    const char* require = std::getenv("IMGPIPE_TEST_REQUIRE_NVJPEG_HW");
    if (require != nullptr && std::string(require) == "1") FAIL("no JPEG engine: " << why);
    CHECK_FALSE(why.empty());
    IMGPIPE_SKIP_UNLESS(false, "no JPEG engine on device 0: " + why);
  }
  MESSAGE("nvJPEG " << info->version[0] << "." << info->version[1] << "." << info->version[2] << " (" << info->library
                    << "): " << info->engines << " engines x " << info->cores_per_engine
                    << " cores, HARDWARE_DEVICE backend " << std::string(info->device_input ? "yes" : "no"));
  CHECK(info->engines > 0);
  CHECK(info->cores_per_engine > 0);
  CHECK(info->version[0] >= 11);
  CHECK_FALSE(kn::GpuJpegDecoder::probe(9999, &why).has_value());
  CHECK(contains(why, "does not exist"));
}

TEST_CASE("nvjpeg decoder: parse reads headers, from many threads at once") {
  const std::string no_gpu = no_gpu_reason();
  IMGPIPE_SKIP_UNLESS(no_gpu.empty(), no_gpu);
  std::vector<Sample> samples = baseline_samples();
  samples.push_back(progressive_sample());
  samples.push_back(css411_sample());
  for (kn::JpegBackend b : test_backends()) {
    const std::string asked(kn::to_string(b));
    CAPTURE(asked);
    kn::GpuJpegOptions o;
    o.backend = b;
    kn::GpuJpegDecoder dec(0, o);
    for (const Sample& s : samples) {
      CAPTURE(s.name);
      const kn::JpegInfo info = dec.parse(s.jpeg.data(), s.jpeg.size());
      REQUIRE(info.valid);
      CHECK(info.status == 0);
      CHECK(info.width == s.width);
      CHECK(info.height == s.height);
      CHECK(info.components == s.components);
      CHECK(info.subsampling == s.css);
      CHECK(info.progressive == s.progressive);
      if (dec.backend() != kn::JpegBackend::gpu_hybrid) {
        const bool hw_takes = !s.progressive && s.css != kn::ChromaSubsampling::css411;
        CHECK_MESSAGE(info.batch_supported == hw_takes,
                      s.name << ": nvjpegDecodeBatchedSupported says " << info.batch_supported);
      } else {
        MESSAGE("gpu_hybrid batch_supported for " << s.name << ": " << info.batch_supported);
      }
    }
    // Damaged headers are reported, not thrown.
    const std::vector<std::uint8_t>& good = samples[0].jpeg;
    std::vector<std::uint8_t> garbage(4096);
    cv::RNG rng(77);
    rng.fill(garbage, cv::RNG::UNIFORM, 0, 256);
    for (const auto& bad : {std::vector<std::uint8_t>(good.begin(), good.begin() + 20), garbage}) {
      const kn::JpegInfo info = dec.parse(bad.data(), bad.size());
      CHECK_FALSE(info.valid);
      CHECK(info.status != 0);
    }
    CHECK_FALSE(dec.parse(nullptr, 0).valid);

    // Many threads: the same answers.
    std::vector<kn::JpegInfo> expected;
    for (const Sample& s : samples) expected.push_back(dec.parse(s.jpeg.data(), s.jpeg.size()));
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        for (int round = 0; round < 40; ++round)
          for (std::size_t i = 0; i < samples.size(); ++i) {
            const std::size_t k = (i + static_cast<std::size_t>(t)) % samples.size();
            const kn::JpegInfo info = dec.parse(samples[k].jpeg.data(), samples[k].jpeg.size());
            if (info.width != expected[k].width || info.height != expected[k].height ||
                info.subsampling != expected[k].subsampling || info.batch_supported != expected[k].batch_supported)
              ++mismatches;
          }
      });
    for (auto& th : threads) th.join();
    CHECK(mismatches.load() == 0);
  }
}

#endif  // IMGPIPE_HAS_CUDA
