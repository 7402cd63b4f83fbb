// Fixture for layers_build_climbing_include_fails: compiled with the kernels
// target's include roots only, this kernel-level file reaches for a stage's
// header, which the build must not find.
#include "stages/pack.hpp"

int imgpipe_layers_fixture_climbs() { return 0; }
