#!/usr/bin/env bash
# Compiles tests/gpu/nvjpeg_decl_check.cpp against the real nvjpeg.h (CUDA's
# include folder: $CUDA_HOME, default /usr/local/cuda) together with
# codecs/image/nvjpeg/nvjpeg_api.hpp, and runs it. Exit 0: every declaration matches;
# non-zero: the compiler's messages name each mismatch (or a file is missing).
# Runs on the GPU machine; needs g++ (or nvcc) only, no libnvjpeg.
# nvjpeg_api.hpp and imgpipe/types.hpp are taken from beside this script when
# copies are there, else from the source tree it sits in.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
if [[ ! -f $cuda/include/nvjpeg.h ]]; then
  echo "nvjpeg_decl_check: $cuda/include/nvjpeg.h not found (set CUDA_HOME)" >&2
  exit 2
fi
inc=(-I "$cuda/include")
find_dir() {  # first folder holding $1
  local f=$1; shift
  for d in "$@"; do [[ -f $d/$f ]] && { echo "$d"; return 0; }; done
  return 1
}
api_dir=$(find_dir nvjpeg_api.hpp "$here" "$here/../../codecs/image/nvjpeg") ||
  { echo "nvjpeg_decl_check: nvjpeg_api.hpp not found" >&2; exit 2; }
types_dir=$(find_dir imgpipe/types.hpp "$here" "$here/../../core/include" "$here/../../pipeline/include") ||
  { echo "nvjpeg_decl_check: imgpipe/types.hpp not found" >&2; exit 2; }
inc+=(-I "$api_dir" -I "$types_dir")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "nvjpeg_decl_check: $cuda/include/nvjpeg.h vs $api_dir/nvjpeg_api.hpp"
if command -v g++ >/dev/null; then
  g++ -std=c++17 -Wall -Wextra "${inc[@]}" "$here/nvjpeg_decl_check.cpp" -o "$work/check"
else
  "$cuda/bin/nvcc" -std=c++17 -x cu "${inc[@]}" "$here/nvjpeg_decl_check.cpp" -o "$work/check"
fi
"$work/check"
