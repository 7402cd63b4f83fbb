#include "discovery.hpp"

#include <dirent.h>
#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>

#include "imgpipe/error.hpp"
#include "live_input.hpp"
#include "video.hpp"

namespace fs = std::filesystem;

namespace imgpipe::stages {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// A pattern to expand: it has glob characters and is not itself an existing path.
bool is_pattern(const std::string& p) {
  std::error_code ec;
  return has_glob(p) && !fs::exists(p, ec);
}

// Where glob() could not read, and why: the path and its errno.
struct GlobFailure {
  std::string where;
  int err = 0;
};

// The components of a path ("a/b/c" -> a, b, c); a leading "/" is kept as one.
std::vector<std::string> components(const std::string& p) {
  std::vector<std::string> out;
  for (const auto& c : fs::path(p)) out.push_back(c.string());
  return out;
}

// `path` (components) matched against `pattern` (components): fnmatch per
// component (a leading '.' only by a '.'), "**" any number of them, zero included.
bool match_components(const std::vector<std::string>& pattern, std::size_t i, const std::vector<std::string>& path,
                      std::size_t j) {
  if (i == pattern.size()) return j == path.size();
  if (pattern[i] == "**")
    return match_components(pattern, i + 1, path, j) ||
           (j < path.size() && path[j][0] != '.' && match_components(pattern, i, path, j + 1));
  return j < path.size() && ::fnmatch(pattern[i].c_str(), path[j].c_str(), FNM_PERIOD) == 0 &&
         match_components(pattern, i + 1, path, j + 1);
}

// glob(3) with GLOB_ERR, plus "**" as a whole component matching any depth of
// folders, zero included (docs/inputs.md, "Inputs": imgs/**/*.jpg). Returns glob's
// codes (0, GLOB_NOMATCH, GLOB_ABORTED with `failure` set); the matches
// sorted. Folders are walked without following symlinks.
int expand_glob(const std::string& pattern, std::vector<std::string>& matches, GlobFailure& failure) {
  const std::vector<std::string> parts = components(pattern);
  if (std::find(parts.begin(), parts.end(), "**") == parts.end()) {
    thread_local GlobFailure* current = nullptr;
    current = &failure;
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), GLOB_ERR,
                          [](const char* path, int err) {
                            *current = {path, err};
                            return 1;  // stop: GLOB_ABORTED
                          },
                          &g);
    for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    return rc;
  }
  // The folder to walk: the components before the first with glob characters.
  fs::path base;
  std::size_t fixed = 0;
  while (fixed < parts.size() && !has_glob(parts[fixed])) base /= parts[fixed++];
  const std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(fixed), parts.end());
  const fs::path root = base.empty() ? fs::path(".") : base;
  std::error_code ec;
  fs::path last = root;  // the entry before an error: the folder that could not be read
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    last = it->path();
    const fs::path rel = last.lexically_relative(root);
    if (match_components(rest, 0, components(rel.string()), 0))
      matches.push_back(base.empty() ? rel.string() : (base / rel).string());
  }
  if (ec) {
    failure = {last.string(), ec.value()};
    matches.clear();
    return GLOB_ABORTED;
  }
  std::sort(matches.begin(), matches.end());
  return matches.empty() ? GLOB_NOMATCH : 0;
}

// input.extensions, matched case-insensitively.
class ExtensionFilter {
 public:
  explicit ExtensionFilter(const std::vector<std::string>& extensions) {
    for (const auto& e : extensions) exts_.insert(lower(e));
  }
  bool wanted(std::string_view path) const { return exts_.count(lower(std::string(file_extension(path)))) > 0; }
  bool wanted(const fs::path& p) const { return wanted(std::string_view(p.native())); }

 private:
  std::set<std::string> exts_;
};

class Collector {
 public:
  explicit Collector(const InputConfig& cfg) : cfg_(cfg), filter_(cfg.extensions) {}

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

  // A stream URL or camera: taken as named (once), never looked up on disk.
  void add_live(const std::string& p) {
    if (std::string problem = live_input_problem(p); !problem.empty()) return fail(p, problem);
    if (!seen_.insert(p).second) return;
    items_.push_back({p, -1, {}, false});
    item_class_.push_back(nullptr);  // named explicitly: no class
  }

  // The items, labelled (input.labels: folders), and the sorted class names.
  std::vector<InputItem> take(std::vector<std::string>* classes) {
    std::map<const std::string*, std::int64_t> index;  // set nodes are stable
    for (const std::string& name : classes_) index.emplace(&name, static_cast<std::int64_t>(index.size()));
    for (std::size_t i = 0; i < items_.size(); ++i)
      if (item_class_[i]) items_[i].label = index.at(item_class_[i]);
    if (classes) classes->assign(classes_.begin(), classes_.end());
    return std::move(items_);
  }

 private:
  bool wanted(const fs::path& p) const { return filter_.wanted(p); }

  void fail(const std::string& path, const std::string& reason) {
    items_.push_back({path, -1, reason, false});
    item_class_.push_back(class_);
  }

  void add_file(const fs::path& p) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(p, ec);
    if (ec) key = p.lexically_normal();
    add_listed_file(p.string(), key.string());
  }
  // `key`: the file's canonical path (each file once, however it is named).
  void add_listed_file(std::string path, std::string key) {
    if (!seen_.insert(std::move(key)).second) return;
    items_.push_back({std::move(path), -1, {}, false});
    item_class_.push_back(class_);
  }

  // input.labels: folders: a root's first-level sub-folder is a class; what
  // lies under it is labelled with it (the root's own files are not).
  void add_class_dir(const fs::path& dir) {
    class_ = &*classes_.insert(dir.filename().string()).first;
    add_dir(dir, false, true);
    class_ = nullptr;
  }

  // `class_dir`: a class folder, listed even when input.recursive is false.
  // Listed with readdir(): the names and the types the file system reports,
  // sorted by name; a std::filesystem path is made only for what needs one
  // (directory_iterator builds and parses a path per entry, which made
  // listing most of a kept Pipeline's set-up:
  // docs/benchmarks.md#folder-listing).
  void add_dir(const fs::path& dir, bool top, bool class_dir = false) {
    if (!top && !class_dir && !cfg_.recursive) return;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      fail(dir.string(), "cannot list directory: " + std::generic_category().message(errno));
      return;
    }
    struct Entry {
      std::string name;
      unsigned char type;
    };
    std::vector<Entry> entries;
    for (;;) {
      errno = 0;
      const dirent* de = ::readdir(d);
      if (de == nullptr) {
        if (errno != 0) fail(dir.string(), "error while listing directory: " + std::generic_category().message(errno));
        break;
      }
      if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
      entries.push_back({de->d_name, de->d_type});
    }
    ::closedir(d);
    // The order of the full paths: one folder, so the order of the names.
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    std::string prefix = dir.native();
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    std::error_code cec;
    std::string canonical_dir = fs::weakly_canonical(dir, cec).native();
    if (cec) canonical_dir = dir.lexically_normal().native();
    if (!canonical_dir.empty() && canonical_dir.back() != '/') canonical_dir += '/';
    for (const Entry& en : entries) {
      if (en.type == DT_REG) {  // a file, not a link: no stat, no path walk
        if (filter_.wanted(std::string_view(en.name))) add_listed_file(prefix + en.name, canonical_dir + en.name);
        continue;
      }
      if (en.type == DT_DIR) {
        const fs::path sub(prefix + en.name);
        if (top && cfg_.labels == Labels::folders) add_class_dir(sub);
        else add_dir(sub, false);
        continue;
      }
      // Links, other types, and file systems that report none: asked.
      const fs::directory_entry e(fs::path(prefix + en.name));
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
        if (is_link) continue;
        if (top && cfg_.labels == Labels::folders) add_class_dir(e.path());
        else add_dir(e.path(), false);
      } else if (wanted(e.path())) {
        if (!fs::exists(st)) fail(e.path().string(), "dangling symbolic link");
        else add_file(e.path());
      }
    }
  }

  const InputConfig& cfg_;
  ExtensionFilter filter_;
  std::unordered_set<std::string> seen_;  // each file once (canonical paths)
  std::vector<InputItem> items_;
  std::set<std::string> classes_;                 // input.labels: folders
  std::vector<const std::string*> item_class_;    // per item: its class in classes_, or null
  const std::string* class_ = nullptr;            // the class of the folder being listed
};

// What check_inputs() decides, cheaply: each entry of input.paths exists and
// whether discovery would find anything at all, looking only as far as the
// first item (a file, or a failure discovery would report).
class InputProbe {
 public:
  explicit InputProbe(const InputConfig& cfg) : cfg_(cfg), filter_(cfg.extensions) {}

  void add_path(const std::string& p) {
    if (is_live_input(p)) return add_live(p);
    if (is_pattern(p)) return add_pattern(p);
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      std::string why = "cannot be accessed: " + ec.message();
      if (!ec || ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
        std::error_code lec;
        why = fs::is_symlink(fs::symlink_status(p, lec)) ? "is a dangling symbolic link" : "does not exist";
        if (!p.empty() && p.size() <= 4 && std::all_of(p.begin(), p.end(), ::isdigit))
          why += " (for camera " + p + ", write camera:" + p + ")";
      }
      problems.push_back("'" + p + "' " + why + relative_note(p));
      return;
    }
    if (!found) found = !fs::is_directory(st) || folder_yields(p, true);
  }

  // Readable, and whether it names any path (its entries are checked by the run:
  // each one missing is a failed item, like an unreadable file).
  void add_list(const std::string& file) {
    std::ifstream in(file);
    if (!in) {
      list_problem = "cannot read '" + file + "': " + std::strerror(errno) + relative_note(file);
      return;
    }
    std::string line;
    while (!found && std::getline(in, line)) {
      const std::size_t b = line.find_first_not_of(" \t\r");
      found = b != std::string::npos && line[b] != '#';
    }
  }

  // "(relative to the current directory /x)" for a relative path, else empty.
  static std::string relative_note(const std::string& p) {
    if (fs::path(p).is_absolute()) return {};
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    return " (relative to the current directory " + (ec ? std::string("?") : cwd.string()) + ")";
  }

  std::vector<std::string> problems;  // one per path that does not exist or pattern that matches nothing
  std::string list_problem;
  bool found = false;

 private:
  // Stream URLs and cameras are not checked ahead (a run reports one that
  // cannot be opened as a failed input); only a malformed name is an error.
  void add_live(const std::string& p) {
    if (std::string problem = live_input_problem(p); !problem.empty()) problems.push_back("'" + p + "' " + problem);
    else found = true;
  }

  void add_pattern(const std::string& p) {
    std::vector<std::string> matches;
    GlobFailure failure;
    const int rc = expand_glob(p, matches, failure);
    const auto& [where, err] = failure;
    if (rc == GLOB_NOMATCH || (rc == GLOB_ABORTED && (err == ENOENT || err == ENOTDIR)))
      problems.push_back("pattern '" + p + "' matches nothing" +
                         (rc == GLOB_ABORTED ? " ('" + where + "' does not exist)" : std::string()) + relative_note(p));
    else if (rc != 0)
      problems.push_back("pattern '" + p + "' cannot be expanded" +
                         (where.empty() ? std::string() : ": '" + where + "': " + std::strerror(err)) +
                         relative_note(p));
    for (std::size_t i = 0; rc == 0 && !found && i < matches.size(); ++i) found = match_yields(matches[i]);
  }

  // A glob match, as discover_inputs() takes it: folders are listed, files filtered by extension.
  bool match_yields(const fs::path& p) const {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) return true;  // discovery reports it as a failed item
    return fs::is_directory(st) ? folder_yields(p, true) : filter_.wanted(p);
  }

  // Mirrors Collector::add_dir: wanted files, failures it would report,
  // sub-folders (not through symlinks) when input.recursive.
  bool folder_yields(const fs::path& dir, bool top, bool class_dir = false) const {
    if (!top && !class_dir && !cfg_.recursive) return false;
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::none, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code sec;
      const bool is_link = it->is_symlink(sec);
      const fs::file_status st = it->status(sec);
      if (sec || !fs::is_directory(st)) {
        if (filter_.wanted(it->path())) return true;
      } else if (!is_link && folder_yields(it->path(), false, top && cfg_.labels == Labels::folders)) {
        return true;
      }
    }
    return static_cast<bool>(ec);  // a folder that cannot be listed is a failed item
  }

  const InputConfig& cfg_;
  ExtensionFilter filter_;
};

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Why nothing would be discovered (every path exists, and none is a file named explicitly).
std::string nothing_found(const InputConfig& cfg) {
  std::vector<std::string> quoted;
  std::string relative;  // the first relative path, whose note names the current directory
  for (const auto& p : cfg.paths) {
    quoted.push_back("'" + p + "'");
    if (relative.empty() && !fs::path(p).is_absolute()) relative = p;
  }
  std::string msg = "no inputs found: ";
  if (!quoted.empty())
    msg += join(quoted, ", ") + " hold" + (quoted.size() == 1 ? "s" : "") + " no file with an extension in "
           "input.extensions (" + (cfg.extensions.empty() ? "none" : join(cfg.extensions, " ")) + ")" +
           (cfg.recursive ? "" : "; input.recursive is false, so sub-folders were not searched");
  if (!cfg.list.empty()) msg += std::string(quoted.empty() ? "" : "; ") + "input.list '" + cfg.list + "' names no file";
  if (!relative.empty()) msg += InputProbe::relative_note(relative);
  return msg;
}

}  // namespace

std::vector<InputItem> discover_inputs(const InputConfig& cfg, std::vector<std::string>* classes) {
  Collector c(cfg);
  for (const auto& p : cfg.paths) {
    if (is_live_input(p)) {
      c.add_live(p);
    } else if (is_pattern(p)) {
      std::vector<std::string> matches;
      GlobFailure failure;
      const int rc = expand_glob(p, matches, failure);
      if (rc == GLOB_NOMATCH) {
        c.add_path(p, true);  // reported as "no such file or directory"
      } else if (rc != 0) {
        throw Error("input.paths: cannot expand pattern '" + p + "'");
      } else {
        for (const auto& m : matches) c.add_path(m, false);  // sorted
      }
    } else {
      c.add_path(p, true);
    }
  }
  return c.take(classes);
}

void check_inputs(const InputConfig& cfg) {
  if (cfg.paths.empty() && cfg.list.empty())
    throw ConfigError("input.paths", 0, "no inputs: input.paths is empty and input.list is not set");
  InputProbe probe(cfg);
  for (const auto& p : cfg.paths) probe.add_path(p);
  if (!probe.problems.empty()) throw ConfigError("input.paths", 0, join(probe.problems, "; "));
  if (!cfg.list.empty()) probe.add_list(cfg.list);
  if (!probe.list_problem.empty()) throw ConfigError("input.list", 0, probe.list_problem);
  if (!probe.found) throw ConfigError("input.paths", 0, nothing_found(cfg));
}

std::vector<InputItem> discover_all_inputs(const InputConfig& cfg, std::vector<std::string>* classes) {
  InputConfig all = cfg;
  if (!cfg.list.empty())
    for (auto& p : read_input_list(cfg.list)) all.paths.push_back(std::move(p));
  std::vector<InputItem> items = discover_inputs(all, classes);
  for (auto& it : items) it.video = it.error.empty() && (is_video_path(it.path) || is_live_input(it.path));
  return items;
}

InputList build_input_list(const InputConfig& cfg, std::uint64_t epoch) {
  InputList out;
  std::vector<InputItem> items = discover_all_inputs(cfg, &out.classes);
  ShardSpec shard = shard_of(cfg);
  const OrderSpec order{cfg.loop, cfg.shuffle_seed, epoch, cfg.shuffle_every_epoch, cfg.shard_remainder};
  out.items = order_inputs(std::move(items), order, shard, &out.remainder);
  out.shard = std::move(shard);
  out.epoch = epoch;
  return out;
}

}  // namespace imgpipe::stages
