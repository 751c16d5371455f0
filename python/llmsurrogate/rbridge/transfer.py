"""R adapters of :mod:`llmsurrogate.transfer`: R's interval, dominance and build functions. The
interval functions are transferUQ's, with transferUQ's argument names: their adapters take R's
``coverage`` (Python's ``level``) and name it so in errors. An R error matrix arrives as an
:class:`~llmsurrogate.transfer.ErrorTable` (:func:`~llmsurrogate.rbridge.from_r`), a long data
frame as columns of domain codes and errors (:func:`_r_long`), read without a data frame."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import transfer
from ..exceptions import InvalidArgumentError
from ..transfer import CodedLong, code_domains
from ._convert import _r_column

__all__ = ["R_FUNCTIONS", "r_check_everywhere_dominance", "r_check_worstcase_dominance", "r_critical_gamma",
           "r_ete_interval", "r_everywhere_dominance_box", "r_forecast_interval", "r_qte_interval",
           "r_weighted_forecast_interval",
           "r_worst_case_interval"]

_LEVEL = re.compile(r"`level`")


# The last few long data frames from R, keyed by their bytes: repeated calls on the same data frame
# (several levels, sides or functions) reuse its table and the sorted errors the Rust core keeps
# on it, as the matrices of llmsurrogate.rbridge._convert do.
_LONG_CACHE: dict[tuple, CodedLong] = {}
_LONG_CACHE_SIZE = 8


def _r_long(spec: Any) -> CodedLong:
    """A long data frame from R sent as columns (R's ``.coded_long()``): ``codes``, the 0-based
    codes of its ``ncol`` domain columns (training..., test) into ``labels``, one column after the
    other as little-endian int32 bytes; ``errors``, the last column as little-endian doubles (NaN
    for ``NA``); ``labels``, the distinct domain labels as a typed R column. The domains are then
    numbered in the order in which a long frame's are (sorted labels), without a data frame.

    >>> import numpy as np
    >>> spec = {"nrow": 2, "ncol": 2, "codes": np.array([0, 1, 1, 0], "<i4").tobytes(),
    ...         "errors": np.array([0.5, 2.0]).tobytes(), "labels": {"kind": "character", "values": ["b", "a"]}}
    >>> t = _r_long(spec)
    >>> t.domains, t.train.tolist(), t.test.tolist(), t.values.tolist()
    (['a', 'b'], [[1], [0]], [0, 1], [0.5, 2.0])
    """
    nrow, ncol = int(spec["nrow"]), int(spec["ncol"])
    codes_raw, errors_raw = bytes(spec["codes"]), bytes(spec["errors"])
    labels = _r_column(spec["labels"], "the domain labels")
    key = (nrow, ncol, codes_raw, errors_raw, tuple(labels))
    hit = _LONG_CACHE.get(key)
    if hit is not None:
        return hit
    codes = np.frombuffer(codes_raw, dtype="<i4")
    values = np.frombuffer(errors_raw, dtype="<f8").astype(np.float64)
    if codes.size != nrow * ncol or values.size != nrow or codes.size and not 0 <= codes.min() <= codes.max() < len(labels):
        raise InvalidArgumentError(f"a long data frame from R has {codes.size} domain codes and {values.size} errors "
                                   f"for {nrow} rows and {ncol} domain columns")
    if all(type(v) is int for v in labels) and all(a < b for a, b in zip(labels, labels[1:])):
        domains, codes = labels, codes.astype(np.int64)  # R's whole numbers, ascending: sorted already
    else:
        perm, domains = code_domains([np.asarray(labels, dtype=object)])  # each label's number in sorted order
        codes = perm[:, 0][codes]
    codes = codes.reshape(ncol, nrow)
    out = CodedLong(values, codes[-1], codes[:-1].T, domains)
    while len(_LONG_CACHE) >= _LONG_CACHE_SIZE:
        _LONG_CACHE.pop(next(iter(_LONG_CACHE)))
    _LONG_CACHE[key] = out
    return out


def _decoded(value: Any) -> Any:
    if isinstance(value, dict) and "__rlong__" in value:  # reticulate's named list: a dict
        return _r_long(value["__rlong__"])
    return value


def _reading_long_frames(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with R's long data frames (``{"__rlong__": ...}``) read as tables first."""

    @functools.wraps(fn)
    def adapter(*args: Any, **kwargs: Any) -> Any:
        return fn(*map(_decoded, args), **{k: _decoded(v) for k, v in kwargs.items()})

    adapter.__name__ = adapter.__qualname__ = f"r_{fn.__name__}"
    return adapter


def _in_coverage_words(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with transferUQ's word for its level: ``coverage=`` passed on as ``level=``, and an
    error about `level` about `coverage`; R's long data frames read as tables."""

    def adapter(*args: Any, **kwargs: Any) -> Any:
        args = tuple(map(_decoded, args))
        kwargs = {k: _decoded(v) for k, v in kwargs.items()}
        if "coverage" in kwargs:
            kwargs["level"] = kwargs.pop("coverage")
        try:
            return fn(*args, **kwargs)
        except InvalidArgumentError as err:
            if err.args and isinstance(err.args[0], str):
                err.args = (_LEVEL.sub("`coverage`", err.args[0]), *err.args[1:])
            raise

    adapter.__name__ = adapter.__qualname__ = f"r_{fn.__name__}"
    adapter.__doc__ = f""":func:`llmsurrogate.transfer.{fn.__name__}` with transferUQ's ``coverage`` for ``level``."""
    return adapter


r_forecast_interval = _in_coverage_words(transfer.forecast_interval)
r_weighted_forecast_interval = _in_coverage_words(transfer.weighted_forecast_interval)
r_worst_case_interval = _in_coverage_words(transfer.worst_case_interval)
r_qte_interval = _in_coverage_words(transfer.qte_interval)
r_ete_interval = _in_coverage_words(transfer.ete_interval)
r_check_worstcase_dominance = _reading_long_frames(transfer.check_worstcase_dominance)
r_check_everywhere_dominance = _reading_long_frames(transfer.check_everywhere_dominance)
r_critical_gamma = _reading_long_frames(transfer.critical_gamma)
r_everywhere_dominance_box = _reading_long_frames(transfer.everywhere_dominance_box)

#: What R may call here (``.call("transfer.<name>")``): the adapters above, and the public functions
#: themselves where R's words and values cross unchanged.
R_FUNCTIONS = {
    "forecast_interval": r_forecast_interval, "weighted_forecast_interval": r_weighted_forecast_interval,
    "worst_case_interval": r_worst_case_interval, "qte_interval": r_qte_interval, "ete_interval": r_ete_interval,
    "check_worstcase_dominance": r_check_worstcase_dominance,
    "check_everywhere_dominance": r_check_everywhere_dominance,
    "critical_gamma": r_critical_gamma, "everywhere_dominance_box": r_everywhere_dominance_box,
    **{name: getattr(transfer, name) for name in ("coverage_bound", "error_table", "within_domain_cv")},
}
