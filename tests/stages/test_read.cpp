// Read stage: a file's bytes, or a clear reason.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "stages/read.hpp"

namespace fs = std::filesystem;
using imgpipe::stages::Read;
using imgpipe::test::TempDir;

TEST_CASE("read: a real image's bytes, exactly") {
  for (const auto& p : imgpipe::test::sample_images()) {
    CAPTURE(p);
    std::vector<unsigned char> got{1, 2, 3};  // stale content must go
    CHECK(Read::read_file(p.string(), got).empty());
    CHECK(got == imgpipe::test::read_bytes(p));
    CHECK(got.size() == fs::file_size(p));
  }
}

TEST_CASE("read: missing file, directory, empty file, unreadable file") {
  TempDir d;
  std::vector<unsigned char> out{9};

  std::string err = Read::read_file((d / "missing.jpg").string(), out);
  CHECK(err.find("cannot open") != std::string::npos);
  CHECK(err.find("No such file") != std::string::npos);
  CHECK(out.empty());

  out = {9};
  err = Read::read_file(d.path().string(), out);
  CHECK(err == "is a directory");
  CHECK(out.empty());

  imgpipe::test::write_bytes(d / "empty.jpg", {});
  out = {9};
  err = Read::read_file((d / "empty.jpg").string(), out);
  CHECK(err == "empty file (0 bytes)");
  CHECK(out.empty());

  imgpipe::test::write_bytes(d / "locked.jpg", {1, 2, 3});
  fs::permissions(d / "locked.jpg", fs::perms::none);
  err = Read::read_file((d / "locked.jpg").string(), out);
  if (::geteuid() == 0) {
    CHECK(err.empty());  // root reads it regardless of the mode bits
    CHECK(out == std::vector<unsigned char>{1, 2, 3});
  } else {
    CHECK(err.find("Permission denied") != std::string::npos);
  }

  // Not a regular file.
  err = Read::read_file("/dev/null", out);
  CHECK(err == "not a regular file");
}

TEST_CASE("read: a FIFO named like an image is rejected at once, not waited on") {
  // open(O_RDONLY) on a FIFO blocks until a writer comes: without O_NONBLOCK
  // this test (and a pipeline over such a folder) would hang here.
  TempDir d;
  REQUIRE(::mkfifo((d / "pipe.jpg").c_str(), 0600) == 0);
  std::vector<unsigned char> out{9};
  CHECK(Read::read_file((d / "pipe.jpg").string(), out) == "not a regular file");
  CHECK(out.empty());
}
