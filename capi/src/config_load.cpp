// The C API's config: a file or YAML text, with the caller's overrides
// merged in (capi/src/config_load.hpp).
#include "config_load.hpp"

#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "imgpipe/error.hpp"

namespace imgpipe::capi {

namespace {
// `over` merged into `base`, mapping by mapping (a non-mapping value replaces).
YAML::Node merged(const YAML::Node& base, const YAML::Node& over) {
  if (!over.IsMap() || !base.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : over) {
    const std::string key = kv.first.Scalar();
    out[key] = out[key] ? merged(out[key], kv.second) : YAML::Clone(kv.second);
  }
  return out;
}
// Config::from_yaml_string(text), its errors without a line and marked `where`.
imgpipe::Config unlined(const char* text, const char* where) {
  try {
    return imgpipe::Config::from_yaml_string(text);
  } catch (const imgpipe::ConfigError& e) {
    std::vector<imgpipe::ConfigError::Issue> issues = e.issues();
    for (imgpipe::ConfigError::Issue& i : issues) {
      i.line = 0;
      i.reason += where;
    }
    throw imgpipe::ConfigError(std::move(issues));
  }
}
}  // namespace

imgpipe::Config load_config(const char* config, imgpipe_config_kind kind, const char* overrides) {
  using imgpipe::Config;
  using imgpipe::ConfigError;
  const bool file = kind == IMGPIPE_CONFIG_FILE;
  if (kind != IMGPIPE_CONFIG_FILE && kind != IMGPIPE_CONFIG_YAML && kind != IMGPIPE_CONFIG_MAPPING)
    throw std::invalid_argument("imgpipe_pipeline_create: kind must be IMGPIPE_CONFIG_FILE, IMGPIPE_CONFIG_YAML "
                                "or IMGPIPE_CONFIG_MAPPING");
  if (file && (config == nullptr || *config == '\0'))
    throw std::invalid_argument("imgpipe_pipeline_create: no config file named");
  // The config alone first, so that its errors name its own lines (and file).
  Config c = config == nullptr                ? Config{}
             : file                           ? Config::from_yaml_file(config)
             : kind == IMGPIPE_CONFIG_MAPPING ? unlined(config, " [in the dict config]")
                                              : Config::from_yaml_string(config);
  if (overrides == nullptr || *overrides == '\0') return c;
  YAML::Node over;
  try {
    over = YAML::Load(overrides);
  } catch (const YAML::Exception& e) {
    throw ConfigError("", 0, "malformed overrides: " + e.msg);
  }
  if (!over || over.IsNull()) return c;
  if (!over.IsMap()) throw ConfigError("", 0, "the overrides must be a mapping of sections (input, decode, ...)");
  YAML::Node base;  // the text as the config's loader read it
  if (config != nullptr) {
    try {
      base = file ? YAML::LoadFile(config) : YAML::Load(config);
    } catch (const YAML::Exception& e) {
      throw ConfigError("", 0, "YAML error: " + e.msg);
    }
  }
  YAML::Emitter text;
  text << merged(base && base.IsMap() ? base : YAML::Node(YAML::NodeType::Map), over);
  return unlined(text.c_str(), " [in overrides]");  // its lines are the merged text's: meaningless here
}

}  // namespace imgpipe::capi
