// input.labels: folders (torchvision ImageFolder): the class of each
// discovered input, the class list (sorted, the union over every root), files
// directly in a root and files named explicitly (-1), nested folders,
// symlinked and empty class folders, input.recursive false, the whole input
// list (input.list, loop, shard) and the input check.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common.hpp"
#include "stages/source.hpp"

namespace fs = std::filesystem;
using imgpipe::InputConfig;
using imgpipe::Labels;
using imgpipe::stages::discover_inputs;
using imgpipe::stages::InputItem;
using imgpipe::test::TempDir;

namespace {

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << "x";
}

InputConfig folders(std::vector<std::string> paths) {
  InputConfig c;
  c.paths = std::move(paths);
  c.labels = Labels::folders;
  return c;
}

// Label of every item, by path relative to `root`.
std::map<std::string, std::int64_t> labels(const std::vector<InputItem>& items, const fs::path& root) {
  std::map<std::string, std::int64_t> m;
  for (const auto& it : items) m[fs::path(it.path).lexically_relative(root).generic_string()] = it.label;
  return m;
}

}  // namespace

TEST_CASE("labels: folders numbers the sorted first-level sub-folders of the roots, root files and named files get -1") {
  TempDir d;
  touch(d / "a/zebra/1.jpg");
  touch(d / "a/cat/2.jpg");
  touch(d / "a/cat/deep/er/3.jpg");  // nested: still its first-level folder's class
  touch(d / "a/loose.jpg");          // directly in the root
  fs::create_directories(d / "a/empty");  // a class with no sample
  touch(d / "b/ant/4.jpg");
  touch(d / "b/cat/5.jpg");  // the same name under another root: one class
  touch(d / "elsewhere/dog/6.jpg");
  std::vector<std::string> classes;
  const auto items = discover_inputs(
      folders({(d / "a").string(), (d / "b").string(), (d / "elsewhere/dog/6.jpg").string()}), &classes);
  CHECK(classes == std::vector<std::string>{"ant", "cat", "empty", "zebra"});
  const auto m = labels(items, d.path());
  CHECK(m.size() == 7);
  CHECK(m.at("a/cat/2.jpg") == 1);
  CHECK(m.at("a/cat/deep/er/3.jpg") == 1);
  CHECK(m.at("a/zebra/1.jpg") == 3);
  CHECK(m.at("a/loose.jpg") == -1);
  CHECK(m.at("b/ant/4.jpg") == 0);
  CHECK(m.at("b/cat/5.jpg") == 1);
  CHECK(m.at("elsewhere/dog/6.jpg") == -1);  // named explicitly: no root, no class

  // labels: none leaves every item unlabelled and names no class.
  InputConfig none = folders({(d / "a").string()});
  none.labels = Labels::none;
  std::vector<std::string> no_classes{"stale"};
  for (const auto& it : discover_inputs(none, &no_classes)) CHECK(it.label == -1);
  CHECK(no_classes.empty());
}

TEST_CASE("labels: a sub-folder reached through a symbolic link is no class, recursive false still lists the classes") {
  TempDir d;
  touch(d / "real/x/1.jpg");
  touch(d / "root/b/sub/2.jpg");
  touch(d / "root/b/3.jpg");
  fs::create_directory_symlink(d / "real/x", d / "root/linked");
  std::vector<std::string> classes;
  InputConfig c = folders({(d / "root").string()});
  auto m = labels(discover_inputs(c, &classes), d.path());
  CHECK(classes == std::vector<std::string>{"b"});
  CHECK(m.size() == 2);
  CHECK(m.at("root/b/3.jpg") == 0);
  CHECK(m.at("root/b/sub/2.jpg") == 0);
  c.recursive = false;  // the class folders themselves, not their sub-folders
  m = labels(discover_inputs(c, &classes), d.path());
  CHECK(m.size() == 1);
  CHECK(m.at("root/b/3.jpg") == 0);
  // The input check agrees: a root that holds only class folders has inputs.
  TempDir e;
  touch(e / "k/1.jpg");
  InputConfig only = folders({e.path().string()});
  only.recursive = false;
  CHECK_NOTHROW(imgpipe::stages::check_inputs(only));
  only.labels = Labels::none;
  CHECK_THROWS_AS(imgpipe::stages::check_inputs(only), imgpipe::ConfigError);
}

TEST_CASE("labels: the input list keeps each item's label through input.list, loop and shard, classes are the whole input's") {
  TempDir d;
  touch(d / "r/b/1.jpg");
  touch(d / "r/a/2.jpg");
  touch(d / "r/a/3.jpg");
  touch(d / "extra/c/4.jpg");
  std::ofstream(d / "list.txt") << (d / "extra").string() << "\n";  // a folder in the list is a root too
  InputConfig c = folders({(d / "r").string()});
  c.list = (d / "list.txt").string();
  c.loop = 2;
  c.shard = {1, 2};
  const imgpipe::stages::InputList l = imgpipe::stages::build_input_list(c);
  CHECK(l.classes == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(l.items.size() == 4);  // 8 looped items, every second one
  for (const auto& it : l.items) {
    CAPTURE(it.path);
    const std::string cls = fs::path(it.path).parent_path().filename().string();
    CHECK(it.label == (cls == "a" ? 0 : cls == "b" ? 1 : 2));
  }
}
