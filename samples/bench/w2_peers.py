#!/usr/bin/env python3
"""W2 peers (samples/bench/w2.sh runs them): one timed pass each, frames
counted, printed as one JSON line {"frames", "seconds", "fps", ...}.

  w2_peers.py ffmpeg --ffmpeg CMD --files LIST --pool KIND:N[,KIND:N] [--threads T]
      A pool of FFmpeg processes decoding the files of LIST (one path a line)
      to `-f null`: the pools' workers take the next file from one shared
      queue, one process per file, until the queue is empty. KIND:
        cpu       -threads T (default 1) on the CPU
        cuda      -hwaccel cuda: NVDEC, frames downloaded to host memory
        cuda_keep -hwaccel cuda -hwaccel_output_format cuda: frames stay on the GPU
      Frames: the last `frame=` of each process's -progress output, summed;
      seconds: the pool's start to its last process's end.
  w2_peers.py torch --decoder NAME --files LIST [--workers N]
      Decoding + W1 preprocessing (640x640 bilinear, ImageNet normalise,
      NCHW float32 on the GPU, batches of 32). NAME:
        torchcodec       torchcodec.decoders.VideoDecoder on the CPU, in a
                         DataLoader (persistent workers, each its share of the
                         videos, cv2 1 thread for the resize)
        torchcodec_cuda  VideoDecoder(device="cuda") (NVDEC) in this process,
                         resize and normalise batched on the GPU
        tv_reader        torchvision.io.VideoReader in the DataLoader
        tv_read_video    torchvision.io.read_video (whole video) in the DataLoader
        cv2              cv2.VideoCapture in the DataLoader (what imgpipe used)
      A decoder that cannot be imported or opened prints {"error": ...} and
      exits 3 (the peer is absent on this machine, not failed).
"""
import argparse, json, os, queue, re, resource, shlex, subprocess, sys, threading, time

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
OUT_BATCH = 32
SIZE = (640, 640)  # (height, width)


# --- FFmpeg pools -------------------------------------------------------------

def ffmpeg_args(kind, threads):
    if kind == "cpu":
        return ["-threads", str(threads)]
    if kind == "cuda":
        return ["-hwaccel", "cuda"]
    if kind == "cuda_keep":
        return ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"]
    sys.exit(f"w2_peers.py: --pool kind {kind!r}: expected cpu, cuda or cuda_keep")


def ffmpeg_pool(args):
    ff = shlex.split(args.ffmpeg)
    files = [l.strip() for l in open(args.files) if l.strip()]
    pools = []
    for part in args.pool.split(","):
        kind, _, n = part.partition(":")
        pools.append((kind, int(n or "1")))
    todo = queue.Queue()
    for f in files:
        todo.put(f)
    lock = threading.Lock()
    res = {"frames": 0, "files": 0, "failed": [], "by_kind": {k: 0 for k, _ in pools}}

    def worker(kind):
        extra = ffmpeg_args(kind, args.threads)
        while True:
            try:
                f = todo.get_nowait()
            except queue.Empty:
                return
            cmd = ff + ["-nostdin", "-hide_banner", "-v", "error", "-progress", "pipe:1", "-nostats"] + extra + \
                ["-i", f, "-map", "0:v:0", "-f", "null", "-"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            got = re.findall(r"^frame=(\d+)$", p.stdout, re.M)
            n = int(got[-1]) if got else 0
            with lock:
                res["frames"] += n
                res["files"] += 1
                res["by_kind"][kind] += n
                if p.returncode != 0:
                    last = (p.stderr.strip().splitlines() or [""])[-1]
                    res["failed"].append(f"{kind} {os.path.basename(f)}: exit {p.returncode}: {last[:200]}")

    threads = [threading.Thread(target=worker, args=(k,)) for k, n in pools for _ in range(n)]
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res["seconds"] = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the FFmpeg processes' CPU time
    res["cpu_s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    res["fps"] = res["frames"] / res["seconds"]
    if res["failed"]:  # a process that failed makes the figure meaningless
        res["error"] = f"{len(res['failed'])} of {res['files']} processes failed, e.g. {res['failed'][0]}"
    res["failed"] = res["failed"][:5]
    return res


# --- torch peers ----------------------------------------------------------------

def frames_torchcodec(path):
    from torchcodec.decoders import VideoDecoder
    for frame in VideoDecoder(path, dimension_order="NHWC", seek_mode="approximate"):
        yield frame.numpy()  # HWC RGB u8


def frames_tv_reader(path):
    import torchvision
    for frame in torchvision.io.VideoReader(path, "video"):
        yield frame["data"].permute(1, 2, 0).numpy()  # CHW -> HWC RGB u8


def frames_tv_read_video(path):
    import torchvision
    video, _, _ = torchvision.io.read_video(path, pts_unit="sec", output_format="THWC")
    for frame in video:
        yield frame.numpy()


def frames_cv2(path):
    import cv2
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise RuntimeError(f"cv2.VideoCapture cannot open {path}")
    while True:
        ok, img = cap.read()
        if not ok:
            return
        yield cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


DECODERS = {"torchcodec": frames_torchcodec, "tv_reader": frames_tv_reader, "tv_read_video": frames_tv_read_video,
            "cv2": frames_cv2}


def worker_init(_worker_id):
    import cv2
    cv2.setNumThreads(1)


def make_dataset(files, decoder):
    import cv2
    import torch

    class Frames(torch.utils.data.IterableDataset):
        """Each worker decodes its share of the videos (every k-th), frames resized to 640x640 (HWC RGB u8)."""

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            k, n = (info.id, info.num_workers) if info else (0, 1)
            for f in files[k::n]:
                for img in DECODERS[decoder](f):
                    yield torch.from_numpy(cv2.resize(img, (SIZE[1], SIZE[0]), interpolation=cv2.INTER_LINEAR))

    return Frames()


def torch_peer(args):
    files = [l.strip() for l in open(args.files) if l.strip()]
    try:
        import torch
        if args.decoder == "torchcodec_cuda":
            from torchcodec.decoders import VideoDecoder
        elif args.decoder in ("torchcodec",):
            import torchcodec.decoders  # noqa: F401
        elif args.decoder in ("tv_reader", "tv_read_video"):
            import torchvision
            # Probe: the video backend must open the first file.
            next(iter(DECODERS[args.decoder](files[0])))
        else:
            next(iter(DECODERS[args.decoder](files[0])))
    except Exception as e:  # noqa: BLE001  absent here: say why
        return {"error": f"{type(e).__name__}: {e}"[:400], "absent": True}
    import torch.nn.functional as F
    std = torch.tensor(STD, dtype=torch.float32)
    scale = (1.0 / (255.0 * std)).view(1, 3, 1, 1).cuda()
    bias = (-torch.tensor(MEAN, dtype=torch.float32) / std).view(1, 3, 1, 1).cuda()
    n = 0
    torch.cuda.synchronize()
    if args.decoder == "torchcodec_cuda":
        t0 = time.perf_counter()
        for f in files:
            dec = VideoDecoder(f, device="cuda", seek_mode="approximate")
            total = dec.metadata.num_frames or 0
            i = 0
            while True:
                idx = list(range(i, i + OUT_BATCH))
                try:
                    b = dec.get_frames_at(indices=[j for j in idx if not total or j < total]).data
                except (IndexError, RuntimeError):
                    break
                if b.shape[0] == 0:
                    break
                x = F.interpolate(b.float(), size=SIZE, mode="bilinear", align_corners=False, antialias=False)
                x = torch.addcmul(bias, x, scale)
                n += x.shape[0]
                i += b.shape[0]
                if total and i >= total:
                    break
        torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        return {"frames": n, "seconds": secs, "fps": n / secs, "workers": 0}
    dl = torch.utils.data.DataLoader(make_dataset(files, args.decoder), batch_size=OUT_BATCH,
                                     num_workers=args.workers, pin_memory=True, persistent_workers=True,
                                     prefetch_factor=4, worker_init_fn=worker_init)
    t0 = time.perf_counter()
    t1, n1 = None, 0
    for b in dl:
        b = b.cuda(non_blocking=True)
        x = torch.addcmul(bias, b.permute(0, 3, 1, 2).float(), scale).contiguous()
        n += x.shape[0]
        if t1 is None:
            torch.cuda.synchronize()
            t1, n1 = time.perf_counter(), n
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    secs = t2 - t0
    return {"frames": n, "seconds": secs, "fps": n / secs, "workers": args.workers,
            "steady_fps": (n - n1) / (t2 - t1) if t1 and t2 > t1 else None,
            "note": "fps includes the workers' start; steady_fps counts from the first batch"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["ffmpeg", "torch"])
    ap.add_argument("--files", required=True)
    ap.add_argument("--ffmpeg", default=os.environ.get("FFMPEG", "ffmpeg"))
    ap.add_argument("--pool", default="cpu:1")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--decoder", choices=sorted(DECODERS) + ["torchcodec_cuda"], default="cv2")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    args = ap.parse_args()
    res = ffmpeg_pool(args) if args.mode == "ffmpeg" else torch_peer(args)
    print(json.dumps(res))
    sys.exit(3 if "error" in res else 0)


if __name__ == "__main__":
    main()
