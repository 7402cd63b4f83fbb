"""imgpipe batches as torch tensors for a training loop, in place of a torch DataLoader:

    loader = imgpipe.torch.Loader("configs/w1.yaml", inputs=["photos/"])
    for epoch in range(epochs):
        for x, y in loader:               # x: the batch tensor on the GPU (zero copy), y: int64 labels
            loss = criterion(model(x), y)

Each iteration over the Loader is one run (an epoch) of one kept imgpipe.Pipeline, so the GPU
decoder, staging ring and device buffers are made once. Under torchrun (or mpirun, srun) every
process takes its shard of the inputs (input.shard from RANK/WORLD_SIZE, read by the C++ side)
and the GPU of LOCAL_RANK (devices: auto). Only this module needs torch.
"""
import importlib
from typing import Any, Dict, Iterator, Optional, Tuple

from ._pipeline import ConfigSource, Device, PathLike, Pipeline


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError as e:
        raise ImportError(f"imgpipe.torch needs PyTorch, which is not importable here ({e}); "
                          "imgpipe itself works without it (numpy.from_dlpack(batch))") from e


class Loader:
    """An iterable of (tensor, labels) per batch, like a DataLoader's.

    config, inputs, device, **overrides: as imgpipe.Pipeline. shard: None takes the launcher's
    environment (RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_*: the C++ side reads them), or
    (rank, world_size) for input.shard. labels_on_device: the labels tensor on the batch's device
    (non-blocking copy) rather than the CPU.

    The tensor views the batch's memory (torch.from_dlpack: the current torch stream waits for the
    batch, and the memory returns to the pipeline when the tensor is freed, after that stream's
    work). Tensors may be kept: when they keep every staging slot, the oldest batch moves out of
    the ring at the same address (the report's memory.held_batch_copies counts these).
    """

    def __init__(self, config: ConfigSource = None, inputs: Any = None, device: Device = None,
                 shard: Optional[Tuple[int, int]] = None, labels_on_device: bool = True, **overrides: Any) -> None:
        self._torch = _torch()
        if shard is not None:
            rank, world = shard
            overrides.setdefault("input.shard", {"rank": int(rank), "world_size": int(world)})
        self.pipeline = Pipeline(config, inputs=inputs, device=device, **overrides)
        self.labels_on_device = labels_on_device

    def __iter__(self) -> Iterator[Tuple[Any, Any]]:
        torch = self._torch
        for batch in self.pipeline:
            x = torch.from_dlpack(batch)
            y = torch.tensor(batch.labels, dtype=torch.int64)
            if self.labels_on_device and getattr(x, "is_cuda", False):
                y = y.to(x.device, non_blocking=True)
            del batch  # the tensor holds the memory now
            yield x, y

    def __len__(self) -> int:
        """Batches per epoch, as a DataLoader's len (Pipeline.__len__: TypeError for videos)."""
        return len(self.pipeline)

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next iteration (as DistributedSampler.set_epoch): with input.shuffle each
        epoch has its own order, the same on every rank. Without it iterations count 0, 1, 2, ..."""
        self.pipeline.set_epoch(epoch)

    def report(self) -> Dict[str, Any]:
        """The last epoch's report (a dict): throughput per stage, inputs, shard, epoch, ..."""
        return self.pipeline.report()

    def stop(self) -> None:
        self.pipeline.stop()

    def close(self) -> None:
        self.pipeline.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
