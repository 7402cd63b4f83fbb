"""Pipeline, Stream and Batch over the C API (the pull API underneath)."""
from __future__ import annotations

import atexit
import ctypes
import json
import os
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

from . import _capi
from ._capi import lib, check, text
from ._errors import NothingDelivered, UsageError
from ._samples import Clip, Sample

# How long one wait for a batch lasts before Python gets a chance to handle a
# signal (Ctrl-C): a signal is only acted on between bytecodes, and ctypes
# waits in C with the GIL released.
POLL_MS = 100

DTYPES = {_capi.FLOAT32: "float32", _capi.FLOAT16: "float16", _capi.UINT8: "uint8"}
TYPESTR = {_capi.FLOAT32: "<f4", _capi.FLOAT16: "<f2", _capi.UINT8: "|u1"}
LAYOUTS = {_capi.NCHW: "nchw", _capi.NHWC: "nhwc"}
KDLCPU, KDLCUDA = 1, 2  # DLDeviceType

_live_streams: "weakref.WeakSet[Stream]" = weakref.WeakSet()

# What a Pipeline accepts as its config, inputs and devices.
ConfigSource = Union[None, str, bytes, "os.PathLike[str]", Dict[str, Any]]
PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Device = Union[None, str, int, Sequence[int]]
Box = Sequence[float]


def version() -> str:
    """The library's version, e.g. "0.1.0"."""
    return text(lib.imgpipe_version())


def built_with_cuda() -> bool:
    """True when libimgpipe_c.so has the CUDA backend (else batches are always host memory)."""
    return bool(lib.imgpipe_built_with_cuda())


def set_log_level(level: str) -> None:
    """imgpipe's own log messages on stderr: "error", "warn" (the default here, as in the CLI), "info",
    "debug" or "off"."""
    check(lib.imgpipe_set_log_level(str(level).encode()))


# ---- DLPack capsules ---------------------------------------------------------

_DLTENSOR = b"dltensor"
_DLTENSOR_VERSIONED = b"dltensor_versioned"
# Private prototypes (not the shared ctypes.pythonapi attributes): a capsule
# is passed as a raw PyObject*, so that the destructor below never makes a
# new reference to an object being destroyed.
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _capsule_destructor(capsule: Optional[int]) -> None:
    # A capsule still named "dltensor" was never consumed: the producer
    # deletes the tensor (a consumer renames it "used_dltensor" and calls the
    # deleter itself when its tensor dies).
    for name, versioned in ((_DLTENSOR, 0), (_DLTENSOR_VERSIONED, 1)):
        if _capsule_is_valid(capsule, name):
            lib.imgpipe_dlpack_delete(_capsule_get_pointer(capsule, name), versioned)
            return


_capsule_destructor_c = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_capsule_destructor)  # kept alive here
_capsule_destructor_ptr = ctypes.cast(_capsule_destructor_c, ctypes.c_void_p)


# ---- batches -----------------------------------------------------------------

_T = TypeVar("_T", bound="_Owned")


class _Owned:
    """A handle freed by `_free()` (Batch: release, Stream and Pipeline: close): on leaving a `with`
    block and when collected."""

    __slots__ = ()  # the handles keep their own __slots__

    def _free(self) -> None:
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: object) -> None:
        self._free()

    def __del__(self) -> None:
        try:
            self._free()
        except Exception:
            pass


class Batch(_Owned):
    """One batch of the run, resident on the GPU (host memory on the host backend).

    Zero-copy views: torch.from_dlpack(batch) / numpy.from_dlpack(batch) (DLPack), or
    __cuda_array_interface__ (CUDA batches). The memory stays valid, and unchanged, while this
    object or any tensor made from it lives; the staging slot goes back to the pipeline when the
    last of them is gone (release() drops this object's hold early). Any number of batches may be
    held: when they keep every staging slot, the oldest moves out of the ring (at the same address,
    values unchanged, in every transfer mode; the report's memory.held_batch_copies counts these;
    docs/architecture.md, "Holding batches").
    """

    __slots__ = ("_box", "_info", "_samples", "__weakref__")

    def __init__(self) -> None:
        # The C API writes the handle straight into _box (imgpipe_stream_next), so the handle is
        # this object's from the moment the call returns: a KeyboardInterrupt raised right then
        # (a Ctrl-C during the wait) cannot leak the batch's slot.
        self._box = ctypes.c_void_p()
        self._info: Optional[_capi.BatchInfo] = None
        self._samples: Optional[List[Sample]] = None

    def _load(self) -> Batch:
        info = _capi.BatchInfo()
        check(lib.imgpipe_batch_get_info(self._box, ctypes.byref(info)))
        self._info = info
        return self

    @property
    def _h(self) -> Optional[int]:
        return self._box.value

    def _handle(self) -> int:
        if self._box.value is None:
            raise UsageError("the batch was released")
        return self._box.value

    @property
    def _i(self) -> _capi.BatchInfo:
        if self._info is None:
            raise UsageError("the batch was never filled")
        return self._info

    # -- what it is
    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._i.shape[: self._i.ndim])

    @property
    def dtype(self) -> str:
        """"float32", "float16" or "uint8"."""
        return DTYPES[self._i.dtype]

    @property
    def layout(self) -> str:
        """"nchw" or "nhwc": each frame's (with clips, see clip_layout)."""
        return LAYOUTS[self._i.layout]

    @property
    def clip_length(self) -> int:
        """input.video.clips: frames per clip (T); 0 without clips."""
        return int(self._i.clip_length)

    @property
    def clip_layout(self) -> Optional[str]:
        """"cthw" (shape N, C, T, H, W), "tchw" (N, T, C, H, W) or "thwc" (N, T, H, W, C) with
        clips; None without."""
        return ("cthw", "tchw", "thwc")[self._i.clip_layout] if self._i.clip_length > 0 else None

    @property
    def device(self) -> str:
        """"cuda:N", or "cpu" on the host backend."""
        return "cpu" if self._i.device < 0 else f"cuda:{self._i.device}"

    @property
    def device_index(self) -> int:
        """The CUDA ordinal, -1 on the host backend."""
        return int(self._i.device)

    @property
    def data_ptr(self) -> int:
        """The data's address (a device pointer for CUDA batches). Read it again after the stream's
        next(): a held batch may move out of the staging ring (docs/architecture.md, "Holding
        batches"); a DLPack tensor pins it."""
        if self._box.value is not None:
            self._load()
        return int(self._i.data or 0)

    @property
    def nbytes(self) -> int:
        return int(self._i.bytes)

    @property
    def index(self) -> int:
        """Batch number in the run, from 0."""
        return int(self._i.index)

    @property
    def stream(self) -> int:
        """The cudaStream_t the batch was produced on, as an int (0 on the host backend)."""
        return int(self._i.stream or 0)

    @property
    def ready_event(self) -> int:
        """The cudaEvent_t recorded after the batch's last kernel, as an int (0 on the host backend)."""
        if self._box.value is not None:
            self._load()
        return int(self._i.ready or 0)

    def __len__(self) -> int:
        return int(self._i.size)

    @property
    def clips(self) -> List[Clip]:
        """With clips: one Clip per clip, in tensor order (its video, frame indices and
        presentation times); [] without."""
        t = self.clip_length
        s = self.samples
        return [Clip.of(s[i:i + t]) for i in range(0, len(s), t)] if t > 0 else []

    @property
    def samples(self) -> List[Sample]:
        """One Sample per image or frame, in tensor order (with clips: clip_length consecutive
        frames per clip)."""
        if self._samples is None:
            out = ctypes.c_char_p()
            check(lib.imgpipe_batch_samples_json(self._handle(), ctypes.byref(out)))
            self._samples = [Sample(s) for s in json.loads(text(out.value))]
        return self._samples

    @property
    def labels(self) -> List[int]:
        """The samples' labels (ints; -1 for a sample without one): with input.labels: folders, the
        index of the sample's class folder in the report's "classes" (Pipeline.classes)."""
        n = self._i.size
        arr = (ctypes.c_int64 * n)()
        check(lib.imgpipe_batch_labels(self._handle(), arr, n))
        return list(arr)

    # -- geometry (imgpipe/geometry.hpp)
    def _map(self, sample: int, box: Box, to_image: int, stored: bool) -> Tuple[float, ...]:
        vals = [float(v) for v in box] + [0.0] * (4 - len(box))
        inp, out = (ctypes.c_double * 4)(*vals[:4]), (ctypes.c_double * 4)()
        check(lib.imgpipe_batch_map(self._handle(), int(sample), to_image, 1 if stored else 0, inp, out))
        return tuple(out) if len(box) == 4 else (out[0], out[1])

    def to_image(self, sample: int, box: Box, stored: bool = False) -> Tuple[float, ...]:
        """A box (x, y, width, height) or point (u, v) of sample `sample`'s tensor in its original image
        (full size, as displayed: after the EXIF orientation; stored=True: as the file stores it),
        clipped to the image: where a detection on the batch lies in the input."""
        return self._map(sample, box, 1, stored)

    def to_tensor(self, sample: int, box: Box, stored: bool = False) -> Tuple[float, ...]:
        """The inverse of to_image (unclipped): a box or point of the original in tensor coordinates."""
        return self._map(sample, box, 0, stored)

    # -- synchronisation
    def wait(self, stream: int) -> None:
        """Makes a CUDA stream (an int cudaStream_t; 1: the legacy default stream, 2: per-thread) wait
        for the batch (cudaStreamWaitEvent on its ready event). Nothing to do on the host backend."""
        check(lib.imgpipe_batch_wait(self._handle(), ctypes.c_void_p(int(stream))))

    def synchronize(self) -> None:
        """Blocks until the batch is ready (cudaEventSynchronize)."""
        check(lib.imgpipe_batch_synchronize(self._handle()))

    # -- DLPack
    def __dlpack_device__(self) -> Tuple[int, int]:
        if self._i.device < 0:
            return (KDLCPU, 0)
        return (KDLCUDA, self._i.device)

    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """A DLPack capsule viewing the batch (zero copy). stream (CUDA batches): the consumer's stream,
        which is made to wait for the batch: None or 1 the legacy default stream, 2 the per-thread
        one, another int a cudaStream_t, -1 no synchronisation. The batch's memory is not reused
        before that stream's work, enqueued until the tensor is freed, is done. max_version >= (1, 0)
        gets a DLPack 1.0 versioned capsule, else the classic one."""
        if copy:
            raise BufferError("imgpipe batches are exported without a copy (copy=True asked for one)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the batch lives on {self.__dlpack_device__()}, not {tuple(dl_device)}")
        if self._i.device < 0 or stream is None or stream == 0:
            consumer = None  # host: nothing to wait for; CUDA: the legacy default stream
        elif stream == -1:
            consumer = ctypes.c_void_p(-1 & 0xFFFFFFFFFFFFFFFF)
        else:
            consumer = ctypes.c_void_p(int(stream))
        versioned = 1 if max_version is not None and tuple(max_version)[0] >= 1 else 0
        ptr = ctypes.c_void_p()
        check(lib.imgpipe_batch_to_dlpack(self._handle(), consumer, versioned, ctypes.byref(ptr)))
        try:
            return _capsule_new(ptr, _DLTENSOR_VERSIONED if versioned else _DLTENSOR, _capsule_destructor_ptr)
        except BaseException:
            lib.imgpipe_dlpack_delete(ptr, versioned)
            raise

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """CUDA Array Interface v3 (CUDA batches only). The consumer synchronises on `stream`; it does
        not hold the memory: keep this Batch alive while the data is used (or use DLPack)."""
        if self._i.device < 0:
            raise AttributeError("a host-backend batch has no __cuda_array_interface__ (use numpy.from_dlpack)")
        self._handle()  # raises on a released batch
        # The consumer keeps the address: a move out of the staging ring keeps it too
        # (docs/architecture.md, "Holding batches").
        return {"shape": self.shape, "typestr": TYPESTR[self._i.dtype], "data": (self.data_ptr, False),
                "strides": None, "version": 3, "stream": self.stream or None}

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> Any:
        """A NumPy view (host batches; it keeps the memory alive)."""
        import numpy as np
        if self._i.device >= 0:
            raise TypeError(f"the batch is in GPU memory ({self.device}): use torch.from_dlpack(batch) or "
                            "copy it to the host")
        a = np.from_dlpack(self)
        return a if dtype is None else a.astype(dtype, copy=bool(copy))

    def numpy(self) -> Any:
        """numpy.from_dlpack(self): a zero-copy view of a host batch."""
        return self.__array__()

    # -- lifetime
    def release(self, after_stream: Optional[int] = None) -> None:
        """Drops this object's hold on the batch (tensors made from it keep theirs). after_stream: a
        cudaStream_t (int) whose work so far must finish before the memory is reused. Idempotent."""
        h, self._box.value = self._box.value, None
        if h is not None:
            lib.imgpipe_batch_free(h, ctypes.c_void_p(int(after_stream)) if after_stream else None)


    def _free(self) -> None:
        self.release()

    def __repr__(self) -> str:
        if self._info is None:
            return "<imgpipe.Batch (not filled)>"
        state = "" if self._h is not None else ", released"
        return (f"<imgpipe.Batch {self._i.index}: {self.dtype} {self.layout} {list(self.shape)} on "
                f"{self.device}{state}>")


# ---- runs --------------------------------------------------------------------

def _nothing_delivered(report: Dict[str, Any]) -> NothingDelivered:
    """The NothingDelivered for a run that delivered none of its inputs (the CLI's exit 1)."""
    n = report["inputs"]
    failures = n.get("failures", [])
    first = f" (the first: {failures[0]['path']}: {failures[0]['reason']})" if failures else ""
    e = NothingDelivered(f"nothing delivered: {n['discovered']} inputs, {n['failed']} failed, "
                         f"{n['dropped']} dropped (batch.drop_last){first}")
    e.report = report
    return e


class Stream(_Owned):
    """One run whose batches are pulled: iterate it (or call next()) until it ends. Made by
    Pipeline.start() (iterating a Pipeline makes one)."""

    def __init__(self, pipeline: Optional[Pipeline]) -> None:
        self._pipeline = pipeline
        self._box = ctypes.c_void_p()  # filled by imgpipe_pipeline_start (as Batch._box)
        self._report: Optional[Dict[str, Any]] = None
        self._stop_asked = False  # stop() or Pipeline.request_stop(): report() may end the run
        self._lock = threading.Lock()
        _live_streams.add(self)

    @property
    def _h(self) -> Optional[int]:
        return self._box.value

    @_h.setter
    def _h(self, value: Optional[int]) -> None:
        self._box.value = value

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> Batch:
        b = self.next()
        if b is None:
            raise StopIteration
        return b

    def next(self, timeout: Optional[float] = None) -> Optional[Batch]:
        """The next batch; None at the end of the run (the report is then ready). timeout (seconds):
        raise TimeoutError when no batch came within it. Ctrl-C while waiting stops the run, then
        raises KeyboardInterrupt. What ended the run is raised once the batches before it were taken
        (imgpipe.InputError under on_error: fail, ...)."""
        h = self._h
        if h is None:
            return None
        waited = 0.0
        b: Optional[Batch] = None
        try:
            while True:
                b = Batch()
                status = lib.imgpipe_stream_next(h, POLL_MS, ctypes.byref(b._box))
                if status == _capi.TIMEOUT:
                    waited += POLL_MS / 1000.0
                    if timeout is not None and waited >= timeout:
                        raise TimeoutError(f"no batch within {timeout} s")
                    continue
                if status == _capi.END:
                    self._finish()
                    if self._report is not None and self._report.get("nothing_delivered"):
                        raise _nothing_delivered(self._report)
                    return None
                if status < 0:
                    err = _capi.last_error()  # before any other call can replace it
                    if status != _capi.E_USAGE:  # it ended the run (a usage error did not)
                        self._finish(err)
                    raise err
                return b._load()
        except KeyboardInterrupt:
            if b is not None:
                b.release()  # a batch that came with the signal: the traceback would keep it
            self.close()
            raise

    def _finish(self, error: Optional[BaseException] = None) -> None:
        """The run ended (after the last batch, or with `error`): keep its report, free the stream
        (close() fetches the report; a run that ended with an error has none)."""
        if error is not None and self._pipeline is not None:
            self._pipeline._report, self._pipeline._report_error = None, error
        self.close()

    def _fetch_report(self) -> Optional[Dict[str, Any]]:
        if self._report is None and self._h is not None:
            out = ctypes.c_char_p()
            check(lib.imgpipe_stream_report_json(self._h, ctypes.byref(out)))
            self._report = json.loads(text(out.value))
            if self._pipeline is not None:
                self._pipeline._report, self._pipeline._report_error = self._report, None
        return self._report

    def stop(self) -> None:
        """Asks the run to end soon: the frames in flight finish (next() returns them), then the end."""
        self._stop_asked = True
        if self._h is not None:
            lib.imgpipe_stream_stop(self._h)

    @property
    def done(self) -> bool:
        return self._h is None or bool(lib.imgpipe_stream_done(self._h))

    def report(self) -> Dict[str, Any]:
        """The run's report (Report::to_json as a dict): at the end of the run, or after stop()."""
        if self._report is not None:
            return self._report
        if self._h is None:
            raise UsageError("the stream was closed before its report was ready")
        if self._stop_asked and not self.done:
            self.close()  # stopped: wait for the frames in flight, keep the report
            if self._report is None:
                raise UsageError("the stopped run has no report")
            return self._report
        report = self._fetch_report()
        if report is None:
            raise UsageError("the stream was closed before its report was ready")
        return report

    def close(self) -> None:
        """Stops the run, keeps its report, waits for its threads and frees it. Batches taken stay valid."""
        with self._lock:
            h, self._h = self._h, None
            if h is None:
                return
            lib.imgpipe_stream_stop(h)
            if self._report is None:
                out = ctypes.c_char_p()
                if lib.imgpipe_stream_report_json(h, ctypes.byref(out)) == _capi.OK:
                    self._report = json.loads(text(out.value))
                    if self._pipeline is not None:
                        self._pipeline._report, self._pipeline._report_error = self._report, None
            lib.imgpipe_stream_destroy(h)
        _live_streams.discard(self)

    def _free(self) -> None:
        self.close()


def _nested(overrides: Dict[str, Any]) -> Dict[str, Any]:
    """{"batch.size": 8, "decode": {"reduced": "off"}} -> {"batch": {"size": 8}, "decode": {...}}"""
    out: Dict[str, Any] = {}
    for key, value in overrides.items():
        parts = str(key).split(".")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {key!r} goes below a value that is not a section")
        leaf = parts[-1]
        if isinstance(value, dict) and isinstance(node.get(leaf), dict):
            node[leaf].update(_nested(value))
        else:
            node[leaf] = _nested(value) if isinstance(value, dict) else value
    return out


def _config_source(config: ConfigSource) -> Tuple[Optional[bytes], int]:
    if config is None:
        return None, _capi.CONFIG_YAML
    if isinstance(config, dict):
        return json.dumps(_nested(config)).encode(), _capi.CONFIG_MAPPING
    if isinstance(config, os.PathLike):
        return os.fsencode(config), _capi.CONFIG_FILE
    if isinstance(config, (str, bytes)):
        s = config if isinstance(config, str) else config.decode()
        if "\n" not in s and (os.path.exists(s) or s.endswith((".yaml", ".yml", ".json"))):
            return os.fsencode(s), _capi.CONFIG_FILE
        return s.encode(), _capi.CONFIG_YAML
    raise TypeError(f"config must be a path, YAML text or a dict, not {type(config).__name__}")


def _device_text(device: Device) -> Optional[bytes]:
    if device is None:
        return None
    if isinstance(device, bool):
        raise TypeError("device must be 'auto', 'cpu', 'all', an int or a list of ints")
    if isinstance(device, int):
        return str(device).encode()
    if isinstance(device, (list, tuple)):
        return ("[" + ", ".join(str(int(d)) for d in device) + "]").encode()
    d = str(device)
    if d.startswith("cuda:"):
        d = d[5:]
    return d.encode()


class Pipeline(_Owned):
    """An imgpipe pipeline (imgpipe::Pipeline): a config, validated once, whose runs deliver batches.

        p = imgpipe.Pipeline("configs/pipeline.yaml", inputs=["photos/"], device="auto")
        for batch in p:                       # one run over the inputs; again for the next epoch
            x = torch.from_dlpack(batch)      # zero copy
        print(p.report())                     # the run's JSON report as a dict

    config: a YAML file's path, YAML text, a dict of sections, or None for the defaults.
    inputs: paths (files, folders, globs) that replace input.paths (as the CLI's --input).
    device: None keeps the config's `devices` (default auto: the first GPU, LOCAL_RANK's under a
    launcher, else the host backend); "auto", "cpu", "all", N, "cuda:N" or [N, M].
    overrides: sections or dotted keys merged over the config, e.g. batch={"size": 8} or
    **{"decode.reduced": "off"}. A ConfigError names the key (and line) at fault.
    """

    def __init__(self, config: ConfigSource = None, inputs: Union[None, PathLike, Sequence[PathLike]] = None,
                 device: Device = None, **overrides: Any) -> None:
        self._h: Optional[int] = None
        self._report: Optional[Dict[str, Any]] = None
        self._report_error: Optional[BaseException] = None  # what ended the last run, when it has no report
        self._stream: Optional["weakref.ReferenceType[Stream]"] = None  # weakref to the stream running now
        src, kind = _config_source(config)
        over = json.dumps(_nested(overrides)).encode() if overrides else None
        if isinstance(inputs, (str, bytes, os.PathLike)):
            inputs = [inputs]
        paths = [os.fsencode(i) for i in (inputs or [])]
        arr = (ctypes.c_char_p * max(len(paths), 1))(*paths)
        self._device = _device_text(device)
        out = ctypes.c_void_p()
        check(lib.imgpipe_pipeline_create(src, kind, over, arr, len(paths), ctypes.byref(out)))
        self._h = out.value
        # As the CLI before a run: a missing input or a device that is not there raises here.
        check(lib.imgpipe_pipeline_check(self._h, self._device))

    def __len__(self) -> int:
        """The number of batches the next run delivers when every input decodes (as a DataLoader's
        len): this process's share of the images, batch.size at a time (batch.drop_last honoured); with
        input.video.clips placed random or uniform, per_video clips of each video. Files found damaged
        while decoding (and videos shorter than a clip, short: skip) make a run deliver fewer.
        TypeError when it cannot be known before decoding (videos' frames, clips placed every, streams),
        with the reason. Runs the inputs' discovery."""
        n, known, why = ctypes.c_uint64(), ctypes.c_int(), ctypes.c_char_p()
        check(lib.imgpipe_pipeline_planned_batches(self._handle(), ctypes.byref(n), ctypes.byref(known),
                                                   ctypes.byref(why)))
        if not known.value:
            raise TypeError(f"len() of an imgpipe.Pipeline is not known before its run: {text(why.value)}")
        return int(n.value)

    def _handle(self) -> int:
        if self._h is None:
            raise UsageError("the pipeline was closed")
        return self._h

    @property
    def config(self) -> str:
        """The effective config as YAML text (every key)."""
        out = ctypes.c_char_p()
        check(lib.imgpipe_pipeline_config_yaml(self._handle(), ctypes.byref(out)))
        return text(out.value)

    def start(self, device: Device = None) -> Stream:
        """Starts a run and returns its Stream. A run of this pipeline still open is closed first."""
        self.close_stream()
        dev = _device_text(device) if device is not None else self._device
        s = Stream(self)
        check(lib.imgpipe_pipeline_start(self._handle(), dev, ctypes.byref(s._box)))
        self._stream = weakref.ref(s)
        return s

    def __iter__(self) -> Stream:
        return self.start()

    def close_stream(self) -> None:
        s = self._stream() if self._stream is not None else None
        self._stream = None
        if s is not None:
            s.close()

    def stop(self) -> None:
        """Stops the running run, if any (its report is kept: report())."""
        self.close_stream()

    def set_epoch(self, epoch: int) -> None:
        """Makes the next run epoch `epoch` (as DistributedSampler.set_epoch): input.shuffle draws each
        epoch's order from (seed, epoch), the same on every rank. Runs count on from it: 0, 1, 2, ..."""
        if int(epoch) < 0:
            raise ValueError(f"epoch must be >= 0, not {epoch}")
        lib.imgpipe_pipeline_set_epoch(self._handle(), int(epoch))

    @property
    def epoch(self) -> int:
        """The epoch the next run gets."""
        return int(lib.imgpipe_pipeline_epoch(self._handle()))

    def request_stop(self) -> None:
        """Asks the current run to stop soon (thread-safe); iteration ends after the frames in flight."""
        if self._h is not None:
            lib.imgpipe_pipeline_request_stop(self._h)
            s = self._stream() if self._stream is not None else None
            if s is not None:
                s._stop_asked = True

    @property
    def classes(self) -> List[str]:
        """The class names that labels index (input.labels: folders), from the last run's report."""
        return list(self.report().get("classes", []))

    def report(self) -> Dict[str, Any]:
        """The report of the last run that ended (or was stopped), as a dict."""
        s = self._stream() if self._stream is not None else None
        if s is not None and s._report is None:
            if s._stop_asked and not s.done:
                s.close()  # stopped (Stream.stop, request_stop): wait for its end, keep its report
            elif not s.done:
                raise UsageError("the run is still going: iterate it to the end or call stop() first")
            else:
                s._fetch_report()
        if self._report is None:
            if self._report_error is not None:
                e = self._report_error
                raise UsageError(f"the last run ended with {type(e).__name__} ({e}) and has no report")
            raise UsageError("no run has ended (or been stopped) yet")
        return self._report

    def close(self) -> None:
        """Stops a running run and frees the pipeline (batches taken stay valid)."""
        self.close_stream()
        h, self._h = self._h, None
        if h is not None:
            lib.imgpipe_pipeline_destroy(h)

    def _free(self) -> None:
        self.close()


@atexit.register
def _close_streams() -> None:
    # Runs still open at exit: stop them and join their threads while the
    # interpreter is whole.
    for s in list(_live_streams):
        try:
            s.close()
        except Exception:
            pass
