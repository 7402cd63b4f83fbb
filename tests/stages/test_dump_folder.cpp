// The dump sink's folder (stages/dump_folder.hpp): a folder in use is
// refused, sink.overwrite removes only the files imgpipe writes, and a rank
// keeps to its own sub-folder.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "stages/dump_folder.hpp"

namespace fs = std::filesystem;
using imgpipe::ConfigError;
using imgpipe::SinkConfig;
using imgpipe::SinkType;
using imgpipe::stages::prepare_dump_folder;
using imgpipe::stages::ShardSpec;
using imgpipe::test::TempDir;

namespace {

void touch(const fs::path& p, const std::string& text = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Every file, folder and link under `dir`, relative, folders ending in '/'.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = it->path().lexically_relative(dir).string();
    out.insert(it->symlink_status().type() == fs::file_type::directory ? rel + "/" : rel);
  }
  return out;
}

SinkConfig sink(const fs::path& dir, bool overwrite) { return SinkConfig{SinkType::dump, dir.string(), overwrite}; }

// The ConfigError prepare_dump_folder throws (key "<none>" when it throws none).
ConfigError refusal(const SinkConfig& cfg, const ShardSpec& shard) {
  try {
    (void)prepare_dump_folder(cfg, shard);
  } catch (const ConfigError& e) {
    return e;
  }
  return ConfigError("<none>", 0, "no error");
}

}  // namespace

TEST_CASE("dump folder: an absent or empty folder is taken, one with anything in it is refused, untouched") {
  TempDir d;
  const fs::path out = d / "out";
  CHECK(prepare_dump_folder(sink(out, false), {}).path == out);  // absent: made
  CHECK(fs::is_directory(out));
  CHECK(prepare_dump_folder(sink(out, false), {}).removed.empty());  // empty: taken

  touch(out / "notes.txt");
  const ConfigError e1 = refusal(sink(out, false), {});
  CHECK(e1.key() == "sink.dir");
  CHECK(std::string(e1.what()).find(fmt::format("'{}'", out.string())) != std::string::npos);
  CHECK(std::string(e1.what()).find("sink.overwrite: true") != std::string::npos);
  CHECK(std::string(e1.what()).find("1 other entry (notes.txt)") != std::string::npos);

  touch(out / "batch_000000.npy");
  touch(out / "batch_000001.npy");
  touch(out / "manifest.jsonl", "{}\n");
  const auto before = listing(out);
  const ConfigError e2 = refusal(sink(out, false), {});
  CAPTURE(e2.what());
  CHECK(e2.key() == "sink.dir");
  CHECK(std::string(e2.what()).find("2 batch file(s) and 1 manifest(s)") != std::string::npos);
  CHECK(listing(out) == before);
}

TEST_CASE("dump folder: sink.overwrite removes the batch files and manifests imgpipe wrote, nothing else") {
  TempDir d;
  const fs::path out = d / "out";
  for (const char* f : {"batch_000000.npy", "batch_000123.npy", "batch_1234567.npy", "manifest.jsonl",
                        // not imgpipe's: other names, a plain sub-folder, another process's rank layout's extras
                        "notes.txt", "batch_1.npy", "batch_00000a.npy", "batch_000001.npy.bak", "manifest.jsonl.old",
                        "data/batch_000000.npy", "data/manifest.jsonl",
                        // an earlier two-rank run: its files go, and its folders when emptied
                        "rank_0_of_2/batch_000000.npy", "rank_0_of_2/manifest.jsonl",
                        "rank_1_of_2/batch_000000.npy", "rank_1_of_2/keep.txt"})
    touch(out / f);
  fs::create_directory(out / "manifest_dir.jsonl");
  touch(d / "target.npy", "not mine");
  fs::create_symlink(d / "target.npy", out / "batch_000002.npy");  // a link is not a file imgpipe wrote

  const auto r = prepare_dump_folder(sink(out, true), {});
  CHECK(listing(out) == std::set<std::string>{"notes.txt", "batch_1.npy", "batch_00000a.npy",
                                              "batch_000001.npy.bak", "manifest.jsonl.old", "data/",
                                              "data/batch_000000.npy", "data/manifest.jsonl", "rank_1_of_2/",
                                              "rank_1_of_2/keep.txt", "manifest_dir.jsonl/", "batch_000002.npy"});
  CHECK(fs::is_symlink(out / "batch_000002.npy"));
  CHECK(fs::exists(d / "target.npy"));
  std::set<std::string> removed;
  for (const auto& p : r.removed) removed.insert(p.lexically_relative(out).string());
  CHECK(removed == std::set<std::string>{"batch_000000.npy", "batch_000123.npy", "batch_1234567.npy",
                                         "manifest.jsonl", "rank_0_of_2/batch_000000.npy",
                                         "rank_0_of_2/manifest.jsonl", "rank_1_of_2/batch_000000.npy",
                                         "rank_0_of_2"});
  CHECK(r.kept.size() == 10);  // 8 other top-level entries, rank_1_of_2/keep.txt and rank_1_of_2 itself
  // What is left is not imgpipe's: the next overwrite run removes nothing.
  CHECK(prepare_dump_folder(sink(out, true), {}).removed.empty());
}

TEST_CASE("dump folder: each rank has its own sub-folder and never touches another rank's files") {
  TempDir d;
  const fs::path out = d / "out";
  const ShardSpec r0{0, 3, "test"}, r1{1, 3, "test"};
  CHECK(imgpipe::stages::dump_folder(out.string(), r1) == out / "rank_1_of_3");
  CHECK(imgpipe::stages::dump_folder(out.string(), {}) == out);
  // The other ranks of this run, writing at this moment.
  for (const char* f : {"rank_0_of_3/batch_000000.npy", "rank_0_of_3/manifest.jsonl", "rank_2_of_3/batch_000000.npy",
                        "rank_2_of_3/manifest.jsonl"})
    touch(out / f);
  const auto siblings = listing(out);
  CHECK(prepare_dump_folder(sink(out, false), r1).path == out / "rank_1_of_3");
  CHECK(fs::is_directory(out / "rank_1_of_3"));
  fs::remove(out / "rank_1_of_3");
  CHECK(listing(out) == siblings);

  // Its own sub-folder in use: refused, naming it.
  touch(out / "rank_1_of_3/batch_000000.npy");
  const ConfigError e = refusal(sink(out, false), r1);
  CAPTURE(e.what());
  CHECK(std::string(e.what()).find("rank 1 of 3") != std::string::npos);
  CHECK(std::string(e.what()).find((out / "rank_1_of_3").string()) != std::string::npos);
  CHECK(std::string(e.what()).find("sink.overwrite") != std::string::npos);

  // An earlier run's output beside the rank folders is in every rank's way...
  for (const char* f : {"batch_000000.npy", "manifest.jsonl", "rank_0_of_2/manifest.jsonl", "notes.txt"})
    touch(out / f);
  fs::remove(out / "rank_1_of_3/batch_000000.npy");
  CHECK(refusal(sink(out, false), r1).key() == "sink.dir");
  CHECK(refusal(sink(out, false), r0).key() == "sink.dir");

  // ...but with sink.overwrite, rank 1 removes its own files only,
  touch(out / "rank_1_of_3/batch_000000.npy");
  touch(out / "rank_1_of_3/manifest.jsonl");
  const auto r = prepare_dump_folder(sink(out, true), r1);
  CHECK(r.removed.size() == 2);
  CHECK(listing(out) == std::set<std::string>{"batch_000000.npy", "manifest.jsonl", "notes.txt", "rank_0_of_2/",
                                              "rank_0_of_2/manifest.jsonl", "rank_0_of_3/",
                                              "rank_0_of_3/batch_000000.npy", "rank_0_of_3/manifest.jsonl",
                                              "rank_1_of_3/", "rank_2_of_3/", "rank_2_of_3/batch_000000.npy",
                                              "rank_2_of_3/manifest.jsonl"});
  // and rank 0 its own and the earlier run's, never rank 2's (nor rank 1's new ones).
  touch(out / "rank_1_of_3/batch_000000.npy");
  prepare_dump_folder(sink(out, true), r0);
  CHECK(listing(out) == std::set<std::string>{"notes.txt", "rank_0_of_3/", "rank_1_of_3/",
                                              "rank_1_of_3/batch_000000.npy", "rank_2_of_3/",
                                              "rank_2_of_3/batch_000000.npy", "rank_2_of_3/manifest.jsonl"});

  // A single process afterwards owns the whole folder: it removes every rank's files.
  prepare_dump_folder(sink(out, true), {});
  CHECK(listing(out) == std::set<std::string>{"notes.txt"});
}

TEST_CASE("dump folder: a folder that cannot be made or written into is a config error naming sink.dir and it") {
  TempDir d;
  touch(d / "file");
  CHECK_THROWS_WITH_AS(prepare_dump_folder(sink(d / "file" / "out", false), {}),
                       doctest::Contains((d / "file" / "out").string().c_str()), imgpipe::ConfigError);
  try {
    prepare_dump_folder(sink(d / "file" / "out", false), {});
  } catch (const imgpipe::ConfigError& e) {
    CHECK(e.key() == "sink.dir");
  }
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directories(d / "ro");
    fs::permissions(d / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_WITH_AS(prepare_dump_folder(sink(d / "ro", false), {}), doctest::Contains("cannot write into"),
                         imgpipe::ConfigError);
    fs::permissions(d / "ro", fs::perms::owner_all);
  }
}
