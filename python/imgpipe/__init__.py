"""imgpipe: image batches, decoded and normalised by imgpipe's C++ pipeline, as zero-copy tensors.

    import imgpipe, torch
    p = imgpipe.Pipeline("configs/pipeline.yaml", inputs=["photos/"], device="auto")
    for batch in p:                       # the pull API underneath: back-pressure kept
        x = torch.from_dlpack(batch)      # zero copy (numpy.from_dlpack for host batches)
        labels, samples = batch.labels, batch.samples
    print(p.report())                     # the run's JSON report as a dict

imgpipe.torch.Loader yields (tensor, labels) for a training loop (needs torch; imported only
there). The package is pure Python over libimgpipe_c.so (ctypes): one build serves every
Python 3. Errors from the C++ side arrive as imgpipe.ConfigError, InputError, CudaError,
Interrupted, UsageError (all imgpipe.Error) with the C++ message. Its warnings are records of the
`logging` logger "imgpipe".
"""
import os as _os
from typing import Any

from . import _log
from ._errors import (ConfigError, CudaError, Error, InputError, InternalError, Interrupted, NothingDelivered,
                      UsageError)
from ._pipeline import Batch, Pipeline, Stream, built_with_cuda, set_log_level, version
from ._samples import Clip, Geometry, Sample

__all__ = ["Pipeline", "Stream", "Batch", "Sample", "Clip", "Geometry", "Error", "ConfigError", "InputError", "CudaError",
           "Interrupted", "NothingDelivered", "UsageError", "InternalError", "version", "built_with_cuda",
           "set_log_level"]
__version__ = version()

# As the CLI: warnings and errors (IMGPIPE_LOG_LEVEL=info|debug|error|off to change it), as records
# of the logging logger "imgpipe" (imgpipe/_log.py).
set_log_level(_os.environ.get("IMGPIPE_LOG_LEVEL", "warn"))
_log.route()


def __getattr__(name: str) -> Any:
    if name == "torch":  # imgpipe.torch without an explicit import
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'imgpipe' has no attribute {name!r}")
