"""Batches on the host backend: shapes, dtypes, layouts, samples, labels, the report, configs."""
import gc
import json

import numpy as np
import pytest

import imgpipe
from conftest import SAMPLES, sample_images


def test_shapes_dtypes_and_a_partial_last_batch(host):
    n = len(sample_images())
    p = host(batch={"size": 8}, transform={"resize": {"width": 40, "height": 30}, "dtype": "float16",
                                             "layout": "nhwc"}, staging={"slots": 4})
    batches = list(p)  # holds every batch: needs as many slots
    assert [len(b) for b in batches] == [8, 8, n - 16]
    for k, b in enumerate(batches):
        assert b.index == k
        assert b.shape == (len(b), 30, 40, 3)
        assert (b.dtype, b.layout, b.device, b.device_index) == ("float16", "nhwc", "cpu", -1)
        assert b.nbytes == np.prod(b.shape) * 2
        a = np.from_dlpack(b)
        assert a.shape == b.shape and a.dtype == np.float16
        assert a.__array_interface__["data"][0] == b.data_ptr  # zero copy
        assert b.__dlpack_device__() == (1, 0)  # kDLCPU
        assert not hasattr(b, "__cuda_array_interface__")
        assert b.stream == 0 and b.ready_event == 0


def test_drop_last(host):
    p = host(batch={"size": 8, "drop_last": True})
    assert [len(b) for b in p] == [8, 8]
    assert p.report()["inputs"]["dropped"] == len(sample_images()) - 16


def test_samples_name_each_input_in_order(host):
    paths = [str(p) for p in sample_images()]
    got = []
    for b in host(batch={"size": 6}, transform={"resize": {"width": 16, "height": 16}}):
        assert len(b.samples) == len(b)
        for s in b.samples:
            assert isinstance(s, imgpipe.Sample)
            assert s.frame == -1 and s["frame"] == -1
            assert s.route == "cpu"
            got.append((s.input_index, s.path))
    assert [g[1] for g in got] == paths
    assert [g[0] for g in got] == list(range(len(paths)))


def test_labels_one_per_sample(host):
    for b in host(batch={"size": 8}, transform={"resize": {"width": 16, "height": 16}}):
        labels = b.labels
        assert len(labels) == len(b) and all(isinstance(v, int) for v in labels)
        assert labels == [s.get("label", -1) for s in b.samples]


def test_array_protocol_and_numpy(host):
    b = next(iter(host(batch={"size": 4}, transform={"resize": {"width": 8, "height": 8}})))
    a = np.asarray(b)
    assert a.shape == (4, 3, 8, 8) and a.__array_interface__["data"][0] == b.data_ptr
    assert np.array_equal(b.numpy(), a)


def test_report_is_the_json_report(host):
    p = host(batch={"size": 8}, transform={"resize": {"width": 16, "height": 16}})
    with pytest.raises(imgpipe.UsageError):
        p.report()  # no run ended yet
    assert sum(len(b) for b in p) == len(sample_images())
    r = p.report()
    assert r["inputs"]["delivered"] == len(sample_images()) and r["inputs"]["failed"] == 0
    assert r["batches"] == 3 and r["backend"] == "host" and not r["interrupted"]
    assert {s["name"] for s in r["stages"]} >= {"read", "decode", "transform"}
    json.dumps(r)


def test_a_kept_pipeline_runs_again(host):
    p = host(batch={"size": 16}, transform={"resize": {"width": 16, "height": 16}})
    first = [np.from_dlpack(b).copy() for b in p]
    second = [np.from_dlpack(b).copy() for b in p]
    assert len(first) == len(second) == 2
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


def test_breaking_out_and_starting_again(host):
    p = host(batch={"size": 4}, transform={"resize": {"width": 16, "height": 16}})
    for b in p:
        break
    del b
    gc.collect()
    assert sum(len(b) for b in p) == len(sample_images())  # the earlier run was closed first


def test_config_forms_and_overrides(tmp_path, source_dir):
    n = len(sample_images())
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text(f"input:\n  paths: [{SAMPLES}]\nbatch:\n  size: 5\ntransform:\n"
                         "  resize: {width: 24, height: 12}\n")
    for config in (str(yaml_file), yaml_file, yaml_file.read_text(),
                   {"input": {"paths": [str(SAMPLES)]}, "batch": {"size": 5},
                    "transform.resize": {"width": 24, "height": 12}}):
        p = imgpipe.Pipeline(config, device="cpu")
        shapes = [b.shape for b in p]
        assert shapes[0] == (5, 3, 12, 24) and sum(s[0] for s in shapes) == n
    # Keyword sections and dotted keys override the file; inputs replace input.paths.
    p = imgpipe.Pipeline(yaml_file, inputs=[sample_images()[0]], device="cpu", batch={"size": 2},
                         **{"transform.resize.width": 8})
    assert [b.shape for b in p] == [(1, 3, 12, 8)]
    assert "size: 2" in p.config and "width: 8" in p.config
    # The shipped config, from the source tree's root as documented.
    p = imgpipe.Pipeline(source_dir / "configs" / "pipeline.yaml", inputs=[SAMPLES], device="cpu",
                         transform={"resize": {"width": 8, "height": 8}})
    assert sum(len(b) for b in p) == n


def test_stream_api(host):
    p = host(batch={"size": 8}, transform={"resize": {"width": 8, "height": 8}})
    with p.start() as s:
        b = s.next(timeout=30)
        assert b is not None and b.index == 0
        while s.next() is not None:
            pass
        assert s.done
        assert s.report()["batches"] == 3
    assert p.report()["batches"] == 3


def test_version():
    assert imgpipe.version() == imgpipe.__version__ and imgpipe.version().count(".") == 2
    assert imgpipe.built_with_cuda() in (True, False)


def test_epochs_draw_a_new_order_and_set_epoch_replays_one():
    # input.shuffle: each run of a kept Pipeline is the next epoch, with its own order.
    p = imgpipe.Pipeline({"input": {"paths": [str(SAMPLES)], "shuffle": {"seed": 3}}, "batch": {"size": 4},
                          "transform.resize": {"width": 8, "height": 8}}, device="cpu")

    def order():
        return [s.path for b in p for s in b.samples]

    assert p.epoch == 0
    e0, e1 = order(), order()
    assert p.epoch == 2 and e0 != e1 and sorted(e0) == sorted(e1)
    assert p.report()["epoch"] == 1
    p.set_epoch(0)
    assert order() == e0
    with pytest.raises(ValueError):
        p.set_epoch(-1)


def test_len_is_the_runs_batch_count_when_known(tmp_path):
    p = imgpipe.Pipeline(None, inputs=[SAMPLES], device="cpu", transform={"resize": {"width": 16, "height": 16}},
                         batch={"size": 8})
    assert len(p) == 3 == sum(1 for _ in p)  # 20 images: 8 + 8 + 4
    p = imgpipe.Pipeline(None, inputs=[SAMPLES], device="cpu", transform={"resize": {"width": 16, "height": 16}},
                         batch={"size": 8, "drop_last": True})
    assert len(p) == 2 == sum(1 for _ in p)
    p = imgpipe.Pipeline(None, inputs=[SAMPLES], device="cpu", transform={"resize": {"width": 16, "height": 16}},
                         batch={"size": 8},
                         input={"loop": 2, "shard": {"rank": 1, "world_size": 3}})
    assert len(p) == 2 == sum(1 for _ in p)  # 40 over 3 ranks: rank 1 has 13 (uneven)
    (tmp_path / "clip.mp4").write_bytes(b"\0" * 64)  # named a video: its frames are unknown before decoding
    p = imgpipe.Pipeline(None, inputs=[SAMPLES, tmp_path / "clip.mp4"], device="cpu",
                         transform={"resize": {"width": 16, "height": 16}})
    with pytest.raises(TypeError, match="not known before its run.*1 video file"):
        len(p)
