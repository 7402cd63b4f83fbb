// Config loading, validation and serialising. Which keys exist, their types,
// ranges and members come from the key table (core/src/config_keys.cpp); this
// file knows sections only as the prefixes of the table's dotted keys.
#include "imgpipe/config.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/src/config_codec.hpp"

namespace imgpipe {

namespace {

std::string join_messages(const std::vector<ConfigError::Issue>& issues) {
  std::string text;
  for (const auto& i : issues) {
    if (!text.empty()) text += '\n';
    text += ConfigError::message(i);
  }
  return text;
}

}  // namespace

std::string ConfigError::message(const Issue& i) {
  return (i.key.empty() ? std::string("config") : "config key '" + i.key + "'") +
         (i.line > 0 ? " (line " + std::to_string(i.line) + ")" : std::string()) + ": " + i.reason;
}

ConfigError::ConfigError(std::string key, int line, const std::string& reason)
    : ConfigError(std::vector<Issue>{{std::move(key), line, reason}}) {}

ConfigError::ConfigError(std::vector<Issue> issues) : Error(join_messages(issues)), issues_(std::move(issues)) {
  if (issues_.empty()) issues_.push_back({"", 0, "invalid config"});
}

ConfigError ConfigError::noted(const std::string& note) const {
  std::vector<Issue> v = issues_;
  for (auto& i : v) i.reason += note;
  return ConfigError(std::move(v));
}

namespace detail {
namespace {

bool starts_section(std::string_view key, std::string_view path) {
  return key.size() > path.size() && key.starts_with(path) && key[path.size()] == '.';
}

bool is_section(std::string_view path) {
  return std::any_of(config_keys().begin(), config_keys().end(),
                     [&](const KeySpec& k) { return starts_section(k.key, path); });
}

// The names one level below `path` ("" = the top level), in table order.
std::vector<std::string> children_of(std::string_view path) {
  std::vector<std::string> out;
  for (const KeySpec& k : config_keys()) {
    std::string_view rest = k.key;
    if (!path.empty()) {
      if (!starts_section(rest, path)) continue;
      rest.remove_prefix(path.size() + 1);
    }
    std::string name(rest.substr(0, rest.find('.')));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

// An old spelling is an error that names the new one, not an unknown key.
void reject_retired(const std::string& key, const YAML::Node& value, int line) {
  for (const RetiredSpelling& r : retired_spellings()) {
    if (r.key != key) continue;
    const bool value_matches = value.IsScalar() && value.Scalar() == r.value;
    if (!r.value.empty() && !value_matches) continue;
    std::string reason;
    if (r.value.empty()) reason = "this key is retired";
    else reason.append("'").append(r.value).append("' is retired");
    reason.append(": write ").append(r.instead).append(" instead (").append(r.why).append(")");
    throw ConfigError(key, line, reason);
  }
}

using Visit = std::function<void(const KeySpec&, const YAML::Node&)>;

// Runs `f`; a ConfigError it throws is added to `issues` instead (every
// problem of a file in one error, not only the first).
template <typename F>
void collect(std::vector<ConfigError::Issue>& issues, F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    issues.insert(issues.end(), e.issues().begin(), e.issues().end());
  }
}

// Calls visit for every table key that `node` (the mapping at `path`) gives a
// value, descending into sections; a null value keeps the default. Adds to
// `issues` a non-mapping section, a repeated key, an unknown key, a retired
// spelling and what visit throws, and goes on with the next key.
void walk(const YAML::Node& node, const std::string& path, const Visit& visit,
          std::vector<ConfigError::Issue>& issues) {
  expect_mapping(node, path);
  if (!node || node.IsNull()) return;
  for (const auto& kv : node) {
    const std::string name = kv.first.Scalar();
    const std::string key = path.empty() ? name : path + "." + name;
    collect(issues, [&] {
      reject_retired(key, kv.second, line_of(kv.second.IsNull() ? kv.first : kv.second));
      if (const KeySpec* k = find_key(key)) {
        if (!kv.second.IsNull()) visit(*k, kv.second);
      } else if (is_section(key)) {
        walk(kv.second, key, visit, issues);
      } else {
        unknown_key(key, line_of(kv.first), children_of(path));
      }
    });
  }
}

YAML::Node load_document(const std::function<YAML::Node()>& load_yaml) {
  YAML::Node root;
  try {
    root = load_yaml();
  } catch (const YAML::ParserException& e) {
    throw ConfigError("", e.mark.is_null() ? 0 : e.mark.line + 1, "malformed YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError("", e.mark.is_null() ? 0 : e.mark.line + 1, "YAML error: " + e.msg);
  }
  if (root && !root.IsNull() && !root.IsMap())
    throw ConfigError("", line_of(root), "the document must be a mapping of sections (input, decode, ...)");
  return root;
}

// Every problem of the document in one ConfigError: each key's value and
// range (a key whose value was refused keeps its default), then, when each
// key is fine, what involves several keys (Config::validate).
Config parse(const YAML::Node& root) {
  Config c;
  std::vector<ConfigError::Issue> issues;
  walk(root, "", [&](const KeySpec& k, const YAML::Node& value) { k.codec.read(value, k, c); }, issues);
  for (const KeySpec& k : config_keys()) collect(issues, [&] { k.codec.check(k, c); });
  if (!issues.empty()) throw ConfigError(std::move(issues));
  c.validate();
  return c;
}

}  // namespace

std::vector<std::string> keys_given(const std::string& yaml) {
  std::vector<std::string> keys;
  std::vector<ConfigError::Issue> issues;
  walk(load_document([&] { return YAML::Load(yaml); }), "",
       [&](const KeySpec& k, const YAML::Node&) { keys.emplace_back(k.key); }, issues);
  if (!issues.empty()) throw ConfigError(std::move(issues));
  return keys;
}

std::string value_text(const KeySpec& key, const Config& c) {
  YAML::Emitter e;
  key.codec.write(e, c);
  return e.c_str();
}

}  // namespace detail

DeviceSelection DeviceSelection::parse(const std::string& text) {
  DeviceSelection d;
  if (text == "auto") return d;
  if (text == "cpu") {
    d.kind = Kind::cpu;
    return d;
  }
  if (text == "all") {
    d.kind = Kind::all;
    return d;
  }
  int v = -1;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0)
    throw ConfigError("devices", 0, "expected auto, cpu, all or a GPU ordinal >= 0, got '" + text + "'");
  d.kind = Kind::ordinal;
  d.ordinal = v;
  return d;
}

std::string DeviceSelection::to_string() const {
  switch (kind) {
    case Kind::automatic: return "auto";
    case Kind::cpu: return "cpu";
    case Kind::all: return "all";
    case Kind::ordinal: return std::to_string(ordinal);
    default: {
      std::string s = "[";
      for (std::size_t i = 0; i < ordinals.size(); ++i) s += (i ? ", " : "") + std::to_string(ordinals[i]);
      return s + "]";
    }
  }
}

Config Config::from_yaml_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError("", 0, "cannot open config file '" + file.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return from_yaml_string(ss.str());
  } catch (const ConfigError& e) {
    throw e.noted(" [in " + file.string() + "]");
  }
}

Config Config::from_yaml_string(const std::string& yaml) {
  return detail::parse(detail::load_document([&] { return YAML::Load(yaml); }));
}

void Config::validate() const {
  // Each key's own range and shape (the table's check), then what involves
  // several keys.
  for (const detail::KeySpec& k : detail::config_keys()) k.codec.check(k, *this);
  for (std::size_t i = 0; i < input.extensions.size(); ++i) {
    const auto& e = input.extensions[i];
    if (e.size() < 2 || e[0] != '.')
      throw ConfigError("input.extensions[" + std::to_string(i) + "]", 0,
                        "must start with a dot, like .jpg (got '" + e + "')");
  }
  if (sink.type == SinkType::dump && sink.dir.empty()) throw ConfigError("sink.dir", 0, "must not be empty");
  if (decode.where == Where::gpu) {
    const Interpolation i = transform.resize.interpolation;
    if (i != Interpolation::linear && i != Interpolation::nearest)
      throw ConfigError("decode.where", 0, "gpu decode resizes on the GPU: interpolation linear or nearest only");
    if (transform.normalize.where == Where::cpu)
      throw ConfigError("decode.where", 0, "gpu decode needs normalize.where gpu or auto (the GPU resizes and "
                                           "normalises what it decodes)");
    if (staging.transfer == TransferMode::zero_copy)
      throw ConfigError("decode.where", 0, "gpu decode needs staging.transfer copy (the engines read device memory)");
    if (devices.kind == DeviceSelection::Kind::cpu)
      throw ConfigError("decode.where", 0, "gpu decode needs a GPU (devices is cpu)");
  }
  if (transform.resize.where == Where::gpu) {
    if (transform.resize.interpolation != Interpolation::linear &&
        transform.resize.interpolation != Interpolation::nearest)
      throw ConfigError("transform.resize.where", 0,
                        "gpu resize supports interpolation linear and nearest only (area and cubic run on the cpu)");
    if (transform.normalize.where == Where::cpu)
      throw ConfigError("transform.resize.where", 0,
                        "gpu resize needs normalize.where gpu or auto (the GPU resizes, then normalises)");
  }
  if (const int s = transform.resize.short_side; s > 0) {
    if (transform.resize.mode != ResizeMode::center_crop)
      throw ConfigError("transform.resize.short_side", 0,
                        "applies to transform.resize.mode center_crop only (got " +
                            std::string(enum_name(resize_mode_names, transform.resize.mode)) + "); 0 leaves it off");
    if (s < std::max(transform.resize.width, transform.resize.height))
      throw ConfigError("transform.resize.short_side", 0,
                        "must be at least the target's larger side (" +
                            std::to_string(std::max(transform.resize.width, transform.resize.height)) +
                            "): the centre cut is taken from the image scaled to that short side");
  }
  if (const ClipConfig& clips = input.video.clips; clips.on()) {
    const bool nhwc = clips.layout == ClipLayout::thwc;
    if (nhwc != (transform.layout == Layout::nhwc))
      throw ConfigError("input.video.clips.layout", 0,
                        std::string(enum_name(clip_layout_names, clips.layout)) + " needs transform.layout " +
                            (nhwc ? "nhwc" : "nchw") + " (got " + std::string(to_string(transform.layout)) + ")");
    if (clips.per_video == 0 && clips.place != ClipPlace::every)
      throw ConfigError("input.video.clips.per_video", 0,
                        "must be at least 1 with place " + std::string(enum_name(clip_place_names, clips.place)) +
                            " (0 = all applies to place every)");
    if (clips.step > 0 && clips.place != ClipPlace::every)
      throw ConfigError("input.video.clips.step", 0, "applies to place every only; 0 leaves it off");
  }
  const std::int64_t clip_frames = input.video.clips.on() ? input.video.clips.length : 1;
  const std::int64_t batch_bytes = static_cast<std::int64_t>(batch.size) * clip_frames * transform.resize.width *
                                   transform.resize.height * 3 * 4;
  if (batch_bytes > (std::int64_t{16} << 30))
    throw ConfigError("batch.size", 0, "one batch would need " + std::to_string(batch_bytes >> 20) +
                                           " MiB (limit 16 GiB): reduce batch.size or the resize target");
}

std::string Config::to_yaml() const {
  // The table lists a section's keys together, so one pass opens and closes
  // each section once.
  YAML::Emitter e;
  e << YAML::BeginMap;
  std::vector<std::string_view> open;
  for (const detail::KeySpec& k : detail::config_keys()) {
    std::vector<std::string_view> parts;
    for (std::string_view rest = k.key;;) {
      const std::size_t dot = rest.find('.');
      parts.push_back(rest.substr(0, dot));
      if (dot == std::string_view::npos) break;
      rest.remove_prefix(dot + 1);
    }
    std::size_t shared = 0;
    while (shared < open.size() && shared + 1 < parts.size() && open[shared] == parts[shared]) ++shared;
    for (; open.size() > shared; open.pop_back()) e << YAML::EndMap;
    while (open.size() + 1 < parts.size()) {
      const std::string_view section = parts[open.size()];
      e << YAML::Key << std::string(section) << YAML::Value << YAML::BeginMap;
      open.push_back(section);
    }
    e << YAML::Key << std::string(parts.back()) << YAML::Value;
    k.codec.write(e, *this);
  }
  for (; !open.empty(); open.pop_back()) e << YAML::EndMap;
  e << YAML::EndMap;
  return e.c_str();
}

}  // namespace imgpipe
