// Internal to core/src: YAML conversions for the key table, and the generic
// codecs that turn one Config member (reached by a pointer-to-member chain)
// into a table row. Only core's .cpp files include it (it needs yaml-cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/src/config_keys.hpp"

namespace imgpipe::detail {

int line_of(const YAML::Node& n);

// Scalar conversions; each throws ConfigError naming `key` and the node's line.
bool to_bool(const YAML::Node& n, const std::string& key);
std::string to_text(const YAML::Node& n, const std::string& key);
long long to_integer(const YAML::Node& n, const std::string& key);
std::uint64_t to_unsigned(const YAML::Node& n, const std::string& key);
float to_float(const YAML::Node& n, const std::string& key);
std::vector<std::string> to_text_list(const YAML::Node& n, const std::string& key);

// "65535", "0.5", "-3": the shortest text that reads back as v.
std::string number_text(double v);
// The shortest text that to_float reads back as exactly v ("0.485", not
// "0.485000014").
std::string float_text(float v);
// "1 .. 65535", ">= 1", "> 0"; empty for an unbounded range.
std::string range_text(const Range& r);
// ConfigError unless r holds v: "value 0 is out of range [1, 65535]" or
// "must be > 0, got -1". `key` may name an element ("...std[1]").
void check_range(const Range& r, double v, const std::string& key, int line);

// A section or {..} value must be a mapping (or null) without a repeated key:
// yaml-cpp keeps both entries of a repeated key and lookups see only the first.
void expect_mapping(const YAML::Node& n, const std::string& path);
// ConfigError for an unknown key, suggesting the nearest of `known`.
[[noreturn]] void unknown_key(const std::string& key, int line, const std::vector<std::string>& known);

std::string join(const std::vector<std::string_view>& parts, std::string_view separator);

// ---- generic codecs: one Config member, reached by the chain M...

template <auto... M>
constexpr auto& member(Config& c) {
  return (c .* ... .* M);
}
template <auto... M>
constexpr const auto& member(const Config& c) {
  return (c .* ... .* M);
}
template <auto... M>
using member_t = std::remove_cvref_t<decltype(member<M...>(std::declval<Config&>()))>;

template <typename T>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return Kind::boolean;
  else if constexpr (std::is_same_v<T, int>) return Kind::integer;
  else if constexpr (std::is_same_v<T, std::int64_t>) return Kind::int64;
  else if constexpr (std::is_same_v<T, float>) return Kind::real;
  else if constexpr (std::is_same_v<T, std::string>) return Kind::string;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return Kind::string_list;
  else if constexpr (std::is_same_v<T, std::array<float, 3>>) return Kind::float_triple;
  else static_assert(sizeof(T) == 0, "no generic codec for this member type: give the key a special codec");
}

// Range-checks a value (line 0 when it did not come from YAML).
template <typename T>
void check_value(const KeySpec& k, const T& v, int line) {
  const std::string key(k.key);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    check_range(k.range, static_cast<double>(v), key, line);
  } else if constexpr (std::is_same_v<T, float>) {
    check_range(k.range, v, key, line);
  } else if constexpr (std::is_same_v<T, std::array<float, 3>>) {
    for (std::size_t i = 0; i < v.size(); ++i) check_range(k.range, v[i], key + "[" + std::to_string(i) + "]", line);
  }
}

template <typename T>
T decode(const YAML::Node& n, const KeySpec& k) {
  const std::string key(k.key);
  if constexpr (std::is_same_v<T, bool>) {
    return to_bool(n, key);
  } else if constexpr (std::is_integral_v<T>) {
    const long long v = to_integer(n, key);
    check_value(k, v, line_of(n));
    // The table's ranges keep int keys inside int; this guards a row that forgot one.
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
      throw ConfigError(key, line_of(n), "value " + std::to_string(v) + " does not fit");
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, float>) {
    const float v = to_float(n, key);
    check_value(k, v, line_of(n));
    return v;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return to_text(n, key);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return to_text_list(n, key);
  } else {
    static_assert(std::is_same_v<T, std::array<float, 3>>);
    if (!n.IsSequence()) throw ConfigError(key, line_of(n), "expected a list of 3 numbers (one per channel)");
    if (n.size() != 3)
      throw ConfigError(key, line_of(n),
                        "expected 3 values (one per channel R, G, B), got " + std::to_string(n.size()));
    T v{};
    for (std::size_t i = 0; i < 3; ++i) v[i] = to_float(n[i], key + "[" + std::to_string(i) + "]");
    check_value(k, v, line_of(n));
    return v;
  }
}

template <typename T>
void encode(YAML::Emitter& e, const T& v) {
  if constexpr (std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::array<float, 3>>) {
    e << YAML::Flow << YAML::BeginSeq;
    for (const auto& x : v) encode(e, x);
    e << YAML::EndSeq;
  } else if constexpr (std::is_same_v<T, float>) {
    e << float_text(v);
  } else {
    e << v;
  }
}

template <auto... M>
void read_member(const YAML::Node& n, const KeySpec& k, Config& c) {
  member<M...>(c) = decode<member_t<M...>>(n, k);
}
template <auto... M>
void write_member(YAML::Emitter& e, const Config& c) {
  encode(e, member<M...>(c));
}
template <auto... M>
void check_member(const KeySpec& k, const Config& c) {
  check_value(k, member<M...>(c), 0);
}

// Enumerations: Names is the enum's EnumName array (config.hpp, types.hpp,
// or a key's own for a bool spelled with two words).
template <auto& Names>
std::vector<std::string_view> names_of() {
  std::vector<std::string_view> out;
  for (const auto& n : Names) out.push_back(n.name);
  return out;
}
template <auto& Names, auto... M>
void read_choice(const YAML::Node& n, const KeySpec& k, Config& c) {
  const std::string s = to_text(n, std::string(k.key));
  for (const auto& [value, name] : Names)
    if (s == name) {
      member<M...>(c) = value;
      return;
    }
  throw ConfigError(std::string(k.key), line_of(n),
                    "unknown value '" + s + "' (expected " + join(names_of<Names>(), " | ") + ")");
}
template <auto& Names, auto... M>
void write_choice(YAML::Emitter& e, const Config& c) {
  e << std::string(enum_name(Names, member<M...>(c)));
}
template <auto& Names, auto... M>
void check_choice(const KeySpec& k, const Config& c) {
  if (enum_name(Names, member<M...>(c)) == "?")
    throw ConfigError(std::string(k.key), 0, "holds a value that is none of " + join(names_of<Names>(), " | "));
}

// ---- table rows

constexpr Range between(double lo, double hi) { return Range{lo, hi, false}; }
constexpr Range at_least(double lo) { return Range{lo, std::numeric_limits<double>::infinity(), false}; }
constexpr Range above(double lo) { return Range{lo, std::numeric_limits<double>::infinity(), true}; }
constexpr Range any_value() { return Range{}; }

// A key stored in one member of a generic type (bool, int, int64, float,
// string, list of strings, float triple).
template <auto... M>
constexpr KeySpec field(std::string_view key, Range range, std::string_view doc) {
  return {key, kind_of<member_t<M...>>(), range, doc,
          Codec{&read_member<M...>, &write_member<M...>, &check_member<M...>, nullptr}};
}

// A key naming one of Names' values.
template <auto& Names, auto... M>
constexpr KeySpec choice(std::string_view key, std::string_view doc) {
  return {key, Kind::enumeration, any_value(), doc,
          Codec{&read_choice<Names, M...>, &write_choice<Names, M...>, &check_choice<Names, M...>, &names_of<Names>}};
}

// A key with a hand-written codec.
constexpr KeySpec special(std::string_view key, Kind kind, Range range, Codec codec, std::string_view doc) {
  return {key, kind, range, doc, codec};
}

}  // namespace imgpipe::detail
