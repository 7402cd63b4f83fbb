// A sample's SampleGeometry as JSON, field for field (imgpipe/geometry.hpp):
// the dump sink's manifest lines and the C API's samples (which Python
// reads) both write it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "imgpipe/config.hpp"
#include "imgpipe/geometry.hpp"

namespace imgpipe {

inline nlohmann::json geometry_json(const SampleGeometry& g) {
  return {{"width", g.width},
          {"height", g.height},
          {"stored_width", g.stored_width},
          {"stored_height", g.stored_height},
          {"orientation", g.orientation},
          {"decode_scale", g.decode_scale},
          {"resize", std::string(enum_name(resize_mode_names, g.resize))},
          {"scale_x", g.scale_x},
          {"scale_y", g.scale_y},
          {"offset_x", g.offset_x},
          {"offset_y", g.offset_y},
          {"resized_width", g.resized_width},
          {"resized_height", g.resized_height},
          {"pad_left", g.pad_left},
          {"pad_top", g.pad_top},
          {"crop_x", g.crop_x},
          {"crop_y", g.crop_y},
          {"tensor_width", g.tensor_width},
          {"tensor_height", g.tensor_height},
          {"box_x", g.box_x},
          {"box_y", g.box_y},
          {"box_width", g.box_width},
          {"box_height", g.box_height},
          {"flip_x", g.flip_x},
          {"flip_y", g.flip_y},
          {"epoch", g.epoch}};
}

}  // namespace imgpipe
