"""C++ exceptions arrive as imgpipe exceptions with the same message and their fields."""
import shutil

import pytest

import imgpipe
from conftest import SAMPLES, sample_images

SMALL = {"resize": {"width": 16, "height": 16}}


def drain(p):
    return sum(len(b) for b in p)


def test_an_unknown_key_is_a_config_error_naming_it(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("input:\n  paths: [x]\nbatch:\n  sise: 4\n")
    with pytest.raises(imgpipe.ConfigError) as e:
        imgpipe.Pipeline(f)
    assert "batch.sise" in str(e.value) and "size" in str(e.value)  # the key and the nearest one
    assert e.value.key == "batch.sise" and e.value.line == 4
    assert str(f) in str(e.value)
    assert isinstance(e.value, imgpipe.Error) and isinstance(e.value, RuntimeError)


def test_config_errors_in_overrides_and_values():
    with pytest.raises(imgpipe.ConfigError, match=r"batch\.colour.*\[in overrides\]"):
        imgpipe.Pipeline(None, inputs=[SAMPLES], batch={"colour": 1})
    with pytest.raises(imgpipe.ConfigError) as e:  # every bad key is named, not only the first
        imgpipe.Pipeline(None, inputs=[SAMPLES], batch={"colour": 1}, decode={"wehre": "cpu"})
    assert "batch.colour" in str(e.value) and "decode.wehre" in str(e.value), str(e.value)
    with pytest.raises(imgpipe.ConfigError, match=r"batch\.size") as e:
        imgpipe.Pipeline({"input": {"paths": [str(SAMPLES)]}, "batch": {"size": 0}})
    assert e.value.key == "batch.size" and "range" in e.value.reason
    with pytest.raises(imgpipe.ConfigError, match="malformed YAML"):
        imgpipe.Pipeline("input: [unclosed\n")
    with pytest.raises(imgpipe.ConfigError, match="cannot open config file"):
        imgpipe.Pipeline("no/such/config.yaml")
    with pytest.raises(imgpipe.ConfigError, match="devices"):
        drain(imgpipe.Pipeline(None, inputs=[SAMPLES], device="gpu-please", transform=SMALL))


def test_a_missing_input_path_is_a_config_error_naming_it(tmp_path):
    missing = tmp_path / "not_there"
    with pytest.raises(imgpipe.ConfigError) as e:
        drain(imgpipe.Pipeline(None, inputs=[missing], device="cpu", transform=SMALL))
    assert str(missing) in str(e.value) and e.value.key == "input.paths"


def test_a_corrupt_image_under_fail_is_an_input_error(tmp_path):
    for i, p in enumerate(sample_images()[:5]):
        shutil.copy(p, tmp_path / f"a{i}.jpg" if p.suffix == ".jpg" else tmp_path / f"a{i}.png")
    bad = tmp_path / "a2_bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0" + b"not really a jpeg" * 50)
    p = imgpipe.Pipeline(None, inputs=[tmp_path], device="cpu", transform=SMALL,
                         input={"on_error": "fail"}, batch={"size": 1})
    delivered = []
    with pytest.raises(imgpipe.InputError) as e:
        for b in p:
            delivered.append(b.samples[0].path)
    assert e.value.path == str(bad) and str(bad) in str(e.value) and e.value.frame == -1
    assert e.value.reason and e.value.reason in str(e.value)
    # Batches before it in input order may come first (those that were through when the run
    # stopped), never one after it.
    before = [str(tmp_path / n) for n in ("a0.jpg", "a1.jpg", "a2.jpg")]
    assert delivered == before[: len(delivered)]
    with pytest.raises(imgpipe.UsageError, match="ended with InputError"):
        p.report()  # a run that failed has no report (as Pipeline::run throws instead of returning one)
    # Under skip (the default) it is reported and the run goes on.
    p = imgpipe.Pipeline(None, inputs=[tmp_path], device="cpu", transform=SMALL)
    assert drain(p) == 5
    fails = p.report()["inputs"]["failures"]
    assert [f["path"] for f in fails] == [str(bad)]


def test_errors_keep_their_class_names():
    for name in ("Error", "ConfigError", "InputError", "CudaError", "Interrupted", "UsageError", "NothingDelivered",
                 "InternalError"):
        cls = getattr(imgpipe, name)
        assert issubclass(cls, imgpipe.Error) and cls.__name__ == name
        # A traceback's last line reads imgpipe.ConfigError, not imgpipe._errors.ConfigError.
        assert cls.__module__ == "imgpipe"
    import traceback
    try:
        imgpipe.Pipeline(None, inputs=["."], **{"batch.size": 0})
    except imgpipe.ConfigError as e:
        assert traceback.format_exception_only(type(e), e)[-1].startswith("imgpipe.ConfigError: ")
    else:
        raise AssertionError("batch.size 0 was accepted")


def test_a_run_that_delivers_nothing_raises_nothing_delivered_and_warns_per_input(tmp_path, caplog):
    for i in range(3):
        (tmp_path / f"broken{i}.jpg").write_bytes(b"not a JPEG")
    p = imgpipe.Pipeline(None, inputs=[str(tmp_path)], transform=SMALL)
    with pytest.raises(imgpipe.NothingDelivered, match=r"nothing delivered: 3 inputs, 3 failed") as e:
        drain(p)
    assert isinstance(e.value, imgpipe.Error)
    assert e.value.report["inputs"]["delivered"] == 0 and p.report()["inputs"]["failed"] == 3
    err = "\n".join(r.getMessage() for r in caplog.records if r.name == "imgpipe")  # imgpipe/_log.py
    for i in range(3):  # a warning per failed input at the default level
        assert f"{tmp_path / f'broken{i}.jpg'}: " in err
    # One good image: delivered, no exception.
    shutil.copy(sample_images()[0], tmp_path)
    assert drain(imgpipe.Pipeline(None, inputs=[str(tmp_path)], transform=SMALL)) == 1


def test_a_missing_input_or_a_missing_device_raises_at_construction(tmp_path):
    missing = tmp_path / "not_there"
    with pytest.raises(imgpipe.ConfigError) as e:
        imgpipe.Pipeline(None, inputs=[missing], device="cpu", transform=SMALL)  # no iteration
    assert str(missing) in str(e.value) and e.value.key == "input.paths"
    with pytest.raises(imgpipe.ConfigError) as e:
        imgpipe.Pipeline(None, inputs=[SAMPLES], device=7, transform=SMALL)
    assert e.value.key == "devices" and "GPU 7 requested" in str(e.value)
    with pytest.raises(imgpipe.ConfigError) as e:
        imgpipe.Pipeline({"input": {"paths": [str(missing)]}, "transform": SMALL})
    assert e.value.key == "input.paths"


def test_a_dict_configs_errors_say_so_and_name_no_line():
    with pytest.raises(imgpipe.ConfigError) as e:
        imgpipe.Pipeline({"input": {"paths": [str(SAMPLES)]}, "batch": {"sise": 4}})
    assert e.value.key == "batch.sise" and e.value.line == 0
    assert "[in the dict config]" in str(e.value) and "line" not in str(e.value), str(e.value)
