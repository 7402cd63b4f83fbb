// Fixture for layers_check_detects_*: one backend that includes another's header.
#include "codecs/image/nvjpeg/jpeg_gpu.hpp"
