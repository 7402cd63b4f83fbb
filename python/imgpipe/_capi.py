"""ctypes bindings of libimgpipe_c.so (capi/include/imgpipe_c.h).

The library is looked for, in order: $IMGPIPE_C_LIBRARY (a path, when set),
the copy inside the package, beside this file (`pip install .` puts it there,
and the build: build/python/imgpipe/libimgpipe_c.so), the installed one that
`cmake --install` and the .deb name in _installed_library.txt (a path relative
to this folder: <prefix>/lib/python3/dist-packages/imgpipe to <prefix>/<libdir>),
then by name through the dynamic loader (LD_LIBRARY_PATH). ctypes releases the GIL
during every call, so a call that waits (a batch, a run's end) lets other
Python threads run.
"""
import ctypes
import os
from typing import Dict, Iterator, Optional

from . import _errors

API_VERSION = 2  # IMGPIPE_C_API_VERSION this package speaks

OK, END, TIMEOUT = 0, 1, 2
E_USAGE = -6
CONFIG_FILE, CONFIG_YAML, CONFIG_MAPPING = 0, 1, 2
FLOAT32, FLOAT16, UINT8 = 0, 1, 2
NCHW, NHWC = 0, 1


class BatchInfo(ctypes.Structure):
    """imgpipe_batch_info"""
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("bytes", ctypes.c_uint64),
        ("device", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 5),
        ("dtype", ctypes.c_int32),
        ("layout", ctypes.c_int32),
        ("dl_code", ctypes.c_uint8),
        ("dl_bits", ctypes.c_uint8),
        ("reserved", ctypes.c_uint16),
        ("stream", ctypes.c_void_p),
        ("ready", ctypes.c_void_p),
        ("index", ctypes.c_uint64),
        ("size", ctypes.c_uint64),
        ("clip_length", ctypes.c_int32),
        ("clip_layout", ctypes.c_int32),
    ]


def _candidates() -> Iterator[str]:
    env = os.environ.get("IMGPIPE_C_LIBRARY")
    if env:
        yield env
        return
    folder = os.path.dirname(os.path.abspath(__file__))
    here = os.path.join(folder, "libimgpipe_c.so")
    if os.path.exists(here):
        yield here
    installed = os.path.join(folder, "_installed_library.txt")  # python/CMakeLists.txt writes it
    if os.path.exists(installed):
        with open(installed, encoding="utf-8") as f:
            yield os.path.normpath(os.path.join(folder, f.read().strip()))
    yield "libimgpipe_c.so"


def _load() -> ctypes.CDLL:
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError(
        "imgpipe: cannot load libimgpipe_c.so (" + "; ".join(errors) + "). Build it "
        "(./setup.sh build, or cmake --build build --target imgpipe_python) and put the build's "
        "python folder first on the path: export PYTHONPATH=$PWD/build/python; or name the "
        "library in IMGPIPE_C_LIBRARY; or install the package: pip install . (docs/python.md)")


lib = _load()

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_s = ctypes.c_char_p
_ps = ctypes.POINTER(ctypes.c_char_p)
_st = ctypes.c_int

for name, res, args in [
    ("imgpipe_version", _s, []),
    ("imgpipe_c_api_version", ctypes.c_int, []),
    ("imgpipe_built_with_cuda", ctypes.c_int, []),
    ("imgpipe_last_error", _s, []),
    ("imgpipe_last_error_class", _s, []),
    ("imgpipe_last_error_field", _s, [_s]),
    ("imgpipe_set_log_level", _st, [_s]),
    ("imgpipe_set_log_callback", _st, [_p, _p]),
    ("imgpipe_pipeline_check", _st, [_p, _s]),
    ("imgpipe_pipeline_planned_batches", _st, [_p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int),
                                                _ps]),
    ("imgpipe_pipeline_create", _st, [_s, ctypes.c_int, _s, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, _pp]),
    ("imgpipe_pipeline_destroy", None, [_p]),
    ("imgpipe_pipeline_config_yaml", _st, [_p, _ps]),
    ("imgpipe_pipeline_request_stop", None, [_p]),
    ("imgpipe_pipeline_set_epoch", None, [_p, ctypes.c_uint64]),
    ("imgpipe_pipeline_epoch", ctypes.c_uint64, [_p]),
    ("imgpipe_pipeline_start", _st, [_p, _s, _pp]),
    ("imgpipe_stream_next", _st, [_p, ctypes.c_int64, _pp]),
    ("imgpipe_stream_stop", None, [_p]),
    ("imgpipe_stream_done", ctypes.c_int, [_p]),
    ("imgpipe_stream_report_json", _st, [_p, _ps]),
    ("imgpipe_stream_destroy", None, [_p]),
    ("imgpipe_batch_get_info", _st, [_p, ctypes.POINTER(BatchInfo)]),
    ("imgpipe_batch_samples_json", _st, [_p, _ps]),
    ("imgpipe_batch_labels", _st, [_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t]),
    ("imgpipe_batch_map", _st, [_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                ctypes.POINTER(ctypes.c_double)]),
    ("imgpipe_batch_wait", _st, [_p, _p]),
    ("imgpipe_batch_synchronize", _st, [_p]),
    ("imgpipe_batch_retain", _p, [_p]),
    ("imgpipe_batch_free", None, [_p, _p]),
    ("imgpipe_batch_to_dlpack", _st, [_p, _p, ctypes.c_int, _pp]),
    ("imgpipe_dlpack_delete", None, [_p, ctypes.c_int]),
    ("imgpipe_dlpack_layout", ctypes.c_int64, [_s]),
]:
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = args

if lib.imgpipe_c_api_version() != API_VERSION:
    raise ImportError(f"imgpipe: libimgpipe_c.so speaks C API version {lib.imgpipe_c_api_version()}, "
                      f"this package {API_VERSION}: rebuild (the library and the package come from one build)")


# imgpipe_log_callback: (level, message, user)
LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def text(b: Optional[bytes]) -> str:
    return b.decode("utf-8", "replace") if b is not None else ""


def check(status: int) -> int:
    """Raises the imgpipe exception of the calling thread's last error for an error status."""
    if status >= 0:
        return status
    raise last_error()


def last_error() -> _errors.Error:
    """The calling thread's last error as an imgpipe exception (to raise)."""
    cls = text(lib.imgpipe_last_error_class())
    message = text(lib.imgpipe_last_error())
    fields: Dict[str, str] = {}
    for name in _errors.FIELDS.get(cls, ()):
        fields[name] = text(lib.imgpipe_last_error_field(name.encode()))
    return _errors.make(cls, message, fields)
