#!/usr/bin/env python3
"""W1 through Python: imgpipe.torch.Loader against the C++ CLI on the same config and images, and
against the PyTorch DataLoader peer (samples/bench/peers.py at its best settings), medians of img/s.

    python3 samples/python/bench_w1.py CORPUS [--config configs/w1.yaml] [--runs 5]
        [--cli "build/pipeline/imgpipe"] [--epochs-cli "build/samples/imgpipe_bench_epochs"]
        [--workers 15] [--no-peer] [--json out.json]

Cases, each with one untimed warm-up, then --runs timed runs interleaved round by round (page
cache warm: every file is read once first):
  loader_fresh   a new imgpipe.torch.Loader per run (as a fresh process): construction to the
                 final torch.cuda.synchronize(), every batch taken as a torch tensor (from_dlpack)
  cli            the CLI, `--config C --input CORPUS --report -`: the report's images_per_s
                 (its own end-to-end figure, process start-up excluded); loader_fresh's report
                 gives the same figure measured inside Python (report_images_per_s)
  loader_kept    one Loader, epochs 2..runs+1 (a training loop's view; the GPU decoder, ring and
                 buffers made once): each epoch's iteration to the final synchronize
  cpp_kept       imgpipe_bench_epochs (a C++ Pipeline kept from epoch to epoch), epochs 2+, when
                 --epochs-cli is given
  dataloader     the peer: persistent workers, cv2 decode + resize in the workers, u8 pinned,
                 normalised on the GPU (peers.make_loader / loader_pass), --workers workers
Prints one line per case (median, min..max) and the ratios the issue asks about: Python layer
cost = 1 - loader/cli (fresh) and 1 - loader_kept/cpp_kept.
"""
import argparse
import json
import os
import pathlib
import shlex
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def files_of(corpus):
    return sorted(str(p) for p in pathlib.Path(corpus).rglob("*.jpg"))


def warm(files):
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass


def loader_fresh(torch, imgpipe_torch, config, corpus):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loader = imgpipe_torch.Loader(config, inputs=[corpus])
    n = 0
    for x, _ in loader:
        n += x.shape[0]
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    r = loader.report()
    loader.close()
    return {"images": n, "images_per_s": n / dt, "report_images_per_s": r["images_per_s"],
            "setup_s": r["setup_s"], "decode_where": r["decode"]["where"]}


def loader_epoch(torch, loader):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    n = 0
    for x, _ in loader:
        n += x.shape[0]
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"images": n, "images_per_s": n / dt, "report_images_per_s": loader.report()["images_per_s"]}


def cli_run(cli, config, corpus):
    cmd = shlex.split(cli) + ["--config", str(config), "--input", corpus, "--report", "-", "--quiet"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{cli}: exit {out.returncode}: {out.stderr[-2000:]}")
    r = json.loads(out.stdout)
    return {"images": r["inputs"]["delivered"], "images_per_s": r["images_per_s"], "setup_s": r["setup_s"]}


def cpp_kept(epochs_cli, config, corpus, epochs):
    cmd = shlex.split(epochs_cli) + ["--config", str(config), "--input", corpus, "--epochs", str(epochs)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{epochs_cli}: exit {out.returncode}: {out.stderr[-2000:]}")
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    return [r["images_per_s"] for r in rows if "epoch" in r and r["epoch"] >= 2]


def summary(name, values):
    if not values:
        return f"{name:14s} -"
    return (f"{name:14s} {statistics.median(values):8.0f} img/s median "
            f"(min..max {min(values):.0f}..{max(values):.0f}, {len(values)} runs)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--config", default=str(ROOT / "configs" / "w1.yaml"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cli", default=str(ROOT / "build" / "pipeline" / "imgpipe"))
    ap.add_argument("--epochs-cli", default="")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    try:
        import torch
    except ImportError as e:
        sys.exit(f"bench_w1: needs PyTorch with CUDA ({e})")
    if not torch.cuda.is_available():
        sys.exit("bench_w1: torch sees no CUDA device")
    import imgpipe
    import imgpipe.torch as imgpipe_torch

    files = files_of(a.corpus)
    if not files:
        sys.exit(f"bench_w1: no .jpg under {a.corpus}")
    warm(files)
    print(f"bench_w1: {len(files)} images in {a.corpus}, config {a.config}, imgpipe {imgpipe.version()}, "
          f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)

    results = {"loader_fresh": [], "cli": [], "loader_kept": [], "cpp_kept": [], "dataloader": [],
               "loader_fresh_report": []}
    # Warm-ups (untimed): the CLI, a fresh Loader, and the kept Loader's first epoch.
    cli_run(a.cli, a.config, a.corpus)
    loader_fresh(torch, imgpipe_torch, a.config, a.corpus)
    kept = imgpipe_torch.Loader(a.config, inputs=[a.corpus])
    loader_epoch(torch, kept)
    for k in range(a.runs):
        r = loader_fresh(torch, imgpipe_torch, a.config, a.corpus)
        results["loader_fresh"].append(r["images_per_s"])
        results["loader_fresh_report"].append(r["report_images_per_s"])
        results["cli"].append(cli_run(a.cli, a.config, a.corpus)["images_per_s"])
        results["loader_kept"].append(loader_epoch(torch, kept)["images_per_s"])
        print(f"round {k + 1}: loader_fresh {results['loader_fresh'][-1]:.0f}  cli {results['cli'][-1]:.0f}  "
              f"loader_kept {results['loader_kept'][-1]:.0f}", flush=True)
    kept.close()
    if a.epochs_cli:
        results["cpp_kept"] = cpp_kept(a.epochs_cli, a.config, a.corpus, a.runs + 1)

    if not a.no_peer:
        sys.path.insert(0, str(ROOT / "samples" / "bench"))
        import peers  # noqa: E402  (cv2, torch)
        dl = peers.make_loader(files, a.workers, True, False)
        affine = peers.Affine()
        peers.loader_pass(dl, True, False, affine)  # warm-up: worker start
        for _ in range(a.runs):
            n, dt = peers.loader_pass(dl, True, False, affine)
            results["dataloader"].append(n / dt)
        del dl

    print()
    for name in ("loader_fresh", "loader_fresh_report", "cli", "loader_kept", "cpp_kept", "dataloader"):
        print(summary(name, results[name]))
    med = {k: statistics.median(v) for k, v in results.items() if v}
    if "cli" in med:
        print(f"Python layer, fresh: loader_fresh / cli = {med['loader_fresh'] / med['cli']:.3f} "
              f"(cost {100 * (1 - med['loader_fresh'] / med['cli']):.1f}%); report figure inside Python / cli = "
              f"{med['loader_fresh_report'] / med['cli']:.3f}")
    if "cpp_kept" in med:
        print(f"Python layer, kept: loader_kept / cpp_kept = {med['loader_kept'] / med['cpp_kept']:.3f} "
              f"(cost {100 * (1 - med['loader_kept'] / med['cpp_kept']):.1f}%)")
    if "dataloader" in med:
        print(f"loader_kept / dataloader = {med['loader_kept'] / med['dataloader']:.2f}x")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"corpus": a.corpus, "images": len(files), "config": a.config,
                                                    "runs": results, "medians": med}, indent=1))


if __name__ == "__main__":
    main()
