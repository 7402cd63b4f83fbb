// Source stage: input discovery (files, folders, globs, filters, order,
// duplicates and every kind of bad path).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "stages/source.hpp"

namespace fs = std::filesystem;
using imgpipe::InputConfig;
using imgpipe::stages::discover_inputs;
using imgpipe::stages::InputItem;
using imgpipe::test::TempDir;

namespace {

void touch(const fs::path& p, const std::string& content = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

InputConfig config_for(std::vector<std::string> paths, bool recursive = true) {
  InputConfig c;
  c.paths = std::move(paths);
  c.recursive = recursive;
  return c;
}

// Paths of the good items, relative to `root` (generic form).
std::vector<std::string> good(const std::vector<InputItem>& items, const fs::path& root) {
  std::vector<std::string> v;
  for (const auto& it : items)
    if (it.error.empty()) v.push_back(fs::path(it.path).lexically_relative(root).generic_string());
  return v;
}

std::vector<const InputItem*> failed(const std::vector<InputItem>& items) {
  std::vector<const InputItem*> v;
  for (const auto& it : items)
    if (!it.error.empty()) v.push_back(&it);
  return v;
}

}  // namespace

TEST_CASE("source: explicit files, including one with an extension outside the filter") {
  TempDir d;
  touch(d / "a.jpg");
  touch(d / "notes.txt");
  touch(d / "noext");
  const auto items = discover_inputs(config_for({(d / "a.jpg").string(), (d / "notes.txt").string(),
                                                 (d / "noext").string()}));
  CHECK(good(items, d.path()) == std::vector<std::string>{"a.jpg", "notes.txt", "noext"});
  CHECK(failed(items).empty());
  for (const auto& it : items) CHECK(it.frame == -1);
}

TEST_CASE("source: a folder gives its images in byte order, filtered by extension case-insensitively") {
  TempDir d;
  for (const char* n : {"b.jpg", "B.JPG", "a.Png", "c.jpeg", "d.txt", "e.JPEG", "f.bmp", "g.webp", "h.tif",
                        "i.tiff", "j.gif", "k", "_.png", "a.png.bak"})
    touch(d / n);
  const auto items = discover_inputs(config_for({d.path().string()}));
  CHECK(failed(items).empty());
  // Byte order: '.' < 'B' < '_' < 'a'.
  CHECK(good(items, d.path()) == std::vector<std::string>{"B.JPG", "_.png", "a.Png", "b.jpg", "c.jpeg", "e.JPEG",
                                                          "f.bmp", "g.webp", "h.tif", "i.tiff"});
  // As std::filesystem has extensions: a name that starts with its only dot
  // has none; a hidden file with one is listed. A trailing slash changes nothing.
  touch(d / ".jpg");
  touch(d / ".hidden.jpg");
  CHECK(good(discover_inputs(config_for({d.path().string() + "/"})), d.path()) ==
        std::vector<std::string>{".hidden.jpg", "B.JPG", "_.png", "a.Png", "b.jpg", "c.jpeg", "e.JPEG", "f.bmp",
                                 "g.webp", "h.tif", "i.tiff"});
  fs::remove(d / ".jpg");
  fs::remove(d / ".hidden.jpg");
  // A custom list, written in upper case, still matches lower-case files.
  InputConfig c = config_for({d.path().string()});
  c.extensions = {".JPG", ".Gif"};
  CHECK(good(discover_inputs(c), d.path()) == std::vector<std::string>{"B.JPG", "b.jpg", "j.gif"});
}

TEST_CASE("source: file_extension agrees with std::filesystem's extension") {
  for (const char* p : {"a.jpg", "dir/b.JPEG", "dir.d/c", ".jpg", "dir/.hidden.png", "a.", "a..b", "..", ".", "dir/",
                        "dir/..", "x/y.tar.gz", "", "/", "/abs/z.mp4", "noext"}) {
    CAPTURE(p);
    CHECK(imgpipe::stages::file_extension(p) == fs::path(p).extension().native());
  }
}

TEST_CASE("source: recursion on and off, depth-first in name order") {
  TempDir d;
  touch(d / "a.jpg");
  touch(d / "m" / "x.jpg");
  touch(d / "m" / "deeper" / "y.png");
  touch(d / "m" / "b.jpg");
  touch(d / "z.jpg");
  touch(d / "n.jpg" / "inside.jpg");  // a folder whose name looks like an image
  SUBCASE("recursive") {
    const auto items = discover_inputs(config_for({d.path().string()}, true));
    CHECK(good(items, d.path()) ==
          std::vector<std::string>{"a.jpg", "m/b.jpg", "m/deeper/y.png", "m/x.jpg", "n.jpg/inside.jpg", "z.jpg"});
    CHECK(failed(items).empty());
  }
  SUBCASE("not recursive: sub-folders are ignored, the named folder is listed") {
    const auto items = discover_inputs(config_for({d.path().string()}, false));
    CHECK(good(items, d.path()) == std::vector<std::string>{"a.jpg", "z.jpg"});
    CHECK(failed(items).empty());
    // A sub-folder named explicitly is listed even without recursion.
    CHECK(good(discover_inputs(config_for({(d / "m").string()}, false)), d.path()) ==
          std::vector<std::string>{"m/b.jpg", "m/x.jpg"});
  }
}

TEST_CASE("source: glob patterns in the last component, filtered and sorted") {
  TempDir d;
  for (const char* n : {"img_2.jpg", "img_1.jpg", "img_10.png", "img_3.txt", "other.jpg", "IMG_4.JPG"}) touch(d / n);
  touch(d / "img_dir" / "inner.jpg");
  CHECK(good(discover_inputs(config_for({(d / "img_*").string()})), d.path()) ==
        std::vector<std::string>{"img_1.jpg", "img_10.png", "img_2.jpg", "img_dir/inner.jpg"});
  CHECK(good(discover_inputs(config_for({(d / "img_?.jpg").string()})), d.path()) ==
        std::vector<std::string>{"img_1.jpg", "img_2.jpg"});
  CHECK(good(discover_inputs(config_for({(d / "img_[13].*").string()})), d.path()) ==
        std::vector<std::string>{"img_1.jpg"});  // img_3.txt is filtered out: globs act like folders
  // A pattern that matches nothing is a failed item naming the pattern.
  const auto none = discover_inputs(config_for({(d / "nothing_*.jpg").string()}));
  REQUIRE(none.size() == 1);
  CHECK(none[0].path == (d / "nothing_*.jpg").string());
  CHECK(none[0].error.find("no such file") != std::string::npos);
}

TEST_CASE("source: ** in a glob matches any number of folders, zero included, and check_inputs takes it too") {
  TempDir d;
  for (const char* n : {"imgs/top.jpg", "imgs/a/one.jpg", "imgs/a/b/two.jpg", "imgs/a/b/c/three.jpg",
                        "imgs/a/notes.txt", "imgs/a/b/x.png", "imgs/.hidden/h.jpg", "other/o.jpg"})
    touch(d / n);
  const auto recursive_off = [&](const std::string& pattern) {
    return good(discover_inputs(config_for({(d / pattern).string()}, false)), d.path());
  };
  CHECK(recursive_off("imgs/**/*.jpg") ==
        std::vector<std::string>{"imgs/a/b/c/three.jpg", "imgs/a/b/two.jpg", "imgs/a/one.jpg", "imgs/top.jpg"});
  CHECK(recursive_off("imgs/a/**/*.png") == std::vector<std::string>{"imgs/a/b/x.png"});
  CHECK(recursive_off("*/**/t*.jpg") ==
        std::vector<std::string>{"imgs/a/b/c/three.jpg", "imgs/a/b/two.jpg", "imgs/top.jpg"});
  CHECK(recursive_off("imgs/**/b/*.jpg") == std::vector<std::string>{"imgs/a/b/two.jpg"});
  // One that matches nothing: a failed item naming it, and an error before the run.
  const auto none = discover_inputs(config_for({(d / "imgs/**/*.gif").string()}));
  REQUIRE(none.size() == 1);
  CHECK(none[0].path == (d / "imgs/**/*.gif").string());
  CHECK_NOTHROW(imgpipe::stages::check_inputs(config_for({(d / "imgs/**/*.jpg").string()})));
  CHECK_THROWS_WITH_AS(imgpipe::stages::check_inputs(config_for({(d / "imgs/**/*.gif").string()})),
                       doctest::Contains("matches nothing"), imgpipe::ConfigError);
  CHECK_THROWS_WITH_AS(imgpipe::stages::check_inputs(config_for({(d / "absent/**/*.jpg").string()})),
                       doctest::Contains("does not exist"), imgpipe::ConfigError);
}

TEST_CASE("source: paths keep config order, the same file reached twice is delivered once") {
  TempDir d;
  touch(d / "a.jpg");
  touch(d / "b.jpg");
  touch(d / "sub" / "c.jpg");
  fs::create_symlink(d / "a.jpg", d / "sub" / "link_to_a.jpg");
  const auto items = discover_inputs(config_for({
      (d / "b.jpg").string(),
      d.path().string(),                       // a.jpg, (b.jpg again), sub/c.jpg, sub/link_to_a.jpg (= a.jpg)
      (d / "sub" / ".." / "a.jpg").string(),  // a.jpg again, spelled differently
      (d / "sub" / "c.jpg").string(),
      (d / "*.jpg").string(),
  }));
  CHECK(good(items, d.path()) == std::vector<std::string>{"b.jpg", "a.jpg", "sub/c.jpg"});
  CHECK(failed(items).empty());
}

TEST_CASE("source: a missing path is a failed item with the reason, in its place") {
  TempDir d;
  touch(d / "a.jpg");
  const auto items = discover_inputs(config_for({(d / "missing.jpg").string(), (d / "a.jpg").string(),
                                                 (d / "no_such_dir").string()}));
  REQUIRE(items.size() == 3);
  CHECK(items[0].path == (d / "missing.jpg").string());
  CHECK(items[0].error == "no such file or directory");
  CHECK(items[1].error.empty());
  CHECK(items[2].path == (d / "no_such_dir").string());
  CHECK(items[2].error == "no such file or directory");
}

TEST_CASE("source: an unreadable sub-folder (chmod 000)") {
  TempDir d;
  touch(d / "a.jpg");
  touch(d / "locked" / "secret.jpg");
  touch(d / "z.jpg");
  fs::permissions(d / "locked", fs::perms::none);
  const auto items = discover_inputs(config_for({d.path().string()}));
  fs::permissions(d / "locked", fs::perms::owner_all);
  if (::geteuid() == 0) {
    // root ignores permission bits: the folder is listed like any other.
    CHECK(good(items, d.path()) == std::vector<std::string>{"a.jpg", "locked/secret.jpg", "z.jpg"});
    CHECK(failed(items).empty());
  } else {
    CHECK(good(items, d.path()) == std::vector<std::string>{"a.jpg", "z.jpg"});
    const auto f = failed(items);
    REQUIRE(f.size() == 1);
    CHECK(f[0]->path == (d / "locked").string());
    CHECK(f[0]->error.find("cannot list directory") != std::string::npos);
    CHECK(f[0]->error.find("ermission denied") != std::string::npos);
    // In input order: between a.jpg and z.jpg.
    CHECK(items[1].path == (d / "locked").string());
  }
  // The unreadable folder named explicitly.
  fs::permissions(d / "locked", fs::perms::none);
  const auto top = discover_inputs(config_for({(d / "locked").string()}));
  fs::permissions(d / "locked", fs::perms::owner_all);
  REQUIRE(top.size() == 1);
  CHECK(top[0].path.find("locked") != std::string::npos);
  if (::geteuid() == 0) {
    CHECK(top[0].error.empty());
  } else {
    CHECK(top[0].path == (d / "locked").string());
    CHECK(top[0].error.find("cannot list directory") != std::string::npos);
  }
}

TEST_CASE("source: a dangling symlink is a failed item, file symlinks are followed") {
  TempDir d;
  touch(d / "real.png");
  fs::create_symlink(d / "gone.jpg", d / "broken.jpg");
  fs::create_symlink(d / "real.png", d / "via_link.jpg");
  fs::create_symlink(d / "gone.txt", d / "broken_other.txt");  // filtered out: not an image name
  const auto items = discover_inputs(config_for({d.path().string()}));
  // real.png and via_link.jpg are one file: delivered once, at the first path that reached it.
  CHECK(good(items, d.path()) == std::vector<std::string>{"real.png"});
  const auto f = failed(items);
  REQUIRE(f.size() == 1);
  CHECK(f[0]->path == (d / "broken.jpg").string());
  CHECK(f[0]->error == "dangling symbolic link");
  // Named explicitly, it is reported as missing.
  const auto one = discover_inputs(config_for({(d / "broken.jpg").string()}));
  REQUIRE(one.size() == 1);
  CHECK_FALSE(one[0].error.empty());
}

TEST_CASE("source: directory symlinks, including loops, are not followed") {
  TempDir d;
  touch(d / "top.jpg");
  touch(d / "a" / "in_a.jpg");
  fs::create_directory_symlink(d.path(), d / "a" / "loop_to_root");  // a cycle
  fs::create_directory_symlink(d / "a", d / "b_link_to_a");
  touch(d / "outside" / "o.jpg");
  fs::create_directory_symlink(d / "outside", d / "a" / "to_outside");
  fs::create_symlink(d / "a" / "self.jpg", d / "a" / "self.jpg.tmp");
  const auto items = discover_inputs(config_for({(d / "a").string(), (d / "top.jpg").string()}));
  CHECK(good(items, d.path()) == std::vector<std::string>{"a/in_a.jpg", "top.jpg"});
  CHECK(failed(items).empty());
  // The symlink itself, named explicitly, is followed (it was asked for).
  CHECK(good(discover_inputs(config_for({(d / "b_link_to_a").string()})), d.path()) ==
        std::vector<std::string>{"b_link_to_a/in_a.jpg"});
}
