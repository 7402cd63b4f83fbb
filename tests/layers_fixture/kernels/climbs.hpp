// Fixture for the layers_check_detects test: a kernel header that climbs to stages/.
#pragma once
#include "stages/pack.hpp"
