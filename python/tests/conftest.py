"""Shared fixtures of the Python package's tests (host backend, NumPy). CTest runs each file with
PYTHONPATH=<build>/python (the package beside libimgpipe_c.so) and IMGPIPE_SOURCE_DIR."""
import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("IMGPIPE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
SAMPLES = SOURCE_DIR / "samples" / "data"


def sample_images():
    return sorted(p for p in SAMPLES.iterdir() if p.suffix in (".jpg", ".png"))


@pytest.fixture
def samples_dir():
    return SAMPLES


@pytest.fixture
def source_dir():
    return SOURCE_DIR


def host_pipeline(inputs=None, **overrides):
    """A pipeline on the host backend over the sample images (or `inputs`)."""
    import imgpipe
    return imgpipe.Pipeline(None, inputs=[str(i) for i in (inputs or [SAMPLES])], device="cpu", **overrides)


@pytest.fixture
def host():
    return host_pipeline
