"""imgpipe.torch.Loader: (tensor, labels) per batch, one run per epoch, sharded by the launcher's
environment. The Loader's own logic runs here against a stand-in `torch` module made of NumPy
(from_dlpack, tensor, int64), since this machine has no torch; with the real torch it runs on the
CPU tensors of the host backend (skipped, with the reason, where torch is absent). The GPU
machine's checks are python/tests/gpu/gpu_checks.py."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import SAMPLES, sample_images

FAKE_TORCH = textwrap.dedent("""
    # A stand-in for torch: what imgpipe.torch.Loader calls, made of NumPy.
    import numpy as np
    int64 = np.int64
    def from_dlpack(x):
        return np.from_dlpack(x)
    def tensor(data, dtype=None):
        return np.asarray(data, dtype=dtype)
""")

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import imgpipe.torch
    loader = imgpipe.torch.Loader(None, inputs=[sys.argv[1]], batch={"size": 3},
                                  transform={"resize": {"width": 8, "height": 8}})
    epochs = []
    for epoch in range(2):
        rows = []
        for x, y in loader:
            assert isinstance(x, np.ndarray) and x.shape[1:] == (3, 8, 8) and x.dtype == np.float32
            assert y.dtype == np.int64 and y.shape == (x.shape[0],)
            rows.append([int(x.shape[0]), [int(v) for v in y], float(x.sum())])
        epochs.append(rows)
    print(json.dumps({"epochs": epochs, "shard": loader.report()["shard"]}))
""")


def run_with_fake_torch(tmp_path, env_vars):
    (tmp_path / "torch").mkdir(exist_ok=True)
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(k, None)
    env.update(env_vars)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(SAMPLES)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_loader_yields_tensor_and_labels_per_batch_each_epoch(tmp_path):
    got = run_with_fake_torch(tmp_path, {})
    n = len(sample_images())
    first, second = got["epochs"]
    assert [r[0] for r in first] == [3] * (n // 3) + ([n % 3] if n % 3 else [])
    assert all(r[1] == [-1] * r[0] for r in first)  # no labels in these inputs
    assert first == second  # a kept pipeline: the same batches again
    assert got["shard"]["world_size"] == 1


def test_loader_under_torchrun_takes_its_shard(tmp_path):
    n = len(sample_images())
    sizes = []
    for rank in range(2):
        got = run_with_fake_torch(tmp_path, {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)})
        assert got["shard"] == {"rank": rank, "world_size": 2, "origin": "RANK/WORLD_SIZE", "remainder": "uneven",
                                "padded": 0, "dropped": 0}
        sizes.append(sum(r[0] for r in got["epochs"][0]))
    assert sizes == [len(range(0, n, 2)), len(range(1, n, 2))]


def test_loader_says_clearly_when_torch_is_missing(monkeypatch):
    import imgpipe.torch as it
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails
    with pytest.raises(ImportError, match="imgpipe.torch needs PyTorch"):
        it.Loader(None, inputs=[SAMPLES])


def test_loader_with_real_torch_on_the_host_backend():
    torch = pytest.importorskip("torch", reason="torch is not installed here (the GPU machine runs it)")
    import imgpipe.torch
    loader = imgpipe.torch.Loader(None, inputs=[SAMPLES], device="cpu", batch={"size": 4},
                                  transform={"resize": {"width": 8, "height": 8}})
    total = 0
    for x, y in loader:
        assert isinstance(x, torch.Tensor) and x.device.type == "cpu" and y.dtype == torch.int64
        total += x.shape[0]
    assert total == len(sample_images())


def test_the_train_loop_sample(source_dir):
    script = source_dir / "samples" / "python" / "train_loop.py"
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    out = subprocess.run([sys.executable, str(script), "--steps", "3", "--device", "cpu", "--size", "32"],
                         capture_output=True, text=True, timeout=300)
    if have_torch:
        assert out.returncode == 0, out.stderr
        assert "train_loop: 3 steps" in out.stdout
    else:  # says so clearly, exit 2
        assert out.returncode == 2 and "PyTorch is not installed here" in out.stderr, out.stderr
