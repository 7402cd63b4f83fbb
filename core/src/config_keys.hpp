// Internal: the table of config keys (core/src/config_keys.cpp), the one place
// that says which keys exist, their type, range, documentation and where each
// lives in Config. Parsing, validation, to_yaml and docs/config.md all read it.
// Not installed; the tests include it as "core/src/config_keys.hpp".
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "imgpipe/config.hpp"

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace imgpipe::detail {

// What a key's value looks like in YAML. The last four have hand-written
// codecs (config_keys.cpp) because their YAML shape is not one C++ field.
enum class Kind : std::uint8_t {
  boolean,
  integer,       // int
  int64,         // std::int64_t
  real,          // float
  string,
  string_list,   // a list, or one string for a list of one
  float_triple,  // [a, b, c], one per channel
  enumeration,   // one of the names of the key's EnumName array
  devices,       // auto | cpu | all | N | [N, M, ...]
  threads,       // auto | N
  shuffle,       // {seed: S} or {}
  shard,         // {rank: R, world_size: W} or {}
  float_pair,    // [lo, hi], lo <= hi
};

// Allowed numeric values; the defaults allow every finite value. min_open
// makes min exclusive (std > 0, not >= 0).
struct Range {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool contains(double v) const { return (min_open ? v > min : v >= min) && v <= max; }
  bool bounded() const {
    return min > -std::numeric_limits<double>::infinity() || max < std::numeric_limits<double>::infinity();
  }
};

struct KeySpec;

// How one key moves between YAML and Config. read converts, range-checks and
// stores (ConfigError naming the key and line); check range-checks the value
// already in a Config (line 0), for validate(); names lists an enumeration's
// values (nullptr otherwise).
struct Codec {
  void (*read)(const YAML::Node& value, const KeySpec& key, Config& c);
  void (*write)(YAML::Emitter& out, const Config& c);
  void (*check)(const KeySpec& key, const Config& c);
  std::vector<std::string_view> (*names)();
};

struct KeySpec {
  std::string_view key;  // dotted path: "transform.resize.width"
  Kind kind;
  Range range;
  std::string_view doc;  // one paragraph, for docs/config.md
  Codec codec;
};

// A spelling that used to be accepted: `key: value` (any value when value is
// empty) is an error whose message says what to write instead.
struct RetiredSpelling {
  std::string_view key;
  std::string_view value;
  std::string_view instead;  // "staging.memory: pageable"
  std::string_view why;
};

// Every key, in the order of configs/pipeline.yaml and to_yaml (the keys of a
// section are contiguous).
std::span<const KeySpec> config_keys();
std::span<const RetiredSpelling> retired_spellings();
const KeySpec* find_key(std::string_view dotted);

// The dotted keys of the table that `yaml` gives (sections walked as the
// parser walks them; ConfigError for unknown or duplicate keys). Values are
// not converted.
std::vector<std::string> keys_given(const std::string& yaml);

// `key`'s value in `c` as one line of flow YAML ("640", "[a, b]", "{}").
std::string value_text(const KeySpec& key, const Config& c);

// docs/config.md: one table per section (key, type, default, range, doc) and
// the retired spellings.
std::string config_reference_markdown();

}  // namespace imgpipe::detail
