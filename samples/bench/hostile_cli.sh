#!/usr/bin/env bash
# The hostile JPEG corpus (tests/hostile_jpegs.hpp, labelled with libjpeg's
# verdicts) through the CLI on every route: decode.where cpu, gpu and auto,
# each with decode.verify full and markers, on the GPU machine (issue 28).
# Prints one line per run and what differs from `cpu`; with full, gpu and
# auto must deliver and report exactly what cpu does, and no file libjpeg
# rejects may be delivered in any mode with full.
#
#   samples/bench/hostile_cli.sh OUT [RUN]   (RUN: the program prefix, default .gpu/run bin/)
set -uo pipefail
out=$1; run=${2:-.gpu/run bin/}
dir=/tmp/hostile_jpegs; cfg=/tmp/hostile_cfg
rm -rf "$dir" "$cfg"; mkdir -p "$cfg"
${run}imgpipe_make_hostile_jpegs "$dir" || exit 1
for w in cpu gpu auto; do
  for v in full markers; do
    python3 samples/bench/w1_config.py configs/pipeline.yaml "decode.where=$w" "decode.verify=$v" \
      "input.extensions=[.jpg]" > "$cfg/${w}_$v.yaml"
    ${run}imgpipe --config "$cfg/${w}_$v.yaml" --input "$dir" --report "$out/hostile_${w}_$v.json" -q
    echo "hostile ${w}_$v: exit $?"
  done
done
python3 - "$dir/labels.tsv" "$out" <<'PY'
import csv, json, os, sys
labels = {r["file"]: r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t")}
def verdicts(name):
    r = json.load(open(os.path.join(sys.argv[2], f"hostile_{name}.json")))
    failed = {os.path.basename(f["path"]): f["reason"] for f in r["inputs"]["failures"]}
    return {f: ("failed" if f in failed else "delivered") for f in labels}, r["decode"]
cpu, _ = verdicts("cpu_full")
bad = 0
for w in ("cpu", "gpu", "auto"):
    for v in ("full", "markers"):
        got, dec = verdicts(f"{w}_{v}")
        differ = sorted(f for f in labels if got[f] != cpu[f])
        rejected_delivered = sorted(f for f in labels if labels[f]["libjpeg"] == "rejected" and got[f] == "delivered")
        print(f"hostile {w} {v}: {sum(x == 'delivered' for x in got.values())} delivered, "
              f"{sum(x == 'failed' for x in got.values())} failed of {len(labels)}; engines {dec.get('gpu', 0)}, "
              f"entropy check {dec.get('entropy_checked', 0)} (to CPU {dec.get('entropy_to_cpu', 0)}); "
              f"differ from cpu: {len(differ)} {differ[:8]}; libjpeg-rejected delivered: {len(rejected_delivered)} "
              f"{rejected_delivered[:8]}")
        if v == "full" and (differ or rejected_delivered):
            bad = 1
print("hostile: " + ("FAIL: full does not match cpu" if bad else "OK: with full every route matches cpu"))
sys.exit(bad)
PY
