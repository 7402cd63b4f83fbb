#!/usr/bin/env python3
"""GPU checks of the Python package (torch + a CUDA device; the GPU machine). Each test_* runs
under pytest or, where pytest is absent, through this file's own runner:

    python3 python/tests/gpu/gpu_checks.py [-k NAME]     # prints "N passed, N failed, N skipped"
    python3 -m pytest -rs python/tests/gpu/gpu_checks.py

Without torch or a GPU it prints "IMGPIPE-SKIPPED: <why>" and exits 0 (CTest's python_gpu then
counts as skipped, never passed). Needs the package importable (PYTHONPATH=build/python, or
PYTHONPATH=python with IMGPIPE_C_LIBRARY naming a bundled libimgpipe_c.so).

What it checks: torch.from_dlpack(batch) is zero-copy (same device pointer, also through
__cuda_array_interface__), the values equal the host backend's run of the same config, tensors
kept alive keep their data while later batches (and a second epoch) flow through the same slots,
and a consumer on another torch stream sees each batch whole even when its reads are delayed
(stream ordering of the wait and of the release; run it under compute-sanitizer too); the C API
leaves the calling thread's CUDA device and context as it found them.
"""
import gc
import os
import pathlib
import sys
import traceback

HERE = pathlib.Path(__file__).resolve()
SOURCE_DIR = pathlib.Path(os.environ.get("IMGPIPE_SOURCE_DIR", HERE.parents[3]))
SAMPLES = SOURCE_DIR / "samples" / "data"


def why_not():
    """The reason these checks cannot run here, or None."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not importable ({e})"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    import imgpipe
    if not imgpipe.built_with_cuda():
        return "libimgpipe_c.so was built without the CUDA backend"
    return None


if __name__ != "__main__":  # under pytest
    import pytest
    _why = why_not()
    if _why:
        pytest.skip(_why, allow_module_level=True)


class Skip(Exception):
    pass


def cfg(**extra):
    """A small W1-like config: CPU decode (libjpeg, as the host backend), 320x256, float32 NCHW."""
    c = {"input": {"paths": [str(SAMPLES)]}, "decode": {"where": "cpu"},
         "transform": {"resize": {"width": 320, "height": 256}, "dtype": "float32", "layout": "nchw"},
         "batch": {"size": 4}, "staging": {"slots": 3}}
    def merge(into, over):
        for k, v in over.items():
            if isinstance(v, dict) and isinstance(into.get(k), dict):
                merge(into[k], v)
            else:
                into[k] = v
    merge(c, extra)
    return c


def host_arrays(**extra):
    import numpy as np
    import imgpipe
    return [np.from_dlpack(b).copy() for b in imgpipe.Pipeline(cfg(**extra), device="cpu")]


def test_from_dlpack_is_zero_copy():
    import torch
    import imgpipe
    p = imgpipe.Pipeline(cfg(), device=0)
    n = 0
    for b in p:
        assert b.device == "cuda:0" and b.__dlpack_device__() == (2, 0)
        x = torch.from_dlpack(b)
        assert x.data_ptr() == b.data_ptr, (hex(x.data_ptr()), hex(b.data_ptr))
        assert x.is_cuda and x.device.index == 0 and tuple(x.shape) == b.shape and x.dtype == torch.float32
        assert x.is_contiguous()
        cai = b.__cuda_array_interface__
        assert cai["version"] == 3 and cai["data"][0] == b.data_ptr and cai["stream"] == b.stream
        y = torch.as_tensor(b, device="cuda")  # through __cuda_array_interface__
        assert y.data_ptr() == b.data_ptr
        n += len(b)
    assert n == p.report()["inputs"]["delivered"] > 0


def test_values_equal_the_host_run():
    import numpy as np
    import torch
    import imgpipe
    for variant in ({}, {"transform": {"resize": {"where": "gpu"}}},
                    {"transform": {"dtype": "float16", "layout": "nhwc"}}):
        want = host_arrays(**variant)
        got = [torch.from_dlpack(b).cpu().numpy() for b in imgpipe.Pipeline(cfg(**variant), device=0)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            # The kernels round as their CPU twins: equal but for float16's last bit at most.
            atol = 1e-5 if g.dtype == np.float32 else 2e-3
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=0, atol=atol,
                                       err_msg=f"variant {variant}")


def test_kept_tensors_keep_their_data():
    import torch
    import imgpipe
    p = imgpipe.Pipeline(cfg(batch={"size": 2}), device=0)
    kept, copies = [], []
    for b in p:
        x = torch.from_dlpack(b)
        if len(kept) < 2:  # two of the three slots stay held by tensors
            kept.append(x)
            copies.append(x.clone())
        del b, x
        gc.collect()
    for _ in p:  # a second epoch through the one free slot
        pass
    torch.cuda.synchronize()
    for k, c in zip(kept, copies):
        assert torch.equal(k, c)


def test_held_batches_and_tensors_with_two_slots():
    """Issue 29: list(p), torch tensors of every batch and every other batch kept, with 2 slots:
    held batches move out of the ring at the same address, values equal to the host run."""
    import numpy as np
    import torch
    import imgpipe
    extra = {"batch": {"size": 2}, "staging": {"slots": 2}}
    want = host_arrays(**extra)
    p = imgpipe.Pipeline(cfg(**extra), device=0)
    batches = list(p)
    tensors = [torch.from_dlpack(b) for b in batches]
    assert len(tensors) == len(want) > 2
    assert p.report()["memory"]["held_batch_copies"] >= len(want) - 2
    del batches
    p2 = imgpipe.Pipeline(cfg(**extra), device=0)
    views = [torch.from_dlpack(b) for b in p2]  # only the tensors hold the batches
    kept = [b for i, b in enumerate(imgpipe.Pipeline(cfg(**extra), device=0)) if i % 2 == 0]
    torch.cuda.synchronize()
    for got in (tensors, views):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.cpu().numpy(), w, rtol=0, atol=1e-5)
    for k, w in zip(kept, want[::2]):
        np.testing.assert_allclose(torch.from_dlpack(k).cpu().numpy(), w, rtol=0, atol=1e-5)
    # A loop that lets go of each batch moves nothing.
    p3 = imgpipe.Pipeline(cfg(**extra), device=0)
    for b in p3:
        torch.from_dlpack(b).sum()
    assert p3.report()["memory"]["held_batch_copies"] == 0


def test_consumer_on_another_stream_sees_each_batch_whole():
    import torch
    import imgpipe
    sums_host = [float(a.astype("float64").sum()) for a in host_arrays(batch={"size": 2})]
    side = torch.cuda.Stream()
    sums = []
    p = imgpipe.Pipeline(cfg(batch={"size": 2}, staging={"slots": 2}), device=0)
    with torch.cuda.stream(side):
        for b in p:
            x = torch.from_dlpack(b)  # torch passes `side`: it waits for the batch
            del b
            torch.cuda._sleep(20_000_000)  # ~10 ms on `side` before reading: a release not ordered
            sums.append(x.double().sum())  # after `side` would let the next batch overwrite x first
            del x  # the deleter releases the slot after `side`'s work so far
    torch.cuda.synchronize()
    got = [float(s) for s in sums]
    assert len(got) == len(sums_host)
    for k, (g, w) in enumerate(zip(got, sums_host)):
        assert abs(g - w) <= 1e-6 * max(1.0, abs(w)), f"batch {k}: {g} != {w}"


def test_loader_on_the_gpu():
    import torch
    import imgpipe.torch
    loader = imgpipe.torch.Loader(cfg(), device=0)
    n = 0
    for epoch in range(2):
        for x, y in loader:
            assert x.is_cuda and y.is_cuda and y.dtype == torch.int64 and y.shape[0] == x.shape[0]
            n += x.shape[0]
    assert n == 2 * loader.report()["inputs"]["delivered"]


def test_versioned_dlpack_with_torch():
    import torch
    import imgpipe
    b = next(iter(imgpipe.Pipeline(cfg(), device=0)))
    cap = b.__dlpack__(stream=torch.cuda.current_stream().cuda_stream or 1, max_version=(1, 0))
    try:
        x = torch.utils.dlpack.from_dlpack(cap)
    except Exception as e:  # an older torch takes only the classic capsule
        raise Skip(f"this torch does not take a versioned capsule ({e})")
    assert x.data_ptr() == b.data_ptr


def thread_context():
    """The CUDA context current on the calling thread (the driver's cuCtxGetCurrent, through
    ctypes): 0 when none is."""
    import ctypes
    ctx = ctypes.c_void_p()
    assert ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent(ctypes.byref(ctx)) == 0
    return ctx.value or 0


def in_fresh_thread(body):
    """Runs body() on a new thread (one with no CUDA context) and raises what it raised."""
    import threading
    errors = []

    def run():
        try:
            body()
        except BaseException:  # noqa: B902 - carried to the calling thread
            errors.append(traceback.format_exc())
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert not errors, errors[0]


def test_calls_leave_a_thread_without_a_context():
    """Issue 47 (4): a thread with no CUDA context has none after each C API call, although the
    library works on device 0 inside them. With one GPU this is what can be shown: the current
    device cannot differ from 0."""
    import imgpipe
    p = imgpipe.Pipeline(cfg(batch={"size": 4}, staging={"slots": 2}), device=0)

    def body():
        assert thread_context() == 0
        s = p.start()
        assert thread_context() == 0, "after start"
        a, b, c = s.next(), s.next(), s.next()  # with two held, the third moves the first out here
        assert thread_context() == 0, "after next"
        for x in (a, b, c):
            x.release()
            assert thread_context() == 0, "after release"
        for x in s:
            del x
        assert thread_context() == 0, "after the end"
        s.close()
        assert thread_context() == 0, "after close"
    in_fresh_thread(body)


def test_torch_current_device_is_kept():
    """Issue 47 (4): torch's current device (the last GPU) and its context stay current through
    a run on device 0, its tensors and their deleters."""
    import torch
    import imgpipe
    last = torch.cuda.device_count() - 1

    def body():
        torch.cuda.set_device(last)
        ctx = thread_context()
        p = imgpipe.Pipeline(cfg(), device=0)
        for b in p:
            x = torch.from_dlpack(b)
            del b
            assert torch.cuda.current_device() == last and thread_context() == ctx
            del x
            assert torch.cuda.current_device() == last and thread_context() == ctx
        p.close()
        assert torch.cuda.current_device() == last and thread_context() == ctx
    in_fresh_thread(body)


def test_release_after_a_stream_of_another_gpu_waits_instead():
    """Issue 47 (2): a batch of GPU 0 freed after a consumer stream of GPU 1 cannot be ordered on
    the GPU (an event of GPU 0 cannot be recorded there); its slot comes back once that stream's
    work is done, and the run goes on."""
    import torch
    import imgpipe
    if torch.cuda.device_count() < 2:
        raise Skip("fewer than 2 GPUs")
    other = torch.cuda.Stream(device=1)
    sums_host = [float(a.astype("float64").sum()) for a in host_arrays(batch={"size": 2})]
    sums = []
    p = imgpipe.Pipeline(cfg(batch={"size": 2}, staging={"slots": 2}), device=0)
    for b in p:
        x = torch.from_dlpack(b)
        with torch.cuda.stream(other):
            torch.cuda._sleep(20_000_000)
            sums.append(x.to("cuda:1", non_blocking=True).double().sum())
        b.release(after_stream=other.cuda_stream)
        del x
    torch.cuda.synchronize(1)
    got = [float(s) for s in sums]
    assert len(got) == len(sums_host)
    for k, (g, w) in enumerate(zip(got, sums_host)):
        assert abs(g - w) <= 1e-6 * max(1.0, abs(w)), f"batch {k}: {g} != {w}"


def main(argv):
    why = why_not()
    if why:
        print(f"IMGPIPE-SKIPPED: {why}")
        return 0
    only = argv[argv.index("-k") + 1] if "-k" in argv else ""
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and only in n]
    passed = failed = skipped = 0
    for name, f in tests:
        try:
            f()
            passed += 1
            print(f"PASSED {name}", flush=True)
        except Skip as e:
            skipped += 1
            print(f"SKIPPED {name}: {e}", flush=True)
        except Exception:
            failed += 1
            print(f"FAILED {name}\n{traceback.format_exc()}", flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
