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
from .._positions import reworded
from ..exceptions import InvalidArgumentError
from ..transfer import CodedLong, code_domains, in_square_layout, row_numbers, square_layout, square_order
from ._convert import _r_column

__all__ = ["R_FUNCTIONS", "r_check_everywhere_dominance", "r_check_worstcase_dominance", "r_critical_gamma",
           "r_ete_interval", "r_everywhere_dominance_box", "r_forecast_interval", "r_qte_interval",
           "r_weighted_forecast_interval",
           "r_worst_case_interval"]

_LEVEL = re.compile(r"`level`")


# The last few long data frames from R with their bytes, newest first: repeated calls on the same
# data frame (several levels, sides or functions) reuse its table and the sorted errors kept on it,
# as the matrices of llmsurrogate.rbridge._convert do. A list compared by equality, not a dict:
# every call brings new bytes objects, and hashing a 1,892-row frame's 22 kB took ~15 us a call,
# where comparing stops at the first differing byte (a new frame's errors differ at once).
_LONG_CACHE: list[tuple[tuple, CodedLong]] = []
_LONG_CACHE_SIZE = 8


def _r_long(spec: Any) -> CodedLong:
    """A long data frame from R sent as columns (R's ``.coded_long()``): ``codes``, the 0-based
    codes of its ``ncol`` domain columns (training..., test) into ``labels``, one column after the
    other as little-endian int32 bytes; ``errors``, the last column as little-endian doubles (NaN
    for ``NA``); ``labels``, the distinct domain labels as a typed R column. Integer domain columns
    come as ``numbers`` instead of ``codes`` and ``labels``: the numbers themselves as int32, the
    columns one after the other in one raw vector (or a list of one per column) (:func:`_numbered`;
    an ``r = 1`` frame of domains ``1..n`` with every pair once: :func:`_square_numbers`). The
    domains are then numbered in the order in which a long frame's are (sorted labels), without a
    data frame. A frame with the domain columns of a kept one (other errors) takes its domains and
    codes (and its rows' order).

    >>> import numpy as np
    >>> spec = {"nrow": 2, "ncol": 2, "codes": np.array([0, 1, 1, 0], "<i4").tobytes(),
    ...         "errors": np.array([0.5, 2.0]).tobytes(), "labels": {"kind": "character", "values": ["b", "a"]}}
    >>> t = _r_long(spec)
    >>> t.domains, t.train.tolist(), t.test.tolist(), t.values.tolist()
    (['a', 'b'], [[1], [0]], [0, 1], [0.5, 2.0])
    """
    nrow, ncol = int(spec["nrow"]), int(spec["ncol"])
    errors_raw = bytes(spec["errors"])
    if "numbers" in spec:  # integer domain columns as they are
        numbers = spec["numbers"]  # one raw vector, or one per column
        codes_raw, labels = b"".join(numbers) if isinstance(numbers, list) else bytes(numbers), None
    else:
        codes_raw, labels = bytes(spec["codes"]), _r_column(spec["labels"], "the domain labels")
    key = (nrow, ncol, errors_raw, codes_raw, labels and tuple(labels))
    design = None  # a kept frame with these domain columns (frames of one design, other errors)
    for kept, hit in _LONG_CACHE:  # one pass: this frame, else its design
        if kept[3] == codes_raw and kept[:2] == key[:2] and kept[4] == key[4]:
            if kept[2] == errors_raw:
                return hit
            design = design or hit
    codes = np.frombuffer(codes_raw, dtype="<i4")
    values = np.frombuffer(errors_raw, dtype="<f8").astype(np.float64)
    if codes.size != nrow * ncol or values.size != nrow or labels is not None and codes.size and \
            not 0 <= codes.min() <= codes.max() < len(labels):
        raise InvalidArgumentError(f"a long data frame from R has {codes.size} domain codes and {values.size} errors "
                                   f"for {nrow} rows and {ncol} domain columns")
    if design is not None:  # the domain columns of a kept frame
        order = design.__dict__.get("_r_order")
        if order is None:
            return _kept(key, CodedLong(values, design.test, design.train, design.domains))
        if np.isfinite(values).all():  # that frame's rows, placed as its were
            return _kept(key, _placed(values, order, design.domains))
    if labels is None and ncol == 2 and codes.size:
        placed = _square_numbers(codes, values, nrow)
        if placed is not None:
            return _kept(key, placed)
    if labels is None:
        codes, domains = _numbered(codes)
    elif all(type(v) is int for v in labels) and all(a < b for a, b in zip(labels, labels[1:])):
        domains, codes = labels, codes.astype(np.int64)  # R's whole numbers, ascending: sorted already
    else:
        perm, domains = code_domains([np.asarray(labels, dtype=object)])  # each label's number in sorted order
        codes = perm[:, 0][codes]
    codes = codes.reshape(ncol, nrow)
    test, train = codes[-1], codes[:-1].T
    if ncol == 2 and len(domains) > 1 and in_square_layout(test, train, len(domains)):
        test, train = square_layout(len(domains))  # shared: later tables see the layout at once
    return _kept(key, CodedLong(values, test, train, domains))


def _square_numbers(numbers: np.ndarray, values: np.ndarray, nrow: int) -> CodedLong | None:
    """An ``r = 1`` frame of R's whole-number domains ``1..n`` (``numbers``: its training, then
    test column) with every off-diagonal (train, test) pair once, in any order, and finite errors:
    its rows in the table's order (:func:`~llmsurrogate.transfer._table.square_layout`), the
    layout arrays shared, the order kept for frames of the same design (``_r_order``). Such a
    table is what numbering the domains (:func:`_numbered`) and placing each row by its pair
    (``ErrorTable._from_arrays``) give; the row order changes no table made from it, as no row
    of it can be an error (finite, no clash, no pair twice). ``None`` for any other frame.

    >>> t = _square_numbers(np.array([1, 2, 3, 1, 2, 3, 2, 1, 1, 3, 3, 2], "<i4"), np.arange(6.0), 6)
    >>> t.domains, t.test.tolist(), t.train[:, 0].tolist(), t.values.tolist()
    ([1, 2, 3], [0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1], [1.0, 2.0, 0.0, 5.0, 3.0, 4.0])
    """
    lo, hi = int(numbers.min()), int(numbers.max())
    if lo != 1 or hi * (hi - 1) != nrow or not np.isfinite(values).all():
        return None
    order = square_order(numbers[:nrow], numbers[nrow:], hi, base=1)
    if order is None:
        return None
    if order[0] == 0 and order[-1] == nrow - 1 and (order == row_numbers(nrow)).all():  # in that order already
        test, train = square_layout(hi)  # (later frames of its design: as they come, nothing to place)
        return CodedLong(values, test, train, list(range(1, hi + 1)))
    return _placed(values, order, list(range(1, hi + 1)))


def _placed(values: np.ndarray, order: np.ndarray, domains: list) -> CodedLong:
    """The ``r = 1`` coded table of these rows in the table's order (``values[order]``)."""
    test, train = square_layout(len(domains))
    out = CodedLong(values[order], test, train, domains)
    out._r_order = order
    return out


def _kept(key: tuple, out: CodedLong) -> CodedLong:
    _LONG_CACHE.insert(0, (key, out))
    del _LONG_CACHE[_LONG_CACHE_SIZE:]
    return out


def _numbered(numbers: np.ndarray) -> tuple[np.ndarray, list]:
    """R's whole-number domains (int32) as 0-based codes into their distinct values in ascending
    order (the order of a long frame's domains), and those values: a domain's code is its number -
    1 when the domains are 1..n, each present; a count of each number when they lie in a small
    positive range; a sort otherwise.

    >>> codes, domains = _numbered(np.array([3, 1, 1, 3, 7], "<i4"))
    >>> codes.tolist(), domains
    ([1, 0, 0, 1, 2], [1, 3, 7])
    """
    if numbers.size == 0:
        return numbers.astype(np.int64), []
    lo, hi = int(numbers.min()), int(numbers.max())
    if lo >= 1 and hi <= 4 * numbers.size + 1024:
        codes = np.subtract(numbers, 1, dtype=np.int64)
        present = np.zeros(hi, dtype=bool)
        present[codes] = True
        if present.all():
            return codes, list(range(1, hi + 1))
        rank = np.cumsum(present) - 1
        return rank[codes], (np.flatnonzero(present) + 1).tolist()
    domains, codes = np.unique(numbers, return_inverse=True)
    return codes.astype(np.int64).reshape(-1), domains.tolist()


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
                err.args = (reworded(err.args[0], lambda text: _LEVEL.sub("`coverage`", text)), *err.args[1:])
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
