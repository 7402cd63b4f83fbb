#!/usr/bin/env bash
# W4 benchmark: clips for training (docs/benchmarks.md, "W4"). Makes the
# corpus (samples/make_videos.sh --parts w4: W4_COUNT Kinetics-like videos of
# W4_SECONDS, 360p / 720p / 1080p, H.264 with B-frames and 2 s GOPs, W4_HEVC
# percent HEVC; kept in WORK and reused), warms the page cache, then:
#   imgpipe   imgpipe_bench_epochs (one kept Pipeline, set_epoch before each
#             run, so every epoch draws new clips) on the W4 config: one clip
#             per video and epoch (input.video.clips {length 16, stride 2,
#             place random, short pad, layout cthw}), short side to 224 then
#             the centre 224 x 224 (resize.mode center_crop: cover the
#             target), ImageNet normalise, float32 N x C x T x H x W batches
#             of 8 clips on the GPU, input.video.where auto, the videos
#             shuffled every epoch; W4_EPOCHS epochs a process, the first its
#             warm-up; W4_ROUNDS processes, the first before the peers, the
#             others after them; then one with input.video.where cpu when
#             time is left (W4_WHERE_CPU), and one with input.video.where
#             gpu before it (W4_WHERE_GPU): the two routes alone
#   peers     samples/bench/w4_peers.py: a DataLoader of 16 persistent
#             workers seeking with cv2.VideoCapture (and PyAV when it
#             imports), FFmpeg CLI processes seeking with -ss before -i
#             (decode only) on the CPUs, on NVDEC and on both
# clips/s of imgpipe and of the DataLoaders: the median of the epochs after
# each process's first; the decode amplification: frames decoded per frame
# delivered, per route, from imgpipe's report; the CPUs' idle share and the
# NVDEC engines' busy share while each imgpipe process ran (vmstat,
# nvidia-smi dmon). Writes OUT/w4.json (every
# epoch of every run, the peers) and OUT/w4_summary.txt (the lines starting
# "W4" and the "BAR W4" line, also printed last).
#
#   samples/bench/w4.sh PHOTOS WORK
#
# Env (defaults):
#   OUT            where w4.json and w4_summary.txt go (WORK)
#   W4_BUDGET_S    the script's wall time, the corpus included (240): every
#                  step is capped by what is left; a step that cannot fit is
#                  shortened or skipped, and the summary says so
#   W4_COUNT       videos (256); W4_SECONDS seconds a video (10); W4_HEVC
#                  percent HEVC (10)
#   W4_CORPUS_S    at most this long for the corpus (120)
#   W4_EPOCHS      epochs per imgpipe process, the first a warm-up (6)
#   W4_ROUNDS      imgpipe processes of the default config (2)
#   W4_WHERE_CPU   1: one more process with input.video.where cpu, last (1)
#   W4_WHERE_GPU   1: one with input.video.where gpu before it, where
#                  nvidia-smi finds a GPU (1)
#   W4_PEERS_S     at most this long for the peers (110)
#   W4_FFMPEG_S    seconds each FFmpeg peer runs (15)
#   W4_PEER_CASES  w4_peers.py --cases (auto)
#   W4_PEERS_ARGS  more w4_peers.py arguments (e.g. "--prefetch 4")
#   EPOCHS_BIN     imgpipe_bench_epochs command (build/samples/imgpipe_bench_epochs)
#   W4_VARIANTS    more imgpipe processes of the default config right after
#                  the first, so that a change is judged in one call:
#                  "NAME=COMMAND;NAME=COMMAND", each COMMAND an
#                  imgpipe_bench_epochs command (the binary before a change,
#                  or the new one under `env VAR=value`)
#   IMGPIPE        imgpipe CLI command (build/pipeline/imgpipe): one --report
#                  run for the amplification when EPOCHS_BIN's JSON lacks it
#   FFMPEG         the peers' ffmpeg command (ffmpeg); make_videos.sh runs
#                  the `ffmpeg` on PATH
#   PYTHON         python3 with torch and cv2 (python3)
#   W4_JOBS        encodes at once (nproc)
# Exit: 0; 1 a part failed (the summary says which); 2 usage.
set -uo pipefail
if [ $# -ne 2 ]; then sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2; fi
photos=$1; work=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
count=${W4_COUNT:-256}; seconds=${W4_SECONDS:-10}; hevc=${W4_HEVC:-10}
epochs=${W4_EPOCHS:-6}; rounds=${W4_ROUNDS:-2}
out=${OUT:-$work}
epochs_bin=${EPOCHS_BIN:-$here/build/samples/imgpipe_bench_epochs}
imgpipe=${IMGPIPE:-$here/build/pipeline/imgpipe}
python=${PYTHON:-python3}
ffmpeg=${FFMPEG:-ffmpeg}
t0=$(date +%s)
deadline=$(( t0 + ${W4_BUDGET_S:-240} - 3 ))
mkdir -p "$work" "$out" || exit 2
work=$(cd "$work" && pwd)
corpus=$work/corpus_${count}x${seconds}s_h$hevc
runs=$work/runs; rm -rf "$runs"; mkdir -p "$runs"
summary=$out/w4_summary.txt; : > "$summary"
note() { echo "W4 note: $*" | tee -a "$summary"; }
left() { echo $(( deadline - $(date +%s) )); }
# cap SECONDS [RESERVE]: seconds a step may take: SECONDS, or what is left
# before the deadline less RESERVE, at least 1
cap() { local l=$(( $(left) - ${2:-0} )); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
failed=0

# --- the corpus, made once and kept ------------------------------------------------
stamp="w4 count=$count seconds=$seconds hevc=$hevc recipe=1"
corpus_s=""  # seconds the corpus took; empty: made by an earlier run
if [ "$(cat "$corpus/.w4stamp" 2> /dev/null)" != "$stamp" ] || [ ! -f "$corpus/manifest.json" ]; then
  rm -f "$corpus/.w4stamp"; tc=$(date +%s)
  c=$(cap "${W4_CORPUS_S:-120}" 90)
  echo "=== corpus: $count videos of $seconds s (make_videos.sh --parts w4), at most $c s"
  timeout -k 5 "$c" bash "$here/samples/make_videos.sh" --parts w4 --w4-videos "$count" --w4-seconds "$seconds" \
    --w4-hevc "$hevc" --jobs "${W4_JOBS:-$(nproc)}" "$photos" "$corpus" > "$runs/corpus.log" 2>&1
  rc=$?; corpus_s=$(( $(date +%s) - tc )); tail -n 5 "$runs/corpus.log"
  rm -f "$corpus"/w4/.tmp.*
  if [ $rc -eq 0 ]; then
    echo "$stamp" > "$corpus/.w4stamp"
  else
    # What was made (each file is renamed into place when whole) is used,
    # with a manifest of its own; the summary says how many.
    made=$(find "$corpus/w4" -maxdepth 1 -name 'w4_*.mp4' 2> /dev/null | wc -l)
    note "corpus: make_videos.sh exit $rc$([ $rc -ge 124 ] && echo " (timed out after $c s)"): $made of $count videos made"
    if [ "$made" -lt 32 ]; then
      echo "W4 corpus: FAILED ($made videos; see $runs/corpus.log)" | tee -a "$summary"; exit 1
    fi
    "$python" - "$corpus" "$seconds" <<'PY' || { echo "W4 corpus: FAILED (no manifest)" | tee -a "$summary"; exit 1; }
import glob, json, os, re, sys
corpus, seconds = sys.argv[1], float(sys.argv[2])
files = []
for p in sorted(glob.glob(os.path.join(corpus, "w4", "w4_*.mp4"))):
    m = re.match(r"w4_(\d+)_(\d+)p_(\w+)\.mp4$", os.path.basename(p))
    if not m:
        continue
    i, h = int(m.group(1)), int(m.group(2))
    w = {360: 480 if i % 20 < 3 else 640, 720: 1280, 1080: 1920}.get(h)
    files.append({"file": os.path.relpath(p, corpus), "part": "w4", "codec": m.group(3), "width": w, "height": h,
                  "frames": max(1, round(seconds * 30)), "fps": 30, "gop": 60, "expect": "ok", "note": "w4.sh: from the name"})
json.dump({"generator": "samples/bench/w4.sh (make_videos.sh did not finish)", "files": files},
          open(os.path.join(corpus, "manifest.json"), "w"), indent=1)
PY
  fi
fi
videos=$(find "$corpus/w4" -maxdepth 1 -name 'w4_*.mp4' | wc -l)
find "$corpus/w4" -maxdepth 1 -name 'w4_*.mp4' -print0 | xargs -0 -r cat > /dev/null  # the page cache warm
echo "W4 corpus: $videos videos in $corpus/w4, $(du -sh "$corpus/w4" | cut -f1), $([ -n "$corpus_s" ] && echo "made in $corpus_s s" || echo "made by an earlier run"); $(nproc) CPUs" | tee -a "$summary"

# --- imgpipe: kept Pipelines ---------------------------------------------------------
w4_config() {  # WHERE: the W4 config
  cat <<EOF
input:
  paths: [$corpus/w4]
  shuffle: {seed: 0, every_epoch: true}
  video:
    where: $1
    clips: {length: 16, stride: 2, per_video: 1, place: random, short: pad, layout: cthw}
transform:
  resize: {width: 224, height: 224, mode: center_crop, interpolation: linear}
  normalize: {mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], scale: 0.00392156862745098, where: auto}
  layout: nchw
  dtype: float32
  seed: 0
batch: {size: 8, drop_last: false}
sink: {type: discard}
EOF
}
w4_config auto > "$runs/w4_default.yaml"
w4_config cpu > "$runs/w4_cpu.yaml"
w4_config gpu > "$runs/w4_gpu.yaml"
per_epoch=0  # seconds an epoch took in the last run (the estimate for the next)
# imgpipe_run NAME ROUND EPOCHS CAP: one process; its epochs are read from its
# stdout (one JSON line each), so a process stopped by its cap still counts
# the epochs it finished.
imgpipe_run() {
  local name=$1 r=$2 e=$3 c=$4 bin=${5:-$epochs_bin} t rc
  t=$(date +%s)
  echo "=== imgpipe_bench_epochs $name round $r: $e epochs, at most $c s"
  # What the machine did meanwhile: the CPUs (vmstat) and the NVDEC engines
  # (nvidia-smi dmon's dec column), a line a second, for the summary.
  local watch=()
  vmstat -n 1 > "$runs/vmstat_${name}_r$r.txt" 2> /dev/null & watch+=($!)
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi dmon -s u -d 1 > "$runs/dmon_${name}_r$r.txt" 2> /dev/null & watch+=($!)
  fi
  # shellcheck disable=SC2086  # EPOCHS_BIN may be several words
  timeout -k 5 "$c" $bin --config "$runs/w4_$name.yaml" --epochs "$e" --json "$runs/epochs_${name}_r$r.json" \
    > "$runs/epochs_${name}_r$r.log" 2>&1
  rc=$?
  kill "${watch[@]}" 2> /dev/null; wait "${watch[@]}" 2> /dev/null
  grep -v '^{' "$runs/epochs_${name}_r$r.log" | tail -n 5
  "$python" - "$runs/epochs_${name}_r$r.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith('{"') and '"epoch"' in line:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        v = e.get("video", {})
        print(f"  epoch {e['epoch']}: {e.get('images')} {e.get('samples_unit', 'samples')} in {e['wall_s']:.2f} s = "
              f"{e['images_per_s']:.1f}/s; files CPU {v.get('cpu_files', '?')} / NVDEC {v.get('nvdec_files', '?')}, "
              f"decoded per frame delivered CPU {v.get('cpu_amplification', 0):.2f} / NVDEC {v.get('nvdec_amplification', 0):.2f}")
PY
  local n; n=$(grep -c '^{"after_setup' "$runs/epochs_${name}_r$r.log")
  echo "  exit $rc, $n epochs, $(( $(date +%s) - t )) s"
  [ "$n" -gt 0 ] && per_epoch=$(( ($(date +%s) - t) / n + 1 ))
  if [ $rc -ne 0 ]; then
    if [ $rc -ge 124 ] && [ "$n" -gt 1 ]; then
      note "imgpipe $name round $r: stopped at its cap ($c s) after $n epochs"
    else
      note "imgpipe $name round $r: exit $rc: $(grep -v '^{' "$runs/epochs_${name}_r$r.log" | tail -c 300 | tr '\n' ' ')"
      failed=1
    fi
  fi
}
peers_need=75  # kept for the peers: a DataLoader and three FFmpeg cases
imgpipe_run default 1 "$epochs" "$(cap 90 "$peers_need")"
variants=()
IFS=';' read -ra variants <<< "${W4_VARIANTS:-}"
for v in "${variants[@]}"; do
  [ -n "$v" ] || continue
  cp "$runs/w4_default.yaml" "$runs/w4_${v%%=*}.yaml"
  imgpipe_run "${v%%=*}" 1 "$epochs" "$(cap 90 "$peers_need")" "${v#*=}"
done

# The amplification from the CLI's report when this imgpipe_bench_epochs
# predates the epochs' "video" (one epoch, a fresh process).
if ! grep -q '"video":' "$runs/epochs_default_r1.log" && [ "$(left)" -gt $(( peers_need + 20 )) ]; then
  echo "=== imgpipe --report (imgpipe_bench_epochs gives no video figures)"
  # shellcheck disable=SC2086  # IMGPIPE may be several words
  timeout -k 5 "$(cap 40 "$peers_need")" $imgpipe --config "$runs/w4_default.yaml" --report "$runs/report_default.json" \
    --quiet > "$runs/report_default.log" 2>&1 || note "imgpipe --report: exit $? ($(tail -c 200 "$runs/report_default.log" | tr '\n' ' '))"
fi

# --- the peers ----------------------------------------------------------------------
later=0  # seconds kept for imgpipe's later rounds
[ "$rounds" -gt 1 ] && later=$(( (rounds - 1) * (per_epoch * epochs + 10) ))
[ "$later" -gt 60 ] && later=60
budget=$(cap "${W4_PEERS_S:-110}" "$later")
# The peers before the later rounds: those get what the peers leave.
[ "$budget" -lt "$peers_need" ] && budget=$(cap "$peers_need")
if [ "$budget" -lt 30 ]; then
  note "peers: skipped ($(left) s left, $later s kept for imgpipe's later rounds)"
else
  echo "=== w4_peers.py, budget $budget s"
  # shellcheck disable=SC2086  # W4_PEERS_ARGS: several arguments
  timeout -k 5 $(( budget + 15 )) "$python" "$here/samples/bench/w4_peers.py" "$corpus" --budget "$budget" \
    --cases "${W4_PEER_CASES:-auto}" --ffmpeg "$ffmpeg" --ffmpeg-s "${W4_FFMPEG_S:-15}" --json "$runs/peers.json" \
    ${W4_PEERS_ARGS:-} 2>&1 | tee "$runs/peers.log"
  rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { note "peers: w4_peers.py exit $rc"; failed=1; }
fi

# --- imgpipe again: the other rounds, then where: cpu --------------------------------
for r in $(seq 2 "$rounds"); do
  need=$(( per_epoch * epochs + 10 ))
  if [ "$(left)" -lt "$need" ]; then
    e=$(( ($(left) - 10) / (per_epoch > 0 ? per_epoch : 1) ))
    if [ "$e" -lt 3 ]; then note "imgpipe default round $r: skipped ($(left) s left, needs ~$need s)"; continue; fi
    note "imgpipe default round $r: $e epochs, not $epochs ($(left) s left)"
  else
    e=$epochs
  fi
  imgpipe_run default "$r" "$e" "$(cap $(( need * 2 )))"
done
# where: gpu (NVDEC alone; the CPU decodes only what the engines refuse)
# and where: cpu bound what the default's two routes at once can reach.
# (left out where no NVIDIA driver answers: where: gpu is an error there).
if [ "${W4_WHERE_GPU:-1}" = 1 ] && nvidia-smi -L > /dev/null 2>&1; then
  est=$(( per_epoch * 2 ))
  e=$(( ($(left) - 10 - (${W4_WHERE_CPU:-1} == 1 ? 3 * est : 0)) / (est > 0 ? est : 1) )); [ "$e" -gt 4 ] && e=4
  if [ "$e" -lt 2 ]; then
    note "imgpipe where gpu: skipped ($(left) s left)"
  else
    imgpipe_run gpu 1 "$e" "$(cap $(( est * e + 15 )))"
  fi
fi
if [ "${W4_WHERE_CPU:-1}" = 1 ]; then
  # where: cpu decodes slower: an epoch there takes up to ~3x the default's
  est=$(( per_epoch * 3 ))
  e=$(( ($(left) - 10) / (est > 0 ? est : 1) )); [ "$e" -gt 4 ] && e=4
  if [ "$e" -lt 2 ]; then
    note "imgpipe where cpu: skipped ($(left) s left)"
  else
    imgpipe_run cpu 1 "$e" "$(cap $(( est * e + 15 )))"
  fi
fi

# --- the summary ------------------------------------------------------------------------
if ! "$python" - "$runs" "$out" "$corpus" "$corpus_s" "$(( $(date +%s) - t0 ))" >> "$summary" <<'PY'
import glob, json, os, re, statistics, sys
runs, out, corpus, corpus_s, took = sys.argv[1:6]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
man = load(os.path.join(corpus, "manifest.json")) or {"files": []}
files = [f for f in man["files"] if f.get("part") == "w4"]
sizes, codecs = {}, {}
for f in files:
    k = f"{f.get('width')}x{f.get('height')}"
    sizes[k] = sizes.get(k, 0) + 1
    codecs[f.get("codec")] = codecs.get(f.get("codec"), 0) + 1
meant_hevc = sum(1 for f in files if f.get("meant") == "hevc" and f.get("codec") != "hevc")
res = {"corpus": {"dir": corpus, "videos": len(files), "sizes": sizes, "codecs": codecs,
                  "bytes": sum(f.get("bytes", 0) for f in files), "made_s": corpus_s,
                  "hevc_made_as_h264": meant_hevc, "generator": man.get("generator")},
       "took_s": int(took), "imgpipe": {}, "peers": load(os.path.join(runs, "peers.json")),
       "report_default": load(os.path.join(runs, "report_default.json"))}
# The amplification's floor for these GOPs: a clip decoded from the keyframe
# before its start (every gop-th frame), its start uniform over the starts that fit.
def floor_of(f, length=16, span=31):
    n, g = int(f.get("frames", 0)), int(f.get("gop", 0) or 0)
    if not g or n < span:
        return None
    starts = range(0, n - span + 1)
    return sum((s % g) + span for s in starts) / len(starts) / length
floors = [x for x in (floor_of(f) for f in files) if x]
res["corpus"]["amplification_floor"] = sum(floors) / len(floors) if floors else None
print(f"W4 corpus mix: {len(files)} videos, sizes {sizes}, codecs {codecs}"
      + (f" ({meant_hevc} meant as HEVC made as H.264: libx265 does not encode here)" if meant_hevc else "")
      + (f"; each clip decoded from the keyframe before it, and no further, would make a decode amplification "
         f"of {res['corpus']['amplification_floor']:.2f}" if floors else ""))
med = statistics.median
variant_names = [v.split("=", 1)[0] for v in os.environ.get("W4_VARIANTS", "").split(";") if v]
for log in sorted(glob.glob(os.path.join(runs, "epochs_*_r*.log")), key=lambda p: ("epochs_default_" not in p, p)):
    m = re.match(r"epochs_(.+)_r(\d+)\.log$", os.path.basename(log))
    eps = []
    for l in open(log):
        if l.startswith('{"') and '"epoch"' in l:
            try:
                eps.append(json.loads(l))
            except ValueError:  # a line cut by the process's end
                pass
    if not (m and eps):
        continue
    e = res["imgpipe"].setdefault(m.group(1), {"processes": []})
    e["processes"].append({"round": int(m.group(2)), "epochs": eps})
def amp(v, route):
    dec, dlv = v.get(f"{route}_decoded", 0), v.get(f"{route}_delivered", 0)
    return dec / dlv if dlv else None
# The mean of a column over a watcher's lines (the first second left out:
# the process starting), None when there is none.
def column_mean(path, name, skip=1):
    head, vals = None, []
    try:
        for line in open(path):
            f = line.split()
            if not f:
                continue
            if name in f and not f[0].lstrip("-").isdigit():
                head = [x for x in f if x != "#"]
                continue
            if head and len(f) == len(head) and f[head.index(name)].replace(".", "", 1).isdigit():
                vals.append(float(f[head.index(name)]))
    except OSError:
        return None
    vals = vals[skip:]
    return sum(vals) / len(vals) if vals else None
for name, e in res["imgpipe"].items():
    for p in e["processes"]:
        idle = column_mean(os.path.join(runs, f"vmstat_{name}_r{p['round']}.txt"), "id")
        dec = column_mean(os.path.join(runs, f"dmon_{name}_r{p['round']}.txt"), "dec")
        p["cpu_idle_pct"], p["nvdec_busy_pct"] = idle, dec
        if idle is not None or dec is not None:
            print(f"W4 imgpipe {name} round {p['round']} load (a sample a second, the process's whole life): "
                  f"CPUs idle {'-' if idle is None else f'{idle:.0f}%'} (vmstat), NVDEC engines busy "
                  f"{'-' if dec is None else f'{dec:.0f}%'} (nvidia-smi dmon dec)")
for name, e in res["imgpipe"].items():
    timed = [x["images_per_s"] for p in e["processes"] for x in p["epochs"][1:]]
    e["timed_epochs_clips_per_s"] = timed
    e["clips_per_s"] = med(timed) if timed else None
    e["first_epochs_clips_per_s"] = [p["epochs"][0]["images_per_s"] for p in e["processes"]]
    # The amplification over every timed epoch (decoded and delivered frames summed), per route.
    vs = [x.get("video") for p in e["processes"] for x in p["epochs"][1:] if x.get("video")]
    tot = {k: sum(v.get(k, 0) for v in vs) for k in ("cpu_decoded", "cpu_delivered", "nvdec_decoded", "nvdec_delivered")}
    last = e["processes"][-1]["epochs"][-1]
    lv = last.get("video")
    if vs:
        e["amplification"] = {"cpu": amp(tot, "cpu"), "nvdec": amp(tot, "nvdec"),
                              "all": ((tot["cpu_decoded"] + tot["nvdec_decoded"]) /
                                      max(1, tot["cpu_delivered"] + tot["nvdec_delivered"])), **tot}
    unit = last.get("samples_unit", "clips?")
    if e["clips_per_s"]:
        what = "where auto (default)" if name == "default" else "where " + name
        if name in variant_names:
            what = f"variant {name} (W4_VARIANTS), where auto"
        line = (f"W4 imgpipe {what}: "
                f"{e['clips_per_s']:.1f} {unit}/s, median of {len(timed)} epochs after each process's first "
                f"{[round(x, 1) for x in timed]} ({len(e['processes'])} processes; first epochs "
                f"{[round(x, 1) for x in e['first_epochs_clips_per_s']]}); {e['clips_per_s'] * 16:.0f} frames/s delivered")
        print(line)
    else:
        print(f"W4 imgpipe {name}: no timed epoch ({sum(len(p['epochs']) for p in e['processes'])} epochs in all)")
    if lv:
        a = e.get("amplification", {})
        f = lambda x: f"{x:.2f}" if x else "-"
        print(f"W4 imgpipe {name} decode amplification (frames decoded per frame delivered, timed epochs): "
              f"CPU {f(a.get('cpu'))} ({a.get('cpu_decoded')} / {a.get('cpu_delivered')}), NVDEC {f(a.get('nvdec'))} "
              f"({a.get('nvdec_decoded')} / {a.get('nvdec_delivered')}), all {f(a.get('all'))}; last epoch's files: "
              f"CPU {lv.get('cpu_files')}, NVDEC {lv.get('nvdec_files')}"
              + (f" (to the CPU: {lv['cpu_reasons']})" if lv.get("cpu_reasons") else "")
              + f"; {last.get('clips')} clips, {lv.get('short_padded', 0)} padded")
rep = res["report_default"]
if rep and "video" in rep:
    v = rep["video"]
    print(f"W4 imgpipe --report (one epoch, a fresh process): {rep.get('samples_per_s', 0):.1f} "
          f"{rep.get('samples', {}).get('unit', '?')}/s end to end; decode amplification CPU "
          f"{v.get('cpu_amplification', 0):.2f} ({v.get('cpu_decoded')} / {v.get('cpu_delivered')}), NVDEC "
          f"{v.get('nvdec_amplification', 0):.2f} ({v.get('nvdec_decoded')} / {v.get('nvdec_delivered')}); files CPU "
          f"{v.get('cpu_files')}, NVDEC {v.get('nvdec_files')}")
peers = res["peers"] or {}
for name, c in (peers.get("cases") or {}).items():
    if c.get("error"):
        print(f"W4 peer {name}: failed: {c['error'][:240]}")
    elif c.get("clips_per_s"):
        if "epochs" in c:
            print(f"W4 peer {name}: {c['clips_per_s']:.1f} clips/s, median of {c['timed_epochs']} epochs after a warm-up "
                  f"{[round(x['clips_per_s'], 1) for x in c['epochs'][1:]]} ({c['workers']} workers, prefetch "
                  f"{c['prefetch_factor']}, output {c['output_shape']} float32 on {c['device']})")
        else:
            print(f"W4 peer {name}: {c['clips_per_s']:.1f} clips/s ({c['clips']} clips in {c['seconds']:.1f} s, "
                  f"processes {c['pools']}, {c['frames_per_clip']:.1f} frames a clip, {c['failed']} failed; decode only)")
    else:
        print(f"W4 peer {name}: no figure ({c.get('note', '')})")
for name, why in (peers.get("absent") or {}).items():
    print(f"W4 peer {name}: absent: {why}")
for name, why in (peers.get("skipped") or {}).items():
    print(f"W4 peer {name}: skipped: {why}")
best = peers.get("best")
d = res["imgpipe"].get("default", {}).get("clips_per_s")
if d and best:
    r = d / best["clips_per_s"]
    res["ratio"] = {"imgpipe/best_peer": r, "best_peer": best}
    amp_d = res["imgpipe"]["default"].get("amplification")
    if not amp_d and rep and "video" in rep:  # this imgpipe_bench_epochs gives none: the --report run's
        amp_d = {"cpu": rep["video"].get("cpu_amplification"), "nvdec": rep["video"].get("nvdec_amplification")}
    amp_d = amp_d or {}
    print(f"BAR W4 imgpipe {d:.1f} clips/s / best peer ({best['case']}, {best['clips_per_s']:.1f} clips/s): {r:.2f} "
          f"vs 2: {'met' if r >= 2 else 'NOT met'} (decode amplification CPU "
          f"{amp_d.get('cpu') or 0:.2f}, NVDEC {amp_d.get('nvdec') or 0:.2f})")
else:
    print(f"BAR W4: no ratio (imgpipe {'%.1f' % d if d else 'none'}, best peer {best['case'] if best else 'none'})")
print(f"W4 took {took} s")
with open(os.path.join(out, "w4.json"), "w") as fh:
    json.dump(res, fh, indent=1)
PY
then
  echo "W4 summary: failed (see above)"; failed=1
fi
echo "== W4 summary ($out/w4_summary.txt, $out/w4.json)"
cat "$summary"
exit $failed
