#include "source.hpp"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

namespace fs = std::filesystem;

namespace imgpipe::stages {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

class Collector {
 public:
  explicit Collector(const InputConfig& cfg) : cfg_(cfg) {
    for (const auto& e : cfg.extensions) exts_.insert(lower(e));
  }

  void add_path(const std::string& p, bool explicit_file) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      fail(p, ec && ec != std::errc::no_such_file_or_directory ? ec.message() : "no such file or directory");
      return;
    }
    if (fs::is_directory(st)) {
      add_dir(p, true);
      return;
    }
    if (!explicit_file && !wanted(p)) return;
    add_file(p);
  }

  std::vector<InputItem> take() { return std::move(items_); }

 private:
  bool wanted(const fs::path& p) const { return exts_.count(lower(p.extension().string())) > 0; }

  void fail(const std::string& path, const std::string& reason) { items_.push_back({path, -1, reason, false}); }

  void add_file(const fs::path& p) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(p, ec);
    if (ec) key = p.lexically_normal();
    if (!seen_.insert(key.string()).second) return;
    items_.push_back({p.string(), -1, {}, false});
  }

  void add_dir(const fs::path& dir, bool top) {
    if (!top && !cfg_.recursive) return;
    std::error_code ec;
    // Directory symlinks are not followed: no loops, and each file is reached
    // through the tree it lives in.
    fs::directory_iterator it(dir, fs::directory_options::none, ec);
    if (ec) {
      fail(dir.string(), "cannot list directory: " + ec.message());
      return;
    }
    std::vector<fs::directory_entry> entries;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) {
        fail(dir.string(), "error while listing directory: " + ec.message());
        break;
      }
      entries.push_back(*it);
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().string() < b.path().string(); });
    for (const auto& e : entries) {
      std::error_code sec;
      const bool is_link = e.is_symlink(sec);
      const fs::file_status st = e.status(sec);  // follows file symlinks
      if (sec) {
        // libstdc++ reports a missing symlink target as an error (ENOENT), not
        // as a not_found status.
        if (wanted(e.path()))
          fail(e.path().string(), is_link && sec == std::errc::no_such_file_or_directory
                                      ? std::string("dangling symbolic link")
                                      : "cannot stat: " + sec.message());
        continue;
      }
      if (fs::is_directory(st)) {
        if (!is_link) add_dir(e.path(), false);
      } else if (wanted(e.path())) {
        if (!fs::exists(st)) fail(e.path().string(), "dangling symbolic link");
        else add_file(e.path());
      }
    }
  }

  const InputConfig& cfg_;
  std::set<std::string> exts_;
  std::set<std::string> seen_;
  std::vector<InputItem> items_;
};

}  // namespace

std::vector<InputItem> discover_inputs(const InputConfig& cfg) {
  Collector c(cfg);
  for (const auto& p : cfg.paths) {
    if (has_glob(p) && !fs::exists(p)) {
      glob_t g{};
      const int rc = ::glob(p.c_str(), GLOB_ERR, nullptr, &g);
      if (rc == GLOB_NOMATCH) {
        c.add_path(p, true);  // reported as "no such file or directory"
      } else if (rc != 0) {
        globfree(&g);
        throw Error("input.paths: cannot expand pattern '" + p + "'");
      } else {
        for (size_t i = 0; i < g.gl_pathc; ++i) c.add_path(g.gl_pathv[i], false);  // sorted by glob
      }
      globfree(&g);
    } else {
      c.add_path(p, true);
    }
  }
  return c.take();
}

InputList build_input_list(const InputConfig& cfg) {
  InputConfig all = cfg;
  if (!cfg.list.empty())
    for (auto& p : read_input_list(cfg.list)) all.paths.push_back(std::move(p));
  std::vector<InputItem> items = discover_inputs(all);
  for (auto& it : items) it.video = it.error.empty() && is_video_path(it.path);
  ShardSpec shard = shard_of(cfg);
  InputList out;
  out.items = order_inputs(std::move(items), cfg.loop, cfg.shuffle_seed, shard);
  out.shard = std::move(shard);
  return out;
}

Source::Source(const std::vector<InputItem>& items, const VideoConfig& video, int video_ahead,
               const std::atomic<bool>& stop)
    : items_(items), stop_(stop) {
  if (std::any_of(items.begin(), items.end(), [](const InputItem& i) { return i.video; })) {
    videos_ = std::make_unique<VideoPrefetcher>(items, VideoOptions{video.start, video.stride, video.max_frames},
                                                video_ahead);
    videos_->prefetch(0);  // the first videos decode while the pipeline starts
  }
}

Source::~Source() = default;  // the prefetcher stops and joins its readers

Source::Step Source::video_step() {
  VideoReader& r = videos_->reader(next_);
  in_video_ = true;
  if (r.next(frame_, frame_index_)) return Step::frame;
  if (!r.error().empty()) {
    failure_ = r.error();
    failure_frame_ = r.stopped_at();
    return Step::failure;  // the caller emits it, then finish_video()
  }
  finish_video();
  return Step::end;
}

void Source::finish_video() {
  videos_->release(next_);
  in_video_ = false;
  ++next_;
  videos_->prefetch(next_);
}

void Source::end_of_input() {
  done_ = true;
  if (videos_) videos_->stop_all();
}

}  // namespace imgpipe::stages
