// Read stage (parallel): the file's bytes into the work item's pooled buffer.
// Video frames (Work::predecoded, filled by the source stage) pass through.
#pragma once

#include "stage.hpp"

namespace imgpipe::stages {

class Read : public Stage<Read, Takes::encoded_samples> {
 public:
  Read() : Stage("read", true) {}
  // Fills w.pixels.bytes, or sets w.sample.error ("cannot open: Permission
  // denied", "empty file (0 bytes)", ...). Never throws for a bad input.
  Tally run(Work& w) const;

  // The same on a path, for tests and tools.
  static std::string read_file(const std::string& path, std::vector<unsigned char>& out);
};

}  // namespace imgpipe::stages
