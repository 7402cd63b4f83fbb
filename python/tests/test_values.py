"""Batch values against OpenCV's cv2.dnn.blobFromImage (Debian's python3-opencv), as the C++
kernel tests compare the CPU twins (tests/kernels/test_fused.cpp): full-size decode
(decode.reduced: off, libjpeg as cv2.imread), bilinear resize, RGB, (x/255 - mean)/std.

blobFromImage computes (v - mean*255) / 255 with one scale factor, so its planes are divided by
std here (OpenCV 4.6 has no per-channel std). Tolerance: 1e-5 + 1e-6 |x| (a few float32 ulps),
plus one u8 step where OpenCV's resize is not its generic path (IPP or a custom HAL)."""
import re

import cv2
import numpy as np
import pytest

from conftest import sample_images

MEAN = np.array([0.485, 0.456, 0.406], np.float64)
STD = np.array([0.229, 0.224, 0.225], np.float64)


def opencv_resize_is_reference():
    info = cv2.getBuildInformation()

    def value(key):
        m = re.search(re.escape(key) + r"[ \t]*([^\n]*)", info)
        return m.group(1).strip() if m else ""

    ipp, hal = value("Intel IPP:"), value("Custom HAL:")
    return (not ipp or ipp.startswith("NO")) and (not hal or hal.startswith("NO"))


U8_STEPS = 0 if opencv_resize_is_reference() else 1


def run_all(host, **overrides):
    """Every batch of a host run, as (numpy copy, samples)."""
    out = []
    for b in host(decode={"reduced": "off"}, **overrides):
        out.append((np.from_dlpack(b).copy(), b.samples))
    return out


def blob(path, w, h, swap_rb=True):
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    # mean[c] and std[c] apply to output channel c (R, G, B for rgb; B, G, R for bgr).
    b = cv2.dnn.blobFromImage(img, 1.0 / 255.0, (w, h), tuple(MEAN * 255.0), swap_rb, False, cv2.CV_32F)[0]
    return b / STD.reshape(3, 1, 1), img


def check_close(got, want, what):
    tol = 1e-5 + 1e-6 * np.abs(want) + U8_STEPS / (255.0 * STD.min())
    worst = float(np.max(np.abs(got - want) - tol))
    assert worst <= 0.0, f"{what}: off by {worst:.3g} beyond the tolerance"


@pytest.mark.parametrize("w,h", [(224, 160), (640, 640)])
def test_float32_nchw_rgb_equals_blob_from_image(host, w, h):
    batches = run_all(host, transform={"resize": {"width": w, "height": h, "mode": "stretch",
                                                  "interpolation": "linear"},
                                       "layout": "nchw", "dtype": "float32", "color": "rgb"},
                      batch={"size": 7})
    seen = 0
    for arr, samples in batches:
        assert arr.shape == (len(samples), 3, h, w) and arr.dtype == np.float32
        for k, s in enumerate(samples):
            want, _ = blob(s.path, w, h)
            check_close(arr[k].astype(np.float64), want, s.path)
            seen += 1
    assert seen == len(sample_images())


def test_bgr_nhwc_equals_blob_from_image(host):
    w, h = 96, 80
    batches = run_all(host, transform={"resize": {"width": w, "height": h}, "layout": "nhwc",
                                       "dtype": "float32", "color": "bgr"}, batch={"size": 32})
    (arr, samples), = batches
    assert arr.shape == (len(sample_images()), h, w, 3)
    for k, s in enumerate(samples):
        want, _ = blob(s.path, w, h, swap_rb=False)
        check_close(arr[k].transpose(2, 0, 1).astype(np.float64), want, s.path)


def test_uint8_is_the_resized_image(host):
    w, h = 128, 96
    batches = run_all(host, transform={"resize": {"width": w, "height": h}, "layout": "nhwc",
                                       "dtype": "uint8", "color": "rgb"}, batch={"size": 32})
    (arr, samples), = batches
    assert arr.dtype == np.uint8
    for k, s in enumerate(samples):
        img = cv2.resize(cv2.imread(str(s.path), cv2.IMREAD_COLOR), (w, h), interpolation=cv2.INTER_LINEAR)
        diff = np.abs(arr[k].astype(int) - img[:, :, ::-1].astype(int)).max()
        assert diff <= U8_STEPS, f"{s.path}: u8 differs by {diff}"


def test_float16_matches_float32(host):
    t = {"resize": {"width": 64, "height": 48}, "layout": "nchw"}
    f32 = run_all(host, transform=dict(t, dtype="float32"), batch={"size": 32})[0][0]
    f16 = run_all(host, transform=dict(t, dtype="float16"), batch={"size": 32})[0][0]
    assert f16.dtype == np.float16
    np.testing.assert_allclose(f16.astype(np.float32), f32, rtol=1e-3, atol=2e-3)
