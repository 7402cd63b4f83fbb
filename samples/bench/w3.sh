#!/usr/bin/env bash
# W3 benchmark: a training epoch (docs/benchmarks.md, "W3"). Makes the corpus
# (W3_COUNT JPEGs of ImageNet's sizes, about 500x375 on average, quality 90,
# in W3_CLASSES class folders, cut from real photos by imgpipe_make_corpus
# --sizes imagenet), warms the page cache, then, taking turns, on the GPU:
#   imgpipe   imgpipe_bench_epochs on configs/w3.yaml (RandomResizedCrop 224,
#             flip 0.5, ImageNet normalise, NCHW float32 batches of 256, a new
#             order, crops and flips every epoch: one kept Pipeline, set_epoch
#             before each run), 1 warm-up epoch + W3_EPOCHS timed ones per
#             process; the same with REGION_KEY=false (region decode off; a
#             binary that rejects the key is noted and that run left out).
#             ROUNDS processes of each, the configs taking turns; the first
#             round before the peers, the others after them.
#   peers     samples/bench/w3_peers.py: torchvision ImageFolder + DataLoader
#             (PIL and cv2, uint8 normalised on the GPU or float32 on the CPU,
#             prefetch factors) and torchvision's GPU path (decode_jpeg on
#             nvJPEG, crops and resizes on the GPU), each at its best
#   loader    imgpipe.torch.Loader over the same config, kept, set_epoch
#   resnet    samples/python/train_resnet.py: ResNet-50 training fed by
#             synthetic batches (the ceiling), the best DataLoader and imgpipe
# Every figure is a median of epochs after a warm-up epoch. Writes
# OUT/w3.json (every run) and OUT/w3_summary.txt (the lines starting "W3",
# also printed last).
#
#   samples/bench/w3.sh PHOTOS WORK [ROUNDS]
#
# Env (defaults):
#   OUT            where w3.json and w3_summary.txt go (WORK)
#   W3_COUNT       images (8192); W3_CLASSES class folders (100); the corpus is
#                  WORK/w3_COUNT_cCLASSES, made once and kept
#   W3_EPOCHS      timed epochs per imgpipe process, after its warm-up (4)
#   ROUNDS         imgpipe processes per config (2; the 3rd argument wins)
#   W3_PARTS       "imgpipe peers loader resnet" (any of them)
#   W3_DEADLINE    epoch seconds: nothing runs past it; a step that would is
#                  shortened (fewer epochs, steps or peer cases) or skipped,
#                  and the summary says so
#   RESNET_S       seconds kept for the ResNet part at the end (120)
#   PEERS_S        at most this long for the peers (150)
#   RESNET_ARGS    more train_resnet.py arguments (e.g. "--amp fp16")
#   PEERS_ARGS     more w3_peers.py arguments (e.g. "--workers 16,15")
#   MAKE_CORPUS    command of imgpipe_make_corpus (build/samples/imgpipe_make_corpus)
#   EPOCHS_BIN     command of imgpipe_bench_epochs (build/samples/imgpipe_bench_epochs)
#   PYTHON         python3 with torch, torchvision, PIL, cv2 (python3)
#   PY_RUN         prefix for the Python processes that load libimgpipe_c.so
#                  (e.g. ".gpu/run": the bundle's libraries); the peers and
#                  the DataLoader's training run without it
#   IMGPIPE_C_LIBRARY  the C library the Python package loads; when set the
#                  package is the source tree's (python/), else build/python
#   REGION_KEY     the region-decode key (decode.region); two levels only
#   RESNET_A_FEEDERS  the first training process's feeders (synthetic,dataloader)
#   CORPUS_JOBS    corpus blocks made at once (nproc)
# Exit: 0; 1 a part failed (the summary says which); 2 usage.
set -uo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 2; fi
photos=$1; work=$2; rounds=${3:-${ROUNDS:-2}}
here=$(cd "$(dirname "$0")/../.." && pwd)
count=${W3_COUNT:-8192}; classes=${W3_CLASSES:-100}; epochs=${W3_EPOCHS:-4}
parts=${W3_PARTS:-imgpipe peers loader resnet}
out=${OUT:-$work}
make_corpus=${MAKE_CORPUS:-$here/build/samples/imgpipe_make_corpus}
epochs_bin=${EPOCHS_BIN:-$here/build/samples/imgpipe_bench_epochs}
python=${PYTHON:-python3}
py_run=${PY_RUN:-}
region_key=${REGION_KEY:-decode.region}
resnet_s=${RESNET_S:-120}
deadline=${W3_DEADLINE:-$(( $(date +%s) + 100000 ))}
if [ -n "${IMGPIPE_C_LIBRARY:-}" ]; then imgpipe_pp=$here/python; else imgpipe_pp=$here/build/python; fi
has() { [[ " $parts " == *" $1 "* ]]; }
mkdir -p "$work" "$out" || exit 2
corpus=$work/w3_${count}_c$classes
runs=$work/runs; rm -rf "$runs"; mkdir -p "$runs"
summary=$out/w3_summary.txt; : > "$summary"
note() { echo "W3 note: $*" | tee -a "$summary"; }
left() { echo $(( deadline - $(date +%s) )); }
# cap SECONDS [RESERVE]: seconds a step may take: SECONDS, or what is left
# before the deadline less RESERVE (default 0), at least 1
cap() { local l=$(( $(left) - ${2:-0} )); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
failed=0
t0=$(date +%s)

# --- the corpus: blocks of 512 made at once, block b with --seed b+1 --------------
last_class=$(( classes - 1 )); digits=${#last_class}  # imgpipe_make_corpus: class_NN, as many digits as K-1
stamp="sizes=imagenet count=$count classes=$classes quality=90 blocks=512"
if [ "$(cat "$corpus/.w3corpus" 2> /dev/null)" != "$stamp" ] || \
   [ "$(find "$corpus" -name '*.jpg' 2> /dev/null | wc -l)" -ne "$count" ]; then
  tmp=$corpus.tmp.$$; rm -rf "$tmp"; mkdir -p "$tmp"
  for k in $(seq 0 $(( classes - 1 ))); do mkdir -p "$tmp/$(printf "class_%0${digits}d" "$k")"; done
  blocks=$(( (count + 511) / 512 )); jobs=${CORPUS_JOBS:-$(nproc)}; tc=$(date +%s)
  for b in $(seq 0 $(( blocks - 1 ))); do
    n=$(( count - 512 * b )); [ "$n" -gt 512 ] && n=512
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    # shellcheck disable=SC2086  # MAKE_CORPUS may be several words
    timeout -k 5 "$(cap 300)" $make_corpus --from "$photos" --out "$tmp" --count "$n" --first $(( 512 * b )) \
      --seed $(( b + 1 )) --sizes imagenet --classes "$classes" --quality 90 > "$tmp/b$b.log" 2>&1 &
  done
  wait
  made=$(find "$tmp" -name '*.jpg' | wc -l)
  if [ "$made" -ne "$count" ]; then
    echo "W3 corpus: FAILED, $made of $count images made (block logs below)" | tee -a "$summary"
    tail -n 3 "$tmp"/b*.log | head -40
    exit 1
  fi
  # The corpus's mean size and file size, from the blocks' own lines
  # ("wrote N images to DIR (mean WxH, K kB a file, ...)"), weighted by N.
  cat "$tmp"/b*.log | sed -n 's/^wrote \([0-9]*\) images .*(mean \([0-9]*\)x\([0-9]*\), \([0-9.]*\) kB a file.*/\1 \2 \3 \4/p' |
    awk '{n += $1; w += $1 * $2; h += $1 * $3; k += $1 * $4} END {if (n) printf "%d %.0f %.0f %.1f\n", n, w / n, h / n, k / n}' > "$tmp/.sizes"
  rm -f "$tmp"/b*.log
  echo "$stamp" > "$tmp/.w3corpus"
  rm -rf "$corpus"; mv "$tmp" "$corpus"
  echo "W3 corpus: made $count images in $(( $(date +%s) - tc )) s ($blocks blocks, $jobs at a time)"
fi
find "$corpus" -name '*.jpg' -print0 | xargs -0 cat > /dev/null  # the page cache warm
read -r _ mean_w mean_h mean_kb < "$corpus/.sizes" 2> /dev/null || { mean_w="?"; mean_h="?"; mean_kb="?"; }
echo "W3 corpus: $corpus: $count JPEGs in $classes class folders, mean ${mean_w}x${mean_h}, ${mean_kb} kB a file, $(du -sh "$corpus" | cut -f1); $(nproc) CPUs" | tee -a "$summary"

# --- imgpipe: one kept Pipeline a process, the configs taking turns ----------------
section=${region_key%%.*}; leaf=${region_key#*.}
cp "$here/configs/w3.yaml" "$runs/w3_default.yaml"
sed "/^$section:/a\\  $leaf: false" "$here/configs/w3.yaml" > "$runs/w3_region_off.yaml"
grep -q "^  $leaf: false" "$runs/w3_region_off.yaml" || note "cannot add $region_key to configs/w3.yaml (no '$section:' section): region off left out"
configs="default region_off"; grep -q "^  $leaf: false" "$runs/w3_region_off.yaml" || configs=default
declare -A per_run=()  # seconds a process of each config took
imgpipe_round() {  # imgpipe_round R: one process of each config still in play
  local r=$1 c rc t est
  for c in $configs; do
    est=${per_run[$c]:-$(( count * (epochs + 1) / 2000 + 10 ))}
    if [ "$(left)" -lt $(( est + ${2:-0} )) ]; then
      note "imgpipe $c round $r: skipped ($(left) s left, a run takes ~$est s)"; continue
    fi
    t=$(date +%s)
    # shellcheck disable=SC2086  # EPOCHS_BIN may be several words
    timeout -k 5 "$(cap $(( est * 3 + 20 )) "${2:-0}")" $epochs_bin --config "$runs/w3_$c.yaml" --input "$corpus" \
      --epochs $(( epochs + 1 )) --json "$runs/epochs_${c}_r$r.json" > "$runs/epochs_${c}_r$r.log" 2>&1
    rc=$?; per_run[$c]=$(( $(date +%s) - t + 1 ))
    echo "=== imgpipe_bench_epochs $c round $r: exit $rc, $(( $(date +%s) - t )) s"; cat "$runs/epochs_${c}_r$r.log"
    if [ $rc -ne 0 ]; then
      rm -f "$runs/epochs_${c}_r$r.json"
      if [ "$c" = region_off ] && grep -q "unknown key" "$runs/epochs_${c}_r$r.log"; then
        note "$region_key=false: rejected by this imgpipe ($(sed -n "s/.*\(config key '[^']*'\).*unknown key.*/\1: unknown key/p" "$runs/epochs_${c}_r$r.log" | head -1)); the region-off runs are left out"
        configs=default
      else
        note "imgpipe $c round $r: exit $rc: $(tail -c 300 "$runs/epochs_${c}_r$r.log" | tr '\n' ' ')"; failed=1
      fi
    fi
  done
}
# Kept for what comes after the first round: the peers, the other rounds, the Loader, ResNet.
reserve_after_r1() { local s=0; has resnet && s=$resnet_s; has loader && s=$(( s + 40 )); echo $(( s + (rounds - 1) * 30 )); }
if has imgpipe; then imgpipe_round 1 "$(reserve_after_r1)"; fi

# --- the peers ------------------------------------------------------------------
if has peers; then
  reserve=0; has resnet && reserve=$resnet_s; has loader && reserve=$(( reserve + 40 ))
  has imgpipe && [ "$rounds" -gt 1 ] && reserve=$(( reserve + (rounds - 1) * 30 ))
  budget=$(cap "${PEERS_S:-150}" "$reserve")
  if [ "$budget" -lt 30 ]; then
    note "peers: skipped ($(left) s left, $reserve s kept for the parts after them)"
  else
    echo "=== w3_peers.py, budget $budget s"
    # shellcheck disable=SC2086  # PEERS_ARGS: several arguments
    timeout -k 5 $(( budget + 15 )) "$python" "$here/samples/bench/w3_peers.py" "$corpus" --budget "$budget" \
      --epochs 3 --json "$runs/peers.json" ${PEERS_ARGS:-} 2>&1 | tee "$runs/peers.log"
    rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { note "peers: w3_peers.py exit $rc"; failed=1; }
  fi
fi

# --- imgpipe again: the other rounds ----------------------------------------------
if has imgpipe; then
  for r in $(seq 2 "$rounds"); do
    reserve=0; has resnet && reserve=$resnet_s; has loader && reserve=$(( reserve + 40 ))
    imgpipe_round "$r" "$reserve"
  done
fi

# --- imgpipe's Python Loader ---------------------------------------------------------
if has loader; then
  reserve=0; has resnet && reserve=$resnet_s
  budget=$(cap 60 "$reserve")
  if [ "$budget" -lt 20 ]; then
    note "loader: skipped ($(left) s left)"
  else
    echo "=== imgpipe.torch.Loader (w3_peers.py --cases imgpipe), budget $budget s"
    # shellcheck disable=SC2086  # PY_RUN may be several words or none
    env PYTHONPATH="$imgpipe_pp${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 $(( budget + 15 )) $py_run "$python" \
      "$here/samples/bench/w3_peers.py" "$corpus" --cases imgpipe --epochs "$epochs" --budget "$budget" \
      --json "$runs/loader.json" 2>&1 | tee "$runs/loader.log"
    rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { note "loader: exit $rc: $(tail -n 1 "$runs/loader.log" | cut -c1-300)"; failed=1; }
  fi
fi

# --- ResNet-50 training, each feeder for a bounded time -----------------------------------
if has resnet; then
  total=$(cap "$resnet_s" 5)
  # Two processes: synthetic and the DataLoader (no bundle), then imgpipe (PY_RUN).
  # Each pays its start (imports, CUDA, the model, cuDNN's autotuning in the
  # warm-up steps), ~25 s; the timed steps share the rest.
  per=$(( (total - 3 * 25) / 3 )); [ "$per" -gt 60 ] && per=60
  if [ "$per" -lt 8 ]; then
    note "resnet: skipped ($(left) s left; needs ~100 s)"
  else
    dl_from=(); [ -f "$runs/peers.json" ] && dl_from=(--dl-from "$runs/peers.json")
    echo "=== train_resnet.py synthetic,dataloader (each feeder at most $per s timed)"
    # shellcheck disable=SC2086  # RESNET_ARGS: several arguments
    timeout -k 5 "$(cap $(( 2 * per + 60 )) 5)" "$python" "$here/samples/python/train_resnet.py" "$corpus" \
      --feeders "${RESNET_A_FEEDERS:-synthetic,dataloader}" --seconds "$per" "${dl_from[@]}" --json "$runs/resnet.json" ${RESNET_ARGS:-} 2>&1 |
      tee "$runs/resnet_a.log"
    rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { note "resnet synthetic,dataloader: exit $rc: $(tail -n 1 "$runs/resnet_a.log" | cut -c1-300)"; failed=1; }
    echo "=== train_resnet.py imgpipe (at most $per s timed)"
    # shellcheck disable=SC2086
    env PYTHONPATH="$imgpipe_pp${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 "$(cap $(( per + 40 )) 2)" $py_run "$python" \
      "$here/samples/python/train_resnet.py" "$corpus" --feeders imgpipe --seconds "$per" --json "$runs/resnet.json" \
      --json-merge ${RESNET_ARGS:-} 2>&1 | tee "$runs/resnet_b.log"
    rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { note "resnet imgpipe: exit $rc: $(tail -n 1 "$runs/resnet_b.log" | cut -c1-300)"; failed=1; }
  fi
fi

# --- the summary ------------------------------------------------------------------------
if ! "$python" - "$runs" "$out" "$count" "$classes" "$mean_w" "$mean_h" "$mean_kb" "$epochs" "$region_key" \
  "$(( $(date +%s) - t0 ))" >> "$summary" <<'PY'
import glob, json, os, re, statistics, sys
runs, out, count, classes, mw, mh, mkb, epochs, region_key, took = sys.argv[1:11]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
res = {"corpus": {"images": int(count), "classes": int(classes), "mean_size": f"{mw}x{mh}", "mean_kb": mkb,
                  "sizes": "imgpipe_make_corpus --sizes imagenet --quality 90"},
       "took_s": int(took), "imgpipe": {}, "peers": load(os.path.join(runs, "peers.json")),
       "loader": load(os.path.join(runs, "loader.json")), "resnet": load(os.path.join(runs, "resnet.json"))}
med = statistics.median
# imgpipe_bench_epochs: epoch 1 of each process is its warm-up
for f in sorted(glob.glob(os.path.join(runs, "epochs_*_r*.json"))):
    m = re.match(r"epochs_(.+)_r(\d+)\.json$", os.path.basename(f))
    d = load(f)
    if not (m and d):
        continue
    e = res["imgpipe"].setdefault(m.group(1), {"processes": []})
    e["processes"].append({"round": int(m.group(2)), **d})
for name, e in res["imgpipe"].items():
    timed = [x["images_per_s"] for p in e["processes"] for x in p["epochs"][1:]]
    e["timed_epochs_images_per_s"] = timed
    e["images_per_s"] = med(timed) if timed else None
    e["per_process_median"] = {p["round"]: med([x["images_per_s"] for x in p["epochs"][1:]])
                               for p in e["processes"] if len(p["epochs"]) > 1}
    last = e["processes"][-1]["epochs"][-1]
    if e["images_per_s"]:
        print(f"W3 imgpipe {name}: {e['images_per_s']:.0f} img/s, median of {len(timed)} epochs after each process's "
              f"warm-up epoch {[round(x) for x in timed]} ({len(e['processes'])} processes; last epoch "
              f"GPU {last.get('gpu_images')} / CPU {last.get('cpu_images')} images, {last.get('images')} delivered, "
              f"{last.get('failed')} failed, {last.get('classes', '?')} classes)")
dflt = res["imgpipe"].get("default", {}).get("images_per_s")
off = res["imgpipe"].get("region_off", {}).get("images_per_s")
if dflt and off:
    pr = res["imgpipe"]["default"]["per_process_median"]; po = res["imgpipe"]["region_off"]["per_process_median"]
    paired = [pr[r] / po[r] for r in sorted(set(pr) & set(po))]
    res["region_gain"] = {"on/off": dflt / off, "per_round": paired}
    print(f"W3 region decode: {region_key} on (default) / off = {dflt / off:.3f} ({dflt:.0f} / {off:.0f} img/s; "
          f"per round {[round(x, 3) for x in paired]})")
peers = res["peers"] or {}
for name, c in (peers.get("cases") or {}).items():
    if c.get("images_per_s"):
        print(f"W3 peer {name}: {c['images_per_s']:.0f} img/s, epochs {[round(x) for x in c['images_per_s_epochs']]}"
              + (f" ({c['stopped']})" if c.get("stopped") else ""))
    elif c.get("error"):
        print(f"W3 peer {name}: failed: {c['error'][:200]}")
for msg in peers.get("skipped", []):
    print(f"W3 peer skipped: {msg}")
lo = ((res["loader"] or {}).get("cases") or {}).get("imgpipe_loader")
if lo and lo.get("images_per_s"):
    print(f"W3 imgpipe.torch.Loader (kept, set_epoch): {lo['images_per_s']:.0f} img/s, epochs "
          f"{[round(x) for x in lo['images_per_s_epochs']]}"
          + (f"; / C++ kept {lo['images_per_s'] / dflt:.3f}" if dflt else ""))
elif lo and lo.get("error"):
    print(f"W3 imgpipe.torch.Loader: failed: {lo['error'][:200]}")
best_dl = (peers.get("best") or {}).get("dataloader")
best_tv = (peers.get("best") or {}).get("torchvision")
if dflt and best_dl:
    print(f"W3 ratio imgpipe / best DataLoader ({best_dl['case']}, {best_dl['images_per_s']:.0f} img/s): "
          f"{dflt / best_dl['images_per_s']:.2f}")
if dflt and best_tv:
    print(f"W3 ratio imgpipe / torchvision GPU ({best_tv['case']}, {best_tv['images_per_s']:.0f} img/s): "
          f"{dflt / best_tv['images_per_s']:.2f}")
rn = res["resnet"] or {}
for f, r in (rn.get("feeders") or {}).items():
    if r.get("images_per_s"):
        extra = f", DataLoader {r['dataloader'].get('from')}" if r.get("dataloader") else ""
        print(f"W3 resnet50 {f}: {r['images_per_s']:.0f} img/s of training ({r['steps']} steps of "
              f"{rn['settings']['batch']}, {r['seconds']:.1f} s, waited {r['host_wait_s']:.2f} s for batches{extra})")
    elif r.get("error"):
        print(f"W3 resnet50 {f}: failed: {r['error'][:200]}")
for k, v in (rn.get("ratios") or {}).items():
    print(f"W3 resnet50 ratio {k}: {v:.3f}")
print(f"W3 took {took} s")
with open(os.path.join(out, "w3.json"), "w") as fh:
    json.dump(res, fh, indent=1)
PY
then
  echo "W3 summary: failed (see above)"; failed=1
fi
echo "== W3 summary ($out/w3_summary.txt, $out/w3.json)"
cat "$summary"
exit $failed
