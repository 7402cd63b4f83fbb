#include "dump_folder.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "imgpipe/log.hpp"

#include "imgpipe/error.hpp"

namespace imgpipe::stages {

namespace fs = std::filesystem;

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  if (!all_digits(s)) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The names of the files the dump sink writes: batch_NNNNNN.npy (six or more
// digits) and manifest.jsonl.
bool is_output_name(const std::string& n) {
  if (n == "manifest.jsonl") return true;
  return n.size() >= 16 && n.starts_with("batch_") && n.ends_with(".npy") &&
         all_digits(std::string_view(n).substr(6, n.size() - 10));
}

// rank_R_of_W -> {R, W}.
std::optional<ShardSpec> parse_rank_folder(const std::string& n) {
  constexpr std::string_view pre = "rank_", mid = "_of_";
  if (!n.starts_with(pre)) return std::nullopt;
  const std::size_t m = n.find(mid, pre.size());
  if (m == std::string::npos) return std::nullopt;
  const auto r = parse_int(std::string_view(n).substr(pre.size(), m - pre.size()));
  const auto w = parse_int(std::string_view(n).substr(m + mid.size()));
  if (!r || !w) return std::nullopt;
  return ShardSpec{*r, *w, "folder"};
}

// Symbolic links are never followed: a link is not a file imgpipe wrote, nor
// a folder it looks into.
fs::file_type type_of(const fs::directory_entry& e) {
  std::error_code ec;
  return e.symlink_status(ec).type();
}

// The entries of `dir`, sorted by name; none when it does not exist.
std::vector<fs::directory_entry> entries_of(const fs::path& dir) {
  std::vector<fs::directory_entry> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return out;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) out.push_back(*it);
  if (ec) throw ConfigError("sink.dir", 0, "cannot list '" + dir.string() + "': " + ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return out;
}

// What stands in the way of this process's output.
struct Survey {
  std::vector<fs::path> removable;  // imgpipe's files this process removes under sink.overwrite
  std::vector<fs::path> emptied;    // earlier runs' rank folders, removed once emptied
  std::vector<fs::path> rank0;      // earlier runs' output that rank 0 removes, not this rank
  std::vector<fs::path> foreign;    // not written by imgpipe: always kept
  bool empty() const { return removable.empty() && emptied.empty() && rank0.empty() && foreign.empty(); }
};

// One folder's entries, not descending: imgpipe's files are removable (when
// `mine`) or rank 0's, anything else foreign.
void survey_folder(const fs::path& dir, bool mine, Survey& s) {
  for (const auto& e : entries_of(dir)) {
    const bool output = type_of(e) == fs::file_type::regular && is_output_name(e.path().filename().string());
    (!output ? s.foreign : mine ? s.removable : s.rank0).push_back(e.path());
  }
}

// sink.dir: this rank's own folder, the other ranks' folders of this layout
// (skipped unseen), earlier runs' rank folders, files.
void survey(const fs::path& top, const ShardSpec& shard, Survey& s) {
  const bool cleans_top = shard.world_size == 1 || shard.rank == 0;
  for (const auto& e : entries_of(top)) {
    const std::string name = e.path().filename().string();
    const auto rf = type_of(e) == fs::file_type::directory ? parse_rank_folder(name) : std::nullopt;
    if (rf && shard.world_size > 1 && rf->world_size == shard.world_size && rf->rank < rf->world_size) {
      if (rf->rank == shard.rank) survey_folder(e.path(), true, s);
      continue;
    }
    if (rf && cleans_top) {
      survey_folder(e.path(), true, s);
      s.emptied.push_back(e.path());
    } else if (rf) {
      s.rank0.push_back(e.path());
    } else {
      const bool output = type_of(e) == fs::file_type::regular && is_output_name(name);
      (!output ? s.foreign : cleans_top ? s.removable : s.rank0).push_back(e.path());
    }
  }
}

// "a, b, c and 4 more", relative to sink.dir.
std::string names(const std::vector<fs::path>& paths, const fs::path& top, std::size_t show = 3) {
  std::string out;
  for (std::size_t i = 0; i < paths.size() && i < show; ++i)
    out += (i ? ", " : "") + paths[i].lexically_relative(top).string();
  if (paths.size() > show) out += fmt::format(" and {} more", paths.size() - show);
  return out;
}

std::string describe(const Survey& s, const fs::path& top) {
  std::vector<fs::path> ours = s.removable;
  ours.insert(ours.end(), s.rank0.begin(), s.rank0.end());
  ours.insert(ours.end(), s.emptied.begin(), s.emptied.end());
  std::size_t batches = 0, manifests = 0;
  for (const auto& p : ours) {
    const std::string n = p.filename().string();
    batches += n.starts_with("batch_");
    manifests += n == "manifest.jsonl";
  }
  std::string out;
  if (!ours.empty())
    out = fmt::format("an earlier run's output, {} batch file(s) and {} manifest(s) ({})", batches, manifests,
                      names(ours, top));
  if (!s.foreign.empty())
    out += fmt::format("{}{} other entr{} ({})", out.empty() ? "" : " and ", s.foreign.size(),
                       s.foreign.size() == 1 ? "y" : "ies", names(s.foreign, top));
  return out;
}

std::string refusal(const SinkConfig& cfg, const fs::path& folder, const ShardSpec& shard, const Survey& s) {
  const std::string who =
      shard.world_size > 1
          ? fmt::format(" (rank {} of {}, from {}, writes into '{}')", shard.rank, shard.world_size, shard.origin,
                        folder.string())
          : "";
  return fmt::format("the dump folder '{}'{} is not empty: it holds {}; dump into an empty or new folder, or set "
                     "sink.overwrite: true to remove imgpipe's batch_NNNNNN.npy and manifest.jsonl files there "
                     "before the run (other files are kept)",
                     cfg.dir, who, describe(s, fs::path(cfg.dir)));
}

void remove_file(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
  if (ec) throw Error("sink.overwrite: cannot remove '" + p.string() + "': " + ec.message());
}

// Removes what is this process's to remove; emptied rank folders go too
// (one that still holds other files is kept).
void clean(const Survey& s, DumpFolder& d) {
  for (const auto& p : s.removable) {
    remove_file(p);
    d.removed.push_back(p);
  }
  for (const auto& p : s.emptied) {
    std::error_code ec;
    if (fs::remove(p, ec)) d.removed.push_back(p);
    else if (ec == std::errc::directory_not_empty) d.kept.push_back(p);
    else if (ec) throw Error("sink.overwrite: cannot remove '" + p.string() + "': " + ec.message());
  }
  d.kept.insert(d.kept.end(), s.foreign.begin(), s.foreign.end());
}

}  // namespace

std::string rank_folder_name(int rank, int world_size) { return fmt::format("rank_{}_of_{}", rank, world_size); }

fs::path dump_folder(const std::string& dir, const ShardSpec& shard) {
  if (shard.world_size <= 1) return fs::path(dir);
  return fs::path(dir) / rank_folder_name(shard.rank, shard.world_size);
}

DumpFolder prepare_dump_folder(const SinkConfig& cfg, const ShardSpec& shard) {
  DumpFolder d;
  d.path = dump_folder(cfg.dir, shard);
  Survey s;
  survey(fs::path(cfg.dir), shard, s);
  if (!s.empty() && !cfg.overwrite) throw ConfigError("sink.dir", 0, refusal(cfg, d.path, shard, s));
  if (!s.empty()) {
    clean(s, d);
    const fs::path top(cfg.dir);
    if (!d.removed.empty())
      imgpipe::logger()->info("sink.overwrite: removed {} earlier file(s) and folder(s) in '{}': {}", d.removed.size(), cfg.dir,
                   names(d.removed, top, 8));
    if (!d.kept.empty())
      imgpipe::logger()->info("sink.overwrite: kept {} entr{} in '{}' that imgpipe did not write: {}", d.kept.size(),
                   d.kept.size() == 1 ? "y" : "ies", cfg.dir, names(d.kept, top, 8));
    if (!s.rank0.empty())
      imgpipe::logger()->info("sink.overwrite: rank 0 removes the earlier run's output beside the rank folders in '{}': {}",
                   cfg.dir, names(s.rank0, top));
  }
  // An output path checked before the run (docs/cli.md, "Exit codes"): a folder
  // that cannot be made or written into is a config error, not a run that
  // fails at its first batch.
  std::error_code ec;
  fs::create_directories(d.path, ec);
  if (ec) throw ConfigError("sink.dir", 0, "cannot create '" + d.path.string() + "': " + ec.message());
  if (::access(d.path.c_str(), W_OK | X_OK) != 0)
    throw ConfigError("sink.dir", 0, "cannot write into '" + d.path.string() + "': " + std::strerror(errno));
  return d;
}

}  // namespace imgpipe::stages
