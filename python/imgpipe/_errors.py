"""The exceptions the C++ side throws, as Python exceptions with the same message."""
from typing import Any, Dict, Optional


class Error(RuntimeError):
    """Anything imgpipe raises (imgpipe::Error): I/O, no inputs for this shard, ..."""


class ConfigError(Error, ValueError):
    """A configuration problem (imgpipe::ConfigError): .key (dotted), .line (0: not from YAML), .reason."""

    key = ""
    line = 0
    reason = ""


class InputError(Error):
    """A bad input under input.on_error: fail (imgpipe::InputError): .path, .frame (-1: an image), .reason."""

    path = ""
    frame = -1
    reason = ""


class CudaError(Error):
    """A failed CUDA call (imgpipe::CudaError): .name (e.g. cudaErrorMemoryAllocation), .code."""

    name = ""
    code = 0


class Interrupted(Error):
    """The run was stopped (imgpipe::Interrupted)."""


class NothingDelivered(Error):
    """Inputs were given and the run delivered none of them (Report::nothing_delivered: every input
    failed under input.on_error: skip, or batch.drop_last dropped them all). Raised at the end of the
    iteration; .report is the run's report (also Pipeline.report()), its inputs.failures say why."""

    report: Optional[Dict[str, Any]] = None


class UsageError(Error):
    """A call out of order or a bad argument (std::logic_error on the C++ side), e.g. every staging
    slot held by the caller while asking for another batch."""


class InternalError(Error):
    """Any other C++ exception (std::bad_alloc ...)."""


CLASSES = {c.__name__: c for c in (Error, ConfigError, InputError, CudaError, Interrupted, NothingDelivered, UsageError,
                                   InternalError)}
# Tracebacks and reprs name them as users import them: imgpipe.ConfigError.
for _cls in CLASSES.values():
    _cls.__module__ = "imgpipe"
del _cls
FIELDS = {"ConfigError": ("key", "line", "reason"), "InputError": ("path", "frame", "reason"),
          "CudaError": ("name", "code")}
_INTS = {"line", "frame", "code"}


def make(cls: str, message: str, fields: Dict[str, str]) -> Error:
    e = CLASSES.get(cls, Error)(message)
    for k, v in fields.items():
        setattr(e, k, int(v) if k in _INTS and v.lstrip("-").isdigit() else v)
    return e
