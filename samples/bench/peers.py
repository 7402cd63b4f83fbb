#!/usr/bin/env python3
"""W1 peers, on the same corpus as imgpipe's W1 run: what a user would run instead.

  python3 samples/bench/peers.py CORPUS_DIR [--workers 15] [--json out.json]

1. PyTorch DataLoader, cv2 decode + resize 640x640 (u8), pin_memory, normalise on GPU
2. the same without pin_memory
3. the same, normalising to float32 NCHW on the CPU (in the workers)
4. torchvision decode_jpeg(device="cuda") (nvJPEG) + resize + normalise on GPU
Throughput = images delivered to the GPU per second, end to end, including the
final synchronise; page cache warm (one untimed pass first). Median of 3 runs.
"""
import argparse, glob, json, os, statistics, time

import cv2
import numpy as np
import torch
import torch.nn.functional as F

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


class U8Set(torch.utils.data.Dataset):
    def __init__(self, files, cpu_normalize=False):
        self.files, self.cpu_normalize = files, cpu_normalize

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        img = cv2.imread(self.files[i], cv2.IMREAD_COLOR)
        img = cv2.resize(img, (640, 640), interpolation=cv2.INTER_LINEAR)
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        if self.cpu_normalize:
            x = (img.astype(np.float32) / 255.0 - np.array([0.485, 0.456, 0.406], np.float32)) / np.array(
                [0.229, 0.224, 0.225], np.float32)
            return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))
        return torch.from_numpy(img)


def run_loader(files, workers, pin, cpu_normalize):
    dl = torch.utils.data.DataLoader(U8Set(files, cpu_normalize), batch_size=32, num_workers=workers,
                                     pin_memory=pin, shuffle=False, persistent_workers=False, prefetch_factor=4)
    mean, std = MEAN.cuda(), STD.cuda()
    n = 0
    t0 = time.perf_counter()
    for b in dl:
        b = b.cuda(non_blocking=pin)
        if not cpu_normalize:
            b = ((b.permute(0, 3, 1, 2).float() / 255.0) - mean) / std
        n += b.shape[0]
    torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def run_nvjpeg(files):
    from torchvision.io import decode_jpeg, read_file
    mean, std = MEAN.cuda(), STD.cuda()
    n = 0
    t0 = time.perf_counter()
    for i in range(0, len(files), 32):
        datas = [read_file(f) for f in files[i:i + 32]]
        imgs = decode_jpeg(datas, device="cuda")
        b = torch.stack([F.interpolate(im.unsqueeze(0).float(), size=(640, 640), mode="bilinear",
                                       align_corners=False)[0] for im in imgs])
        b = (b / 255.0 - mean) / std
        n += b.shape[0]
    torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.corpus, "*.jpg")))
    for f in files:  # warm the page cache
        open(f, "rb").read()
    torch.zeros(1).cuda()
    results = {}
    cases = [
        ("dataloader_u8_pinned_gpu_normalize", lambda: run_loader(files, a.workers, True, False)),
        ("dataloader_u8_unpinned_gpu_normalize", lambda: run_loader(files, a.workers, False, False)),
        ("dataloader_cpu_normalize_float32", lambda: run_loader(files, a.workers, True, True)),
        ("torchvision_nvjpeg_gpu", lambda: run_nvjpeg(files)),
    ]
    for name, fn in cases:
        try:
            fn()  # warm-up (workers, cuda, nvjpeg handles)
            runs = [fn() for _ in range(a.runs)]
            results[name] = {"images_per_s_median": statistics.median(runs), "runs": runs}
            print(f"{name:40s} {statistics.median(runs):8.1f} img/s  runs={[round(r, 1) for r in runs]}", flush=True)
        except Exception as e:  # report, keep going
            results[name] = {"error": repr(e)}
            print(f"{name:40s} failed: {e!r}", flush=True)
    results["images"] = len(files)
    results["workers"] = a.workers
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
