// Exceptions thrown by imgpipe. Everything derives from imgpipe::Error
// (a std::runtime_error), so callers can catch one type.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace imgpipe {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration problem: names the key (dotted path, e.g. "batch.size") and
// the 1-based line in the YAML source (0 when the value did not come from YAML).
// A config file with several problems throws one ConfigError carrying them
// all (issues(), in file order); key(), line() and reason() are the first's,
// what() has one line per issue.
class ConfigError : public Error {
 public:
  struct Issue {
    std::string key;
    int line = 0;
    std::string reason;
  };
  ConfigError(std::string key, int line, const std::string& reason);
  explicit ConfigError(std::vector<Issue> issues);  // at least one
  const std::string& key() const noexcept { return issues_.front().key; }
  int line() const noexcept { return issues_.front().line; }
  const std::string& reason() const noexcept { return issues_.front().reason; }
  const std::vector<Issue>& issues() const noexcept { return issues_; }
  // The same issues, each reason followed by `note` (" [in file.yaml]").
  ConfigError noted(const std::string& note) const;
  // "config key 'batch.size' (line 4): reason" ("config: reason" without a key).
  static std::string message(const Issue& issue);

 private:
  std::vector<Issue> issues_;
};

// A bad input under on_error: fail (or reported under skip): path, frame
// (-1 for still images) and reason.
class InputError : public Error {
 public:
  InputError(std::string path, std::int64_t frame, std::string reason);
  const std::string& path() const noexcept { return path_; }
  std::int64_t frame() const noexcept { return frame_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string path_;
  std::int64_t frame_;
  std::string reason_;
};

// A failed CUDA runtime call: the call's text, where it was made and the
// runtime's error name (e.g. "cudaErrorMemoryAllocation").
class CudaError : public Error {
 public:
  CudaError(std::string call, const char* file, int line, int code, std::string name, std::string text);
  int code() const noexcept { return code_; }
  const std::string& name() const noexcept { return name_; }

 private:
  int code_;
  std::string name_;
};

// The run was stopped by SIGINT/SIGTERM or Pipeline::request_stop().
class Interrupted : public Error {
 public:
  Interrupted() : Error("interrupted") {}
};

}  // namespace imgpipe
