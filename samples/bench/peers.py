#!/usr/bin/env python3
"""W1 peers, on the same corpus as imgpipe's W1 run (samples/bench/w1.sh: COUNT=4096
makes WORKDIR/w1_4096): what a user would run instead, each at its best.

  python3 samples/bench/peers.py CORPUS_DIR [--workers 15 | --workers 8,12,15]
      [--decode-batches 32,128,256] [--tv-read once|each|both] [--runs 3]
      [--count N] [--budget SECONDS] [--json out.json]

Every peer delivers what imgpipe delivers: batches of 32 RGB images resized to
640x640 (bilinear), (x/255 - mean)/std with ImageNet mean/std, float32 NCHW
contiguous, resident on the GPU. Throughput = images delivered / seconds, end
to end, including the final torch.cuda.synchronize(). Every run covers the
whole corpus; each case has one untimed warm-up pass (worker start, CUDA and
nvJPEG handles), then the median of --runs timed passes. The page cache is
warm (every file is read once first).

1. torchvision: decode_jpeg(list, device="cuda", mode=RGB) at each decode batch
   of --decode-batches (32, 128, 256), reported each; the peer's figure is the
   fastest. Each decode batch is cut into output batches of 32 that are
   stacked and resized together (F.interpolate bilinear, align_corners=False,
   no antialias; images grouped by size, W1's are all 1920x1080), then
   normalised in one fused multiply-add into a contiguous NCHW float32 batch.
   --tv-read once: the files are read into memory once, before timing (the
   peer at its best: no file reads in the timed region). --tv-read each: files
   are read from the page cache inside the timed region, as imgpipe does
   (torchvision.io.read_file). both (default): "once" at every decode batch,
   "each" at the fastest; the peer's figure is the "once" one.
2. PyTorch DataLoader, persistent workers (worker_init_fn: cv2.setNumThreads(1)),
   prefetch_factor 4, batch 32, cv2.imread (page cache, every pass) + resize
   640x640 INTER_LINEAR + BGR->RGB in the workers, u8 pin_memory, then on the
   GPU: NHWC u8 -> NCHW float32 normalised. Run for every worker count of
   --workers (default: cpu_count - 1 = 15 on 16 vCPUs); the fastest is the
   peer's figure and is used for 3 and 4.
3. the same without pin_memory.
4. the same normalising to float32 NCHW on the CPU (in the workers), pinned.

--budget: seconds this script may take; a case (or a timed run) that would
likely end past it is skipped (fewer runs rather than a killed call; the JSON
and the output say so). The JSON is rewritten after every case.
"""
import argparse, gc, glob, json, os, platform, statistics, sys, time

T0 = time.monotonic()  # --budget counts from here (imports included)

import cv2
import numpy as np
import torch
import torch.nn.functional as F

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
OUT_BATCH = 32
SIZE = (640, 640)  # (height, width)


def worker_init(_worker_id):
    cv2.setNumThreads(1)


class U8Set(torch.utils.data.Dataset):
    """cv2 decode + resize + BGR->RGB: HWC u8, or CHW float32 normalised (cpu_normalize)."""

    def __init__(self, files, cpu_normalize=False):
        self.files, self.cpu_normalize = files, cpu_normalize
        self.scale = (1.0 / (255.0 * np.array(STD, np.float32))).astype(np.float32)
        self.bias = (-np.array(MEAN, np.float32) / np.array(STD, np.float32)).astype(np.float32)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        img = cv2.imread(self.files[i], cv2.IMREAD_COLOR)
        img = cv2.resize(img, (SIZE[1], SIZE[0]), interpolation=cv2.INTER_LINEAR)
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        if self.cpu_normalize:
            x = img.astype(np.float32) * self.scale + self.bias  # HWC, one pass
            return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))
        return torch.from_numpy(img)


class Affine:
    """(x/255 - mean)/std = x * scale + bias, per channel, on the GPU."""

    def __init__(self):
        std = torch.tensor(STD, dtype=torch.float32)
        self.scale = (1.0 / (255.0 * std)).view(1, 3, 1, 1).cuda()
        self.bias = (-torch.tensor(MEAN, dtype=torch.float32) / std).view(1, 3, 1, 1).cuda()

    def __call__(self, x):
        """x: (N, 3, H, W) float32 on the GPU, any strides -> contiguous NCHW float32."""
        out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
        return torch.addcmul(self.bias, x, self.scale, out=out)


# --- DataLoader --------------------------------------------------------------

def make_loader(files, workers, pin, cpu_normalize):
    return torch.utils.data.DataLoader(U8Set(files, cpu_normalize), batch_size=OUT_BATCH, num_workers=workers,
                                       pin_memory=pin, shuffle=False, persistent_workers=workers > 0,
                                       prefetch_factor=4 if workers > 0 else None,
                                       worker_init_fn=worker_init if workers > 0 else None)


def loader_pass(dl, pin, cpu_normalize, affine):
    n = 0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for b in dl:
        b = b.cuda(non_blocking=pin)
        if not cpu_normalize:
            b = affine(b.permute(0, 3, 1, 2).float())
        n += b.shape[0]
    torch.cuda.synchronize()
    return n, time.perf_counter() - t0


# --- torchvision decode_jpeg on the GPU ------------------------------------------

def resize_batch(imgs):
    """list of (3, H, W) u8 CUDA tensors -> (N, 3, 640, 640) float32, resized in batches by size."""
    shape = imgs[0].shape
    if all(im.shape == shape for im in imgs):
        return F.interpolate(torch.stack(imgs).float(), size=SIZE, mode="bilinear", align_corners=False,
                             antialias=False)
    out = torch.empty((len(imgs), 3) + SIZE, dtype=torch.float32, device=imgs[0].device)
    groups = {}
    for i, im in enumerate(imgs):
        groups.setdefault(tuple(im.shape), []).append(i)
    for idx in groups.values():
        out[idx] = F.interpolate(torch.stack([imgs[i] for i in idx]).float(), size=SIZE, mode="bilinear",
                                 align_corners=False, antialias=False)
    return out


def torchvision_pass(files, datas, decode_batch, affine):
    """datas: file contents read once (read mode 'once'), or None: read each file in the timed region."""
    from torchvision.io import ImageReadMode, decode_jpeg, read_file
    n = 0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(0, len(files), decode_batch):
        chunk = datas[i:i + decode_batch] if datas is not None else [read_file(f) for f in files[i:i + decode_batch]]
        imgs = decode_jpeg(chunk, mode=ImageReadMode.RGB, device="cuda")
        for j in range(0, len(imgs), OUT_BATCH):
            b = affine(resize_batch(imgs[j:j + OUT_BATCH]))  # the consumer's batch: (<=32, 3, 640, 640) f32 NCHW
            n += b.shape[0]
    torch.cuda.synchronize()
    return n, time.perf_counter() - t0


# --- measurement -----------------------------------------------------------------

class Bench:
    def __init__(self, args, files):
        self.a, self.files = args, files
        self.t_start = T0
        self.deadline = self.t_start + args.budget if args.budget else float("inf")
        self.results = {"cases": {}, "skipped": [], "best": {}}

    def left(self):
        return self.deadline - time.monotonic()

    def save(self):
        self.results["elapsed_s"] = time.monotonic() - self.t_start
        if self.a.json:
            tmp = self.a.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.results, f, indent=1)
            os.replace(tmp, self.a.json)

    def case(self, name, one_pass, est_pass_s, info):
        """Warm-up pass, then up to --runs timed passes while the budget lasts. one_pass() -> (images, seconds)."""
        if self.left() < 2.2 * est_pass_s:
            msg = f"{name}: skipped, {self.left():.0f} s left and a pass takes ~{est_pass_s:.1f} s (budget)"
            self.results["skipped"].append(msg)
            print(msg, flush=True)
            self.save()
            return None
        rec = dict(info)
        try:
            n, s = one_pass()  # warm-up
            rec["warmup_images_per_s"] = n / s
            rates, last = [], s
            for k in range(self.a.runs):
                if k > 0 and self.left() < 1.3 * last:
                    rec["stopped"] = f"stopped after {k} of {self.a.runs} runs (budget)"
                    break
                n, last = one_pass()
                if n != len(self.files):
                    rec.setdefault("warnings", []).append(f"run {k + 1}: {n} images delivered, corpus has {len(self.files)}")
                rates.append(n / last)
            rec.update(images_per_s_median=statistics.median(rates), runs=rates, pass_s_last=last)
            print(f"{name:48s} {rec['images_per_s_median']:8.1f} img/s  runs={[round(r, 1) for r in rates]}"
                  f"  (warm-up {rec['warmup_images_per_s']:.1f}){'  ' + rec['stopped'] if 'stopped' in rec else ''}",
                  flush=True)
        except Exception as e:  # report, keep going
            rec["error"] = repr(e)
            print(f"{name:48s} failed: {e!r}", flush=True)
        self.results["cases"][name] = rec
        self.save()
        return rec

    def loader_case(self, name, workers, pin, cpu_normalize, affine, est):
        dl = make_loader(self.files, workers, pin, cpu_normalize)
        try:
            return self.case(name, lambda: loader_pass(dl, pin, cpu_normalize, affine), est,
                             {"peer": "dataloader", "workers": workers, "pin_memory": pin,
                              "normalize": "cpu" if cpu_normalize else "gpu", "persistent_workers": workers > 0,
                              "prefetch_factor": 4, "cv2_threads_per_worker": 1})
        finally:
            del dl  # shuts the persistent workers down
            gc.collect()


def best_of(cases, names):
    ok = [(cases[n]["images_per_s_median"], n) for n in names if n in cases and "images_per_s_median" in cases[n]]
    return max(ok) if ok else (None, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--workers", default=str(max(1, (os.cpu_count() or 2) - 1)),
                    help="DataLoader worker count, or a comma list (each reported; the fastest is the figure)")
    ap.add_argument("--decode-batches", default="32,128,256", help="torchvision decode batch sizes")
    ap.add_argument("--tv-read", choices=["once", "each", "both"], default="both")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--count", type=int, default=0, help="use the first N files (0: all)")
    ap.add_argument("--budget", type=float, default=0, help="seconds this script may take (0: no limit)")
    ap.add_argument("--skip", default="", help="comma list of peers to leave out: torchvision,dataloader,unpinned,cpu_normalize")
    ap.add_argument("--json")
    a = ap.parse_args()
    workers = [int(w) for w in a.workers.split(",") if w.strip()]
    batches = [int(b) for b in a.decode_batches.split(",") if b.strip()]
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}

    files = sorted(glob.glob(os.path.join(a.corpus, "*.jpg")))
    if a.count:
        files = files[:a.count]
    if not files:
        sys.exit(f"peers.py: no .jpg in {a.corpus}")
    nbytes = 0
    for f in files:  # warm the page cache
        with open(f, "rb") as fh:
            nbytes += len(fh.read())
    if len(files) != 4096:
        print(f"peers.py: note: {len(files)} images (W1-4096 has 4096)", flush=True)
    torch.zeros(1).cuda()
    torch.cuda.synchronize()
    affine = Affine()
    b = Bench(a, files)
    import torchvision
    b.results.update(images=len(files), corpus=os.path.abspath(a.corpus), mean_file_kb=nbytes / len(files) / 1000,
                     output={"batch": OUT_BATCH, "size": list(SIZE), "dtype": "float32", "layout": "NCHW",
                             "device": "cuda"},
                     env={"python": platform.python_version(), "torch": torch.__version__,
                          "torchvision": torchvision.__version__, "cv2": cv2.__version__, "numpy": np.__version__,
                          "cpu_count": os.cpu_count(), "gpu": torch.cuda.get_device_name(0)},
                     settings={"workers": workers, "decode_batches": batches, "tv_read": a.tv_read, "runs": a.runs,
                               "budget_s": a.budget or None})
    print(f"peers: {len(files)} images ({nbytes / len(files) / 1000:.0f} kB average) from {a.corpus}; "
          f"torch {torch.__version__}, torchvision {torchvision.__version__}, cv2 {cv2.__version__}, "
          f"{os.cpu_count()} CPUs, {torch.cuda.get_device_name(0)}", flush=True)
    cases = b.results["cases"]

    # 1. torchvision: files in memory once; every decode batch; then "each" at the best.
    if "torchvision" not in skip:
        from torchvision.io import read_file
        tv_names = []
        if a.tv_read in ("once", "both"):
            datas = [read_file(f) for f in files]
            for db in batches:
                name = f"torchvision_nvjpeg_b{db}_read_once"
                b.case(name, lambda db=db: torchvision_pass(files, datas, db, affine), len(files) / 2000 + 2,
                       {"peer": "torchvision", "decode_batch": db, "read": "once, before timing"})
                tv_names.append(name)
            del datas
        rate, name = best_of(cases, tv_names)
        best_db = cases[name]["decode_batch"] if name else (batches[-1] if batches else 256)
        if a.tv_read in ("each", "both"):
            dbs = [best_db] if a.tv_read == "both" else batches
            for db in dbs:
                name_e = f"torchvision_nvjpeg_b{db}_read_each"
                b.case(name_e, lambda db=db: torchvision_pass(files, None, db, affine), len(files) / 1500 + 2,
                       {"peer": "torchvision", "decode_batch": db, "read": "each run, from the page cache"})
                tv_names.append(name_e)
        if a.tv_read == "each":
            rate, name = best_of(cases, tv_names)
        if name:
            b.results["best"]["torchvision"] = {"case": name, "images_per_s": rate,
                                                "decode_batch": cases[name]["decode_batch"],
                                                "read": cases[name]["read"]}
        b.save()

    # 2-4. DataLoader.
    if "dataloader" not in skip:
        dl_names, est = [], len(files) / 500 + 8
        for w in workers:
            name = f"dataloader_u8_pinned_gpu_normalize_w{w}"
            rec = b.loader_case(name, w, True, False, affine, est)
            if rec and "pass_s_last" in rec:
                est = rec["pass_s_last"] + 2
            dl_names.append(name)
        rate, name = best_of(cases, dl_names)
        wbest = cases[name]["workers"] if name else workers[-1]
        if name:
            b.results["best"]["dataloader"] = {"case": name, "images_per_s": rate, "workers": wbest}
        if "unpinned" not in skip:
            b.loader_case(f"dataloader_u8_unpinned_gpu_normalize_w{wbest}", wbest, False, False, affine, est * 1.1)
        if "cpu_normalize" not in skip:
            b.loader_case(f"dataloader_cpu_normalize_float32_w{wbest}", wbest, True, True, affine, est * 1.7)

    best = b.results["best"]
    print("peers summary:", flush=True)
    if "torchvision" in best:
        t = best["torchvision"]
        print(f"PEER torchvision decode_jpeg(cuda): {t['images_per_s']:.1f} img/s (decode batch {t['decode_batch']}, "
              f"files read {t['read'].split(',')[0]})", flush=True)
    if "dataloader" in best:
        d = best["dataloader"]
        print(f"PEER DataLoader u8 pinned, GPU normalise: {d['images_per_s']:.1f} img/s ({d['workers']} workers)",
              flush=True)
    for msg in b.results["skipped"]:
        print(f"PEER skipped: {msg}", flush=True)
    b.save()


if __name__ == "__main__":
    main()
