"""The one entry point of the R package (reticulate): :func:`r_call` runs a function by its
R-facing name and returns plain values, with Python's warnings collected for R.

The adapter convention: the R package's functions call ``.call("<module>.<function>", ...)``
(``"transfer.forecast_interval"``, ``"fe.feols"``); that runs
``llmsurrogate.rbridge.<module>.R_FUNCTIONS["<function>"]`` -- the public Python function itself
where R's words and values cross unchanged, or the module's adapter ``r_<R function>`` where they
need adapting (R's argument names, R's columns as a data frame, 1-based positions) -- on the
arguments decoded by :func:`~llmsurrogate.rbridge.from_r`, and returns its output through
:func:`~llmsurrogate.rbridge.to_plain`. :data:`ADAPTERS` lists the adapter modules; one is
imported when R first calls into it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

from .._positions import Located, message_of
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ._convert import from_r, r_message, to_plain

__all__ = ["ADAPTERS", "call", "r_call", "r_functions", "r_warnings", "shutdown_workers"]

#: The adapter modules (``llmsurrogate.rbridge.<name>``), one per module the R package calls into.
ADAPTERS = ("datasets", "demo", "ess", "fe", "lookahead", "ppi", "quantiles", "risk", "testing", "transfer")

# The adapters' names before the bridge was a package (``"rbridge.r_feols"``): an R package of that
# release calls them so.
_EARLIER = {"rbridge.r_feols": "fe.feols", "rbridge.r_etable": "fe.etable",
            "rbridge.r_lookahead_test": "lookahead.lookahead_test",
            "rbridge.r_lookahead_bootstrap": "lookahead.bootstrap", "rbridge.r_lap": "lookahead.lap"}


def r_functions() -> dict[str, Callable[..., Any]]:
    """Every function R may call, by its R-facing name ``"module.function"`` (imports every adapter)."""
    return {f"{m}.{name}": fn for m in ADAPTERS for name, fn in _adapter(m).R_FUNCTIONS.items()}


def _adapter(module: str):
    return importlib.import_module(f"{__package__}.{module}")


def call(function: str, *args: Any, **kwargs: Any) -> Any:
    """Run the function R names ``function="module.name"`` (see the module docstring) on the
    arguments decoded by :func:`from_r` and return :func:`to_plain` output.

    >>> call("quantiles.upper_quantile", [1.0, 2.0, 3.0], [0.5])
    [2.0]
    """
    module, _, name = _EARLIER.get(function, function).partition(".")
    fn = _adapter(module).R_FUNCTIONS.get(name) if module in ADAPTERS else None
    if fn is None:
        allowed = sorted(r_functions())
        raise InvalidArgumentError(f"argument `function`: {function!r} is not callable from R; choose from {allowed}")
    args = tuple(from_r(a) for a in args)
    kwargs = {k: from_r(v) for k, v in kwargs.items()}
    return to_plain(fn(*args, **kwargs))


def r_call(function: str, *args: Any, **kwargs: Any) -> dict:
    """:func:`call` for the R package: ``{"value": ..., "warnings": [{"message", "class"}]}``.

    Warnings are collected instead of printed, so that R raises them as R warnings (class
    ``llmsurrogate_warning``) that ``suppressWarnings()`` and ``tryCatch(warning = )`` see; the
    messages of warnings and errors are put in R's terms by :func:`r_message` (the exception keeps
    its class). What R users should not see in Python's words is translated or left out
    (:func:`r_warnings`): numpy's floating-point warnings become a sentence on what gave NaN or
    Inf; the package's log warnings (``logging``) become R warnings too, instead of lines on
    stderr; deprecation notices of the libraries underneath (transformers, torch, ...) are left
    out, as the R user can do nothing about them; the package's own deprecations stay.
    """
    records: list[logging.LogRecord] = []
    with warnings.catch_warnings(record=True) as caught, _collect_logs(records):
        warnings.simplefilter("always", LLMSurrogateWarning)
        try:
            value = call(function, *args, **kwargs)
        except Exception as err:
            if err.args and isinstance(err.args[0], str):
                err.args = (r_message(err.args[0]), *err.args[1:])
            raise
    return {"value": value, "warnings": r_warnings(caught, records)}


# numpy's floating-point warnings ("invalid value encountered in divide") in R's words.
_NUMPY_FP = re.compile(r"^(invalid value|divide by zero|overflow|underflow) encountered in (\w+)")
_NUMPY_FP_WORDS = {
    "invalid value": ("an operation gave NaN (not a number; {op}), so some results are NaN. A common cause is a "
                      "constant column: a constant outcome or regressor has no variance to divide by"),
    "divide by zero": "a division by zero gave Inf ({op}), so some results are Inf or NaN",
    "overflow": "a number too large for a double gave Inf ({op})",
    "underflow": "a number too small for a double became 0 ({op})",
}
_NUMPY_OPS = {"divide": "0/0 in a division", "true_divide": "0/0 in a division", "sqrt": "square root of a "
              "negative number", "log": "log of a negative number", "scalar divide": "0/0 in a division"}

# Loggers whose warnings are collected during a call: the package's own (they become R warnings)
# and those of the libraries underneath (their deprecation notices are left out, the rest kept).
_LOGGERS = ("llmsurrogate", "transformers", "torch", "huggingface_hub", "tokenizers", "accelerate")
_DEPRECATION = re.compile(r"deprecat", re.IGNORECASE)


class _ListHandler(logging.Handler):
    def __init__(self, records: list) -> None:
        super().__init__(level=logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


# The loggers of _LOGGERS, looked up once: logging.getLogger() takes the logging lock on every call
# (a quarter of r_call's own time), and a logger, once made, is never replaced.
_LOGGER_OBJECTS: list[logging.Logger] = []


@contextlib.contextmanager
def _collect_logs(records: list):
    """Send the warnings the loggers in :data:`_LOGGERS` log during the block to ``records``
    instead of their handlers (stderr)."""
    handler = _ListHandler(records)
    saved = []
    if not _LOGGER_OBJECTS:
        _LOGGER_OBJECTS.extend(logging.getLogger(name) for name in _LOGGERS)
    for logger in _LOGGER_OBJECTS:
        saved.append((logger, logger.handlers[:], logger.propagate))
        logger.handlers = [handler]
        logger.propagate = False
    try:
        yield
    finally:
        for logger, handlers, propagate in saved:
            logger.handlers = handlers
            logger.propagate = propagate


def _numpy_words(message: str) -> str | None:
    m = _NUMPY_FP.match(message)
    if m is None:
        return None
    kind, op = m.group(1), m.group(2)
    return _NUMPY_FP_WORDS[kind].format(op=_NUMPY_OPS.get(op, f"in {op}"))


def r_warnings(caught: list, records: list | None = None) -> list[dict]:
    """Python's warnings (``warnings.catch_warnings(record=True)``) and log records of a call as R
    will raise them: ``[{"message", "class"}]`` in R's words, each message once.

    >>> import warnings, numpy as np
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = np.array([0.0]) / np.array([0.0])
    ...     warnings.warn("`x` is deprecated", DeprecationWarning)
    >>> [w["message"][:33] for w in r_warnings(caught)]
    ['an operation gave NaN (not a numb']
    """
    out: list[dict] = []
    seen: set[str] = set()
    for w in caught:
        category = w.category
        message = message_of(w.message) if isinstance(w.message, Warning) else str(w.message)
        if issubclass(category, (DeprecationWarning, PendingDeprecationWarning)) or (
                issubclass(category, FutureWarning) and not _ours(w)):
            continue  # the libraries' deprecations: nothing the R user can act on
        if issubclass(category, RuntimeWarning):
            message = _numpy_words(message) or message
        _add(out, seen, r_message(message), category.__name__)
    for record in records or ():
        message = record.msg if isinstance(record.msg, Located) and not record.args else record.getMessage()
        if not record.name.startswith("llmsurrogate") and _DEPRECATION.search(message):
            continue
        _add(out, seen, r_message(message), "LLMSurrogateWarning" if record.name.startswith("llmsurrogate")
             else record.name.partition(".")[0])
    return out


def _ours(w: warnings.WarningMessage) -> bool:
    """Is this FutureWarning the package's own (a renamed argument, :mod:`llmsurrogate._deprecation`)?"""
    return "llmsurrogate" in str(w.message)


def _add(out: list, seen: set, message: str, cls: str) -> None:
    if message not in seen:
        seen.add(message)
        out.append({"message": message, "class": cls})


def shutdown_workers() -> None:
    """Stop joblib's reusable worker processes, if any were started. The R package calls this when
    R exits: reticulate does not run Python's exit handlers, and loky would otherwise warn about
    leaked semaphores and temporary folders."""
    if "joblib" not in sys.modules:
        return
    # inside the function: only when a fit has loaded joblib already
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is None:
        return
    terminate = getattr(executor, "terminate", None)  # joblib's memmapping executor also removes its folders
    if terminate is not None:
        terminate(kill_workers=True)
    else:  # pragma: no cover - plain loky executors
        executor.shutdown(wait=True, kill_workers=True)
