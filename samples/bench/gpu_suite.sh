#!/usr/bin/env bash
# Everything the GPU machine is needed for, in one call: the test suite on the
# CUDA backend, compute-sanitizer on the kernel/memory/transfer tests, the
# kernel and memory benchmarks, W1 (default config, decode.where variants,
# transfer modes and placements), W1 old binary against new, raw nvJPEG, the
# peers, the reduced-decode speed-up and the soak. Writes logs and JSON to OUT.
#
#   samples/bench/gpu_suite.sh OUT [PHOTOS] [parts...]
# with programs bundled by ../shared/tools/gpu-bundle into .gpu (see docs/benchmarks.md, "Running the benchmarks";
# samples/bench/gpu_prepare.sh makes every bundle a call carries).
# parts: tests sanitize kernels memory w1 epochs w1cmp nvjpeg peers decode live soak
#   (default: all of them, in this order, whatever order they are given in),
#   and two only when named: video (the video, frame pool and NVDEC cases, then
#   compute-sanitizer memcheck on the frame pool, YUV and NVDEC cases) and w2
#   (samples/bench/w2.sh on W2_CORPUS: `where: cpu` and the default, each with
#   and without page-locked frames, FFmpeg's CPU (16 processes; one process
#   of all threads on the long video) and mixed peers, then a `perf record -a`
#   profile of `where: cpu` when perf is there), and w3 (samples/bench/w3.sh:
#   a training epoch of ImageNet-like JPEGs made from PHOTOS, imgpipe kept
#   with region decode on and off, the DataLoader and torchvision GPU peers,
#   the Python Loader, then ResNet-50 training fed by each; W3_BUDGET_S),
#   and w4 (samples/bench/w4.sh: clips for training: 256 Kinetics-like
#   videos made here with ffmpeg from PHOTOS (about a minute), one random
#   16-frame clip a video and epoch, imgpipe kept against the DataLoader
#   (cv2 seeking) and FFmpeg CLI peers, the decode amplification; W4_BUDGET_S).
# The video cases make their clips with ffmpeg, which the GPU machine lacks:
# bundle it (gpu-bundle --out .gpuff /usr/bin/ffmpeg) and carry .gpuff; the
# parts put .gpuff/run's ffmpeg on PATH. perf likewise from .gpuperf.
# gpu-bundle replaces libraries outside its KEEP list with stubs, among them
# the HEVC, AV1 and VP9 encoders the cases use (that ffmpeg then dies with
# SIGSEGV or exits 1): bundle with a copy whose KEEP list also
# has r"libx265", r"libaom", r"libvpx" (16.6 MiB as .txz). The video part
# checks the encoders first and says which one fails.
#
# Time: the whole call is held to SUITE_BUDGET_S (default 540 s) of wall time:
# every step runs under `timeout` capped by what is left, w1.sh and peers.py
# are given deadlines so that they run fewer timed runs rather than being
# killed, and a part that cannot fit is skipped with a line in the summary.
# All parts at once do not fit in 540 s (the sanitizer alone may take 690 s):
# split them, e.g. `tests sanitize kernels memory` and
# `w1 w1cmp nvjpeg peers decode soak`. The W1 corpus (W1_COUNT, default 4096,
# /tmp/w1work/w1_4096) is made once per call and shared by the parts.
#
# OUT holds at most 6 files: summary.txt (one line per figure, also printed
# last), suite.log (every log), w1.json (default, decode_where, variants,
# w1cmp: every run of every binary), peers.json, nvjpeg.json, bench.json
# (kernels, memory, soak).
#
# Env knobs (defaults): SUITE_BUDGET_S (540), W1_COUNT (4096), W1_RUNS (5),
# EPOCHS (5), EPOCHS_WHERE ("auto gpu"), EPOCHS_VERIFY ("config": the config's
# decode.verify; else a list, e.g. "markers full"), EPOCHS_GPU_BATCH ("config": the
# config's decode.gpu_batch; else a list of values, each run with each where),
# W1_VARIANT_RUNS (3), W1_DECODE_WHERE ("cpu gpu auto"; "" to leave out) for the
# key W1_DECODE_KEY (decode.where),
# W1_VARIANTS (the transfer/placement list below; "" to leave out),
# W1CMP_RUNS (5), PEERS_WORKERS (15; a comma list is run and reported each),
# PEERS_SKIP (peers.py --skip: a comma list of peers to leave out),
# NVJPEG_ARGS ("--backends hardware_device,hardware --no-pipeline both --plain off"),
# SANITIZE_SPECS (tool:set:limit ...), VIDEO_TESTS (the video part's doctest
# filter), VIDEO_MEMCHECK (its memcheck's filter), W2_CORPUS (.w2corpus:
# samples/make_videos.sh --parts w2,long), W2_CONFIGS (w2.sh's
# IMGPIPE_CONFIGS, default below), W2_PEERS, W2_RUNS (3), W2_OLD (0; 1: bin/imgpipe_old
# beside bin/imgpipe), EPOCHS_OLD (0; 1: bin/imgpipe_bench_epochs_old beside the new),
# EPOCHS_ROUNDS (1), TESTS_LIMIT_S (420: the suite took 306 to 345 s on a
# fresh H100 machine), W3_BUDGET_S (380: the w3 part's wall time, W3_RESNET_S
# (120) of it for ResNet-50), W3_ROUNDS (2), W3_PARTS (w3.sh's parts), W3_COUNT
# (8192). The w3 part needs in .gpu: bin/imgpipe_make_corpus,
# bin/imgpipe_bench_epochs and bin/libimgpipe_c.so (the Python Loader's); OUT
# gets w3.json and w3_summary.txt. W4_BUDGET_S (230: the w4 part's wall time,
# the corpus included; w4.sh's other knobs, W4_*, pass through): the w4 part
# needs bin/imgpipe_bench_epochs (and bin/imgpipe) in .gpu, PHOTOS and ffmpeg
# (.gpuff, with libx265 for the HEVC tenth); OUT gets w4.json and
# w4_summary.txt.
set -uo pipefail
out=$1; photos=${2:-.gpu/data/photos}; shift 2 || shift $#
parts=${*:-tests sanitize kernels memory w1 epochs w1cmp nvjpeg peers decode live soak}
run=".gpu/run"
budget=${SUITE_BUDGET_S:-540}
count=${W1_COUNT:-4096}
work=/tmp/w1work
corpus=$work/w1_$count
js=/tmp/suite_json   # JSON pieces, merged into OUT after each part
export IMGPIPE_SOURCE_DIR=$PWD IMGPIPE_CLI="$PWD/.gpu/run bin/imgpipe"
export PYTHONUNBUFFERED=1
# The NVTX test's tool library: the bundle carries it in .gpu/bin (the test
# looks where it was built otherwise).
[ -f .gpu/bin/libimgpipe_nvtx_probe_tool.so ] && export IMGPIPE_NVTX_PROBE_TOOL=$PWD/.gpu/bin/libimgpipe_nvtx_probe_tool.so
has() { [[ " $parts " == *" $1 "* ]]; }
# ffmpeg and perf from their bundles (the video cases and W2 call them by name)
mkdir -p /tmp/bin
for tool in ffmpeg:.gpuff perf:.gpuperf; do
  name=${tool%%:*}; dir=${tool#*:}
  if ! command -v "$name" > /dev/null && [ -x "$dir/run" ]; then
    printf '#!/bin/sh\nexec %s/%s/run bin/%s "$@"\n' "$PWD" "$dir" "$name" > "/tmp/bin/$name"
    chmod +x "/tmp/bin/$name"
  fi
done
export PATH=$PATH:/tmp/bin
mkdir -p "$out" "$work"; rm -rf "$js"; mkdir -p "$js"
log=$out/suite.log; summary=$out/summary.txt
: > "$log"; : > "$summary"

t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( budget - $(elapsed) )); }
cap() { local l=$(( $(left) - 3 )); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }  # seconds for a step
deadline() { echo $(( $(date +%s) + $1 )); }
sum() { echo "$*" >> "$summary"; }
short='s/ (min\.\.max [^)]*)//'  # sed: summary lines without the min..max
section() { echo "== $1 ($(elapsed) s in, $(left) s left)"; printf '\n######## %s (at %s s)\n' "$1" "$(elapsed)" >> "$log"; }
enough() {  # NAME SECONDS: is there time left for a part that needs SECONDS?
  if [ "$(left)" -lt "$2" ]; then
    echo "$1: skipped, $(left) s left of the $budget s budget (needs ~$2 s)" | tee -a "$log"
    sum "$1: skipped (budget: $(left) s left, needs ~$2 s)"; return 1
  fi
}
# sanitize TOOL SET FILTER LIMIT: compute-sanitizer's TOOL over the cases
# FILTER names, under LIMIT seconds; a line in the log and the summary.
sanitize() {
  local tool=$1 set=$2 f=$3 limit=$4 extra="" rc line
  [ "$tool" = memcheck ] && extra="--leak-check full"
  timeout -k 5 "$(cap "$limit")" compute-sanitizer --tool "$tool" $extra --error-exitcode 9 $run bin/imgpipe_tests -tc="$f" > /tmp/san.log 2>&1
  rc=$?
  { echo "=== $tool $set rc=$rc"; grep -E "SUMMARY|test cases" /tmp/san.log
    grep -E "Error|error|TEST CASE|Leaked|Host Frame" /tmp/san.log | head -80
    echo "leaks by the first frame of ours:"
    grep -A30 "Leaked" /tmp/san.log | grep -E "Leaked|Host Frame: imgpipe" | awk '/Leaked/ {l=1; next} l {sub(/.*Host Frame: /, ""); sub(/ \[0x.*/, ""); print; l=0}' | sort | uniq -c | sort -rn | head; } >> "$log"
  line="$tool $set rc=$rc $(grep -E 'ERROR SUMMARY|test cases' /tmp/san.log | tr '\n' ' ' | tr -s ' ')"
  echo "$line"; sum "sanitize: $line"
}
merge_json() {
  python3 - "$js" "$out" <<'PY'
import glob, json, os, sys
js, out = sys.argv[1], sys.argv[2]
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"error": f"{os.path.basename(p)}: {e!r}"}
epochs = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(js, "epochs_*.json")))
for dest, names in (("w1.json", ["w1_default", "w1_decode_where", "w1_variants", "w1cmp"] + epochs),
                    ("bench.json", ["kernels", "memory", "soak", "live"])):
    got = {n: load(os.path.join(js, n + ".json")) for n in names if os.path.exists(os.path.join(js, n + ".json"))}
    if got:
        json.dump(got, open(os.path.join(out, dest), "w"), indent=1)
PY
}
# w1.sh under a deadline: TAG RUNS CAP [VAR=VALUE ...]; log to suite.log, JSON to $js/TAG.json.
w1() {
  local tag=$1 runs=$2 c; c=$(cap "$3"); shift 3
  env COUNT="$count" JSON="$js/$tag.json" W1_DEADLINE="$(deadline $((c - 8)))" "$@" \
    timeout -k 5 "$c" samples/bench/w1.sh "$photos" "$work" "$runs" > "/tmp/$tag.log" 2>&1
  local rc=$?
  { echo "=== w1.sh $tag rc=$rc"; cat "/tmp/$tag.log"; } >> "$log"
  [ $rc -eq 0 ] || sum "W1 $tag: w1.sh exit $rc$([ $rc -ge 124 ] && echo ' (timed out)')$([ $rc -eq 2 ] && echo ' (every config rejected)')"
  return $rc
}

# --- the W1 corpus, once for every part that reads it ---------------------------
corpus_ok=0
for p in w1 epochs w1cmp nvjpeg peers decode; do
  if has $p; then
    section "corpus ($count images)"
    if [ -d "$photos" ]; then
      env CORPUS_ONLY=1 COUNT="$count" MAKE_CORPUS="$run bin/imgpipe_make_corpus" \
        timeout -k 5 "$(cap 150)" samples/bench/w1.sh "$photos" "$work" >> "$log" 2>&1 && corpus_ok=1
      grep "^corpus:" "$log"
    else
      echo "no photos folder $photos" | tee -a "$log"
    fi
    [ $corpus_ok = 1 ] || sum "corpus: FAILED ($corpus not made; see suite.log): w1, w1cmp, nvjpeg, peers and decode skipped"
    break
  fi
done
need_corpus() { [ $corpus_ok = 1 ] || { echo "$1: skipped, no corpus"; return 1; }; }

if has tests && enough tests 30; then
  section tests; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$log"
  (time timeout -k 5 "$(cap "${TESTS_LIMIT_S:-420}")" $run bin/imgpipe_tests) > /tmp/tests.log 2>&1; rc=$?
  cat /tmp/tests.log >> "$log"
  echo "tests rc=$rc"; grep -E "test cases|assertions|ERROR|FATAL|real" /tmp/tests.log | head -30
  # Cases that could not run here print "IMGPIPE-SKIPPED: <case>: <reason>"
  # (tests/common.hpp, skip_unless) and count as passed in doctest's figures.
  skipped=$(grep -c "IMGPIPE-SKIPPED:" /tmp/tests.log)
  grep "IMGPIPE-SKIPPED:" /tmp/tests.log | head -40
  sum "tests: rc=$rc $(grep -E '^\[doctest\] test cases' /tmp/tests.log | tail -1 | tr -s ' ') skipped $skipped"
fi
if has sanitize && enough sanitize 40; then
  section "compute-sanitizer (each tool on the kernel tests and on the memory/transfer tests)"
  k='resize:*,letterbox:*,center_crop:*,fused:*,normalize:*,checksum:*'
  m='memory resource*,pool*,fallback*,staging ring*,memread*,HostBuffer*,host registration*,pipeline: staging*'
  t='pipeline: copy*'  # doctest splits filters at commas
  for spec in ${SANITIZE_SPECS:-"memcheck:kernels:110" "racecheck:kernels:200" "initcheck:kernels:60" \
              "memcheck:memory:80" "racecheck:memory:45" "synccheck:memory:45" "memcheck:transfer:150"}; do
    IFS=: read -r tool set limit <<< "$spec"
    if [ "$(left)" -lt 20 ]; then sum "sanitize $tool $set: skipped (budget)"; continue; fi
    f=$k; [ "$set" = memory ] && f=$m; [ "$set" = transfer ] && f=$t
    sanitize "$tool" "$set" "$f" "$limit"
  done
fi
if has kernels && enough kernels 20; then
  section kernels
  timeout -k 5 "$(cap 120)" $run bin/imgpipe_bench_kernels --json "$js/kernels.json" > /tmp/kernels.log 2>&1
  rc=$?; cat /tmp/kernels.log >> "$log"; tail -20 /tmp/kernels.log
  sum "kernels: rc=$rc (figures in bench.json, table in suite.log)"; merge_json
fi
if has memory && enough memory 20; then
  section bench-memory
  timeout -k 5 "$(cap 120)" $run bin/imgpipe bench-memory --workloads --json "$js/memory.json" > /tmp/memory.log 2>&1
  rc=$?; cat /tmp/memory.log >> "$log"
  sed -n '/host memory kinds/,/^$/p;/workloads:/,$p' /tmp/memory.log | grep -vE "^\s+policy:" | head -40
  sum "memory: rc=$rc (figures in bench.json)"; merge_json
fi

if has w1 && need_corpus w1 && enough w1 40; then
  section "W1 ($count images)"
  # default config: the headline figure
  w1 w1_default "${W1_RUNS:-5}" 90 IMGPIPE="$run bin/imgpipe"
  grep -E "^W1|backend|w1.sh" /tmp/w1_default.log
  grep -E "^W1 imgpipe|^W1 note|w1.sh" /tmp/w1_default.log | sed "$short; s/^W1 imgpipe/W1 default/" >> "$summary" ||
    sum "W1 default: no result (see suite.log)"

  # decode.where variants, interleaved in one w1.sh call; a value the binary
  # rejects (exit 2: unknown key or value) is skipped. One line to change:
  decode_where=${W1_DECODE_WHERE-cpu gpu auto}; decode_key=${W1_DECODE_KEY:-decode.where}
  mkdir -p /tmp/w1cfg; list=""; envs=()
  for v in $decode_where; do
    python3 samples/bench/w1_config.py configs/w1.yaml "$decode_key=$v" > "/tmp/w1cfg/decode_$v.yaml"
    $run bin/imgpipe validate --config "/tmp/w1cfg/decode_$v.yaml" --input "$corpus" > /tmp/validate.log 2>&1; rc=$?
    if [ $rc -eq 0 ]; then
      list="$list where_$v=$run bin/imgpipe"; envs+=("CONFIG_where_$v=/tmp/w1cfg/decode_$v.yaml")
    else
      msg="$decode_key=$v: skipped, config rejected (exit $rc): $(head -1 /tmp/validate.log | sed 's/ (known keys.*//; s/ \[in .*//' | cut -c1-160)"
      echo "$msg" | tee -a "$log"; sum "W1 $msg"
    fi
  done
  if [ -n "$list" ] && enough "W1 decode.where" 30; then
    w1 w1_decode_where "${W1_VARIANT_RUNS:-3}" 100 IMGPIPE_LIST="$list" "${envs[@]}"
    grep -E "^W1|w1.sh" /tmp/w1_decode_where.log
    grep -E "^W1 (where_[a-z]+: median|ratio|note)|w1.sh" /tmp/w1_decode_where.log | sed "$short; s/^W1 /W1 decode.where /" >> "$summary"
  fi

  # transfer modes and placements, interleaved in one w1.sh call
  list=""; envs=()
  # (NAME:KEY=VALUE; NAME: alone is configs/w1.yaml, the reference the ratios are taken to)
  for v in ${W1_VARIANTS-default: resize_gpu:transform.resize.where=gpu normalize_cpu:transform.normalize.where=cpu \
           zero_copy:staging.transfer=zero_copy pageable:staging.memory=pageable pinned:staging.memory=pinned}; do
    name=${v%%:*}; kv=${v#*:}
    python3 samples/bench/w1_config.py configs/w1.yaml $kv > "/tmp/w1cfg/$name.yaml"
    list="$list $name=$run bin/imgpipe"; envs+=("CONFIG_$name=/tmp/w1cfg/$name.yaml")
  done
  if [ -n "$list" ] && enough "W1 variants" 40; then
    w1 w1_variants "${W1_VARIANT_RUNS:-3}" 120 IMGPIPE_LIST="$list" "${envs[@]}"
    grep -E "^W1|transfer |w1.sh" /tmp/w1_variants.log
    grep -E "^W1 [a-z_]+: median|^W1 ratio|^W1 note|w1.sh" /tmp/w1_variants.log | sed "$short; s/^W1 /W1 variant /" >> "$summary"
  fi
  merge_json

  if enough "W1 tables" 20; then  # one run of each with the full report table
    { echo "=== --device cpu"; timeout -k 5 "$(cap 30)" $run bin/imgpipe --config configs/w1.yaml --input "$corpus" --device cpu 2>&1
      echo "=== default"; timeout -k 5 "$(cap 30)" $run bin/imgpipe --config configs/w1.yaml --input "$corpus" 2>&1; } > /tmp/w1_tables.log
    cat /tmp/w1_tables.log >> "$log"; grep -E "^===|^run:|bottleneck" /tmp/w1_tables.log | head -8
  fi
fi

if has epochs && need_corpus epochs && enough epochs 30; then
  section "W1 epochs: one Pipeline, one run per epoch ($count images)"
  if [ -x .gpu/bin/imgpipe_bench_epochs ]; then
    for v in ${EPOCHS_VERIFY:-config}; do
    for g in ${EPOCHS_GPU_BATCH:-config}; do
    for w in ${EPOCHS_WHERE:-auto gpu}; do
    # EPOCHS_OLD=1: bin/imgpipe_bench_epochs_old (the binary before a change) too, the
    # two taking turns EPOCHS_ROUNDS times (tags <where>_old, <where>_r2, <where>_old_r2, ...)
    for r in $(seq "${EPOCHS_ROUNDS:-1}"); do
    for b in "" _old; do
      [ -z "$b" ] || { [ "${EPOCHS_OLD:-0}" = 1 ] && [ -x .gpu/bin/imgpipe_bench_epochs_old ]; } || continue
      tag=$w; gb=""; vf=""; [ "$g" = config ] || { tag=${tag}_g$g; gb="--gpu-batch $g"; }
      [ "$v" = config ] || { tag=${tag}_$v; vf="--verify $v"; }
      tag=$tag$b; [ "$r" = 1 ] || tag=${tag}_r$r
      enough "epochs $tag" 15 || continue
      timeout -k 5 "$(cap 60)" $run bin/imgpipe_bench_epochs$b --config configs/w1.yaml --input "$corpus" \
        --epochs "${EPOCHS:-5}" --where "$w" $gb $vf --json "$js/epochs_$tag.json" > "/tmp/epochs_$tag.log" 2>&1; rc=$?
      { echo "=== epochs $tag rc=$rc"; cat "/tmp/epochs_$tag.log"; } >> "$log"; cat "/tmp/epochs_$tag.log"
      python3 - "$js/epochs_$tag.json" "$tag" "$rc" >> "$summary" <<'PY'
import json, statistics, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"W1 epochs {sys.argv[2]}: no result (rc={sys.argv[3]}, {e!r})"))
ep = d["epochs"]
later = [e["images_per_s"] for e in ep[1:]]
print(f"W1 epochs decode.where {sys.argv[2]}: epoch 1 {ep[0]['images_per_s']:.0f} img/s (engines ready "
      f"{ep[0]['engines_ready_s']:.2f} s in), epochs 2-{len(ep)} median {statistics.median(later) if later else 0:.0f} "
      f"img/s {[round(x) for x in later]}, GPU {ep[-1]['gpu_images']} / CPU {ep[-1]['cpu_images']} images "
      f"in {ep[-1].get('gpu_calls', '?')} engine calls in the last "
      f"(verify {ep[-1].get('verify', '?')}: {ep[-1].get('entropy_checked', 0)} checked, "
      f"{ep[-1].get('entropy_to_cpu', 0)} kept on the CPU); "
      f"process {d['process']['images_per_s_from_main']:.0f} img/s from main()")
PY
    done
    done
    done
    done
    done
    if [ "${EPOCHS_OLD:-0}" = 1 ]; then  # new against old: the median of each round's epochs-2+ median
      python3 - "$js" >> "$summary" <<'PY'
import glob, json, os, re, statistics, sys
per = {}
for f in glob.glob(os.path.join(sys.argv[1], "epochs_*.json")):
    tag = os.path.basename(f)[len("epochs_"):-len(".json")]
    old = "_old" in tag
    key = re.sub(r"_old|_r[0-9]+$", "", tag)
    later = [e["images_per_s"] for e in json.load(open(f)).get("epochs", [])[1:]]
    if later:
        per.setdefault((key, old), []).append(statistics.median(later))
for key in sorted({k for k, _ in per}):
    n, o = per.get((key, False)), per.get((key, True))
    if n and o:
        print(f"W1 epochs new/old {key}: new {statistics.median(n):.0f} img/s {[round(x) for x in n]}, "
              f"old {statistics.median(o):.0f} img/s {[round(x) for x in o]}: "
              f"{statistics.median(n) / statistics.median(o):.3f}")
PY
    fi
    merge_json
  else
    echo "epochs: skipped, no bin/imgpipe_bench_epochs" | tee -a "$log"
  fi
fi

if has w1cmp && need_corpus w1cmp && enough w1cmp 30; then
  section "W1 new against old ($count images, default config)"
  if [ -x .gpu/bin/imgpipe_old ]; then
    w1 w1cmp "${W1CMP_RUNS:-5}" 120 IMGPIPE_LIST="new=$run bin/imgpipe old=$run bin/imgpipe_old"
    grep -E "^W1|w1.sh" /tmp/w1cmp.log
    grep -E "^W1 (new|old): median|^W1 ratio|^W1 note|w1.sh" /tmp/w1cmp.log | sed "$short; s/^W1 /W1cmp /" >> "$summary"
    merge_json
  else
    echo "w1cmp: skipped, .gpu/bin/imgpipe_old is not in the bundle" | tee -a "$log"; sum "W1cmp: skipped (no bin/imgpipe_old)"
  fi
fi

if has nvjpeg && need_corpus nvjpeg && enough nvjpeg 30; then
  section "nvJPEG: declarations and raw batched throughput ($count images)"
  if [ -f tests/gpu/nvjpeg_decl_check.sh ]; then
    timeout -k 5 "$(cap 60)" bash tests/gpu/nvjpeg_decl_check.sh > /tmp/decl.log 2>&1; rc=$?
    { echo "=== nvjpeg_decl_check rc=$rc"; cat /tmp/decl.log; } >> "$log"
    echo "nvjpeg_decl_check rc=$rc"; sum "nvjpeg_decl_check: rc=$rc"
  fi
  # gpu_hybrid (~200 img/s at batch 32) and the one-by-one loop would take
  # minutes over 4096 images; the bar is the hardware backends.
  timeout -k 5 "$(cap 120)" $run bin/imgpipe_bench_nvjpeg --dir "$corpus" --batches 32,128,256 --passes 5 \
    --json "$out/nvjpeg.json" ${NVJPEG_ARGS---backends hardware_device,hardware --no-pipeline both --plain off} > /tmp/nvjpeg.log 2>&1
  rc=$?; { echo "=== imgpipe_bench_nvjpeg rc=$rc"; cat /tmp/nvjpeg.log; } >> "$log"; tail -12 /tmp/nvjpeg.log
  python3 - "$out/nvjpeg.json" "$rc" >> "$summary" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(print(f"nvJPEG raw: no result (rc={sys.argv[2]}, {e!r})"))
rows = {}
for r in d["results"]:  # one line per decoder and flag: every batch size
    key = f"{r['decoder']}" + ("" if r.get("backend") in ("default", "gpu_hybrid") else
                               f" no_pipeline={'on' if r['no_pipeline'] else 'off'}")
    fig = (f"b{r['batch']} {r['img_per_s']:.0f}" + (f" ({r['failed']} failed)" if r["failed"] else "")
           if "img_per_s" in r else f"b{r['batch']} unavailable: {r.get('error')}")
    rows.setdefault(key, []).append(fig)
for key, figs in rows.items():
    print(f"nvJPEG raw {key}: {', '.join(figs)} img/s ({d['files']} files x {d['repeat']}, median of {d['passes']} passes)")
PY
fi

if has peers && need_corpus peers && enough peers 40; then
  section "peers ($count images)"
  c=$(cap 200)
  timeout -k 5 "$c" python3 samples/bench/peers.py "$corpus" --workers "${PEERS_WORKERS:-15}" ${PEERS_SKIP:+--skip "$PEERS_SKIP"} \
    --budget $((c - 10)) --json "$out/peers.json" > /tmp/peers.log 2>&1; rc=$?
  { echo "=== peers.py rc=$rc"; cat /tmp/peers.log; } >> "$log"; tail -18 /tmp/peers.log
  grep -E "^PEER" /tmp/peers.log >> "$summary" || sum "peers: no result (rc=$rc, see suite.log)"
fi

if has decode && need_corpus decode && enough decode 30; then
  section "reduced decode"
  if [ -x .gpu/bin/imgpipe_bench_decode ]; then
    rm -rf /tmp/dec; mkdir -p /tmp/dec && cp "$corpus"/img_000[0-4]*.jpg /tmp/dec/ 2>/dev/null
    timeout -k 5 "$(cap 150)" $run bin/imgpipe_bench_decode --dir /tmp/dec --runs 3 --targets 640x360,320x320,224x224 > /tmp/decode.log 2>&1
    rc=$?; cat /tmp/decode.log >> "$log"; tail -15 /tmp/decode.log; sum "decode: rc=$rc (table in suite.log)"
  fi
fi
if has live && enough live 25; then
  section "live source latency (30 fps pushed, batch 8, batch.timeout_ms 20, the pull API)"
  if [ -x .gpu/bin/imgpipe_bench_live ]; then
    video=""; [ -f .gpu/data/vtest.avi ] && video="--video .gpu/data/vtest.avi"
    timeout -k 5 "$(cap 40)" $run bin/imgpipe_bench_live $video --fps 30 --seconds 10 --batch 8 --timeout-ms 20 \
      --device 0 --json "$js/live.json" > /tmp/live.log 2>&1; rc=$?
    cat /tmp/live.log >> "$log"; cat /tmp/live.log
    grep -E "^latency" /tmp/live.log | sed "s/^/live rc=$rc: /" >> "$summary" || sum "live: rc=$rc, no figures"
    merge_json
  fi
fi
if has soak && enough soak 40; then
  section "soak (GPU 0: pinned staging)"
  if [ -x .gpu/bin/imgpipe_bench_soak ]; then
    timeout -k 5 "$(cap 300)" $run bin/imgpipe_bench_soak --dir samples/data --device 0 --loop 20 --runs 8 \
      --json "$js/soak.json" > /tmp/soak.log 2>&1; rc=$?
    grep -v warning /tmp/soak.log >> "$log"; grep -v warning /tmp/soak.log | tail -14
    sum "soak: rc=$rc (figures in bench.json)"; merge_json
  fi
fi

if has video && enough video 40; then
  section "video tests (frame pool, staging, YUV, NVDEC, video files)"
  command -v ffmpeg > /dev/null || echo "video: no ffmpeg on PATH (carry .gpuff): the cases that make clips fail" | tee -a "$log"
  . samples/bench/ffmpeg_encoders.sh
  for enc in $(missing_encoders ffmpeg); do
    sum "video: ffmpeg cannot encode with $enc (a stubbed library in .gpuff?): the cases that make such clips fail"
  done
  v=${VIDEO_TESTS:-'frame pool*,staging ring*,*YUV*,pipeline: GPU resize*,nvdec*,video*,inputs: videos*,pipeline: video*,gpu decode*'}
  (time timeout -k 5 "$(cap 240)" $run bin/imgpipe_tests -tc="$v") > /tmp/video.log 2>&1; rc=$?
  cat /tmp/video.log >> "$log"
  grep -E "test cases|assertions|ERROR|FATAL|IMGPIPE-SKIPPED|real" /tmp/video.log | head -30
  sum "video tests: rc=$rc $(grep -E '^\[doctest\] test cases' /tmp/video.log | tail -1 | tr -s ' ') skipped $(grep -c 'IMGPIPE-SKIPPED:' /tmp/video.log)"
  enough "video memcheck" 30 && sanitize memcheck video "${VIDEO_MEMCHECK:-frame pool*,*YUV*,nvdec*}" 200
fi
if has w2 && enough w2 60; then
  section "W2 (video files)"
  w2c=${W2_CORPUS:-.w2corpus}
  if [ -f "$w2c/manifest.json" ] && command -v ffmpeg > /dev/null; then
    cfgs=${W2_CONFIGS:-"cpu:input.video.where=cpu cpu_copied:input.video.where=cpu;memory.video_frames_mb=0 default: default_copied:memory.video_frames_mb=0"}
    # W2_OLD=1: the binary before a change (bin/imgpipe_old) beside the new, taking turns (w2.sh IMGPIPE_LIST)
    list=""; [ "${W2_OLD:-0}" = 1 ] && [ -x .gpu/bin/imgpipe_old ] && list="new=$run bin/imgpipe old=$run bin/imgpipe_old"
    env FFMPEG=ffmpeg IMGPIPE="$run bin/imgpipe" IMGPIPE_LIST="$list" IMGPIPE_CONFIGS="$cfgs" PEERS="${W2_PEERS:-ffmpeg_cpu,ffmpeg_cpu_long,ffmpeg_mixed,imgpipe,imgpipe_long}" \
      WORK=/tmp/w2bench OUT="$out" W2_DEADLINE="$(deadline $(( $(cap 420) - 60 )))" \
      timeout -k 5 "$(cap 420)" samples/bench/w2.sh "$w2c" "${W2_RUNS:-3}" > /tmp/w2.log 2>&1; rc=$?
    cat /tmp/w2.log >> "$log"; grep -E "^\|" /tmp/w2.log
    tar czf "$out/w2_reports.tgz" -C /tmp/w2bench reports 2> /dev/null  # one file: a call brings back only so many
    grep -E "^\| " /tmp/w2.log | sed "s/^/W2 rc=$rc /" >> "$summary" || sum "W2: rc=$rc, no table (see suite.log)"
    # Where the time goes on every CPU: the first config's W2 run once more.
    if command -v perf > /dev/null && enough "W2 profile" 40; then
      first=${cfgs%% *}; cfg=/tmp/w2bench/reports/imgpipe_${first%%:*}_w2.yaml
      if [ -f "$cfg" ]; then
        timeout -k 5 "$(cap 60)" perf record -a -g -o /tmp/w2.perf -- \
          $run bin/imgpipe --config "$cfg" --input /tmp/w2bench/w2 --quiet > /tmp/w2perf.log 2>&1
        perf report -i /tmp/w2.perf --no-children --sort dso,sym -g none 2>> /tmp/w2perf.log | grep -v "^#" | head -60 > "$out/w2_profile.txt"
        tail -5 /tmp/w2perf.log | tee -a "$log"
        sum "W2 profile: $out/w2_profile.txt ($(wc -l < "$out/w2_profile.txt") lines)"
      fi
    fi
  else
    echo "w2: skipped: no $w2c/manifest.json (samples/make_videos.sh --parts w2,long) or no ffmpeg" | tee -a "$log"
    sum "W2: skipped (no corpus or no ffmpeg)"
  fi
fi

if has w3 && enough w3 90; then
  section "W3 (a training epoch: ImageNet-like JPEGs, RandomResizedCrop 224 + flip, batches of 256)"
  if [ -d "$photos" ] && [ -x .gpu/bin/imgpipe_make_corpus ] && [ -x .gpu/bin/imgpipe_bench_epochs ]; then
    c=$(cap "${W3_BUDGET_S:-380}")
    lib=""; [ -f .gpu/bin/libimgpipe_c.so ] && lib=$PWD/.gpu/bin/libimgpipe_c.so
    [ -n "$lib" ] || echo "w3: no .gpu/bin/libimgpipe_c.so: the Python Loader and imgpipe's ResNet feeder fail" | tee -a "$log"
    env OUT="$out" MAKE_CORPUS="$run bin/imgpipe_make_corpus" EPOCHS_BIN="$run bin/imgpipe_bench_epochs" PY_RUN="$run" \
      IMGPIPE_C_LIBRARY="$lib" RESNET_S="${W3_RESNET_S:-120}" W3_DEADLINE="$(deadline $((c - 10)))" \
      timeout -k 5 "$c" samples/bench/w3.sh "$photos" /tmp/w3work "${W3_ROUNDS:-2}" > /tmp/w3.log 2>&1; rc=$?
    cat /tmp/w3.log >> "$log"; grep -E "^W3" /tmp/w3.log | tail -40
    if grep -qE "^W3 " "$out/w3_summary.txt" 2> /dev/null; then
      sed "s/^W3 /W3 rc=$rc: /" "$out/w3_summary.txt" >> "$summary"
    else
      sum "W3: rc=$rc$([ $rc -ge 124 ] && echo ' (timed out)'), no summary (see suite.log)"
    fi
  else
    echo "w3: skipped: no photos folder $photos, or bin/imgpipe_make_corpus or bin/imgpipe_bench_epochs not in .gpu" | tee -a "$log"
    sum "W3: skipped (no photos or programs)"
  fi
fi

if has w4 && enough w4 90; then
  section "W4 (clips for training: 16 frames, stride 2, a random clip per video and epoch, batches of 8 clips)"
  if [ -d "$photos" ] && [ -x .gpu/bin/imgpipe_bench_epochs ] && command -v ffmpeg > /dev/null; then
    c=$(cap "${W4_BUDGET_S:-230}")
    # The peers' FFmpeg straight from its bundle (not through /tmp/bin's wrapper: one exec less a clip).
    ff=ffmpeg; [ -x .gpuff/run ] && ff="$PWD/.gpuff/run bin/ffmpeg"
    env OUT="$out" EPOCHS_BIN="$PWD/$run bin/imgpipe_bench_epochs" IMGPIPE="$PWD/$run bin/imgpipe" FFMPEG="$ff" \
      W4_BUDGET_S="$((c - 5))" timeout -k 5 "$c" samples/bench/w4.sh "$photos" /tmp/w4work > /tmp/w4.log 2>&1; rc=$?
    cat /tmp/w4.log >> "$log"; grep -E "^(W4|BAR W4)" /tmp/w4.log | tail -40
    if grep -qE "^(W4|BAR W4) " "$out/w4_summary.txt" 2> /dev/null; then
      sed "s/^W4 /W4 rc=$rc: /" "$out/w4_summary.txt" >> "$summary"
    else
      sum "W4: rc=$rc$([ $rc -ge 124 ] && echo ' (timed out)'), no summary (see suite.log)"
    fi
  else
    echo "w4: skipped: no photos folder $photos, no bin/imgpipe_bench_epochs in .gpu, or no ffmpeg (carry .gpuff)" | tee -a "$log"
    sum "W4: skipped (no photos, programs or ffmpeg)"
  fi
fi

# --- the issue's bars, from this call's figures ------------------------------------
python3 - "$js" "$out" >> "$summary" <<'PY'
import json, os, sys
js, out = sys.argv[1], sys.argv[2]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
w1 = load(os.path.join(js, "w1_default.json"))
dw = load(os.path.join(js, "w1_decode_where.json"))
cmp_ = load(os.path.join(js, "w1cmp.json"))
peers = load(os.path.join(out, "peers.json"))
nv = load(os.path.join(out, "nvjpeg.json"))
def med(d, name):
    b = (d or {}).get("binaries", {}).get(name)
    return (b["images_per_s_median"], b["steady_images_per_s_median"]) if b else None
m = med(w1, "imgpipe")
if m:
    print(f"BAR W1 default {m[0]:.0f} img/s e2e ({m[1]:.0f} after set-up) vs 5000: {'met' if m[0] >= 5000 else 'NOT met'}")
tv = (peers or {}).get("best", {}).get("torchvision")
if m and tv:
    r = m[0] / tv["images_per_s"]
    print(f"BAR W1 default / torchvision best ({tv['images_per_s']:.0f} img/s, decode batch {tv['decode_batch']}): "
          f"{r:.2f} e2e ({m[1] / tv['images_per_s']:.2f} after set-up) vs 1.25: {'met' if r >= 1.25 else 'NOT met'}")
hw = [r for r in (nv or {}).get("results", []) if "img_per_s" in r and r.get("backend") in ("hardware", "hardware_device")]
g = med(dw, "where_gpu")
if hw:
    best = max(hw, key=lambda r: r["img_per_s"])
    if g:
        r = g[0] / best["img_per_s"]
        print(f"BAR decode.where=gpu {g[0]:.0f} img/s e2e ({g[1]:.0f} after set-up) / nvJPEG raw best "
              f"({best['img_per_s']:.0f} img/s, {best['decoder']} batch {best['batch']}): {r:.2f} e2e "
              f"({g[1] / best['img_per_s']:.2f} after set-up) vs 0.9: {'met' if r >= 0.9 else 'NOT met'}")
    else:
        print(f"BAR decode.where=gpu / nvJPEG raw best ({best['img_per_s']:.0f} img/s): no decode.where=gpu figure in this call")
# A kept Pipeline (imgpipe_bench_epochs): epochs 2+, the decoder, ring and buffers made in epoch 1.
# torchvision's figure is also without its warm-up pass (nvJPEG's creation), so this is like for like.
def epochs_median(where):
    d = load(os.path.join(js, f"epochs_{where}.json"))
    later = [e["images_per_s"] for e in (d or {}).get("epochs", [])[1:]]
    return sorted(later)[len(later) // 2] if later else None
ea, eg = epochs_median("auto"), epochs_median("gpu")
if ea:
    print(f"BAR W1 default, kept Pipeline (epochs 2+) {ea:.0f} img/s vs 5000: {'met' if ea >= 5000 else 'NOT met'}")
    if tv:
        r = ea / tv["images_per_s"]
        print(f"BAR W1 default kept / torchvision best (warm, {tv['images_per_s']:.0f} img/s): {r:.2f} vs 1.25: "
              f"{'met' if r >= 1.25 else 'NOT met'}")
if eg and hw:
    best = max(hw, key=lambda r: r["img_per_s"])
    same = [r for r in hw if r["batch"] == 32 and r.get("backend") == "hardware_device" and not r.get("no_pipeline")]
    line = (f"BAR decode.where=gpu, kept Pipeline (epochs 2+) {eg:.0f} img/s / nvJPEG raw best "
            f"({best['img_per_s']:.0f}, batch {best['batch']}): {eg / best['img_per_s']:.2f} vs 0.9: "
            f"{'met' if eg >= 0.9 * best['img_per_s'] else 'NOT met'}")
    if same:
        line += f"; / raw at the pipeline's batch 32, pipelined ({same[0]['img_per_s']:.0f}): {eg / same[0]['img_per_s']:.2f}"
    print(line)
rr = (cmp_ or {}).get("ratios", {}).get("new/old")
if rr:
    r = rr["e2e_ratio_of_medians"]
    print(f"BAR W1 new/old {r:.3f} e2e (per-round median {rr['e2e_median_per_round']:.3f}, after set-up "
          f"{rr['steady_ratio_of_medians']:.3f}) vs 0.95: {'met' if r >= 0.95 else 'NOT met'}")
PY
merge_json
ls "$out" >> "$log"
echo "== summary ($(elapsed) s of the $budget s budget; files in OUT: $(ls "$out" | tr '\n' ' '))"
cat "$summary"
