"""Labels (input.labels: folders: a sample's class is its folder, an index into the report's
classes) and per-sample geometry (SampleGeometry: how the tensor maps to the original), with box
mapping through Batch.to_image / to_tensor."""
import shutil

import cv2
import pytest

import imgpipe
from conftest import SAMPLES, sample_images


@pytest.fixture
def labelled(tmp_path):
    imgs = [p for p in sample_images() if p.suffix == ".jpg"][:6]
    for i, p in enumerate(imgs):
        cls = ("cat", "dog", "emu")[i % 3]
        (tmp_path / cls).mkdir(exist_ok=True)
        shutil.copy(p, tmp_path / cls / p.name)
    return tmp_path


def test_labels_from_class_folders(labelled):
    p = imgpipe.Pipeline(None, inputs=[labelled], device="cpu", input={"labels": "folders"}, batch={"size": 4},
                         transform={"resize": {"width": 16, "height": 16}})
    seen = []
    for b in p:
        assert b.labels == [s.label for s in b.samples]
        seen += [(s.path, s.label) for s in b.samples]
    classes = p.classes
    assert classes == ["cat", "dog", "emu"]
    assert len(seen) == 6
    for path, label in seen:
        assert path.split("/")[-2] == classes[label]


def test_geometry_of_a_letterboxed_sample_and_box_mapping(host):
    path = sample_images()[0]
    h0, w0 = cv2.imread(str(path)).shape[:2]
    b = next(iter(host(inputs=[path], transform={"resize": {"width": 320, "height": 320, "mode": "letterbox"}},
                       decode={"reduced": "off"})))
    g = b.samples[0].geometry
    assert (g["width"], g["height"]) == (w0, h0) and g["resize"] == "letterbox"
    assert (g["tensor_width"], g["tensor_height"]) == (320, 320)
    assert g["scale_x"] == pytest.approx(g["scale_y"]) and g["scale_x"] == pytest.approx(320 / max(w0, h0), rel=1e-3)
    assert g["pad_left"] + g["resized_width"] <= 320 and g["pad_top"] + g["resized_height"] <= 320
    # The whole image area of the tensor is the whole original.
    x, y, w, h = b.to_image(0, (g["pad_left"], g["pad_top"], g["resized_width"], g["resized_height"]))
    assert (x, y) == pytest.approx((0, 0), abs=1e-6) and (w, h) == pytest.approx((w0, h0), rel=1e-3)
    # Round trip of a box, and a point.
    box = (10.0, 20.0, 100.0, 50.0)
    assert b.to_image(0, b.to_tensor(0, box)) == pytest.approx(box, abs=1e-6)
    u, v = b.to_tensor(0, (w0 / 2, h0 / 2))
    assert (u, v) == pytest.approx((160, 160), abs=1.0)
    with pytest.raises(imgpipe.UsageError):
        b.to_image(5, box)  # no such sample


def test_geometry_fields_are_attributes_as_in_cpp(host):
    b = next(iter(host(transform={"resize": {"width": 320, "height": 320, "mode": "letterbox"}})))
    g = b.samples[0].geometry
    assert isinstance(g, imgpipe.Geometry) and isinstance(g, dict)  # dict code keeps working
    for key in ("width", "height", "scale_x", "scale_y", "offset_x", "pad_left", "pad_top", "resized_width",
                "tensor_width", "tensor_height", "resize", "orientation"):
        assert getattr(g, key) == g[key], key
    assert (g.tensor_width, g.tensor_height, g.resize) == (320, 320, "letterbox")
    with pytest.raises(AttributeError, match="no_such_field"):
        g.no_such_field


def test_sample_and_geometry_fields_are_typed():
    import typing
    b = next(iter(imgpipe.Pipeline(None, inputs=[SAMPLES], device="cpu",
                                   transform={"resize": {"width": 32, "height": 32}})))
    s = b.samples[0]
    assert typing.get_type_hints(type(s).path.fget)["return"] is str
    assert typing.get_type_hints(type(s).geometry.fget)["return"] is imgpipe.Geometry
    for obj in (s, s.geometry):
        keys = set(k for k in obj if k != "geometry")
        typed = {k for k in dir(type(obj)) if isinstance(getattr(type(obj), k), property)} - {"geometry"}
        assert keys == typed, (keys ^ typed)  # every JSON field, and no other, is a typed attribute
        for k in keys:
            t = typing.get_type_hints(getattr(type(obj), k).fget)["return"]
            assert isinstance(getattr(obj, k), t) and getattr(obj, k) == obj[k], k
