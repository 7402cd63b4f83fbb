#!/usr/bin/env python3
"""W3 peers (samples/bench/w3.sh runs them): a training epoch's input pipeline, what a user would run
instead of imgpipe, each at its best settings, and imgpipe's own Python Loader.

  python3 samples/bench/w3_peers.py CORPUS [--cases auto | CASE,CASE,...] [--epochs 3]
      [--workers 16] [--prefetch 2,4] [--batch 256] [--budget SECONDS] [--json out.json]
      [--config configs/w3.yaml] [--device cuda]

CORPUS: ImageFolder layout (CORPUS/CLASS/*.jpg; samples/bench/w3.sh makes it with
imgpipe_make_corpus --sizes imagenet --classes 100). Every case delivers what imgpipe's W3 config
(configs/w3.yaml) delivers: each epoch every image once in a new random order, torchvision's
RandomResizedCrop(224) (scale [0.08, 1], ratio [3/4, 4/3]) drawn anew per image and epoch, a
horizontal flip with probability 0.5, (x/255 - mean)/std with ImageNet's mean/std, batches of
--batch as float32 NCHW contiguous tensors on the GPU, with the labels (int64, on the GPU).
images/s = images delivered / seconds of the epoch, from a torch.cuda.synchronize() before the
epoch's first batch is asked for to one after its last is made; each case runs one untimed warm-up
epoch (worker start, CUDA, nvJPEG), then --epochs timed epochs; its figure is their median. The
page cache is warm (every file is read once first).

Cases:
  dl_pil_u8    torchvision ImageFolder (PIL loader: open + convert("RGB")) in a DataLoader:
               RandomResizedCrop(224) + RandomHorizontalFlip() on the PIL image in the workers,
               the 224x224 RGB bytes as an HWC uint8 tensor; pin_memory; on the GPU: NHWC uint8
               -> NCHW float32 normalised (one multiply-add)
  dl_cv2_u8    the same with cv2.imread (BGR), the crop drawn as torchvision draws it, cut as a
               view, cv2.resize INTER_LINEAR to 224x224, cv2.flip, BGR -> RGB; cv2.setNumThreads(1)
               in each worker
  dl_pil_f32   dl_pil_u8 with ToTensor() + Normalize() in the workers (float32 NCHW pinned batches)
  dl_cv2_f32   dl_cv2_u8 normalised to float32 NCHW in the workers
  tv_gpu       torchvision.io.decode_jpeg(list of 256 file tensors, device="cuda") (nvJPEG, files
               read in the timed epoch with torchvision.io.read_file), then per image on the GPU:
               the crop drawn as torchvision draws it (a view), F.interpolate bilinear to 224x224
               (antialias off, as imgpipe's and cv2's INTER_LINEAR), into the batch; flips and the
               normalisation batched (one flip of the flipped images, one multiply-add)
  tv_gpu_v2    the same decode, then torchvision.transforms.v2 per image on the GPU, as written in
               its documentation: Compose([RandomResizedCrop(224) (antialias on, v2's default),
               RandomHorizontalFlip()]) on each uint8 image, stacked, normalised batched
  imgpipe      imgpipe.torch.Loader(--config, inputs=[CORPUS], batch.size=--batch) kept over the
               epochs, set_epoch(e) before each (needs the imgpipe package and libimgpipe_c.so:
               PYTHONPATH, IMGPIPE_C_LIBRARY; on the GPU machine under .gpu/run for the bundled
               libraries; --cases imgpipe alone then imports no cv2)
DataLoaders: --workers persistent workers (shuffle=True, drop_last=False), prefetch_factor from
--prefetch. auto (default) runs, while --budget lasts: tv_gpu, then dl_pil_u8 and dl_cv2_u8 at
the first prefetch factor and worker count; the f32 case of the faster decoder; the fastest
DataLoader at the other prefetch factors and worker counts; tv_gpu_v2. The JSON's best.dataloader names the
fastest DataLoader's settings (samples/python/train_resnet.py --dl-from reads them).

--budget: seconds this script may take (imports included); a case (or a timed epoch) that would
likely end past it is skipped, and the output and the JSON say so. The JSON is rewritten after
every case. Lines starting "W3PEER" are the figures; w3.sh reads the JSON.
"""
import argparse, gc, json, math, os, platform, random, statistics, sys, time

T0 = time.monotonic()  # --budget counts from here (imports included)

import numpy as np
import torch
import torch.nn.functional as F

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SIZE = 224
SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# --- the crop, as torchvision.transforms.RandomResizedCrop.get_params draws it ------------

def rrc_params(h, w, rng, scale=SCALE, ratio=RATIO):
    """(top, left, height, width) of torchvision's RandomResizedCrop box for an h x w image;
    rng: a random.Random (the DataLoader seeds each worker's `random` module anew)."""
    area = h * w
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
        cw = int(round(math.sqrt(target * aspect)))
        ch = int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, h - ch), rng.randint(0, w - cw), ch, cw
    in_ratio = w / h  # fallback: the central crop, its ratio clamped into the range
    if in_ratio < min(ratio):
        cw, ch = w, int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        ch, cw = h, int(round(h * max(ratio)))
    else:
        cw, ch = w, h
    return (h - ch) // 2, (w - cw) // 2, ch, cw


class Affine:
    """(x/255 - mean)/std = x * scale + bias per channel, on the device, into a new float32 batch."""

    def __init__(self, device):
        std = torch.tensor(STD, dtype=torch.float32)
        self.scale = (1.0 / (255.0 * std)).view(1, 3, 1, 1).to(device)
        self.bias = (-torch.tensor(MEAN, dtype=torch.float32) / std).view(1, 3, 1, 1).to(device)

    def __call__(self, x, memory_format=torch.contiguous_format):
        """x: (N, 3, H, W), any dtype and strides -> float32 (N, 3, H, W) in memory_format."""
        out = torch.empty(x.shape, dtype=torch.float32, device=x.device, memory_format=memory_format)
        return torch.addcmul(self.bias, x.float(), self.scale, out=out)


# --- DataLoader peers (ImageFolder) ----------------------------------------------------

def cv2_loader(path):
    import cv2
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise OSError(f"cv2 cannot read {path}")
    return img


class Cv2Transform:
    """BGR HWC uint8 -> RandomResizedCrop(224) + flip 0.5 -> RGB: HWC uint8 tensor, or CHW float32 normalised."""

    def __init__(self, normalize):
        self.normalize = normalize
        self.scale = (1.0 / (255.0 * np.array(STD, np.float32))).astype(np.float32)
        self.bias = (-np.array(MEAN, np.float32) / np.array(STD, np.float32)).astype(np.float32)

    def __call__(self, img):
        import cv2
        top, left, ch, cw = rrc_params(img.shape[0], img.shape[1], random)
        out = cv2.resize(img[top:top + ch, left:left + cw], (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
        if random.random() < 0.5:
            out = cv2.flip(out, 1)
        out = cv2.cvtColor(out, cv2.COLOR_BGR2RGB)
        if self.normalize:
            x = out.astype(np.float32) * self.scale + self.bias
            return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))
        return torch.from_numpy(out)


class PilHwc:
    """PIL RGB image -> HWC uint8 tensor (the bytes as they are; the GPU permutes)."""

    def __call__(self, img):
        return torch.from_numpy(np.asarray(img, dtype=np.uint8).copy())


def pil_transform(normalize):
    import torchvision.transforms as T
    crop = [T.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO), T.RandomHorizontalFlip()]
    tail = [T.ToTensor(), T.Normalize(MEAN, STD)] if normalize else [PilHwc()]
    return T.Compose(crop + tail)


def worker_init(_worker_id):
    try:
        import cv2
        cv2.setNumThreads(1)
    except ImportError:
        pass


def make_dataloader(corpus, decoder, normalize, workers, prefetch, batch, pin, drop_last=False):
    """torchvision ImageFolder over CORPUS in a DataLoader. decoder: pil | cv2; normalize: cpu
    (float32 CHW batches) | gpu (HWC uint8 batches, to_device() normalises)."""
    from torchvision.datasets import ImageFolder
    cpu = normalize == "cpu"
    if decoder == "pil":
        ds = ImageFolder(corpus, transform=pil_transform(cpu))
    elif decoder == "cv2":
        ds = ImageFolder(corpus, transform=Cv2Transform(cpu), loader=cv2_loader)
    else:
        raise ValueError(f"decoder {decoder!r}: pil or cv2")
    return torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, pin_memory=pin,
                                       drop_last=drop_last, persistent_workers=workers > 0,
                                       prefetch_factor=prefetch if workers > 0 else None,
                                       worker_init_fn=worker_init if workers > 0 else None)


def to_device(x, y, normalize, affine, device, memory_format=torch.contiguous_format):
    """A DataLoader batch -> (float32 (N, 3, 224, 224) normalised on the device, int64 labels there)."""
    nb = device.type == "cuda"
    x = x.to(device, non_blocking=nb)
    y = y.to(device, non_blocking=nb)
    if normalize == "cpu":  # already (N, 3, H, W) float32 normalised
        return (x if memory_format == torch.contiguous_format else x.contiguous(memory_format=memory_format)), y
    return affine(x.permute(0, 3, 1, 2), memory_format), y  # NHWC uint8 -> NCHW float32


# --- torchvision's GPU path -------------------------------------------------------------

def list_images(corpus):
    """ImageFolder's listing: (path, class index) sorted by class then path."""
    classes = sorted(e.name for e in os.scandir(corpus) if e.is_dir())
    items = []
    for k, c in enumerate(classes):
        for root, _, names in sorted(os.walk(os.path.join(corpus, c), followlinks=True)):
            items += [(os.path.join(root, n), k) for n in sorted(names) if n.lower().endswith((".jpg", ".jpeg"))]
    return items, classes


class TorchvisionGpu:
    """decode_jpeg(list, device="cuda") per batch, crops and resizes per image on the GPU."""

    def __init__(self, items, batch, device, affine, v2=False):
        from torchvision.io import ImageReadMode, decode_jpeg
        try:
            from torchvision.io import read_file
        except ImportError:  # a torchvision without it: the bytes as a uint8 tensor, as read_file gives them
            def read_file(path):
                with open(path, "rb") as fh:
                    return torch.frombuffer(bytearray(fh.read()), dtype=torch.uint8)
        self.decode_jpeg, self.read_file, self.mode = decode_jpeg, read_file, ImageReadMode.RGB
        self.items, self.batch, self.device, self.affine = items, batch, device, affine
        self.v2 = None
        if v2:
            from torchvision.transforms import v2 as T2
            self.v2 = T2.Compose([T2.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO, antialias=True),
                                  T2.RandomHorizontalFlip()])
        self.labels = torch.tensor([k for _, k in items], dtype=torch.int64)
        import torchvision  # decode_jpeg takes a list (one batched nvJPEG call) from torchvision 0.19 on
        self.batched = tuple(int(v) for v in torchvision.__version__.split("+")[0].split(".")[:2]) >= (0, 19)

    def decode(self, datas):
        if self.batched:
            return self.decode_jpeg(datas, mode=self.mode, device=self.device)
        return [self.decode_jpeg(d, mode=self.mode, device=self.device) for d in datas]

    def epoch(self, e):
        rng = random.Random(1000 + e)
        order = torch.randperm(len(self.items), generator=torch.Generator().manual_seed(e)).tolist()
        for i in range(0, len(order), self.batch):
            idx = order[i:i + self.batch]
            imgs = self.decode([self.read_file(self.items[k][0]) for k in idx])
            if self.v2 is not None:  # v2's own draws (torch's generator), per image
                x = self.affine(torch.stack([self.v2(img) for img in imgs]))
                yield x, self.labels[idx].to(self.device, non_blocking=True)
                continue
            out = torch.empty((len(idx), 3, SIZE, SIZE), dtype=torch.float32, device=self.device)
            flips = []
            for j, img in enumerate(imgs):
                top, left, ch, cw = rrc_params(img.shape[1], img.shape[2], rng)
                out[j] = F.interpolate(img[None, :, top:top + ch, left:left + cw].float(), size=(SIZE, SIZE),
                                       mode="bilinear", align_corners=False, antialias=False)[0]
                if rng.random() < 0.5:
                    flips.append(j)
            if flips:
                f = torch.tensor(flips, device=self.device)
                out[f] = out[f].flip(-1)
            x = torch.addcmul(self.affine.bias, out, self.affine.scale, out=out)  # in place: out holds 0..255
            yield x, self.labels[idx].to(self.device, non_blocking=True)


# --- measurement -------------------------------------------------------------------------

def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def one_epoch(batches, device):
    """Iterates one epoch of (x, y) batches; -> (images, seconds, labels_ok)."""
    n, ok = 0, True
    sync(device)
    t0 = time.perf_counter()
    for x, y in batches:
        n += x.shape[0]
        ok = ok and x.dtype == torch.float32 and tuple(x.shape[1:]) == (3, SIZE, SIZE) and y.shape[0] == x.shape[0]
    sync(device)
    return n, time.perf_counter() - t0, ok


class Bench:
    def __init__(self, a, images):
        self.a, self.images = a, images
        self.deadline = T0 + a.budget if a.budget else float("inf")
        self.results = {"cases": {}, "skipped": [], "best": {}}

    def left(self):
        return self.deadline - time.monotonic()

    def save(self):
        self.results["elapsed_s"] = time.monotonic() - T0
        if self.a.json:
            tmp = self.a.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.results, f, indent=1)
            os.replace(tmp, self.a.json)

    def skip(self, msg):
        self.results["skipped"].append(msg)
        print(f"W3PEER skipped: {msg}", flush=True)
        self.save()

    def case(self, name, setup, epoch_of, est_epoch_s, info, close=None):
        """setup() -> state; epoch_of(state, e) -> iterable of (x, y). One warm-up epoch, then up to
        --epochs timed ones while the budget lasts."""
        if self.left() < 2.2 * est_epoch_s + 3:
            self.skip(f"{name}: {self.left():.0f} s left, an epoch takes ~{est_epoch_s:.1f} s (budget)")
            return None
        rec = dict(info, epochs=[], images_per_s_epochs=[])
        state = None
        try:
            t_setup = time.perf_counter()
            state = setup()
            rec["setup_s"] = time.perf_counter() - t_setup
            n, s, ok = one_epoch(epoch_of(state, 0), self.dev)
            rec["warmup"] = {"images": n, "seconds": s, "images_per_s": n / s}
            last = s
            for e in range(1, self.a.epochs + 1):
                if self.left() < 1.3 * last:
                    rec["stopped"] = f"stopped after {e - 1} of {self.a.epochs} timed epochs (budget)"
                    break
                n, last, ok2 = one_epoch(epoch_of(state, e), self.dev)
                ok = ok and ok2
                rec["epochs"].append({"epoch": e, "images": n, "seconds": last})
                rec["images_per_s_epochs"].append(n / last)
                if n != self.images:
                    rec.setdefault("warnings", []).append(f"epoch {e}: {n} images, the corpus has {self.images}")
            if not ok:
                rec.setdefault("warnings", []).append("a batch was not float32 (N, 3, 224, 224) with N labels")
            rates = rec["images_per_s_epochs"]
            if rates:
                rec["images_per_s"] = statistics.median(rates)
                rec["epoch_s_last"] = last
            print(f"W3PEER {name:28s} " + (f"{rec['images_per_s']:8.0f} img/s  epochs {[round(r) for r in rates]}"
                                           if rates else "no timed epoch (budget)")
                  + f"  (warm-up {rec['warmup']['images_per_s']:.0f}; set-up {rec['setup_s']:.1f} s)"
                  + (f"  {rec['stopped']}" if "stopped" in rec else ""), flush=True)
        except Exception as e:  # report it, go on with the next case
            rec["error"] = repr(e)
            print(f"W3PEER {name:28s} failed: {e!r}", flush=True)
        finally:
            if close is not None and state is not None:
                try:
                    close(state)
                except Exception:
                    pass
            del state
            gc.collect()
        self.results["cases"][name] = rec
        self.save()
        return rec

    # the cases
    def dataloader(self, decoder, normalize, prefetch, workers, est):
        name = f"dl_{decoder}_{'u8' if normalize == 'gpu' else 'f32'}_w{workers}_p{prefetch}"
        pin = self.dev.type == "cuda"
        info = {"peer": "dataloader", "decoder": decoder, "normalize": normalize, "workers": workers,
                "prefetch_factor": prefetch, "pin_memory": pin, "persistent_workers": workers > 0,
                "batch": self.a.batch, "cv2_threads_per_worker": 1 if decoder == "cv2" else None}

        def setup():
            return make_dataloader(self.a.corpus, decoder, normalize, workers, prefetch, self.a.batch, pin)

        def epoch_of(dl, _e):
            return (to_device(x, y, normalize, self.affine, self.dev) for x, y in dl)

        return name, self.case(name, setup, epoch_of, est, info)

    def tv_gpu(self, items, est, v2=False):
        info = {"peer": "torchvision_gpu", "decode_batch": self.a.batch, "read": "each epoch (read_file)",
                "resize": "per image, transforms.v2 RandomResizedCrop (antialias) + RandomHorizontalFlip" if v2
                else "per image, F.interpolate bilinear, antialias off"}
        return self.case("tv_gpu_v2" if v2 else "tv_gpu",
                         lambda: TorchvisionGpu(items, self.a.batch, self.dev, self.affine, v2),
                         lambda tv, e: tv.epoch(e), est, info)

    def imgpipe(self, est):
        try:
            import imgpipe.torch
        except ImportError:  # not on PYTHONPATH: the source tree's package (IMGPIPE_C_LIBRARY names the library)
            sys.path.insert(0, os.path.join(ROOT, "python"))
            import imgpipe.torch
        info = {"peer": "imgpipe_loader", "config": self.a.config, "kept": True, "set_epoch": True}
        reports = []

        def setup():
            return imgpipe.torch.Loader(self.a.config, inputs=[self.a.corpus],
                                        device=None if self.dev.type == "cuda" else "cpu",
                                        **{"batch.size": self.a.batch})

        def epoch_of(loader, e):
            loader.set_epoch(e)
            yield from loader
            r = loader.report()
            reports.append({k: r.get(k) for k in ("epoch", "images_per_s", "setup_s", "wall_s", "backend")}
                           | {"delivered": r["inputs"]["delivered"], "failed": r["inputs"]["failed"],
                              "classes": len(r.get("classes", [])), "decode": {k: r.get("decode", {}).get(k)
                                                                                for k in ("where", "gpu", "cpu")}})

        rec = self.case("imgpipe_loader", setup, epoch_of, est, info, close=lambda lo: lo.close())
        if rec is not None:
            rec["reports"] = reports
            self.save()
        return rec


def rate(rec):
    return (rec or {}).get("images_per_s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--cases", default="auto", help="auto, or a comma list of: dl_pil_u8 dl_cv2_u8 dl_pil_f32 "
                                                    "dl_cv2_f32 tv_gpu imgpipe")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs per case, after one warm-up epoch")
    ap.add_argument("--workers", default=str(os.cpu_count() or 2),
                    help="DataLoader workers, or a comma list (the first for every case, the others tried at the best)")
    ap.add_argument("--prefetch", default="2,4", help="prefetch_factor values (the first for every case)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--budget", type=float, default=0, help="seconds this script may take (0: no limit)")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "w3.yaml"), help="imgpipe's config (imgpipe)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tv-on-cpu", action="store_true", help="run the tv_gpu cases on --device cpu (a smoke test)")
    ap.add_argument("--json")
    a = ap.parse_args()
    a.corpus = os.path.abspath(a.corpus)
    workers = [int(w) for w in a.workers.split(",") if w.strip()]
    prefetch = [int(p) for p in a.prefetch.split(",") if p.strip()]
    dev = torch.device(a.device)

    items, classes = list_images(a.corpus)
    if not items:
        sys.exit(f"w3_peers.py: no JPEGs in class folders under {a.corpus}")
    nbytes = 0
    for path, _ in items:  # the page cache warm
        with open(path, "rb") as fh:
            nbytes += len(fh.read())
    torch.manual_seed(0)
    random.seed(0)
    if dev.type == "cuda":
        torch.zeros(1, device=dev)
        sync(dev)
    b = Bench(a, len(items))
    b.dev, b.affine = dev, Affine(dev)
    import torchvision
    cv2_version = pil_version = None
    if a.cases != "imgpipe":  # imgpipe's case alone runs under the GPU bundle's libraries: no cv2 there
        try:
            import cv2
            cv2_version = cv2.__version__
        except ImportError:
            pass
        import PIL
        pil_version = PIL.__version__
    b.results.update(images=len(items), classes=len(classes), corpus=a.corpus, mean_file_kb=nbytes / len(items) / 1e3,
                     output={"batch": a.batch, "size": [SIZE, SIZE], "dtype": "float32", "layout": "NCHW",
                             "device": str(dev), "augment": "RandomResizedCrop(224), RandomHorizontalFlip(0.5)"},
                     env={"python": platform.python_version(), "torch": torch.__version__,
                          "torchvision": torchvision.__version__, "cv2": cv2_version, "PIL": pil_version,
                          "numpy": np.__version__, "cpu_count": os.cpu_count(),
                          "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None},
                     settings={"cases": a.cases, "epochs": a.epochs, "workers": workers, "prefetch": prefetch,
                               "budget_s": a.budget or None})
    print(f"W3 peers: {len(items)} images in {len(classes)} classes ({nbytes / len(items) / 1e3:.0f} kB average) "
          f"from {a.corpus}; torch {torch.__version__}, torchvision {torchvision.__version__}, cv2 {cv2_version}, "
          f"PIL {pil_version}, {os.cpu_count()} CPUs, {b.results['env']['gpu'] or dev}", flush=True)

    est_dl = len(items) / 1500 + 4  # seconds an epoch, until one is measured
    dl = {}  # name -> record

    def run_dl(decoder, normalize, p, w):
        nonlocal est_dl
        if decoder == "cv2" and cv2_version is None:
            b.skip("dl_cv2: cv2 is not importable here")
            return
        name, rec = b.dataloader(decoder, normalize, p, w, est_dl * (1.6 if normalize == "cpu" else 1.0))
        if rec is not None:
            dl[name] = rec
            if "epoch_s_last" in rec:
                est_dl = rec["epoch_s_last"] + 1

    cases = a.cases.split(",") if a.cases != "auto" else ["tv_gpu", "dl_pil_u8", "dl_cv2_u8", "f32_of_best",
                                                           "tune_best", "tv_gpu_v2"]
    for c in cases:
        if c in ("dl_pil_u8", "dl_cv2_u8", "dl_pil_f32", "dl_cv2_f32"):
            _, decoder, kind = c.split("_")
            run_dl(decoder, "gpu" if kind == "u8" else "cpu", prefetch[0], workers[0])
        elif c == "f32_of_best":
            u8 = [r for r in dl.values() if r.get("normalize") == "gpu" and rate(r)]
            if u8:
                best = max(u8, key=rate)
                run_dl(best["decoder"], "cpu", prefetch[0], workers[0])
        elif c == "tune_best":
            ok = [r for r in dl.values() if rate(r)]
            if ok:
                best = max(ok, key=rate)
                for p in prefetch[1:]:
                    run_dl(best["decoder"], best["normalize"], p, workers[0])
                for w in workers[1:]:
                    run_dl(best["decoder"], best["normalize"], prefetch[0], w)
        elif c in ("tv_gpu", "tv_gpu_v2"):
            if dev.type != "cuda" and not a.tv_on_cpu:
                b.skip(f"{c}: no CUDA device")
            else:
                b.tv_gpu(items, len(items) / 2000 + 3, v2=c == "tv_gpu_v2")
        elif c == "imgpipe":
            b.imgpipe(len(items) / 3000 + 4)
        else:
            sys.exit(f"w3_peers.py: unknown case {c!r}")

    tv = {n: r for n, r in b.results["cases"].items() if r.get("peer") == "torchvision_gpu" and rate(r)}
    if tv:
        name = max(tv, key=lambda n: rate(tv[n]))
        b.results["best"]["torchvision"] = {"case": name, "images_per_s": rate(tv[name])}
        print(f"W3PEER best torchvision GPU: {name} {rate(tv[name]):.0f} img/s", flush=True)
    ok = {n: r for n, r in dl.items() if rate(r)}
    if ok:
        name = max(ok, key=lambda n: rate(ok[n]))
        r = ok[name]
        b.results["best"]["dataloader"] = {"case": name, "images_per_s": rate(r), "decoder": r["decoder"],
                                           "normalize": r["normalize"], "workers": r["workers"],
                                           "prefetch_factor": r["prefetch_factor"]}
        print(f"W3PEER best DataLoader: {name} {rate(r):.0f} img/s ({r['decoder']} decode, normalised on the "
              f"{'GPU' if r['normalize'] == 'gpu' else 'CPU'}, {r['workers']} workers, prefetch_factor "
              f"{r['prefetch_factor']})", flush=True)
    b.save()


if __name__ == "__main__":
    main()
