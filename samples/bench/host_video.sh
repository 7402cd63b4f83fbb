#!/usr/bin/env bash
# Video on the host backend (no GPU) beside FFmpeg doing the same work, on
# this machine: W1's preprocessing (640x640 bilinear stretch, planar float32
# RGB: NCHW float32) of 1080p H.264 clips (B-frames, 5 Mbit/s), all cores.
#
#   samples/bench/host_video.sh [--rounds N] [--loop L] [--clips DIR] [--photos DIR] [--out DIR]
#
# Entries, taking turns round by round (N rounds, default 3):
#   ffmpeg_gbrpf32le  FFmpeg, one process per core (-threads 1), each clip
#                     decoded and `scale=640:640:flags=bilinear,format=gbrpf32le`
#                     (planar float32 RGB: the tensor's layout; mean/std left out)
#   ffmpeg_rgb24      the same to packed 8-bit RGB (`format=rgb24`)
#   imgpipe           `imgpipe --device cpu` with the default config
#                     (configs/pipeline.yaml: W1's transform, batches of 32) over the clips
#                     (mean/std too), process start included; its report's
#                     rate after set-up beside it
# Each entry goes over the clips L times (default 1): FFmpeg's processes with
# -stream_loop L-1 (one process per clip still), imgpipe with input.loop L.
# frames/s = the clips' frames / the wall time of the entry (all its
# processes); every figure is printed per round, then the medians, and the
# ratio of imgpipe's median to FFmpeg gbrpf32le's. FFmpeg's -f null output
# discards each frame; imgpipe's discard sink checksums each batch.
#
# Clips: --clips DIR (its *.mp4), else two 6 s clips made once into
# OUT/clips by samples/make_videos.sh from --photos (default samples/data).
# Needs ffmpeg and build/pipeline/imgpipe (IMGPIPE=path to override).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=3 loop=1 clips="" photos="$here/samples/data" out="${TMPDIR:-/tmp}/imgpipe_host_video"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --loop) loop=$2; shift 2 ;;
    --clips) clips=$2; shift 2 ;;
    --photos) photos=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--loop L] [--clips DIR] [--photos DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
imgpipe=${IMGPIPE:-$here/build/pipeline/imgpipe}
[ -x "$imgpipe" ] || { echo "host_video.sh: no imgpipe at $imgpipe (build it, or set IMGPIPE)" >&2; exit 1; }
command -v ffmpeg > /dev/null || { echo "host_video.sh: ffmpeg is needed" >&2; exit 1; }
mkdir -p "$out"
if [ -z "$clips" ]; then
  "$here/samples/make_videos.sh" --parts w2 --clips 2 --seconds 6 "$photos" "$out/clips" >&2
  clips="$out/clips/w2"
fi
mapfile -t files < <(ls "$clips"/*.mp4)
[ ${#files[@]} -gt 0 ] || { echo "host_video.sh: no .mp4 in $clips" >&2; exit 1; }
cores=$(nproc)

now() { date +%s.%N; }
# FFmpeg over every clip, one process per core, FORMAT as its output.
ffmpeg_run() {
  printf '%s\n' "${files[@]}" | xargs -P "$cores" -I{} ffmpeg -nostdin -v error -threads 1 -stream_loop $((loop - 1)) -i {} \
    -vf "scale=640:640:flags=bilinear,format=$1" -f null -
}

declare -A rate
frames=""
for ((r = 1; r <= rounds; ++r)); do
  t0=$(now); ffmpeg_run gbrpf32le; t1=$(now)
  rate[ffmpeg_gbrpf32le,$r]=$t0:$t1
  t0=$(now); ffmpeg_run rgb24; t1=$(now)
  rate[ffmpeg_rgb24,$r]=$t0:$t1
  t0=$(now)
  "$imgpipe" -c "$here/configs/pipeline.yaml" -i "$clips" --device cpu --set input.loop=$loop -q --report "$out/report_$r.json"
  t1=$(now)
  rate[imgpipe,$r]=$t0:$t1
done

python3 - "$out" "$rounds" "${files[@]}" <<EOF
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
spans = {$(for k in "${!rate[@]}"; do printf '"%s": "%s", ' "$k" "${rate[$k]}"; done)}
frames = None
steady = []
for r in range(1, rounds + 1):
    rep = json.load(open(f"{out}/report_{r}.json"))
    n = rep["inputs"]["delivered"]
    assert rep["inputs"]["failed"] == 0, "imgpipe failed inputs"
    frames = n if frames is None else frames
    assert n == frames
    steady.append(rep["steady_samples_per_s"])
def fps(name, r):
    a, b = map(float, spans[f"{name},{r}"].split(":"))
    return frames / (b - a)
rows = {}
for name in ("ffmpeg_gbrpf32le", "ffmpeg_rgb24", "imgpipe"):
    rows[name] = [fps(name, r) for r in range(1, rounds + 1)]
rows["imgpipe, its rate after set-up"] = steady
print(f"{len(sys.argv) - 3} clips, {frames} frames a run, {rounds} rounds taking turns, frames/s (median)")
print("| entry | rounds | median |")
print("|---|---|---|")
for k, v in rows.items():
    print(f"| {k} | {', '.join(f'{x:,.0f}' for x in v)} | {statistics.median(v):,.0f} |")
ratios = [i / f for i, f in zip(rows["imgpipe"], rows["ffmpeg_gbrpf32le"])]
print(f"imgpipe / FFmpeg gbrpf32le, per round: {', '.join(f'{x:.2f}' for x in ratios)}; "
      f"of the medians: {statistics.median(rows['imgpipe']) / statistics.median(rows['ffmpeg_gbrpf32le']):.2f}")
EOF
