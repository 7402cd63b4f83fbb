#!/usr/bin/env python3
"""W4 peers (samples/bench/w4.sh runs them): clips for training, what a user would run instead of
imgpipe, each at its best settings.

  python3 samples/bench/w4_peers.py CORPUS [--cases auto | CASE,CASE,...] [--budget SECONDS]
      [--json out.json] [--workers 16] [--prefetch 2] [--batch 8] [--length 16] [--stride 2]
      [--size 224] [--ffmpeg CMD] [--ffmpeg-s 15] [--device cuda]

CORPUS: samples/make_videos.sh --parts w4's folder (manifest.json: each w4 video's path and the
frames it was encoded with). Every case takes, per video and epoch, one clip of --length frames
--stride apart (a span of (length - 1) x stride + 1 frames) whose first frame is drawn uniformly
from [0, frames - span], as imgpipe's `input.video.clips` {place: random} does; the DataLoader cases
deliver what imgpipe's W4 config delivers: each frame's short side scaled to --size and the centre
--size x --size cut (done as the centre square of the frame resized, cv2.resize INTER_LINEAR: the
same pixels as resize-then-crop, less work), RGB, (x/255 - mean)/std with ImageNet's mean/std,
float32 N x C x T x H x W batches of --batch clips on the GPU (the videos in a new random order
every epoch, as a DataLoader with shuffle=True).

Cases:
  dl_cv2      torch DataLoader (map-style Dataset of the videos, shuffle, --workers persistent
              workers, pin_memory, prefetch --prefetch); each sample: cv2.VideoCapture(path),
              set(CAP_PROP_POS_FRAMES, start), then the span's frames, read() for the kept ones and
              grab() (decode, no BGR conversion) for those the stride passes over, each kept frame
              cropped and resized in the worker; cv2.setNumThreads(1) and, where this OpenCV has
              CAP_PROP_N_THREADS, one FFmpeg decoding thread per capture (16 workers fill the
              machine); uint8 T x H x W x C clips batched, normalised on the GPU (W3's best:
              uint8 over PCIe, one multiply-add there)
  dl_cv2_pf4  the same with prefetch_factor 4 (run when time is left)
  dl_pyav     the same with PyAV: av.open, container.seek(start's time, backward to the keyframe),
              decode, frames before the start dropped, one decoding thread per worker (absent when
              PyAV cannot be imported)
  ffmpeg_cpu  FFmpeg CLI processes, `ffmpeg -threads 1 -ss T -i FILE -map 0:v:0 -frames:v SPAN -f
              null -` (T = start / fps: the input seek, accurate: decoded from the keyframe before,
              frames before T dropped), one process per clip, one process per core at once: decode
              only (no crop, resize, normalisation or copy to the GPU): a bound below what a real
              loader built on it would cost
  ffmpeg_nvdec  the same with -hwaccel cuda -hwaccel_output_format cuda (NVDEC; frames stay in
              GPU memory), 2 processes per NVDEC engine at once (a process's CUDA start is long
              beside a clip's decode)
  ffmpeg_mixed  one queue taken by both: 7 NVDEC processes and nproc - 4 CPU ones (W2's best peer)
  torchcodec, decord: not installable on the GPU machine (no network, no PyPI); each is probed and
              reported absent (or present but not run here).
auto (default) runs, while --budget lasts: dl_cv2, ffmpeg_cpu, ffmpeg_mixed, ffmpeg_nvdec, dl_pyav,
dl_cv2_pf4.

Figures: a DataLoader case runs an untimed warm-up epoch (worker start, CUDA), then timed epochs
while its share of the budget lasts; clips/s = clips / seconds of an epoch, from a
torch.cuda.synchronize() before its first batch is asked for to one after its last is made on the
GPU; the figure is the median of the timed epochs (imgpipe's W4 figure is likewise the median of a
kept Pipeline's epochs after the first). An FFmpeg case runs for --ffmpeg-s seconds, clips drawn
epoch after epoch as above; clips/s = clips finished between 2 s in and the end / that time (the
processes still running at the end are not counted).

--budget: seconds this script may take (imports included): a case that would not fit is skipped,
and the output and the JSON say so. The JSON is rewritten after every case. Lines starting
"W4PEER" are the figures.
"""
import argparse, gc, json, os, platform, random, re, shlex, statistics, subprocess, sys, threading, time

T0 = time.monotonic()  # --budget counts from here

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
HERE = os.path.dirname(os.path.abspath(__file__))


def left(budget):
    return budget - (time.monotonic() - T0)


def log(*a):
    print(*a, flush=True)


# --- the corpus and the clip rule ----------------------------------------------------------

def load_corpus(corpus):
    m = json.load(open(os.path.join(corpus, "manifest.json")))
    vids = []
    for e in m["files"]:
        if e.get("part") != "w4":
            continue
        vids.append({"path": os.path.join(corpus, e["file"]), "frames": int(e["frames"]),
                     "fps": float(e.get("fps", 30)), "width": e.get("width"), "height": e.get("height"),
                     "codec": e.get("codec")})
    if not vids:
        sys.exit(f"w4_peers.py: no w4 videos in {corpus}/manifest.json (samples/make_videos.sh --parts w4)")
    return vids


def span_of(length, stride):
    return (length - 1) * stride + 1


def draw_start(rng, frames, span):
    return rng.randint(0, max(0, frames - span))


def centre_box(h, w, size):
    """The centre square a short-side-to-size resize followed by a size x size centre crop keeps."""
    s = min(h, w)
    y0, x0 = (h - s) // 2, (w - s) // 2
    return y0, x0, s


def clips_forever(vids, span, seed):
    """(video, start) pairs: each epoch every video once in a new order, its start drawn anew."""
    rng = random.Random(seed)
    while True:
        order = list(range(len(vids)))
        rng.shuffle(order)
        for i in order:
            v = vids[i]
            yield v, draw_start(rng, v["frames"], span)


# --- clip readers (run in the DataLoader's workers) ------------------------------------------

def _crop_resize(img, size):
    import cv2
    h, w = img.shape[:2]
    y0, x0, s = centre_box(h, w, size)
    return cv2.resize(img[y0:y0 + s, x0:x0 + s], (size, size), interpolation=cv2.INTER_LINEAR)


def _finish(frames, length, size):
    import numpy as np
    if not frames:
        raise RuntimeError("no frame decoded")
    while len(frames) < length:  # a short read: the last frame again (imgpipe's short: pad)
        frames.append(frames[-1])
    return np.stack(frames[:length])  # T x H x W x C (BGR), uint8


def read_clip_cv2(path, start, length, stride, size, threads):
    import cv2
    n_threads = getattr(cv2, "CAP_PROP_N_THREADS", None)
    if n_threads is not None and threads > 0:
        cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG, [n_threads, threads])
    else:
        cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise RuntimeError(f"cv2.VideoCapture cannot open {path}")
    try:
        if start > 0:
            cap.set(cv2.CAP_PROP_POS_FRAMES, start)
        frames = []
        for k in range(span_of(length, stride)):
            if k % stride == 0:
                ok, img = cap.read()
                if not ok:
                    break
                frames.append(_crop_resize(img, size))
            elif not cap.grab():
                break
        return _finish(frames, length, size)
    finally:
        cap.release()


def read_clip_pyav(path, start, length, stride, size, threads):
    import av
    with av.open(path) as c:
        s = c.streams.video[0]
        s.thread_count = threads if threads > 0 else 0
        rate = float(s.average_rate or s.guessed_rate or 30)
        tb = float(s.time_base)
        first = s.start_time or 0
        target = first + int(round(start / rate / tb))  # the start frame's time, as a user indexes it
        half = int(0.5 / rate / tb)  # half a frame: the frame nearest the time
        if start > 0:
            c.seek(target, stream=s, backward=True, any_frame=False)
        frames, k = [], 0
        span = span_of(length, stride)
        for f in c.decode(s):
            if f.pts is not None and f.pts < target - half:
                continue
            if k % stride == 0:
                frames.append(_crop_resize(f.to_ndarray(format="bgr24"), size))
            k += 1
            if k >= span:
                break
        return _finish(frames, length, size)


READERS = {"cv2": read_clip_cv2, "pyav": read_clip_pyav}


def worker_init(_worker_id):
    import cv2
    cv2.setNumThreads(1)


def make_dataset(vids, reader, length, stride, size, threads):
    import torch

    class Clips(torch.utils.data.Dataset):
        """One random clip of each video per epoch (the start drawn in the worker, from the
        `random` module the DataLoader seeds per worker)."""

        def __len__(self):
            return len(vids)

        def __getitem__(self, i):
            v = vids[i]
            start = draw_start(random, v["frames"], span_of(length, stride))
            return torch.from_numpy(READERS[reader](v["path"], start, length, stride, size, threads))

    return Clips()


# --- DataLoader cases ----------------------------------------------------------------------------

def dataloader_case(args, vids, reader, prefetch, seconds):
    import torch
    dev = torch.device(args.device)
    std = torch.tensor(STD, dtype=torch.float32)
    scale = (1.0 / (255.0 * std)).view(1, 3, 1, 1, 1).to(dev)
    bias = (-torch.tensor(MEAN, dtype=torch.float32) / std).view(1, 3, 1, 1, 1).to(dev)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dl = torch.utils.data.DataLoader(make_dataset(vids, reader, args.length, args.stride, args.size, args.threads),
                                     batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                     persistent_workers=True, pin_memory=cuda, prefetch_factor=prefetch,
                                     worker_init_fn=worker_init, drop_last=False)
    t_case = time.monotonic()
    epochs, shape = [], None
    try:
        while True:
            el = time.monotonic() - t_case
            last = epochs[-1]["seconds"] if epochs else 0
            if epochs and el + last * 1.1 > seconds:
                break
            sync()
            t = time.perf_counter()
            n = 0
            for b in dl:  # N x T x H x W x C (BGR) uint8, pinned
                x = b.to(dev, non_blocking=True).permute(0, 4, 1, 2, 3).flip(1)  # N x C x T x H x W, RGB
                out = torch.addcmul(bias, x.float(), scale).contiguous()
                shape = list(out.shape)
                n += out.shape[0]
            sync()
            dt = time.perf_counter() - t
            epochs.append({"epoch": len(epochs), "clips": n, "seconds": dt, "clips_per_s": n / dt})
            log(f"  {reader} prefetch {prefetch} epoch {len(epochs) - 1}{' (warm-up)' if len(epochs) == 1 else ''}: "
                f"{n} clips in {dt:.2f} s = {n / dt:.1f} clips/s")
    finally:
        del dl
        gc.collect()
    timed = [e["clips_per_s"] for e in epochs[1:]]
    res = {"reader": reader, "workers": args.workers, "prefetch_factor": prefetch, "batch": args.batch,
           "cv2_ffmpeg_threads": args.threads, "epochs": epochs, "output_shape": shape, "output_dtype": "float32",
           "device": args.device, "timed_epochs": len(timed),
           "clips_per_s": statistics.median(timed) if timed else None}
    if not timed:
        res["note"] = f"no timed epoch: the warm-up epoch took {epochs[0]['seconds']:.1f} s of the case's {seconds:.0f} s"
    return res


# --- FFmpeg CLI cases ------------------------------------------------------------------------------

def ffmpeg_args(kind):
    if kind == "cpu":
        return ["-threads", "1"]
    if kind == "cuda":
        return ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"]
    sys.exit(f"w4_peers.py: pool kind {kind!r}: expected cpu or cuda")


def ffmpeg_case(args, vids, pools, seconds, warm=2.0):
    ff = shlex.split(args.ffmpeg)
    span = span_of(args.length, args.stride)
    gen = clips_forever(vids, span, seed=args.seed)
    lock = threading.Lock()
    done = []  # (t_end, kind, frames, ok)
    failed = []
    t_start = time.monotonic()
    t_stop = t_start + seconds

    def worker(kind):
        extra = ffmpeg_args(kind)
        while time.monotonic() < t_stop:
            with lock:
                v, start = next(gen)
            t = start / v["fps"]
            cmd = ff + ["-nostdin", "-hide_banner", "-v", "error", "-progress", "pipe:1", "-nostats"] + extra + \
                ["-ss", f"{t:.6f}", "-i", v["path"], "-map", "0:v:0", "-frames:v", str(span), "-f", "null", "-"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            got = re.findall(r"^frame=(\d+)$", p.stdout, re.M)
            n = int(got[-1]) if got else 0
            with lock:
                done.append((time.monotonic(), kind, n, p.returncode == 0))
                if p.returncode != 0 or n != span:
                    last = (p.stderr.strip().splitlines() or [""])[-1]
                    failed.append(f"{kind} {os.path.basename(v['path'])} start {start}: exit {p.returncode}, "
                                  f"{n} frames: {last[:200]}")

    threads = [threading.Thread(target=worker, args=(k,)) for k, n in pools for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_end = time.monotonic()
    window = [d for d in done if t_start + warm <= d[0] <= t_stop]
    secs = t_stop - (t_start + warm)
    res = {"pools": {k: n for k, n in pools}, "seconds": secs, "clips": len(window),
           "clips_per_s": len(window) / secs if secs > 0 else None,
           "clips_all": len(done), "ran_s": t_end - t_start,
           "by_kind": {k: sum(1 for d in window if d[1] == k) for k, _ in pools},
           "frames_per_clip": statistics.mean([d[2] for d in done]) if done else 0,
           "failed": len(failed), "failures": failed[:5],
           "note": "decode only: no crop, resize, normalisation or copy to the GPU"}
    if failed and len(failed) * 10 > max(1, len(done)):
        res["error"] = f"{len(failed)} of {len(done)} processes failed or gave fewer than {span} frames, e.g. {failed[0]}"
    return res


# --- absent peers ----------------------------------------------------------------------------------

def probe_absent():
    out = {}
    for name, mod in (("torchcodec", "torchcodec.decoders"), ("decord", "decord")):
        try:
            __import__(mod)
            out[name] = "importable here, but w4_peers.py has no case for it"
        except Exception as e:  # noqa: BLE001
            out[name] = (f"not installed ({type(e).__name__}: {str(e)[:120]}); not installable on the GPU "
                         f"machine (no network, no PyPI)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--cases", default="auto")
    ap.add_argument("--budget", type=float, default=150)
    ap.add_argument("--json")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--prefetch", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--length", type=int, default=16)
    ap.add_argument("--stride", type=int, default=2)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=1, help="decoding threads per cv2 capture / PyAV stream (0 = library default)")
    ap.add_argument("--ffmpeg", default=os.environ.get("FFMPEG", "ffmpeg"))
    ap.add_argument("--ffmpeg-s", type=float, default=15, help="seconds each FFmpeg case runs")
    ap.add_argument("--nvdec", type=int, default=7, help="NVDEC engines of the GPU")
    ap.add_argument("--dl-s", type=float, default=40, help="at most this long for a DataLoader case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()

    vids = load_corpus(args.corpus)
    cores = os.cpu_count() or 2
    ff_pools = {"ffmpeg_cpu": [("cpu", cores)],
                "ffmpeg_nvdec": [("cuda", 2 * args.nvdec)],
                "ffmpeg_mixed": [("cuda", args.nvdec), ("cpu", max(1, cores - 4))]}
    order = ["dl_cv2", "ffmpeg_cpu", "ffmpeg_mixed", "ffmpeg_nvdec", "dl_pyav", "dl_cv2_pf4"]
    cases = order if args.cases == "auto" else [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in order:
            sys.exit(f"w4_peers.py: unknown case {c!r} (known: {', '.join(order)})")
    codecs = {}
    sizes = {}
    for v in vids:
        codecs[v["codec"]] = codecs.get(v["codec"], 0) + 1
        k = f"{v['width']}x{v['height']}"
        sizes[k] = sizes.get(k, 0) + 1
    res = {"corpus": {"dir": os.path.abspath(args.corpus), "videos": len(vids), "codecs": codecs, "sizes": sizes,
                      "frames": sorted({v["frames"] for v in vids})},
           "clip": {"length": args.length, "stride": args.stride, "span": span_of(args.length, args.stride),
                    "place": "random, uniform over [0, frames - span]", "per_video": 1},
           "machine": {"cpus": cores, "python": platform.python_version()},
           "cases": {}, "skipped": {}, "absent": probe_absent()}
    for name, why in res["absent"].items():
        log(f"W4PEER {name}: absent: {why}")
    try:
        import torch
        res["machine"]["torch"] = torch.__version__
        if args.device == "cuda" and torch.cuda.is_available():
            res["machine"]["gpu"] = torch.cuda.get_device_name(0)
    except Exception as e:  # noqa: BLE001
        res["machine"]["torch"] = f"absent: {e}"
    try:
        import cv2
        res["machine"]["cv2"] = cv2.__version__
        res["machine"]["cv2_has_n_threads"] = hasattr(cv2, "CAP_PROP_N_THREADS")
    except Exception as e:  # noqa: BLE001
        res["machine"]["cv2"] = f"absent: {e}"

    def save():
        runs = {k: v for k, v in res["cases"].items() if v.get("clips_per_s") and "error" not in v}
        if runs:
            b = max(runs, key=lambda k: runs[k]["clips_per_s"])
            res["best"] = {"case": b, "clips_per_s": runs[b]["clips_per_s"]}
        if args.json:
            with open(args.json + ".tmp", "w") as f:
                json.dump(res, f, indent=1)
            os.replace(args.json + ".tmp", args.json)

    # What the cases after this one need at least, so that one case does not starve them.
    need = {"dl_cv2": 25, "dl_pyav": 25, "dl_cv2_pf4": 25}
    for c in ff_pools:
        need[c] = args.ffmpeg_s + 3
    for i, case in enumerate(cases):
        rest = sum(need[c] for c in cases[i + 1:] if c not in ("dl_pyav", "dl_cv2_pf4"))  # the extras yield
        avail = left(args.budget) - 3
        if avail < need[case]:
            res["skipped"][case] = f"budget: {avail:.0f} s left, needs ~{need[case]:.0f} s"
            log(f"W4PEER {case}: skipped ({res['skipped'][case]})")
            save()
            continue
        t = time.monotonic()
        try:
            if case.startswith("dl_"):
                reader = "pyav" if case == "dl_pyav" else "cv2"
                try:
                    __import__("av" if reader == "pyav" else "cv2")
                    import torch  # noqa: F401
                except Exception as e:  # noqa: BLE001
                    res["absent"][case] = f"{type(e).__name__}: {str(e)[:200]}"
                    log(f"W4PEER {case}: absent: {res['absent'][case]}")
                    save()
                    continue
                if args.device == "cuda" and not torch.cuda.is_available():
                    raise RuntimeError("no CUDA device (--device cpu to run it on the host)")
                seconds = min(args.dl_s, max(need[case], avail - rest))
                log(f"=== {case}: DataLoader, {reader}, {args.workers} workers, prefetch "
                    f"{4 if case == 'dl_cv2_pf4' else args.prefetch}, at most {seconds:.0f} s")
                r = dataloader_case(args, vids, reader, 4 if case == "dl_cv2_pf4" else args.prefetch, seconds)
            else:
                pools = ff_pools[case]
                log(f"=== {case}: FFmpeg CLI, {', '.join(f'{n} {k}' for k, n in pools)} processes at once, "
                    f"{args.ffmpeg_s:.0f} s")
                r = ffmpeg_case(args, vids, pools, args.ffmpeg_s)
        except Exception as e:  # noqa: BLE001
            r = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
        r["took_s"] = time.monotonic() - t
        res["cases"][case] = r
        if "error" in r:
            log(f"W4PEER {case}: error: {r['error']}")
        elif r.get("clips_per_s"):
            extra = ""
            if "epochs" in r:
                extra = (f" (median of {r['timed_epochs']} epochs after a warm-up epoch: "
                         f"{[round(e['clips_per_s'], 1) for e in r['epochs'][1:]]}; output {r['output_shape']} float32)")
            else:
                extra = (f" ({r['clips']} clips in {r['seconds']:.1f} s, by kind {r['by_kind']}, "
                         f"{r['frames_per_clip']:.1f} frames a clip; decode only)")
            log(f"W4PEER {case}: {r['clips_per_s']:.1f} clips/s{extra}")
        else:
            log(f"W4PEER {case}: no figure ({r.get('note', '')})")
        save()
    save()
    if "best" in res:
        log(f"W4PEER best: {res['best']['case']} {res['best']['clips_per_s']:.1f} clips/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
