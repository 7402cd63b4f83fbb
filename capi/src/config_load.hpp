// How imgpipe_pipeline_create reads its config (capi/include/imgpipe_c.h).
#pragma once

#include "imgpipe/config.hpp"
#include "imgpipe_c.h"

namespace imgpipe::capi {

// The config of `config` (a file's path, or YAML text, as `kind` says), with
// `overrides` (YAML text, a mapping of sections; null or empty: none) merged
// in section by section. Throws std::invalid_argument for a bad `kind` or a
// missing file name, imgpipe::ConfigError for a bad config or overrides (an
// override's errors are marked "[in overrides]", without line numbers).
imgpipe::Config load_config(const char* config, imgpipe_config_kind kind, const char* overrides);

}  // namespace imgpipe::capi
