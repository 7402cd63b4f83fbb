"""imgpipe's log messages through Python's `logging`, logger "imgpipe" (imgpipe_set_log_callback).

Each message of the C++ side (a failed input, a fallback, the host backend for want of a GPU)
becomes a record of the logger "imgpipe" at its level, so that an application filters, formats and
routes it as it does its other libraries' (logging.getLogger("imgpipe").setLevel(logging.ERROR),
a handler of its own ...). Which messages the C++ side emits at all is imgpipe.set_log_level's
(default "warn"; IMGPIPE_LOG_LEVEL): set it to "debug" to get debug records.

While the application has configured no handler (neither on "imgpipe" nor on the root logger),
warnings and errors are printed on stderr as the CLI prints them ("imgpipe: warning: ..."), where
logging's last resort would print the bare message.
"""
import atexit
import logging
import sys
from typing import Optional

from . import _capi

LOGGER = logging.getLogger("imgpipe")
# spdlog's levels (trace 0 ... critical 5) as logging's
_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR,
           5: logging.CRITICAL}
_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning", logging.ERROR: "error",
          logging.CRITICAL: "critical"}


class _Fallback(logging.Handler):
    """stderr, as the CLI, while no other handler would show the record (logging's lastResort rule)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers or len(LOGGER.handlers) > 1 or not LOGGER.propagate:
            return  # the application shows (or drops) it
        try:
            sys.stderr.write(f"imgpipe: {_NAMES.get(record.levelno, record.levelname.lower())}: "
                             f"{record.getMessage()}\n")
        except Exception:
            self.handleError(record)


def _forward(level: int, message: Optional[bytes], user: Optional[int]) -> None:
    try:
        LOGGER.log(_LEVELS.get(level, logging.WARNING), "%s", _capi.text(message))
    except Exception:
        pass  # never raise into C++


_callback = _capi.LOG_CALLBACK(_forward)  # kept alive while routed
_fallback = _Fallback()


def route() -> None:
    """Routes the C++ side's messages to the logger "imgpipe" (done on import)."""
    if _fallback not in LOGGER.handlers:
        LOGGER.addHandler(_fallback)
    _capi.check(_capi.lib.imgpipe_set_log_callback(_callback, None))


def unroute() -> None:
    """Back to the C++ side's own stderr lines (spdlog's format)."""
    _capi.lib.imgpipe_set_log_callback(None, None)


# Registered before the package's other exit hook (runs after it: atexit is last in, first out), so
# that the runs still open at exit, closed by that hook, log through Python while it is whole.
atexit.register(unroute)
