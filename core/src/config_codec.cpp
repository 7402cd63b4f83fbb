// YAML scalar conversions and checks shared by every row of the key table.
#include "core/src/config_codec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>

#include "core/spelling.hpp"

namespace imgpipe::detail {

int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

namespace {

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    std::uint32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (std::size_t j = 1; j < len; ++j) {
      const auto c = static_cast<unsigned char>(s[i + j]);
      if ((c >> 6) != 0x2) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    constexpr std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < smallest[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += len;
  }
  return true;
}

}  // namespace

bool to_bool(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected true or false");
  const std::string& s = n.Scalar();
  if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "False" || s == "no" || s == "off") return false;
  throw ConfigError(key, line_of(n), "expected true or false, got '" + s + "'");
}

std::string to_text(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected a string");
  // yaml-cpp passes bytes through that its emitter then replaces: refuse them
  // here, so that to_yaml() reads back as the same config.
  if (!valid_utf8(n.Scalar())) throw ConfigError(key, line_of(n), "is not valid UTF-8 text");
  return n.Scalar();
}

namespace {

template <typename T>
T parse_integer(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected an integer");
  const std::string& s = n.Scalar();
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw ConfigError(key, line_of(n), "expected an integer, got '" + s + "'");
  return v;
}

}  // namespace

long long to_integer(const YAML::Node& n, const std::string& key) { return parse_integer<long long>(n, key); }

std::uint64_t to_unsigned(const YAML::Node& n, const std::string& key) {
  return parse_integer<std::uint64_t>(n, key);
}

float to_float(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected a number");
  const std::string& s = n.Scalar();
  // Parsed as a float directly, so that float_text's shortest form reads back
  // exactly (no double rounding); stod takes the forms from_chars does not
  // (a leading '+', hex floats).
  float f = 0;
  if (const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), f);
      ec == std::errc() && p == s.data() + s.size() && std::isfinite(f))
    return f;
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v) || std::abs(v) > std::numeric_limits<float>::max())
      throw std::invalid_argument(s);
    return static_cast<float>(v);
  } catch (const std::exception&) {
    throw ConfigError(key, line_of(n), "expected a finite number, got '" + s + "'");
  }
}

std::vector<std::string> to_text_list(const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return {to_text(n, key)};
  if (!n.IsSequence()) throw ConfigError(key, line_of(n), "expected a list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.size(); ++i) out.push_back(to_text(n[i], key + "[" + std::to_string(i) + "]"));
  return out;
}

std::string number_text(double v) {
  char buf[64];
  // Whole numbers in full ("1000000", not "1e+06"), as a reader types them.
  const bool whole = std::abs(v) < 1e15 && v == std::floor(v);
  const auto [end, ec] = whole ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                               : std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::string float_text(float v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::string range_text(const Range& r) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (r.min > -inf && r.max < inf) return number_text(r.min) + " .. " + number_text(r.max);
  if (r.min > -inf) return (r.min_open ? "> " : ">= ") + number_text(r.min);
  if (r.max < inf) return "<= " + number_text(r.max);
  return "";
}

void check_range(const Range& r, double v, const std::string& key, int line) {
  if (r.contains(v) && std::isfinite(v)) return;
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (r.min > -inf && r.max < inf)
    throw ConfigError(key, line,
                      "value " + number_text(v) + " is out of range [" + number_text(r.min) + ", " +
                          number_text(r.max) + "]");
  if (!r.bounded()) throw ConfigError(key, line, "must be a finite number, got " + number_text(v));
  throw ConfigError(key, line, "must be " + range_text(r) + ", got " + number_text(v));
}

void expect_mapping(const YAML::Node& n, const std::string& path) {
  if (!n || n.IsNull()) return;
  if (!n.IsMap()) throw ConfigError(path, line_of(n), "expected a mapping of keys");
  std::map<std::string, int> first_line;
  for (const auto& kv : n) {
    const std::string k = kv.first.Scalar();
    const auto [it, inserted] = first_line.emplace(k, line_of(kv.first));
    if (!inserted)
      throw ConfigError(path.empty() ? k : path + "." + k, line_of(kv.first),
                        "duplicate key (first given on line " + std::to_string(it->second) + ")");
  }
}

void unknown_key(const std::string& key, int line, const std::vector<std::string>& known) {
  const std::string_view name = std::string_view(key).substr(key.rfind('.') + 1);
  const std::string nearest = nearest_name(name, known);
  std::string reason = "unknown key (";
  if (!nearest.empty()) reason += "did you mean '" + nearest + "'? ";
  std::vector<std::string_view> all(known.begin(), known.end());
  throw ConfigError(key, line, reason + "known keys here: " + join(all, ", ") + ")");
}

std::string join(const std::vector<std::string_view>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

}  // namespace imgpipe::detail
