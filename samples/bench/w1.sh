#!/usr/bin/env bash
# W1 benchmark: make the corpus (COUNT distinct 1920x1080 JPEGs, quality 90,
# cut at random scale and offset from real photos), warm the page cache, then
# run imgpipe on configs/w1.yaml: one untimed warm-up run per binary, then
# RUNS timed runs, and print the median images/s end to end (the report's
# images_per_s) and after set-up (steady_images_per_s).
#
#   samples/bench/w1.sh PHOTOS_DIR WORKDIR [RUNS]
#
# Env:
#   COUNT        corpus size (default 4096); the corpus is WORKDIR/w1_COUNT, so
#                corpora of several sizes coexist. Images come in blocks of 512,
#                block b made with --seed b+1: the first 512 of any corpus are
#                the old 512-image corpus (--count 512 --seed 1). Blocks are
#                made in parallel (CORPUS_JOBS, default nproc). CORPUS_BLOCK=N
#                (default 512) changes the block size (folder w1_COUNT_bN);
#                CORPUS_BLOCK=COUNT is one `--count COUNT --seed 1` run.
#   RUNS         timed runs per binary (default 5; the 3rd argument wins)
#   IMGPIPE      command that runs imgpipe (default build/pipeline/imgpipe)
#   IMGPIPE_LIST several binaries, "NAME=COMMAND NAME=COMMAND ...", e.g.
#                IMGPIPE_LIST="new=.gpu/run bin/imgpipe old=.gpu/run bin/imgpipe_old"
#                (a word NAME=... starts the next entry; NAME is [A-Za-z_][A-Za-z0-9_]*).
#                Run interleaved: new, old, new, old, ... after one warm-up of
#                each; prints each median and the ratios first/other (ratio of
#                medians and median of the per-round ratios).
#   CONFIG       config (default configs/w1.yaml); CONFIG_NAME for one entry
#   EXTRA        more imgpipe args for every run; EXTRA_NAME for one entry
#   MAKE_CORPUS  command that runs imgpipe_make_corpus (default build/samples/imgpipe_make_corpus)
#   JSON         write every run's figures here (default WORKDIR/w1_summary.json)
#   W1_DEADLINE  epoch seconds: start no round that would likely end after it
#                (fewer runs rather than a killed call; the output says so)
#   CORPUS_ONLY=1  make the corpus, warm the page cache, print its folder, exit
#
# Exit: 0; 2 every entry's warm-up was rejected with exit 2 (usage or config
# error: an entry so rejected is dropped, the others run); 1 anything else.
set -euo pipefail
photos=$1; work=$2; runs=${3:-${RUNS:-5}}
count=${COUNT:-4096}
make_corpus=${MAKE_CORPUS:-build/samples/imgpipe_make_corpus}
here=$(cd "$(dirname "$0")/../.." && pwd)
config=${CONFIG:-$here/configs/w1.yaml}
block=${CORPUS_BLOCK:-512}
corpus=$work/w1_$count; [ "$block" = 512 ] || corpus=${corpus}_b$block
json=${JSON:-$work/w1_summary.json}
mkdir -p "$work"

# --- corpus: blocks of 512, block b = imgpipe_make_corpus --seed b+1 ----------
last=$(printf 'img_%05d.jpg' $((count - 1)))
if [ ! -f "$corpus/$last" ] || [ "$(find "$corpus" -name '*.jpg' | wc -l)" -ne "$count" ]; then
  tmp=$corpus.tmp.$$
  rm -rf "$tmp"; mkdir -p "$tmp"
  blocks=$(( (count + block - 1) / block )); jobs=${CORPUS_JOBS:-$(nproc)}
  t0=$(date +%s.%N)
  for b in $(seq 0 $((blocks - 1))); do
    n=$(( count - block * b )); [ "$n" -gt "$block" ] && n=$block
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    $make_corpus --from "$photos" --out "$tmp/b$b" --count "$n" --width 1920 --height 1080 --quality 90 \
      --seed $((b + 1)) > "$tmp/b$b.log" 2>&1 &
  done
  wait
  python3 - "$tmp" "$count" "$block" <<'PY'
import os, sys
tmp, count, block = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for g in range(count):  # block b's img_i -> img_(block b + i)
    b, i = divmod(g, block)
    src = os.path.join(tmp, f"b{b}", f"img_{i:05d}.jpg")
    if not os.path.isfile(src):
        log = os.path.join(tmp, f"b{b}.log")
        sys.exit(f"w1.sh: corpus block {b} incomplete ({src} missing): " + (open(log).read()[-2000:] if os.path.exists(log) else ""))
    os.rename(src, os.path.join(tmp, f"img_{g:05d}.jpg"))
for b in range((count + block - 1) // block):
    os.rmdir(os.path.join(tmp, f"b{b}"))
    os.remove(os.path.join(tmp, f"b{b}.log"))
PY
  rm -rf "$corpus"; mv "$tmp" "$corpus"
  echo "corpus: made $count images in $(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$t0") s ($blocks blocks, $jobs at a time)"
fi
warm() { find "$corpus" -name '*.jpg' -print0 | xargs -0 cat > /dev/null; }  # page cache warm
warm
echo "corpus: $corpus: $(find "$corpus" -name '*.jpg' | wc -l) images, $(du -sh "$corpus" | cut -f1)"
if [ "${CORPUS_ONLY:-0}" = 1 ]; then exit 0; fi

# --- the binaries ------------------------------------------------------------
names=(); cmds=()
if [ -n "${IMGPIPE_LIST:-}" ]; then
  set -f
  for tok in $IMGPIPE_LIST; do
    if [[ $tok =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
      names+=("${BASH_REMATCH[1]}"); cmds+=("${BASH_REMATCH[2]}")
    elif [ ${#names[@]} -eq 0 ]; then
      echo "w1.sh: IMGPIPE_LIST must start with NAME=COMMAND" >&2; exit 1
    else
      k=$(( ${#cmds[@]} - 1 )); cmds[k]="${cmds[k]:+${cmds[k]} }$tok"
    fi
  done
  set +f
else
  names=(imgpipe); cmds=("${IMGPIPE:-build/pipeline/imgpipe}")
fi
declare -A seen=()
for n in "${names[@]}"; do
  [ -z "${seen[$n]:-}" ] || { echo "w1.sh: IMGPIPE_LIST names $n twice" >&2; exit 1; }
  seen[$n]=1
done
cfg_of() { local v="CONFIG_$1"; echo "${!v:-$config}"; }
extra_of() { local v="EXTRA_$1"; echo "${!v-${EXTRA:-}}"; }

reports=$(mktemp -d "$work/reports.XXXXXX")
# one run of entry $1; $2: report file or "" (warm-up). Prints nothing; stderr kept in $reports/$1.err.
run_one() {
  local i=$1 rep=$2 name=${names[$1]}
  local args=(--config "$(cfg_of "$name")" --input "$corpus" --quiet)
  [ -n "$rep" ] && args+=(--report "$rep")
  # shellcheck disable=SC2046,SC2086
  ${cmds[$i]} "${args[@]}" $(extra_of "$name") > /dev/null 2> "$reports/$name.err"
}

active=()
for i in "${!names[@]}"; do
  rc=0; run_one "$i" "" || rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "w1.sh: ${names[$i]}: rejected (exit 2), dropped: $(head -c 400 "$reports/${names[$i]}.err")"
  elif [ "$rc" -ne 0 ]; then
    echo "w1.sh: ${names[$i]}: warm-up run failed (exit $rc):" >&2; tail -5 "$reports/${names[$i]}.err" >&2; exit 1
  else
    active+=("$i")
  fi
done
[ ${#active[@]} -gt 0 ] || exit 2
warm
echo "W1 run: ${#active[@]} binar$([ ${#active[@]} -eq 1 ] && echo y || echo "ies, interleaved"), $runs timed run(s) each, $count images"
for i in "${active[@]}"; do echo "  ${names[$i]}: ${cmds[$i]} --config $(cfg_of "${names[$i]}") $(extra_of "${names[$i]}")"; done

failed=0; done_rounds=0; stopped=""
for r in $(seq 1 "$runs"); do
  if [ -n "${W1_DEADLINE:-}" ] && [ "$done_rounds" -gt 0 ]; then
    now=$(date +%s); per=$(( (now - t_first + done_rounds - 1) / done_rounds + 1 ))
    if [ $(( now + per * 12 / 10 )) -gt "$W1_DEADLINE" ]; then
      stopped="stopped after $done_rounds of $runs rounds (deadline; a round takes ~${per} s)"; echo "w1.sh: $stopped"; break
    fi
  fi
  [ "$r" -eq 1 ] && t_first=$(date +%s)
  for i in "${active[@]}"; do
    rc=0; run_one "$i" "$reports/${names[$i]}_run$r.json" || rc=$?
    if [ "$rc" -ne 0 ]; then
      failed=1; echo "w1.sh: ${names[$i]} run $r failed (exit $rc): $(tail -3 "$reports/${names[$i]}.err")" >&2
      rm -f "$reports/${names[$i]}_run$r.json"
    fi
  done
  done_rounds=$r
done

active_names=(); for i in "${active[@]}"; do active_names+=("${names[$i]}"); done
python3 - "$reports" "$json" "$count" "$runs" "$stopped" "${active_names[@]}" <<'PY'
import glob, json, os, re, statistics, sys
reports, out, count, runs, stopped, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6:]
res = {"count": count, "runs_asked": runs, "stopped": stopped or None, "binaries": {}}
per_round = {}
for name in names:
    reps = {}
    for f in glob.glob(os.path.join(reports, f"{name}_run*.json")):
        m = re.search(r"_run(\d+)\.json$", f)
        if m:
            reps[int(m.group(1))] = json.load(open(f))
    if not reps:
        print(f"W1 {name}: no successful run"); continue
    rounds = sorted(reps)
    e2e = [reps[k]["images_per_s"] for k in rounds]
    steady = [reps[k]["steady_images_per_s"] for k in rounds]
    med, smed = statistics.median(e2e), statistics.median(steady)
    i = min(range(len(e2e)), key=lambda k: abs(e2e[k] - med))
    rep = dict(reps[rounds[i]]); rep.pop("batch_records", None); rep.pop("timeline", None)
    per_round[name] = dict(zip(rounds, e2e))
    res["binaries"][name] = {"images_per_s": e2e, "steady_images_per_s": steady, "rounds": rounds,
                             "wall_s": [reps[k]["wall_s"] for k in rounds], "setup_s": [reps[k]["setup_s"] for k in rounds],
                             "images_per_s_median": med, "steady_images_per_s_median": smed, "median_report": rep}
    label = "imgpipe" if names == ["imgpipe"] else name
    print(f"W1 {label}: median {med:.1f} img/s over {len(e2e)} runs {[round(r, 1) for r in e2e]} "
          f"(min..max {min(e2e):.1f}..{max(e2e):.1f}); after set-up {smed:.1f} img/s; set-up {statistics.median(res['binaries'][name]['setup_s']):.3f} s")
    print(f"  backend {rep['backend']}, resize on {rep.get('resize_where')}, normalize on {rep['normalize_where']}, "
          f"bottleneck {rep['bottleneck']}, {rep['inputs']['delivered']} delivered, {rep['inputs']['failed']} failed")
    for s in rep["stages"]:
        # Rates are null where a stage did too little work to rate (imgpipe::rateable).
        rate = "-" if s["items_per_s"] is None else f"{s['items_per_s']:.1f}"
        mbs = "-" if s["mb_per_s"] is None else f"{s['mb_per_s']:.1f}"
        unit = s.get("unit", "items")
        print(f"  {s['name']:10s} {s['items']:6d} {unit:8s} {rate:>10s} {unit}/s  {mbs:>9s} MB/s  util {100*s['utilization']:5.1f}%")
    t = rep["transfer"]
    print(f"  transfer {t['mode']}: {t['bytes']/1e6:.1f} MB at {t['gb_per_s']:.2f} GB/s")
    if rep["inputs"]["delivered"] != count:
        print(f"  WARNING: {rep['inputs']['delivered']} images delivered, corpus has {count}")
got = [n for n in names if n in res["binaries"]]
res["ratios"] = {}
for other in got[1:]:
    a, b = res["binaries"][got[0]], res["binaries"][other]
    common = sorted(set(per_round[got[0]]) & set(per_round[other]))
    paired = [per_round[got[0]][k] / per_round[other][k] for k in common]
    r = {"e2e_ratio_of_medians": a["images_per_s_median"] / b["images_per_s_median"],
         "steady_ratio_of_medians": a["steady_images_per_s_median"] / b["steady_images_per_s_median"],
         "e2e_per_round": paired, "e2e_median_per_round": statistics.median(paired) if paired else None}
    res["ratios"][f"{got[0]}/{other}"] = r
    print(f"W1 ratio {got[0]}/{other}: e2e {r['e2e_ratio_of_medians']:.3f} (per round: median {r['e2e_median_per_round']:.3f}, "
          f"{[round(x, 3) for x in paired]}), after set-up {r['steady_ratio_of_medians']:.3f}")
if stopped:
    print(f"W1 note: {stopped}")
with open(out, "w") as f:
    json.dump(res, f, indent=1)
PY
exit $failed
