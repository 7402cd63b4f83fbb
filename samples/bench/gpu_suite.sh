#!/usr/bin/env bash
# Everything the GPU machine is needed for, in one call: the test suite on the
# CUDA backend, compute-sanitizer on the kernel/memory/transfer tests, the
# kernel and memory benchmarks, W1 in every transfer mode and placement, the
# peers, and the reduced-decode speed-up. Writes logs and JSON to OUT.
#
#   samples/bench/gpu_suite.sh OUT [PHOTOS] [parts...]
# with programs bundled by ../shared/tools/gpu-bundle into .gpu (see README).
# parts: tests sanitize kernels memory w1 peers decode soak (default: all)
set -uo pipefail
out=$1; photos=${2:-.gpu/data/photos}; shift 2 || shift $#
parts=${*:-tests sanitize kernels memory w1 peers decode soak}
run=".gpu/run"
export IMGPIPE_SOURCE_DIR=$PWD IMGPIPE_CLI="$PWD/.gpu/run bin/imgpipe"
has() { [[ " $parts " == *" $1 "* ]]; }
mkdir -p "$out"

if has tests; then
  echo "== tests"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  (time $run bin/imgpipe_tests) > "$out/tests.log" 2>&1; echo "tests rc=$?"
  grep -E "test cases|assertions|ERROR|FATAL|real" "$out/tests.log" | head -30
fi
if has sanitize; then
  echo "== compute-sanitizer (each tool on the kernel tests and on the memory/transfer tests)"
  k='resize:*,letterbox:*,center_crop:*,fused:*,normalize:*,checksum:*'
  m='memory resource*,pool*,fallback*,staging ring*,memread*,HostBuffer*,host registration*,pipeline: staging*'
  t='pipeline: copy*'  # doctest splits filters at commas
  : > "$out/sanitizer.log"
  for spec in ${SANITIZE_SPECS:-"memcheck:kernels:110" "racecheck:kernels:200" "initcheck:kernels:60" \
              "memcheck:memory:80" "racecheck:memory:45" "synccheck:memory:45" "memcheck:transfer:150"}; do
    IFS=: read -r tool set limit <<< "$spec"
    f=$k; [ "$set" = memory ] && f=$m; [ "$set" = transfer ] && f=$t
    extra=""; [ "$tool" = memcheck ] && extra="--leak-check full"
    timeout "$limit" compute-sanitizer --tool "$tool" $extra --error-exitcode 9 $run bin/imgpipe_tests -tc="$f" > /tmp/san.log 2>&1
    rc=$?
    { echo "=== $tool $set rc=$rc"; grep -E "SUMMARY|test cases|Error|error|TEST CASE" /tmp/san.log | head -20; } >> "$out/sanitizer.log"
    echo "$tool $set rc=$rc $(grep -E 'ERROR SUMMARY|test cases' /tmp/san.log | tr '\n' ' ')"
  done
fi
if has kernels; then
  echo "== kernels"; $run bin/imgpipe_bench_kernels --json "$out/bench_kernels.json" 2>&1 | tee "$out/bench_kernels.txt" | tail -20
fi
if has memory; then
  echo "== bench-memory"; $run bin/imgpipe bench-memory --workloads --json "$out/bench_memory.json" > "$out/bench_memory.txt" 2>&1
  sed -n '/host memory kinds/,/^$/p;/workloads:/,$p' "$out/bench_memory.txt" | grep -vE "^\s+policy:" | head -40
fi
if has w1; then
  echo "== W1"
  w=/tmp/w1work
  IMGPIPE="$run bin/imgpipe" MAKE_CORPUS="$run bin/imgpipe_make_corpus" samples/bench/w1.sh "$photos" $w 5 > /tmp/w1_default.log 2>&1
  cat /tmp/w1_default.log >> "$out/w1.log"; grep -E "^W1|backend|transfer" /tmp/w1_default.log
  for v in "resize_gpu:transform.resize.where=gpu" "normalize_cpu:transform.normalize.where=cpu" \
           "zero_copy:staging.transfer=zero_copy" "pageable:staging.transfer=pageable" "pinned:staging.memory=pinned"; do
    name=${v%%:*}; kv=${v#*:}; key=${kv%%=*}; val=${kv#*=}
    python3 - "$key" "$val" > /tmp/w1_$name.yaml <<'PY'
import sys
key, val = sys.argv[1], sys.argv[2]
text = open("configs/w1.yaml").read()
sect, leaf = key.rsplit(".", 1)
if sect == "transform.resize": text = text.replace("interpolation: linear}", f"interpolation: linear, {leaf}: {val}}}")
elif sect == "transform.normalize": text = text.replace("where: auto}", f"where: {val}}}")
elif sect == "staging": text = text.replace("memory: write_combined}", f"memory: write_combined, {leaf}: {val}}}") if leaf != "memory" else text.replace("memory: write_combined", f"memory: {val}")
print(text)
PY
    CONFIG=/tmp/w1_$name.yaml IMGPIPE="$run bin/imgpipe" samples/bench/w1.sh "$photos" $w 3 > /tmp/w1_$name.log 2>&1
    { echo "=== $name"; cat /tmp/w1_$name.log; } >> "$out/w1.log"
    echo "[$name] $(grep -E '^W1' /tmp/w1_$name.log) | $(grep -E 'transfer ' /tmp/w1_$name.log | head -1)"
  done
  $run bin/imgpipe --config configs/w1.yaml --input $w/w1 --device cpu 2>&1 | tee -a "$out/w1.log" | grep -E "^run|bottleneck" | head -3
  $run bin/imgpipe --config configs/w1.yaml --input $w/w1 2>&1 | tee -a "$out/w1.log" | tail -14
fi
if has peers; then
  echo "== peers"; timeout 300 python3 samples/bench/peers.py /tmp/w1work/w1 --json "$out/peers.json" 2>&1 | tail -6
fi
if has decode; then
  echo "== reduced decode"
  if [ -x .gpu/bin/imgpipe_bench_decode ]; then
    mkdir -p /tmp/dec && cp /tmp/w1work/w1/img_000[0-4]*.jpg /tmp/dec/ 2>/dev/null
    timeout 200 $run bin/imgpipe_bench_decode --dir /tmp/dec --runs 3 --targets 640x360,320x320,224x224 2>&1 | tee "$out/bench_decode.txt" | tail -15
  fi
fi
if has soak; then
  echo "== soak (GPU 0: pinned staging)"
  if [ -x .gpu/bin/imgpipe_bench_soak ]; then
    timeout 300 $run bin/imgpipe_bench_soak --dir samples/data --device 0 --loop 20 --runs 8 \
      --json "$out/soak.json" 2>&1 | grep -v warning | tee "$out/soak.txt" | tail -14
  fi
fi
