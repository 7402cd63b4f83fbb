// Fixture for layers_check_detects_*: a stage that includes backends' private headers.
#include "codecs/image/nvjpeg/nvjpeg_api.hpp"
#include "codecs/video/nvdec/nvdec_decoder.hpp"
