// Fixture for layers_check_detects_*: a parser that reaches up to the video reader.
#pragma once
#include "codecs/video/video_file.hpp"
