#!/usr/bin/env bash
# imgpipe set-up: installs the build dependencies (Debian 12 / Ubuntu 24.04
# packages), configures and builds, then runs what you asked for.
#
#   ./setup.sh run    build, then run imgpipe on configs/pipeline.yaml (samples/data)
#   ./setup.sh test   build, then run the whole test suite (ctest)
#   ./setup.sh build  build only
#
# Environment: PRESET (CMake preset, default "default"; see CMakePresets.json),
# SKIP_APT=1 (dependencies already installed), JOBS (parallel build jobs),
# SETUP_EXTRA_PACKAGES (more packages for the same apt-get run; CI: the fuzz
# step's clang), CUDAARCHS (CUDA architectures; default: this machine's GPU,
# else a portable set, see CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")"

what=${1:-build}
case "$what" in run|test|build) ;; *) echo "usage: $0 run|test|build" >&2; exit 2 ;; esac
preset=${PRESET:-default}

packages=(build-essential cmake ninja-build pkg-config
          libopencv-dev libtbb-dev libyaml-cpp-dev doctest-dev libcli11-dev
          libspdlog-dev libfmt-dev nlohmann-json3-dev
          libjpeg-dev  # JPEG decode with libjpeg warnings; tests write CMYK JPEGs
          libavformat-dev libavcodec-dev libavutil-dev libswscale-dev  # the CPU video route (FFmpeg's libraries)
          libffmpeg-nvenc-dev  # the NVDEC route: ffnvcodec's nvcuvid declarations and loader (headers only)
          opencv-doc   # tests: real videos and images (/usr/share/doc/opencv-doc/examples/data)
          libdlpack-dev python3 python3-numpy)  # the C API's DLPack tensors; `import imgpipe` (build/python)
if [ "$what" = test ]; then
  packages+=(openmpi-bin    # tests: three ranks of a real launcher (mpirun) dump into one folder
             python3-pytest python3-opencv  # tests: the Python package (pytest, cv2.dnn.blobFromImage)
             python3-venv python3-pip python3-setuptools python3-wheel  # tests: pip install . into a venv, offline
             mypy           # tests: mypy --strict on the Python package (python_mypy)
             dpkg-dev file  # tests: cpack -G DEB (dpkg-shlibdeps reads the binary's dependencies)
             ffmpeg)        # tests: samples/make_videos.sh makes the video clips (sample_make_videos)
fi
# Only for `test`: the HTML report rendered in headless Chromium
# (tests/cli/test_report_cli.cpp; skipped, not passed, without it).
[ "$what" != test ] || packages+=(chromium)
# shellcheck disable=SC2206  # a space-separated list of package names
packages+=(${SETUP_EXTRA_PACKAGES:-})
if [ "${SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

builddir=build
[ "$preset" = default ] || builddir="build-$preset"

# nvcc is used when found (PATH or /usr/local/cuda/bin): the CUDA backend is
# built; without it the host backend alone (see docs/build.md).
cmake --preset "$preset"
# `run` builds what a run needs: the CLI (and the library it links) and the
# Python package with its C library; `test` and `build` build everything
# (the suite, the samples and benchmarks).
targets=()
if [ "$what" = run ]; then
  targets=(--target imgpipe)
  # (the Python package is configured out without DLPack's header or in a
  # sanitizer build)
  if cmake --build --preset "$preset" --target help 2>/dev/null | grep -q '^imgpipe_python:'; then
    targets+=(imgpipe_python)
  fi
fi
cmake --build --preset "$preset" ${JOBS:+-j "$JOBS"} "${targets[@]}"

case "$what" in
  run)
    "$builddir/pipeline/imgpipe" --config configs/pipeline.yaml --report "$builddir/report.json"
    echo "setup: JSON report in $builddir/report.json"
    echo "setup: the Python package: export PYTHONPATH=$PWD/$builddir/python"
    ;;
  test)
    ctest --test-dir "$builddir" --output-on-failure ${JOBS:+-j "$JOBS"}
    ;;
esac
