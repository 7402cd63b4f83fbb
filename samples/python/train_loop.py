#!/usr/bin/env python3
"""Trains a tiny model for a few steps on batches from imgpipe, as a DataLoader loop would:

    export PYTHONPATH=$PWD/build/python
    python3 samples/python/train_loop.py [--config configs/pipeline.yaml] [--input samples/data]
        [--steps 20] [--device auto|cpu|N]
    torchrun --nproc-per-node 2 samples/python/train_loop.py ...   # each rank its shard and GPU

imgpipe.torch.Loader yields (x, y): x the normalised batch on the GPU (zero copy, DLPack), y the
labels (int64; -1 where the inputs carry none, as the sample images: the targets are then the
sample's input index modulo 10, a stand-in task). Needs PyTorch; without it, says so and exits 2.
"""
import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "configs" / "pipeline.yaml"))
    ap.add_argument("--input", action="append", default=None)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default=None)
    ap.add_argument("--size", type=int, default=128, help="resize target (square), small for a quick run")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
    except ImportError as e:
        print(f"train_loop: PyTorch is not installed here ({e}); this sample needs it "
              "(imgpipe itself runs without: numpy.from_dlpack(batch))", file=sys.stderr)
        return 2
    import imgpipe
    import imgpipe.torch

    loader = imgpipe.torch.Loader(a.config, inputs=a.input or [str(ROOT / "samples" / "data")], device=a.device,
                                  batch={"size": 8},
                                  transform={"resize": {"width": a.size, "height": a.size}})
    model, opt, dev = None, None, None
    loss_fn = nn.CrossEntropyLoss()
    step, t0 = 0, time.perf_counter()
    while step < a.steps:
        for x, y in loader:  # one epoch; the Pipeline is kept for the next
            if model is None:
                dev = x.device
                model = nn.Sequential(nn.Conv2d(x.shape[1], 8, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)).to(dev)
                opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            if (y < 0).any():  # no labels in these inputs: a stand-in target
                y = torch.arange(x.shape[0], device=dev) % 10
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if step % 5 == 0 or step == 1:
                print(f"step {step:3d}  loss {loss.item():.4f}  batch {tuple(x.shape)} on {x.device}", flush=True)
            if step >= a.steps:
                break
    loader.stop()
    r = loader.report()
    print(f"train_loop: {step} steps in {time.perf_counter() - t0:.2f} s; last epoch: "
          f"{r['inputs']['delivered']} images, shard {r['shard']['rank']}/{r['shard']['world_size']}, "
          f"backend {r['backend']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
