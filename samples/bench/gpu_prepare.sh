#!/usr/bin/env bash
# Makes what a GPU-machine call of gpu_suite.sh carries, in the checkout's
# root (add these names to .git/info/exclude):
#   .gpu.txz      imgpipe, imgpipe_tests, the NVTX probe tool and libimgpipe_opencv_io.so
#                 (OpenCV's codecs, which the programs load from beside themselves) of BUILD (a CUDA build)
#   .gpuff.txz    Debian's ffmpeg, with the x264, x265, AV1 and VP9 encoders the
#                 video cases make clips with (gpu-bundle would stub three of them)
#   .gpuperf.txz  Debian's perf (the w2 part's profile)
#   .ocvmin       opencv-doc's examples/data (the tests' real images and videos)
#   .w2corpus     W2's clips (make_videos.sh --parts w2,long), when PHOTOS is given
# then prints the sizes and two carry lists that fit one call (64 MiB with the
# working tree): the whole suite, and the NVDEC cases with W2.
#
#   samples/bench/gpu_prepare.sh BUNDLER BUILD [PHOTOS]
# BUNDLER: the gpu-bundle program (with gpu-host-libs.txt beside it when there).
set -euo pipefail
bundler=$1; build=$2; photos=${3:-}
root=$(git rev-parse --show-toplevel); cd "$root"
host_libs=$(dirname "$bundler")/gpu-host-libs.txt
args=(); [ -f "$host_libs" ] && args=(--host-libs "$host_libs")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

rm -rf .gpu .gpu.txz
python3 "$bundler" "${args[@]}" --out .gpu --xz "$build/pipeline/imgpipe" "$build/tests/imgpipe_tests" \
  "$build/tests/libimgpipe_nvtx_probe_tool.so" "$build/lib/libimgpipe_opencv_io.so"

# gpu-bundle keeps the libraries of its KEEP list and stubs the rest: a copy
# that also keeps the encoders.
sed 's/r"libnuma",/r"libnuma", r"libx265", r"libaom", r"libvpx",/' "$bundler" > "$tmp/bundle-enc"
grep -q 'r"libx265"' "$tmp/bundle-enc" || { echo "gpu_prepare.sh: $bundler has no KEEP entry for libnuma to add the encoders beside" >&2; exit 1; }
rm -rf .gpuff .gpuff.txz
python3 "$tmp/bundle-enc" "${args[@]}" --out .gpuff /usr/bin/ffmpeg
. samples/bench/ffmpeg_encoders.sh
missing=$(GPU_BUNDLE_STRICT=1 missing_encoders .gpuff/run bin/ffmpeg)
[ -z "$missing" ] || { echo "gpu_prepare.sh: the bundled ffmpeg cannot encode with:" $missing >&2; exit 1; }
XZ_OPT="-T0 -6" tar cJf .gpuff.txz .gpuff && rm -rf .gpuff

rm -rf .gpuperf .gpuperf.txz
python3 "$bundler" "${args[@]}" --out .gpuperf --xz /usr/bin/perf

rm -rf .ocvmin && cp -r /usr/share/doc/opencv-doc/examples/data .ocvmin

if [ -n "$photos" ]; then
  rm -rf .w2corpus
  bash samples/make_videos.sh --parts w2,long --seconds 2.5 --long 5 "$photos" .w2corpus
fi

mib() { du -sb "$@" | awk '{s += $1} END {printf "%.1f", s / 1048576}'; }
tree=$(git ls-files -z | du -cb --files0-from=- | tail -1 | awk '{printf "%.1f", $1 / 1048576}')
echo "sizes (MiB): tree $tree, .gpu.txz $(mib .gpu.txz), .gpuff.txz $(mib .gpuff.txz), .gpuperf.txz $(mib .gpuperf.txz), .ocvmin $(mib .ocvmin)$([ -d .w2corpus ] && echo ", .w2corpus $(mib .w2corpus)")"
echo "the whole suite (parts tests video, ...): carry [\".gpu.txz\", \".gpuff.txz\", \".ocvmin\"]: $(mib .gpu.txz .gpuff.txz .ocvmin) MiB + tree"
[ -d .w2corpus ] && echo "the NVDEC cases and W2 (VIDEO_TESTS='frame pool*,yuv*,nvdec*' VIDEO_MEMCHECK='frame pool*,nvdec*', parts video w2): carry [\".gpu.txz\", \".gpuff.txz\", \".gpuperf.txz\", \".w2corpus\"]: $(mib .gpu.txz .gpuff.txz .gpuperf.txz .w2corpus) MiB + tree"
echo "on the machine: tar xJf .gpu.txz && tar xJf .gpuff.txz && ([ ! -f .gpuperf.txz ] || tar xJf .gpuperf.txz) && mkdir -p /usr/share/doc/opencv-doc/examples/data && ([ ! -d .ocvmin ] || cp -r .ocvmin/. /usr/share/doc/opencv-doc/examples/data/) && bash samples/bench/gpu_suite.sh \$OUT x PARTS"
