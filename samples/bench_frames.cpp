// Where the CPU route's decoded frames live: libavcodec's own buffers (made
// afresh for every file) against one memory::FramePool for the run (pageable
// blocks reused from file to file; docs/video.md, "The frames' memory").
// Each run decodes every file once with one thread, holding the last --hold
// frames as the pipeline's queues hold them; the two ways alternate, --runs
// times each, in one process (as in a pipeline's run, glibc's allocator
// has kept memory from earlier files by the later runs). Prints the CPU ms a
// frame and the page faults of every run, and the medians. --check hashes
// every frame (which costs more than the decode) and exits 1 when the two
// ways differ.
//   imgpipe_bench_frames [--runs 3] [--hold 12] [--check] VIDEO...
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "codecs/video/frame_hash.hpp"
#include "codecs/video/video_file.hpp"
#include "memory/frame_pool.hpp"

using imgpipe::codecs::VideoFile;
using imgpipe::codecs::VideoFrame;

namespace {

struct Usage {
  double cpu_s = 0;
  long faults = 0;
};

Usage usage() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6,
          u.ru_minflt + u.ru_majflt};
}

struct Run {
  double ms_a_frame = 0;
  double open_ms = 0;  // CPU ms a file in VideoFile's constructor (open, probe, decoder start)
  long faults = 0;
  std::int64_t frames = 0;
  std::uint64_t hash = 0;
};

Run decode_all(const std::vector<std::string>& files, std::size_t hold, bool pooled, bool check) {
  std::shared_ptr<imgpipe::memory::FramePool> pool;
  if (pooled) {
    imgpipe::memory::FramePoolOptions o;
    o.device = -1;
    o.page_locked = false;
    pool = std::make_shared<imgpipe::memory::FramePool>(o);
  }
  const Usage u0 = usage();
  Run r;
  std::deque<std::shared_ptr<VideoFrame>> held;
  double open_s = 0;
  for (const std::string& path : files) {
    const double t0 = usage().cpu_s;
    VideoFile v(path, {1, nullptr, pool});
    open_s += usage().cpu_s - t0;
    std::shared_ptr<VideoFrame> f;
    while (v.next(f) == VideoFile::Next::frame) {
      ++r.frames;
      if (check) r.hash = (r.hash ^ imgpipe::codecs::frame_hash(*f)) * 1099511628211ull;
      held.push_back(std::move(f));
      if (held.size() > hold) held.pop_front();
    }
  }
  held.clear();
  const Usage u1 = usage();
  r.ms_a_frame = r.frames ? (u1.cpu_s - u0.cpu_s) * 1e3 / static_cast<double>(r.frames) : 0;
  r.faults = u1.faults - u0.faults;
  r.open_ms = files.empty() ? 0 : open_s * 1e3 / static_cast<double>(files.size());
  return r;
}

template <class T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decode video files with libavcodec's buffers and with a frame pool, alternately"};
  std::vector<std::string> files;
  int runs = 3;
  std::size_t hold = 12;
  bool check = false;
  app.add_option("videos", files, "video files, decoded in order")->required()->check(CLI::ExistingFile);
  app.add_option("--runs", runs, "runs of each way")->check(CLI::Range(1, 100));
  app.add_option("--hold", hold, "frames held after their decode, as the pipeline's queues hold them");
  app.add_flag("--check", check, "hash every frame and compare the two ways");
  CLI11_PARSE(app, argc, argv);
  std::vector<double> ms[2];
  std::vector<long> faults[2];
  std::uint64_t hash = 0;
  bool same = true;
  for (int r = 0; r < runs; ++r) {
    for (int pooled = 0; pooled < 2; ++pooled) {
      const Run x = decode_all(files, hold, pooled == 1, check);
      std::printf("%-22s %lld frames, %.3f ms CPU a frame (opening a file %.1f ms), %ld page faults%s\n",
                  pooled ? "frame pool" : "libavcodec's buffers", static_cast<long long>(x.frames), x.ms_a_frame,
                  x.open_ms, x.faults, check ? fmt::format(", hash {:016x}", x.hash).c_str() : "");
      ms[pooled].push_back(x.ms_a_frame);
      faults[pooled].push_back(x.faults);
      if (r == 0 && pooled == 0) hash = x.hash;
      same = same && x.hash == hash;
    }
  }
  std::printf("medians: libavcodec's buffers %.3f ms a frame (%ld faults), frame pool %.3f ms (%ld faults)%s\n",
              median(ms[0]), median(faults[0]), median(ms[1]), median(faults[1]),
              !check ? "" : same ? "; the frames are the same" : "; THE FRAMES DIFFER");
  return same ? 0 : 1;
}
