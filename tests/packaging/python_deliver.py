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
print(f"imgpipe {imgpipe.__version__} from {folder}: {images} images in {batches} batches")
