"""An installed `imgpipe` package (pip, cmake --install, the .deb) imported and run by the packaging
tests: python3 python_deliver.py SAMPLES_DIR EXPECTED_LIBRARY, where EXPECTED_LIBRARY is the
libimgpipe_c.so the package must load ("in-package": the copy inside the package). Prints
"imgpipe <version> from <folder>: N images in M batches"."""
import os
import sys

samples, expected = sys.argv[1], sys.argv[2]
os.environ.pop("IMGPIPE_C_LIBRARY", None)
import imgpipe  # noqa: E402  (after the environment is cleaned)
from imgpipe import _capi  # noqa: E402

folder = os.path.dirname(os.path.realpath(imgpipe.__file__))
if expected == "in-package":
    expected = os.path.join(folder, "libimgpipe_c.so")
loaded = os.path.realpath(_capi.lib._name)
if loaded != os.path.realpath(expected):
    sys.exit(f"imgpipe loaded {loaded}, expected {expected}")
if not os.path.exists(os.path.join(folder, "py.typed")):
    sys.exit(f"{folder} has no py.typed")

p = imgpipe.Pipeline(None, inputs=[samples], device="cpu", batch={"size": 8},
                     transform={"resize": {"width": 64, "height": 48}})
images = batches = 0
for b in p:
    a = b.numpy()
    assert a.shape == (len(b), 3, 48, 64) and a.dtype.name == "float32", a.shape
    images += len(b)
    batches += 1
if images == 0 or p.report()["inputs"]["delivered"] != images:
    sys.exit(f"delivered {images} images, the report says {p.report()['inputs']}")
# What a new user met (issue 44), through the installed package: len() of a run, typed samples, a
# missing input raised at construction, a dict config's errors, warnings through logging.
if len(p) != batches:
    sys.exit(f"len(p) is {len(p)}, the run had {batches} batches")
sample = next(iter(p)).samples[0]
if not (isinstance(sample.path, str) and isinstance(sample.geometry.scale_x, float)):
    sys.exit(f"untyped sample fields: {sample!r}")
try:
    imgpipe.Pipeline(None, inputs=[os.path.join(samples, "no_such_file.jpg")], device="cpu")
    sys.exit("a missing input was not raised at construction")
except imgpipe.ConfigError as e:
    if e.key != "input.paths":
        sys.exit(f"a missing input raised {e!r}")
try:
    imgpipe.Pipeline({"input": {"paths": [samples]}, "batch": {"sise": 1}})
    sys.exit("a bad key of a dict config was accepted")
except imgpipe.ConfigError as e:
    if "[in the dict config]" not in str(e) or e.line != 0:
        sys.exit(f"a dict config's error: {e}")
import logging  # noqa: E402
import tempfile  # noqa: E402
records = []
handler = logging.Handler()
handler.emit = records.append  # type: ignore[method-assign]
logging.getLogger("imgpipe").addHandler(handler)
good = next(f for f in sorted(os.listdir(samples)) if f.endswith(".jpg"))
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "broken.jpg"), "wb") as f:
        f.write(b"not a JPEG")
    with open(os.path.join(samples, good), "rb") as src, open(os.path.join(d, good), "wb") as f:
        f.write(src.read())
    small = {"resize": {"width": 16, "height": 16}}
    sum(len(b) for b in imgpipe.Pipeline(None, inputs=[d], device="cpu", transform=small))
if not any("broken.jpg" in r.getMessage() and r.levelno == logging.WARNING for r in records):
    sys.exit(f"no logging record for the broken file: {[r.getMessage() for r in records]}")
print(f"imgpipe {imgpipe.__version__} from {folder}: {images} images in {batches} batches")
