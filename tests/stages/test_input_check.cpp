// check_inputs(): what input.paths and input.list name is checked before any
// work; a path that does not exist, a pattern that matches nothing or no input
// at all is a ConfigError naming each path (nothing is lost silently).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "stages/source.hpp"

namespace fs = std::filesystem;
using imgpipe::ConfigError;
using imgpipe::InputConfig;
using imgpipe::stages::check_inputs;
using imgpipe::test::TempDir;

namespace {

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << "x";
}

InputConfig config_for(std::vector<std::string> paths, bool recursive = true) {
  InputConfig c;
  c.paths = std::move(paths);
  c.recursive = recursive;
  return c;
}

// The ConfigError check_inputs throws (key and message), or a failed check.
struct Thrown {
  std::string key, what;
};
Thrown error_of(const InputConfig& c) {
  try {
    check_inputs(c);
  } catch (const ConfigError& e) {
    return {e.key(), e.what()};
  }
  FAIL("check_inputs did not throw");
  return {};
}

using imgpipe::test::contains;

// 'text' (built without operator+ on a literal: GCC 12 warns there, -Wrestrict, PR 105651).
std::string q(const std::string& text) {
  std::string s(1, '\'');
  s += text;
  s += '\'';
  return s;
}

// Changes the current directory while alive.
class InDirectory {
 public:
  explicit InDirectory(const fs::path& d) : old_(fs::current_path()) { fs::current_path(d); }
  ~InDirectory() { fs::current_path(old_); }
  InDirectory(const InDirectory&) = delete;
  InDirectory& operator=(const InDirectory&) = delete;

 private:
  fs::path old_;
};

}  // namespace

TEST_CASE("input check: paths that exist and name inputs pass") {
  TempDir d;
  touch(d / "a.jpg");
  touch(d / "deep" / "sub" / "b.png");
  touch(d / "notes.txt");
  CHECK_NOTHROW(check_inputs(config_for({d.path().string()})));
  CHECK_NOTHROW(check_inputs(config_for({(d / "deep").string()})));  // found in a sub-folder
  CHECK_NOTHROW(check_inputs(config_for({(d / "notes.txt").string()})));  // named explicitly: always taken
  CHECK_NOTHROW(check_inputs(config_for({(d / "*.jpg").string()})));
  CHECK_NOTHROW(check_inputs(config_for({(d / "de*").string()})));  // a pattern matching a folder
}

TEST_CASE("input check: every path that does not exist and every pattern without a match is named") {
  TempDir d;
  touch(d / "a.jpg");
  const std::string missing = (d / "missing.jpg").string();
  const std::string no_dir = (d / "no_such_dir").string();
  const std::string pattern = (d / "nothing_*.png").string();
  const std::string under_missing = (d / "gone" / "*.jpg").string();
  const Thrown t = error_of(config_for({missing, (d / "a.jpg").string(), no_dir, pattern, under_missing}));
  CAPTURE(t.what);
  CHECK(t.key == "input.paths");
  CHECK(contains(t.what, q(missing) + " does not exist"));
  CHECK(contains(t.what, q(no_dir) + " does not exist"));
  CHECK(contains(t.what, "pattern " + q(pattern) + " matches nothing"));
  CHECK(contains(t.what, "pattern " + q(under_missing) + " matches nothing"));
  CHECK(contains(t.what, (d / "gone").string() + "' does not exist"));
  CHECK_FALSE(contains(t.what, "a.jpg'"));
  CHECK_FALSE(contains(t.what, "relative to"));  // every path here is absolute
}

TEST_CASE("input check: a relative path names the current directory it resolved against") {
  TempDir d;
  touch(d / "data" / "a.jpg");
  const InDirectory in(d.path());
  CHECK_NOTHROW(check_inputs(config_for({"data"})));
  const Thrown t = error_of(config_for({"samples/data"}));
  CAPTURE(t.what);
  CHECK(t.key == "input.paths");
  CHECK(contains(t.what, "'samples/data' does not exist (relative to the current directory " +
                             fs::current_path().string() + ")"));
}

TEST_CASE("input check: a dangling symlink named explicitly") {
  TempDir d;
  fs::create_symlink(d / "gone.jpg", d / "link.jpg");
  const Thrown t = error_of(config_for({(d / "link.jpg").string()}));
  CHECK(t.key == "input.paths");
  CHECK(contains(t.what, q((d / "link.jpg").string()) + " is a dangling symbolic link"));
}

TEST_CASE("input check: no input at all is an error naming the paths and the extensions") {
  TempDir d;
  fs::create_directories(d / "empty");
  touch(d / "texts" / "a.txt");
  touch(d / "nested" / "sub" / "a.jpg");
  SUBCASE("an empty folder") {
    const Thrown t = error_of(config_for({(d / "empty").string()}));
    CAPTURE(t.what);
    CHECK(t.key == "input.paths");
    CHECK(contains(t.what, "no inputs found"));
    CHECK(contains(t.what, q((d / "empty").string())));
    CHECK(contains(t.what, ".jpg"));
  }
  SUBCASE("folders without a file of input.extensions") {
    const Thrown t = error_of(config_for({(d / "empty").string(), (d / "texts").string()}));
    CAPTURE(t.what);
    CHECK(contains(t.what, q((d / "texts").string())));
    CHECK(contains(t.what, "input.extensions"));
  }
  SUBCASE("images only in a sub-folder, input.recursive false") {
    const Thrown t = error_of(config_for({(d / "nested").string()}, false));
    CAPTURE(t.what);
    CHECK(contains(t.what, "input.recursive is false"));
    CHECK_NOTHROW(check_inputs(config_for({(d / "nested").string()}, true)));
  }
  SUBCASE("a pattern matching only files outside the filter") {
    const Thrown t = error_of(config_for({(d / "texts" / "*.txt").string()}));
    CHECK(contains(t.what, "no inputs found"));
  }
  SUBCASE("neither paths nor a list") {
    const Thrown t = error_of(config_for({}));
    CHECK(t.key == "input.paths");
    CHECK(contains(t.what, "input.paths is empty and input.list is not set"));
  }
}

TEST_CASE("input check: input.list must be readable, its entries are checked by the run") {
  TempDir d;
  InputConfig c = config_for({});
  c.list = (d / "no_list.txt").string();
  Thrown t = error_of(c);
  CAPTURE(t.what);
  CHECK(t.key == "input.list");
  CHECK(contains(t.what, "cannot read " + q(c.list)));
  CHECK(contains(t.what, "No such file or directory"));

  // Only comments and blank lines: nothing to take.
  std::ofstream(d / "comments.txt") << "# nothing here\n\n   \n";
  c.list = (d / "comments.txt").string();
  t = error_of(c);
  CHECK(t.key == "input.paths");
  CHECK(contains(t.what, "input.list " + q(c.list) + " names no file"));

  // An entry that does not exist passes the check: the run reports it as a failed item.
  std::ofstream(d / "list.txt") << "# one entry\nmissing.jpg\n";
  c.list = (d / "list.txt").string();
  CHECK_NOTHROW(check_inputs(c));
}
