// Fixture for layers_build_descending_include_compiles: compiled with the
// stages target's include roots, a stage-level file reaches its own layer and
// every layer below it (the control for the climbing fixture: the same build
// fails only for the climb).
#include "core/fault.hpp"
#include "kernels/resize.hpp"
#include "memory/gpu.hpp"
#include "codecs/parse/jpeg_markers.hpp"
#include "stages/pack.hpp"

int imgpipe_layers_fixture_descends() { return sizeof(imgpipe::kernels::ResizeBatch) > 0 ? 0 : 1; }
