#!/usr/bin/env bash
# W1 benchmark: make the corpus (512 distinct 1920x1080 JPEGs, quality 90, cut
# at random scale and offset from real photos), warm the page cache, then run
# imgpipe on configs/w1.yaml RUNS times and print the median images/s.
#
#   samples/bench/w1.sh PHOTOS_DIR WORKDIR [RUNS]
# Env: IMGPIPE (command to run imgpipe, default build/pipeline/imgpipe),
#      CONFIG (default configs/w1.yaml), MAKE_CORPUS (default build/samples/imgpipe_make_corpus), EXTRA (more imgpipe args).
set -euo pipefail
photos=$1; work=$2; runs=${3:-5}
imgpipe=${IMGPIPE:-build/pipeline/imgpipe}
make_corpus=${MAKE_CORPUS:-build/samples/imgpipe_make_corpus}
here=$(cd "$(dirname "$0")/../.." && pwd)
config=${CONFIG:-$here/configs/w1.yaml}
mkdir -p "$work"
if [ ! -f "$work/w1/img_00511.jpg" ]; then
  $make_corpus --from "$photos" --out "$work/w1" --count 512 --width 1920 --height 1080 --quality 90 --seed 1
fi
cat "$work"/w1/*.jpg > /dev/null   # page cache warm
echo "corpus: $(ls "$work/w1" | wc -l) images, $(du -sh "$work/w1" | cut -f1)"
$imgpipe --config "$config" --input "$work/w1" --quiet ${EXTRA:-} >/dev/null  # warm-up run
rates=()
for i in $(seq 1 "$runs"); do
  $imgpipe --config "$config" --input "$work/w1" --quiet --report "$work/w1_run$i.json" ${EXTRA:-}
  r=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['images_per_s'])" "$work/w1_run$i.json")
  rates+=("$r")
done
python3 - "$work" "${rates[@]}" <<'PY'
import json, statistics, sys
work, rates = sys.argv[1], [float(x) for x in sys.argv[2:]]
med = statistics.median(rates)
i = min(range(len(rates)), key=lambda k: abs(rates[k] - med))
rep = json.load(open(f"{work}/w1_run{i+1}.json"))
print(f"W1 imgpipe: median {med:.1f} img/s over {len(rates)} runs {[round(r,1) for r in rates]}")
print(f"  backend {rep['backend']}, normalize on {rep['normalize_where']}, bottleneck {rep['bottleneck']}")
for s in rep["stages"]:
    print(f"  {s['name']:10s} items {s['items']:6d}  {s['items_per_s']:10.1f} items/s  {s['mb_per_s']:9.1f} MB/s  util {100*s['utilization']:5.1f}%")
t = rep["transfer"]
print(f"  transfer {t['mode']}: {t['bytes']/1e6:.1f} MB at {t['gb_per_s']:.2f} GB/s; inputs {rep['inputs']['delivered']} delivered, {rep['inputs']['failed']} failed")
PY
