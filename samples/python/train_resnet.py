#!/usr/bin/env python3
"""Trains torchvision's ResNet-50 from random weights on the W3 corpus and reports images/s of
training for each feeder: imgpipe's Loader, the best PyTorch DataLoader of the W3 peers, and
synthetic batches already on the GPU (the model's ceiling, no input pipeline at all).

    export PYTHONPATH=$PWD/build/python          # or IMGPIPE_C_LIBRARY=... PYTHONPATH=$PWD/python
    python3 samples/python/train_resnet.py CORPUS [--feeders synthetic,dataloader,imgpipe]
        [--steps 300] [--warmup 30] [--seconds 0] [--batch 256] [--amp bf16|fp16|off]
        [--lr 0.1] [--config configs/w3.yaml] [--dl-from w3_peers.json | --dl-decoder pil|cv2
        --dl-normalize gpu|cpu --dl-workers 16 --dl-prefetch 2] [--json OUT [--json-merge]]

CORPUS: class folders (CORPUS/CLASS/*.jpg), as samples/bench/w3.sh makes it; the labels are the
class folders' indices, sorted by name, the same from ImageFolder and from imgpipe's
input.labels: folders (configs/w3.yaml).

Each feeder trains a new ResNet-50 (torchvision.models.resnet50, 1000 classes, random weights,
channels_last) with SGD (momentum 0.9, weight decay 1e-4, --lr), cross-entropy, mixed precision
(--amp: bf16 autocast; fp16 autocast with a GradScaler; off: float32), batches of --batch
224x224 images, torch.backends.cudnn.benchmark on. The feeders go over the corpus epoch after
epoch (imgpipe: one kept Loader, set_epoch(e) before each; the DataLoader: persistent workers,
shuffled), a last partial batch dropped (a new shape would autotune again), each batch moved (if not already there) to the GPU, normalised and made channels_last
inside the timed loop. The first --warmup steps (cuDNN's autotuning, worker and pipeline start)
are not timed; then torch.cuda.synchronize(), the clock starts, --steps steps run (or fewer when
--seconds of them have passed), torch.cuda.synchronize(), the clock stops: images/s = images of
the timed steps / those seconds. host_wait_s: the time the training loop spent waiting for the
next batch (a feeder that keeps up makes it small).

  synthetic   one random batch made on the GPU before timing, used for every step
  dataloader  samples/bench/w3_peers.py's DataLoader (ImageFolder, RandomResizedCrop(224),
              RandomHorizontalFlip, PIL or cv2 decode) at --dl-* settings, or at the best the
              W3 peers measured (--dl-from: their JSON's best.dataloader)
  imgpipe     imgpipe.torch.Loader(--config, inputs=[CORPUS], batch.size=--batch) (configs/w3.yaml:
              the same augmentation on imgpipe's routes)

Prints one line per feeder and the ratios imgpipe/synthetic and dataloader/synthetic; --json OUT
writes them (--json-merge: into OUT's feeders when it exists, so that feeders run in separate
processes, e.g. imgpipe's under the GPU bundle's .gpu/run, end up in one file).
"""
import argparse, contextlib, gc, json, os, platform, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_peers_module():
    sys.path.insert(0, os.path.join(ROOT, "samples", "bench"))
    import w3_peers
    return w3_peers


def synthetic_batches(torch, batch, device, num_classes):
    x = torch.randn(batch, 3, 224, 224, device=device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, num_classes, (batch,), device=device)
    while True:
        yield x, y


def dataloader_batches(torch, a, device, settings, state):
    peers = load_peers_module()
    affine = peers.Affine(device)
    dl = peers.make_dataloader(a.corpus, settings["decoder"], settings["normalize"], settings["workers"],
                               settings["prefetch_factor"], a.batch, device.type == "cuda", drop_last=True)
    state["close"] = lambda: state.pop("dl", None)
    state["dl"] = dl
    while True:
        for x, y in dl:
            yield peers.to_device(x, y, settings["normalize"], affine, device, torch.channels_last)
        state["epochs"] = state.get("epochs", 0) + 1


def imgpipe_batches(torch, a, device, state):
    try:
        import imgpipe.torch
    except ImportError:  # not on PYTHONPATH: the source tree's package (IMGPIPE_C_LIBRARY names the library)
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import imgpipe.torch
    loader = imgpipe.torch.Loader(a.config, inputs=[a.corpus], device=None if device.type == "cuda" else "cpu",
                                  **{"batch.size": a.batch, "batch.drop_last": True})
    state["close"] = loader.close
    e = 0
    while True:
        loader.set_epoch(e)
        for x, y in loader:
            yield x.contiguous(memory_format=torch.channels_last), y
        r = loader.report()
        state.setdefault("reports", []).append({"epoch": r.get("epoch"), "delivered": r["inputs"]["delivered"],
                                                "failed": r["inputs"]["failed"], "images_per_s": r.get("images_per_s"),
                                                "classes": len(r.get("classes", []))})
        e += 1
        state["epochs"] = e


def train(torch, a, device, batches, num_classes):
    """Warm-up steps, then timed steps; -> dict of the figures."""
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet50(num_classes=num_classes).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
    crit = torch.nn.CrossEntropyLoss()
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.amp)
    use_amp = amp_dtype is not None and device.type == "cuda"
    scaler = None
    if a.amp == "fp16" and device.type == "cuda":
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
    model.train()

    def step(x, y):
        with torch.autocast(device_type="cuda", dtype=amp_dtype) if use_amp else contextlib.nullcontext():
            loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    it = iter(batches)
    t_start = time.perf_counter()
    loss = None
    for _ in range(a.warmup):
        x, y = next(it)
        loss = step(x, y)
    sync()
    warmup_s = time.perf_counter() - t_start
    first_loss = round(float(loss), 4) if loss is not None else None
    images, steps, wait = 0, 0, 0.0
    t0 = time.perf_counter()
    stop_at = t0 + a.seconds if a.seconds > 0 else float("inf")
    while steps < a.steps and time.perf_counter() < stop_at:
        tw = time.perf_counter()
        x, y = next(it)
        wait += time.perf_counter() - tw
        loss = step(x, y)
        images += x.shape[0]
        steps += 1
    sync()
    seconds = time.perf_counter() - t0
    last_loss = round(float(loss), 4) if loss is not None else None
    return {"steps": steps, "images": images, "seconds": seconds, "images_per_s": images / seconds if seconds else 0.0,
            "host_wait_s": wait, "warmup_steps": a.warmup, "warmup_s": warmup_s, "loss_after_warmup": first_loss,
            "loss_last": last_loss, "stopped_by": "steps" if steps >= a.steps else "seconds"}


def dl_settings(a):
    s = {"decoder": a.dl_decoder, "normalize": a.dl_normalize, "workers": a.dl_workers,
         "prefetch_factor": a.dl_prefetch, "from": "arguments"}
    if a.dl_from:
        try:
            best = json.load(open(a.dl_from))["best"]["dataloader"]
            s = {k: best[k] for k in ("decoder", "normalize", "workers", "prefetch_factor")}
            s.update({"from": f"{a.dl_from}: {best['case']} ({best['images_per_s']:.0f} img/s in W3)"})
        except (OSError, ValueError, KeyError) as e:
            print(f"train_resnet: --dl-from {a.dl_from}: no best DataLoader there ({e!r}); the --dl-* settings",
                  flush=True)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--feeders", default="synthetic,dataloader,imgpipe")
    ap.add_argument("--steps", type=int, default=300, help="timed steps per feeder")
    ap.add_argument("--warmup", type=int, default=30, help="untimed steps first, per feeder")
    ap.add_argument("--seconds", type=float, default=0, help="stop a feeder's timed steps after this long (0: no limit)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--amp", choices=["bf16", "fp16", "off"], default="bf16")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--classes", type=int, default=1000, help="the model's outputs (ImageNet's 1000)")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "w3.yaml"), help="imgpipe's config")
    ap.add_argument("--dl-from", help="w3_peers.py's JSON: its best DataLoader's settings")
    ap.add_argument("--dl-decoder", choices=["pil", "cv2"], default="pil")
    ap.add_argument("--dl-normalize", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--dl-workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--dl-prefetch", type=int, default=2)
    ap.add_argument("--device", default=None, help="cuda (default when there is one) or cpu (a smoke test)")
    ap.add_argument("--json")
    ap.add_argument("--json-merge", action="store_true", help="add to OUT's feeders instead of replacing the file")
    a = ap.parse_args()
    a.corpus = os.path.abspath(a.corpus)
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"train_resnet: PyTorch and torchvision are needed ({e})", file=sys.stderr)
        return 2
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    feeders = [f.strip() for f in a.feeders.split(",") if f.strip()]
    for f in feeders:
        if f not in ("synthetic", "dataloader", "imgpipe"):
            ap.error(f"unknown feeder {f!r}")
    classes = sorted(e.name for e in os.scandir(a.corpus) if e.is_dir()) if os.path.isdir(a.corpus) else []
    if "synthetic" not in feeders or len(feeders) > 1:
        if not classes:
            print(f"train_resnet: {a.corpus} has no class folders", file=sys.stderr)
            return 2
    if len(classes) > a.classes:
        ap.error(f"{len(classes)} class folders, more than the model's {a.classes} outputs")

    out = {"feeders": {}}
    if a.json and a.json_merge and os.path.exists(a.json):
        try:
            out = json.load(open(a.json))
            out.setdefault("feeders", {})
        except ValueError:
            pass
    out.update(corpus=a.corpus, classes_in_corpus=len(classes),
               settings={"model": "resnet50", "num_classes": a.classes, "batch": a.batch, "amp": a.amp,
                         "optimizer": f"SGD lr {a.lr} momentum 0.9 weight_decay 1e-4", "channels_last": True,
                         "cudnn_benchmark": device.type == "cuda", "steps": a.steps, "warmup": a.warmup,
                         "seconds": a.seconds or None},
               env={"python": platform.python_version(), "torch": torch.__version__,
                    "torchvision": torchvision.__version__, "cpu_count": os.cpu_count(),
                    "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None})

    def save():
        if a.json:
            tmp = a.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(out, f, indent=1)
            os.replace(tmp, a.json)

    for f in feeders:
        state = {}
        rec = {}
        t = time.perf_counter()
        try:
            if f == "synthetic":
                batches = synthetic_batches(torch, a.batch, device, a.classes)
            elif f == "dataloader":
                rec["dataloader"] = s = dl_settings(a)
                batches = dataloader_batches(torch, a, device, s, state)
            else:
                rec["config"] = a.config
                batches = imgpipe_batches(torch, a, device, state)
            rec.update(train(torch, a, device, batches, a.classes))
            rec["epochs_done"] = state.get("epochs", 0)
            if "reports" in state:
                rec["imgpipe_reports"] = state["reports"][-3:]
            print(f"TRAIN {f:10s} {rec['images_per_s']:8.0f} img/s  ({rec['steps']} steps of {a.batch} in "
                  f"{rec['seconds']:.1f} s after {a.warmup} warm-up steps; waited {rec['host_wait_s']:.2f} s for "
                  f"batches; loss {rec['loss_after_warmup']} -> {rec['loss_last']})", flush=True)
        except Exception as e:  # report it, go on with the next feeder
            rec["error"] = repr(e)
            print(f"TRAIN {f:10s} failed: {e!r}", flush=True)
        finally:
            batches = None
            close = state.get("close")
            if close is not None:
                try:
                    close()
                except Exception:
                    pass
            state.clear()
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
        rec["wall_s"] = time.perf_counter() - t
        out["feeders"][f] = rec
        save()

    fs = out["feeders"]
    syn = fs.get("synthetic", {}).get("images_per_s")
    out["ratios"] = {}
    for f in ("imgpipe", "dataloader"):
        v = fs.get(f, {}).get("images_per_s")
        if syn and v:
            out["ratios"][f"{f}/synthetic"] = v / syn
            print(f"TRAIN ratio {f}/synthetic: {v / syn:.3f} ({v:.0f} / {syn:.0f} img/s)", flush=True)
    ip, dl = fs.get("imgpipe", {}).get("images_per_s"), fs.get("dataloader", {}).get("images_per_s")
    if ip and dl:
        out["ratios"]["imgpipe/dataloader"] = ip / dl
        print(f"TRAIN ratio imgpipe/dataloader: {ip / dl:.3f}", flush=True)
    save()
    return 0 if all("error" not in fs[f] for f in feeders) else 1


if __name__ == "__main__":
    sys.exit(main())
