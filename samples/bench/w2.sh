#!/usr/bin/env bash
# W2 benchmark (video, issue 27), on the GPU machine: imgpipe and its peers at
# their best settings in one call, RUNS timed runs each, frames/s = frames
# counted / seconds; prints one markdown table line per entry with every run
# and the median (also into $OUT/w2_summary.md and .json when OUT is set); the
# notes give the CPU time a frame (user + system, all of an entry's processes).
#
#   samples/bench/w2.sh CORPUS [RUNS]
#
# CORPUS: a folder made by samples/make_videos.sh (its w2/*.mp4 clips,
# long/long.mp4 and manifest.json). Clips shorter than CLIP_FRAMES and the
# long clip shorter than LONG_FRAMES are first repeated by stream copy (no
# encoder needed, the bitstream is unchanged, every repeat starts at an IDR)
# into WORK, so a small corpus carried to the machine decodes as full-length
# clips. Entries (PEERS, comma-separated, default all):
#   ffmpeg_cpu        FFmpeg, P processes x 1 thread (P = nproc) over the W2 list
#   ffmpeg_cpu_long   FFmpeg, one process, all threads (-threads 0), the long video
#   ffmpeg_cuda7      FFmpeg -hwaccel cuda, 7 processes (frames downloaded)
#   ffmpeg_cuda14     the same, 14 processes
#   ffmpeg_cuda_keep7 -hwaccel cuda -hwaccel_output_format cuda, 7 processes (frames on the GPU)
#   ffmpeg_mixed      7 NVDEC + (nproc - 4) CPU processes on one shared queue
#                     (an FFmpeg run in which a process fails counts as failed)
#   torch_*           decode + W1 preprocessing (640x640 bilinear, ImageNet
#                     normalise, NCHW float32 on the GPU, batches of 32), DataLoader
#                     with persistent workers (one per clip, at most nproc: a
#                     worker decodes whole videos, so more clips than workers
#                     leave a tail with few busy), one cv2 thread each:
#                     torch_torchcodec, torch_torchcodec_cuda, torch_tv_reader,
#                     torch_tv_read_video, torch_cv2 (each skipped, and said so,
#                     when absent here); once over the W2 clips (not looped)
#   imgpipe           imgpipe --config <each of IMGPIPE_CONFIGS> on the W2 list
#   imgpipe_long      the same configs, the long video alone
# FFmpeg and imgpipe go over the W2 clips LOOP times (the FFmpeg list
# repeated, imgpipe's input.loop), so that every run lasts seconds.
#
# On the GPU machine (no ffmpeg there, no encoder, 64 MiB carried): make the
# corpus here small and carry it with FFmpeg in the bundle, e.g.
#   samples/make_videos.sh --seconds 2.5 --long 10 --codec-clips 1 --codec-seconds 2 PHOTOS out/w2corpus
#   ../shared/tools/gpu-bundle --xz --out .gpu /usr/bin/ffmpeg build-h200/pipeline/imgpipe
#   run, carry [".gpu.txz", "out/w2corpus"]:  tar xJf .gpu.txz && FFMPEG=".gpu/run bin/ffmpeg" \
#     IMGPIPE=".gpu/run bin/imgpipe" OUT=$OUT samples/bench/w2.sh out/w2corpus
# (the corpus is ~30 MiB, the bundle ~17 MiB xz'd: docs/benchmarks.md,
# "W2 corpus"). The GPU machine's torchvision has neither VideoReader nor
# read_video and torchcodec is not installed there: those entries print
# why they are absent; torch_cv2 runs.
#
# Env:
#   FFMPEG          the ffmpeg command (words allowed, e.g. ".gpu/run bin/ffmpeg");
#                   needed to repeat short clips and by the ffmpeg_* entries
#   IMGPIPE         the imgpipe command (default build/pipeline/imgpipe)
#   IMGPIPE_LIST    several binaries, "NAME=COMMAND NAME=COMMAND ..." (a word
#                   NAME=... starts the next entry), e.g. "new=.gpu/run bin/imgpipe
#                   old=.gpu/run bin/imgpipe_old": each config runs with each,
#                   taking turns run by run; entries imgpipe_NAME_CONFIG
#                   (imgpipe_long_NAME_CONFIG). Default: IMGPIPE alone, unnamed.
#   PYTHON          python3 with torch (default: the first python3 on PATH)
#   IMGPIPE_CONFIGS "NAME:SPEC NAME:SPEC ...": SPEC is a config file (*.yaml),
#                   or dotted overrides KEY=VALUE joined by ';' applied to
#                   configs/pipeline.yaml (samples/bench/w1_config.py), or empty:
#                   configs/pipeline.yaml. input.loop is set on top of each.
#                   Default "default:". e.g.
#                   IMGPIPE_CONFIGS="default: cpu:decode.video_where=cpu gpu:my.yaml"
#   LOOP            passes over the W2 clips for FFmpeg and imgpipe (default 4)
#   CLIP_FRAMES     W2 clips shorter than this are repeated up to it (default 300)
#   LONG_FRAMES     the long video is repeated up to this (default 3600: 120 s)
#   PEERS           entries to run (default all)
#   WORK            scratch folder for repeated clips, configs, reports (default /tmp/w2bench)
#   OUT             also write w2_summary.md and w2_summary.json there
#   W2_DEADLINE     epoch seconds: start no run that would likely end after it
# Exit: 0; 1 an entry failed every run (the table says which); 2 usage.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2; }
corpus=$(cd "$1" && pwd); runs=${2:-${RUNS:-3}}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-/tmp/w2bench}; loop=${LOOP:-4}
clip_frames=${CLIP_FRAMES:-300}; long_frames=${LONG_FRAMES:-3600}
imgpipe=${IMGPIPE:-build/pipeline/imgpipe}
python=${PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
cores=$(nproc); side=$((cores > 5 ? cores - 4 : 1))  # CPU processes beside 7 NVDEC ones
peers=${PEERS:-ffmpeg_cpu,ffmpeg_cpu_long,ffmpeg_cuda7,ffmpeg_cuda14,ffmpeg_cuda_keep7,ffmpeg_mixed,torch_torchcodec,torch_torchcodec_cuda,torch_tv_reader,torch_tv_read_video,torch_cv2,imgpipe,imgpipe_long}
want() { [[ ,$peers, == *,$1,* ]]; }
mkdir -p "$work/clips" "$work/reports"
results=$work/results.jsonl; : > "$results"
[ -f "$corpus/manifest.json" ] || { echo "w2.sh: $corpus/manifest.json missing (make the corpus with samples/make_videos.sh)" >&2; exit 2; }

# --- the clips: repeated by stream copy up to CLIP_FRAMES / LONG_FRAMES --------
# Prints "PATH FRAMES" per clip of part $1 (frames from the manifest).
"$python" - "$corpus" "$work/clips" "$clip_frames" "$long_frames" > "$work/plan.tsv" <<'PY'
import json, math, os, sys
corpus, dst, clip_frames, long_frames = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for e in json.load(open(os.path.join(corpus, "manifest.json")))["files"]:
    if e["part"] not in ("w2", "long"):
        continue
    want = clip_frames if e["part"] == "w2" else long_frames
    times = max(1, math.ceil(want / e["frames"]))
    src = os.path.join(corpus, e["file"])
    out = src if times == 1 else os.path.join(dst, e["file"].replace("/", "_").replace(".mp4", f"_x{times}.mp4"))
    print(f"{e['part']}\t{src}\t{times}\t{out}\t{e['frames'] * times}")
PY
while IFS=$'\t' read -r _ src times out _; do
  [ "$times" = 1 ] || [ -s "$out" ] && continue
  [ -n "${FFMPEG:-}" ] || { echo "w2.sh: FFMPEG is not set: needed to repeat $src $times times" >&2; exit 2; }
  # shellcheck disable=SC2086  # FFMPEG may be several words
  $FFMPEG -nostdin -v error -y -stream_loop $((times - 1)) -i "$src" -map 0:v:0 -c copy "$out.tmp.mp4"
  mv "$out.tmp.mp4" "$out"
done < "$work/plan.tsv"
awk -F'\t' '$1 == "w2" {print $4}' "$work/plan.tsv" > "$work/w2_once.txt"
long=$(awk -F'\t' '$1 == "long" {print $4}' "$work/plan.tsv")
w2_frames=$(awk -F'\t' '$1 == "w2" {s += $5} END {print s + 0}' "$work/plan.tsv")
long_n=$(awk -F'\t' '$1 == "long" {print $5}' "$work/plan.tsv")
: > "$work/w2_loop.txt"; for _ in $(seq "$loop"); do cat "$work/w2_once.txt" >> "$work/w2_loop.txt"; done
[ -s "$work/w2_once.txt" ] || { echo "w2.sh: no W2 clips in $corpus/manifest.json" >&2; exit 2; }
# The W2 folder imgpipe reads: links to the (repeated) clips.
rm -rf "$work/w2"; mkdir -p "$work/w2"
while read -r f; do ln -s "$f" "$work/w2/$(basename "$f")"; done < "$work/w2_once.txt"
{ cat "$work/w2_once.txt"; [ -z "$long" ] || echo "$long"; } | xargs -d '\n' cat > /dev/null  # page cache warm
echo "W2 corpus: $(wc -l < "$work/w2_once.txt") clips, $w2_frames frames (x$loop per run), long video $long_n frames; $cores cores"

# --- runs ------------------------------------------------------------------------
t_start=$(date +%s)
# record NAME WHAT JSON: one run's result.
record() { printf '{"entry":"%s","what":"%s","run":%s}\n' "$1" "$2" "$3" >> "$results"; }
late() {  # late SECONDS_OF_ONE_RUN: true when a run started now would end past W2_DEADLINE
  [ -n "${W2_DEADLINE:-}" ] && [ $(( $(date +%s) + $1 )) -gt "$W2_DEADLINE" ]
}
# repeat NAME WHAT CMD...: RUNS runs of CMD (which prints one JSON line), each recorded.
repeat() {
  local name=$1 what=$2; shift 2
  local r t0 per=0 res
  for r in $(seq "$runs"); do
    if late "$per"; then record "$name" "$what" '{"skipped":"W2_DEADLINE"}'; break; fi
    t0=$(date +%s)
    res=$("$@" 2> "$work/reports/$name.err" | tail -1) || true
    [ -n "$res" ] || res="{\"error\":$("$python" -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()[-400:]))' "$work/reports/$name.err")}"
    record "$name" "$what" "$res"
    case $res in *'"error"'*) break ;; esac   # absent or broken: once is enough
    per=$(( $(date +%s) - t0 ))
  done
}
pool() { "$python" "$here/samples/bench/w2_peers.py" ffmpeg --ffmpeg "$FFMPEG" "$@"; }
if [ -n "${FFMPEG:-}" ]; then
  want ffmpeg_cpu && repeat ffmpeg_cpu "FFmpeg CPU, $cores processes x 1 thread, decode only" \
    pool --files "$work/w2_loop.txt" --pool "cpu:$cores" --threads 1
  if want ffmpeg_cpu_long; then
    printf '%s\n' "$long" > "$work/long.txt"
    repeat ffmpeg_cpu_long "FFmpeg CPU, 1 process, all threads, long video, decode only" \
      pool --files "$work/long.txt" --pool cpu:1 --threads 0
  fi
  want ffmpeg_cuda7 && repeat ffmpeg_cuda7 "FFmpeg -hwaccel cuda, 7 processes, frames downloaded" \
    pool --files "$work/w2_loop.txt" --pool cuda:7
  want ffmpeg_cuda14 && repeat ffmpeg_cuda14 "FFmpeg -hwaccel cuda, 14 processes, frames downloaded" \
    pool --files "$work/w2_loop.txt" --pool cuda:14
  want ffmpeg_cuda_keep7 && repeat ffmpeg_cuda_keep7 "FFmpeg -hwaccel cuda, output cuda, 7 processes, frames on the GPU" \
    pool --files "$work/w2_loop.txt" --pool cuda_keep:7
  want ffmpeg_mixed && repeat ffmpeg_mixed "FFmpeg 7 NVDEC + $side CPU processes, one queue" \
    pool --files "$work/w2_loop.txt" --pool "cuda:7,cpu:$side" --threads 1
else
  echo "w2.sh: FFMPEG not set: the FFmpeg entries are left out"
fi
for d in torchcodec torchcodec_cuda tv_reader tv_read_video cv2; do
  want "torch_$d" || continue
  repeat "torch_$d" "$d + W1 preprocessing, batches of 32 on the GPU" \
    "$python" "$here/samples/bench/w2_peers.py" torch --decoder "$d" --files "$work/w2_once.txt" \
    --workers "$(( $(wc -l < "$work/w2_once.txt") < cores ? $(wc -l < "$work/w2_once.txt") : cores ))"
done

# imgpipe: every config of IMGPIPE_CONFIGS, on the W2 folder and on the long video.
imgpipe_run() {  # COMMAND CONFIG INPUT REPORT -> one JSON line
  local rc=0
  # shellcheck disable=SC2086  # the command may be several words
  $1 --config "$2" --input "$3" --report "$4" --quiet > /dev/null || rc=$?
  shift
  "$python" - "$3" "$rc" <<'PY'
import json, sys
rep, rc = sys.argv[1], int(sys.argv[2])
try:
    r = json.load(open(rep))
except (OSError, ValueError) as e:
    print(json.dumps({"error": f"exit {rc}, no report ({e})"})); sys.exit()
n = r["inputs"]["delivered"]
print(json.dumps({"frames": n, "seconds": r["wall_s"], "fps": r["samples_per_s"], "steady_fps": r["steady_samples_per_s"],
                  "cpu_s": r.get("cpu_s"),
                  "setup_s": r["setup_s"], "failed": r["inputs"]["failed"], "exit": rc, "bottleneck": r.get("bottleneck"),
                  "backend": r.get("backend"), **({"error": f"exit {rc}"} if rc not in (0,) else {})}))
PY
}
# The configs take turns, run by run (A B C A B C ...), so that a drift of
# the machine over the minutes (other tenants, clocks) falls on all of them
# alike rather than on whichever came last.
for entry in ${IMGPIPE_CONFIGS:-default:}; do
  name=${entry%%:*}; spec=${entry#*:}
  base=$here/configs/pipeline.yaml; sets=()
  if [[ $spec == *.yaml ]]; then base=$spec; elif [ -n "$spec" ]; then IFS=';' read -r -a sets <<< "$spec"; fi
  for what in w2 long; do
    l=$loop; [ "$what" = long ] && l=1
    "$python" "$here/samples/bench/w1_config.py" "$base" "${sets[@]}" "input.loop=$l" > "$work/reports/imgpipe_${name}_$what.yaml"
  done
done
# IMGPIPE_LIST's entries: names and commands (one unnamed entry: IMGPIPE).
bin_names=(); bin_cmds=()
if [ -n "${IMGPIPE_LIST:-}" ]; then
  for word in $IMGPIPE_LIST; do
    if [[ $word =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then bin_names+=("${word%%=*}"); bin_cmds+=("${word#*=}")
    else bin_cmds[${#bin_cmds[@]}-1]+=" $word"; fi
  done
else
  bin_names=(""); bin_cmds=("$imgpipe")
fi
declare -A stopped=()
for r in $(seq "$runs"); do
  for entry in ${IMGPIPE_CONFIGS:-default:}; do
    name=${entry%%:*}; spec=${entry#*:}
    for what in w2 long; do
      for b in "${!bin_cmds[@]}"; do
        bin=${bin_names[b]}
        cfg=$work/reports/imgpipe_${name}_$what.yaml
        input=$work/w2; [ "$what" = long ] && input=$long
        base=imgpipe; [ "$what" = long ] && base=imgpipe_long
        e=$base${bin:+_$bin}
        want "$base" && [ -z "${stopped[${e}_$name]:-}" ] || continue
        if late 0; then record "${e}_$name" "" '{"skipped":"W2_DEADLINE"}'; stopped[${e}_$name]=1; continue; fi
        record "${e}_$name" "imgpipe${bin:+ ($bin)} --config $(basename "$cfg") ($spec)" \
          "$(imgpipe_run "${bin_cmds[b]}" "$cfg" "$input" "$work/reports/${e}_${name}_$r.json")"
      done
    done
  done
done

# --- the table ------------------------------------------------------------------
"$python" - "$results" "${OUT:-}" "$w2_frames" "$loop" "$long_n" "$(( $(date +%s) - t_start ))" <<'PY'
import json, os, statistics, sys
results, out, w2_frames, loop, long_n, took = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
entries = {}
for line in open(results):
    r = json.loads(line)
    entries.setdefault(r["entry"], {"what": r["what"], "runs": []})["runs"].append(r["run"])
lines = [f"W2: {w2_frames} frames of W2 clips per pass (x{loop} for FFmpeg and imgpipe), long video {long_n} frames; "
         f"frames/s = frames counted / seconds; {took} s in all", "",
         "| entry | what | frames | runs (frames/s) | median frames/s | notes |", "|---|---|---|---|---|---|"]
summary, failed = {}, False
for name, e in entries.items():
    ok = [r for r in e["runs"] if "fps" in r and "error" not in r]
    notes = sorted({str(r.get("error") or r.get("skipped"))[:120] for r in e["runs"] if "error" in r or "skipped" in r})
    for r in ok:
        if r.get("failed"):  # imgpipe: inputs reported failed (a run still delivered)
            notes.append(f"{r['failed']} input(s) failed")
    fps = [r["fps"] for r in ok]
    med = statistics.median(fps) if fps else None
    frames = sorted({r["frames"] for r in ok})
    expected = int(long_n) if name.startswith(("imgpipe_long", "ffmpeg_cpu_long")) else \
        w2_frames if name.startswith("torch_") else w2_frames * loop
    if any(f != expected for f in frames):
        notes.append(f"frames differ from the corpus's {expected}")
    steady = [r["steady_fps"] for r in ok if r.get("steady_fps")]
    if steady:
        notes.append(f"after start-up: median {statistics.median(steady):.0f}")
    cpu = [r["cpu_s"] * 1e3 / r["frames"] for r in ok if r.get("cpu_s") and r.get("frames")]
    if cpu:  # CPU time a frame (user + system), every process of the entry
        notes.append(f"CPU {statistics.median(cpu):.2f} ms a frame")
    if not ok and not any("skipped" in r for r in e["runs"]):
        absent = any(r.get("absent") for r in e["runs"])
        failed = failed or not absent
    summary[name] = {"what": e["what"], "runs": e["runs"], "median_fps": med}
    lines.append(f"| {name} | {e['what']} | {','.join(map(str, frames)) or '-'} | {', '.join(f'{x:.0f}' for x in fps) or '-'} | "
                 f"{f'{med:.0f}' if med else '-'} | {'; '.join(notes)} |")
text = "\n".join(lines)
print(text)
if out:
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, "w2_summary.md"), "w").write(text + "\n")
    json.dump(summary, open(os.path.join(out, "w2_summary.json"), "w"), indent=1)
sys.exit(1 if failed else 0)
PY
