// Read stage (parallel): the file's bytes into the work item's pooled buffer.
// Video frames (Work::predecoded, filled by the source stage) pass through.
#pragma once

#include "stage.hpp"

namespace imgpipe::stages {

class Read {
 public:
  explicit Read(StageStats& stats) : stats_(stats) {}
  // Fills w.bytes, or sets w.error ("cannot open: Permission denied",
  // "empty file (0 bytes)", ...). Never throws for a bad input.
  Work* operator()(Work* w) const;

  // The same on a path, for tests and tools.
  static std::string read_file(const std::string& path, std::vector<unsigned char>& out);

 private:
  StageStats& stats_;
};

}  // namespace imgpipe::stages
