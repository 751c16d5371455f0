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

import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ._convert import from_r, r_message, to_plain

__all__ = ["ADAPTERS", "call", "r_call", "r_functions", "shutdown_workers"]

#: The adapter modules (``llmsurrogate.rbridge.<name>``), one per module the R package calls into.
ADAPTERS = ("datasets", "demo", "ess", "fe", "lookahead", "quantiles", "risk", "testing", "transfer")

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
    its class).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        try:
            value = call(function, *args, **kwargs)
        except Exception as err:
            if err.args and isinstance(err.args[0], str):
                err.args = (r_message(err.args[0]), *err.args[1:])
            raise
    out = []
    for w in caught:
        out.append({"message": r_message(str(w.message)), "class": w.category.__name__})
    return {"value": value, "warnings": out}


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
