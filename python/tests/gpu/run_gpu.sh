#!/usr/bin/env bash
# The Python package on the GPU machine, in one call, from the repository root
# with programs bundled by ../shared/tools/gpu-bundle into .gpu (the C API's
# library among them: gpu-bundle takes a .so like a program and puts it in
# .gpu/bin with its libraries in .gpu/lib). Here, with the CUDA build:
#
#   cmake --preset h200 && cmake --build build-h200 -j2 --target imgpipe_python imgpipe \
#       imgpipe_bench_epochs imgpipe_make_corpus
#   ../shared/tools/gpu-bundle --xz --data /usr/share/backgrounds/mate/nature --out .gpu \
#       build-h200/python/imgpipe/libimgpipe_c.so build-h200/pipeline/imgpipe \
#       build-h200/samples/imgpipe_bench_epochs build-h200/samples/imgpipe_make_corpus
#
# then there (carry [".gpu.txz"]):  tar xJf .gpu.txz && python/tests/gpu/run_gpu.sh [PARTS...]
#   parts: checks sanitize bench (default: all). Env: PYTHON (python3), PHOTOS
#   (.gpu/data/nature), W1_COUNT (4096), BENCH_RUNS (5), PEERS_WORKERS (15).
# The package is the source tree's (PYTHONPATH=python); IMGPIPE_C_LIBRARY names
# the bundled library.
set -uo pipefail
parts=${*:-checks sanitize bench}
has() { [[ " $parts " == *" $1 "* ]]; }
run=.gpu/run
py=${PYTHON:-python3}
export IMGPIPE_C_LIBRARY=$PWD/.gpu/bin/libimgpipe_c.so PYTHONPATH=$PWD/python IMGPIPE_SOURCE_DIR=$PWD
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
rc=0

if has checks; then
  echo "== GPU checks (python/tests/gpu/gpu_checks.py)"
  $run "$py" python/tests/gpu/gpu_checks.py || rc=1
fi

if has sanitize; then
  # The consumer on another torch stream, its reads delayed: no race between
  # the batch's copy/kernels, the consumer's reads and the slot's reuse.
  cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
  for tool in racecheck synccheck memcheck; do
    echo "== compute-sanitizer --tool $tool: gpu_checks.py -k another_stream"
    timeout -k 5 300 $run "$cs" --tool "$tool" --error-exitcode 99 "$py" python/tests/gpu/gpu_checks.py \
      -k another_stream || { echo "compute-sanitizer $tool: exit $?"; rc=1; }
  done
fi

if has bench; then
  photos=${PHOTOS:-.gpu/data/nature}
  count=${W1_COUNT:-4096}
  echo "== W1 corpus ($count images from $photos)"
  env CORPUS_ONLY=1 COUNT="$count" MAKE_CORPUS="$run bin/imgpipe_make_corpus" \
    samples/bench/w1.sh "$photos" /tmp/w1work | grep "^corpus:" || { echo "no corpus"; exit 1; }
  echo "== W1: imgpipe.torch.Loader vs the CLI vs the DataLoader peer"
  $run "$py" samples/python/bench_w1.py "/tmp/w1work/w1_$count" --runs "${BENCH_RUNS:-5}" \
    --cli "$run bin/imgpipe" --epochs-cli "$run bin/imgpipe_bench_epochs" --workers "${PEERS_WORKERS:-15}" \
    --json /tmp/bench_w1_python.json || rc=1
  if [ -n "${OUT:-}" ]; then cp /tmp/bench_w1_python.json "$OUT/" 2>/dev/null || true; fi
fi
exit $rc
