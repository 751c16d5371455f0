"""The transfer-error table: the canonical input of every transfer-performance computation.

A table holds one error ``e_{T,d}`` per (unordered training set ``T`` of ``r`` domains, test domain
``d ∉ T``) over ``n`` domains, so ``N = n · C(n-1, r)`` errors (``docs/methods/transfer.md`` §1.4, §7). Using
unordered training sets is equivalent to the paper's ordered tuples for every quantile, weighted
quantile and LP, and needs fewer model fits.

Three input conventions are accepted everywhere (those of the authors' R package transferUQ):

* a square matrix ``E[train, test]`` for ``r = 1`` (numpy array or pandas DataFrame whose index and
  columns are the domain labels), diagonal ignored;
* a long frame with ``r`` training-domain columns, a test column and an error column;
* an :class:`ErrorTable`.

>>> import numpy as np
>>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])
>>> t = ErrorTable.from_matrix(E)
>>> t.n, t.r, t.N, t.K
(3, 1, 6, 2)
>>> t.values.tolist(), t.test.tolist()
([3.0, 5.0, 1.0, 6.0, 2.0, 4.0], [0, 0, 1, 1, 2, 2])
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._positions import at, located
from .._validation import as_frame, reject_lossy, require_columns
from ..exceptions import InvalidArgumentError, NonFiniteError, ShapeError
from ..results import Result, Summary, result_dataclass

__all__ = ["ErrorTable", "PooledErrors"]


def _labels(values: Sequence[Any]) -> list:
    uniq = list(dict.fromkeys(values))
    try:
        return sorted(uniq)
    except TypeError:
        return sorted(uniq, key=str)


def code_domains(columns: Sequence[Any]) -> tuple[np.ndarray, list]:
    """The domain labels of several equally long columns as codes: an ``(rows, len(columns))``
    int64 array of indices into the labels in :func:`_labels` order (sorted), and those labels.
    Vectorized (one hash pass over all the labels, then a permutation of the few distinct ones)."""
    arrays = [np.asarray(c) for c in columns]
    if all(a.dtype.kind in "iuf" for a in arrays):
        stacked = np.concatenate(arrays)
    else:
        stacked = np.concatenate([a.astype(object) for a in arrays])
    codes, uniques = pd.factorize(stacked, sort=False)
    uniques = list(uniques.tolist() if hasattr(uniques, "tolist") else uniques)
    domains = _labels(uniques)
    index = {d: i for i, d in enumerate(domains)}
    perm = np.array([index[u] for u in uniques], dtype=np.int64)
    rows = len(arrays[0]) if arrays else 0
    return perm[codes].reshape(len(arrays), rows).T, domains


def _shared_while_held(fn):
    """Memoise ``fn(*args)`` (read-only arrays, or a tuple of them) for as long as something else
    holds the result: weak references, so tables built in one layout share its arrays (and the
    identity checks of :func:`in_square_layout` hold), but nothing stays allocated once the last
    holder is gone (an ``lru_cache`` kept 16 bytes per error of the last 8 sizes after a call had
    returned, 1.6 GB at 10^8 errors; issue 37).

    >>> f = _shared_while_held(lambda n: np.zeros(n))
    >>> a = f(3); a is f(3)
    True
    >>> import gc; ref = weakref.ref(a); del a; _ = gc.collect(); ref() is None
    True
    >>> f.held(3) is None   # ``held``: the result only if something holds it, never computed
    True
    """
    cache: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
    parts: dict = {}   # args -> the number of arrays of a tuple result (None: one array); a few bytes a key
    lock = threading.Lock()

    def lookup(args):
        """The held result for ``args``, or None (under ``lock``)."""
        if args not in parts:
            return None
        k = parts[args]
        found = [cache.get((args, i)) for i in range(k or 1)]
        if any(h is None for h in found):
            return None
        return tuple(found) if k else found[0]

    @functools.wraps(fn)
    def shared(*args):
        with lock:
            out = lookup(args)
            if out is None:
                out = fn(*args)
                items = out if isinstance(out, tuple) else (out,)
                for i, item in enumerate(items):
                    cache[(args, i)] = item
                parts[args] = len(items) if isinstance(out, tuple) else None
            return out

    def held(*args):
        """The result for ``args`` if something holds it now, else None (nothing is computed)."""
        with lock:
            return lookup(args)

    shared.held = held
    return shared


@_shared_while_held
def square_layout(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The test (N,) and training domains (N, 1) of each error of an ``r = 1`` table of ``n``
    domains in the table's order (by test domain, then training domain: a matrix read column by
    column without its diagonal), read-only; tables in that layout share them."""
    test, train = np.nonzero(~np.eye(n, dtype=bool).T)
    test, train = test.astype(np.int64), train.astype(np.int64).reshape(-1, 1)
    test.flags.writeable = train.flags.writeable = False
    return test, train


def combinations_array(m: int, r: int) -> np.ndarray:
    """Every ``r``-subset of ``0..m-1`` as a ``(C(m, r), r)`` int64 array in lexicographic order
    (``itertools.combinations``'s), built block by block without Python tuples.

    >>> combinations_array(4, 2).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    """
    if r == 0:
        return np.zeros((1, 0), dtype=np.int64)
    if r > m:
        return np.zeros((0, r), dtype=np.int64)
    if r == 1:
        return np.arange(m, dtype=np.int64).reshape(-1, 1)
    tail = combinations_array(m - 1, r - 1) + 1  # the (r-1)-subsets of 1..m-1, sorted by their first element
    out = np.empty((math.comb(m, r), r), dtype=np.int64)
    at_row = 0
    for first in range(m - r + 1):  # the subsets starting with `first`: the tails above it (a suffix)
        rest = tail[np.searchsorted(tail[:, 0], first, side="right"):]
        out[at_row:at_row + rest.shape[0], 0] = first
        out[at_row:at_row + rest.shape[0], 1:] = rest
        at_row += rest.shape[0]
    return out


@_shared_while_held
def lex_layout(n: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """The test (N,) and training domains (N, r) of each error of a complete table of ``n`` domains
    and ``r`` training domains in the table's order (by test domain, then training set in
    lexicographic order: what :meth:`ErrorTable._from_arrays`'s sort gives), read-only; tables in
    that layout share them. ``r = 1``: :func:`square_layout`.

    >>> test, train = lex_layout(4, 2)
    >>> test[:3].tolist(), train[:3].tolist()
    ([0, 0, 0], [[1, 2], [1, 3], [2, 3]])
    """
    if r == 1:
        return square_layout(n)
    others = combinations_array(n - 1, r)  # the training sets of each test domain, domains renumbered without it
    k = others.shape[0]
    train = np.empty((n * k, r), dtype=np.int64)
    for d in range(n):
        np.add(others, others >= d, out=train[d * k:(d + 1) * k])
    test = np.repeat(np.arange(n, dtype=np.int64), k)
    test.flags.writeable = train.flags.writeable = False
    return test, train


def square_order(train: np.ndarray, test: np.ndarray, n: int, base: int = 0) -> np.ndarray | None:
    """Where each row of the ``r = 1`` table's layout (:func:`square_layout`) is among the rows
    given by their training and test domains (``train``, ``test``: (N,) whole numbers in
    ``base..base+n-1``, any integer dtype), when those rows are every off-diagonal (train, test)
    pair of ``n`` domains once, in any order; ``None`` otherwise (a pair twice or missing, a row
    with its test domain as training domain). One scatter of the row numbers into the slots
    ``test * n + train`` and one gather of the off-diagonal ones: N rows fill N distinct
    off-diagonal slots exactly when every slot is filled.

    >>> square_order(np.array([1, 0, 2, 0, 2, 1]), np.array([0, 1, 0, 2, 1, 2]), 3).tolist()
    [0, 2, 1, 4, 3, 5]
    >>> square_order(np.array([2, 1, 3, 1, 3, 2]), np.array([1, 2, 1, 3, 2, 3]), 3, base=1).tolist()
    [0, 2, 1, 4, 3, 5]
    >>> square_order(np.array([1, 1, 2, 0, 2, 1]), np.array([0, 1, 0, 2, 1, 2]), 3) is None  # (1, 1)
    True
    """
    size = n * (n - 1)
    if n < 2 or train.shape != (size,) or test.shape != (size,):
        return None
    slots = (n + base) * n + base  # slots 0..(n - 1 + base) * (n + 1): the last, test = train = n - 1 + base
    slot = np.full(slots, -1, dtype=np.intp)
    slot[np.multiply(test, n, dtype=np.intp) + train] = row_numbers(size)  # (intp: scatters faster than int32)
    order = slot[_square_slots(n, base)]
    return order if order.min() >= 0 else None


@_shared_while_held
def _square_slots(n: int, base: int = 0) -> np.ndarray:
    """The slots ``test * n + train`` of the rows of :func:`square_layout` (domains numbered
    from ``base``), read-only."""
    test, train = square_layout(n)
    slots = ((test + base) * n + train[:, 0] + base).astype(np.intp)
    slots.flags.writeable = False
    return slots


@_shared_while_held
def row_numbers(size: int) -> np.ndarray:
    """``0..size-1``, read-only (scattered into slots, never written)."""
    rows = np.arange(size, dtype=np.intp)
    rows.flags.writeable = False
    return rows


def in_square_layout(test: np.ndarray, train: np.ndarray, n: int) -> bool:
    """Whether the rows (``test`` (N,), ``train`` (N, 1)) are every off-diagonal (train, test) pair
    of ``n`` domains once, in the table's order (:func:`square_layout`): the shared arrays of that
    layout, or equal to them."""
    square_test, square_train = square_layout(n)
    if test is square_test and (train is square_train or train.base is square_train):
        return True
    if test.shape != square_test.shape or train.shape != square_train.shape:
        return False
    if test.size and (test[0] != square_test[0] or test[-1] != square_test[-1] or train[0, 0] != square_train[0, 0]
                      or train[-1, 0] != square_train[-1, 0]):  # most other layouts differ at an end
        return False
    return bool((test == square_test).all()) and bool((train == square_train).all())


class CodedLong:
    """A long table whose domains are already integer codes: ``values`` (NaN for a missing
    error), ``test`` (N,) and ``train`` (N, r) indices into ``domains`` (sorted as
    :func:`_labels` sorts them), ``r = 0`` columns for the two-column form. The R bridge sends long
    data frames so (columns of codes and errors, not rows); :func:`_pooled` reads it as it reads
    a long frame, and keeps the tables it made from it (one per ``r``), so that repeated calls on
    the same data frame reuse the sorted errors."""

    def __init__(self, values, test, train, domains):
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        self.test = np.ascontiguousarray(test, dtype=np.int64)
        train = np.ascontiguousarray(train, dtype=np.int64)
        # (N, r) as given: the shared layout arrays stay themselves (in_square_layout checks by identity)
        self.train = train if train.ndim == 2 and train.shape[0] == self.test.size else \
            train.reshape(self.test.size, -1)
        self.domains = list(domains)
        self.tables: dict = {}


@result_dataclass
class ErrorTable(Result):
    """Transfer errors of one procedure, one per (training set, test domain).

    Attributes
    ----------
    values : ndarray (N,)
        The errors, ordered by test domain, then by training set.
    test : ndarray (N,) of int
        Test-domain index (0..n-1) of each error.
    train : ndarray (N, r) of int
        Training-domain indices of each error, ascending within a row.
    domains : list
        The ``n`` domain labels; index ``i`` above refers to ``domains[i]``.
    name : str
        The procedure's name (e.g. ``"CPT"``), used in printed output.
    metric : str
        What the values measure (e.g. ``"raw transfer error"``).

    Examples
    --------
    >>> import numpy as np
    >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
    >>> t = ErrorTable.from_matrix(E, domains=["a", "b", "c"], name="M")
    >>> t.n, t.r, t.N, t.K
    (3, 1, 6, 2)
    >>> t.tidy().columns.tolist(), float(t.to_matrix().loc["a", "b"])
    (['train', 'test', 'error'], 1.0)
    """

    values: np.ndarray
    test: np.ndarray
    train: np.ndarray
    domains: list
    name: str = ""
    metric: str = "transfer error"

    # ---- sizes -----------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of domains."""
        return len(self.domains)

    @property
    def r(self) -> int:
        """Number of training domains per error."""
        return int(self.train.shape[1])

    @property
    def N(self) -> int:  # noqa: N802 - the paper's symbol
        """Number of errors, ``n · C(n-1, r)``."""
        return int(self.values.size)

    @property
    def K(self) -> int:  # noqa: N802 - the paper's symbol
        """Errors per test domain, ``C(n-1, r)``."""
        return self.N // self.n

    # ---- constructors --------------------------------------------------------------------------------
    @classmethod
    def from_matrix(cls, matrix: Any, domains: Sequence | None = None, *, name: str = "",
                    metric: str = "transfer error", arg: str = "err") -> "ErrorTable":
        """An ``r = 1`` table from a square matrix ``E[train, test]`` (diagonal ignored).

        A pandas DataFrame's index gives the domain labels (its columns must hold the same labels;
        they are reordered to match).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate.transfer import ErrorTable
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
        >>> ErrorTable.from_matrix(E, domains=["a", "b", "c"], name="M").tidy().head(3)
          train test  error
        0     b    a    3.0
        1     c    a    5.0
        2     a    b    1.0
        """
        if isinstance(matrix, pd.DataFrame):
            if set(map(str, matrix.index)) != set(map(str, matrix.columns)) and \
                    not (isinstance(matrix.index, pd.RangeIndex) and isinstance(matrix.columns, pd.RangeIndex)):
                raise ShapeError(f"argument `{arg}`: the matrix's row labels (training domains) and column "
                                 "labels (test domains) must be the same domains")
            labels = list(matrix.index)
            if set(map(str, matrix.index)) == set(map(str, matrix.columns)):  # paired by label, RangeIndex too
                matrix = matrix.loc[:, [c for lab in labels for c in matrix.columns if str(c) == str(lab)]]
            for col in matrix.columns:
                reject_lossy(matrix[col], arg)
            arr = matrix.to_numpy(dtype=np.float64, na_value=np.nan)
            domains = list(domains) if domains is not None else labels
        else:
            reject_lossy(matrix if isinstance(matrix, np.ndarray) else np.asarray(matrix, dtype=object), arg)
            try:
                arr = np.asarray(matrix, dtype=np.float64)
            except (TypeError, ValueError) as err:
                raise InvalidArgumentError(f"argument `{arg}` must be a numeric matrix; {err}") from err
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ShapeError(f"argument `{arg}` must be a square n x n matrix [train, test]; got shape {arr.shape}")
        n = arr.shape[0]
        if n < 2:
            raise InvalidArgumentError(f"argument `{arg}`: need at least 2 domains (n > r = 1); got {n}")
        domains = list(range(n)) if domains is None else list(domains)
        if len(domains) != n:
            raise ShapeError(f"argument `domains` has {len(domains)} labels for a {n} x {n} matrix")
        # column by column without the diagonal (grouped by test domain, the table's order): the
        # transpose's rows, flat, less every (n + 1)-th cell from the second; one copy, 8 bytes an
        # error, and the shared layout's index arrays (issue 37: np.nonzero's took 32 more)
        cells = np.ascontiguousarray(arr.T).reshape(-1)
        values = cells[1:].reshape(n - 1, n + 1)[:, :-1].reshape(-1) if n > 1 else cells[:0]
        values = np.array(values, dtype=np.float64) if np.may_share_memory(values, arr) else values
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            i = int(bad[0])
            test_i, k = divmod(i, n - 1)
            train_i = k + (k >= test_i)
            what = "missing (NaN)" if np.isnan(values[i]) else f"not finite ({values[i]})"
            raise NonFiniteError(f"argument `{arg}`: the error for train={domains[train_i]!r}, "
                                 f"test={domains[test_i]!r} is {what}; every off-diagonal cell needs a finite error")
        return cls._square(values, n, domains, name=name, metric=metric, copy=False)

    @classmethod
    def from_long(cls, data: Any, *, error: str = "error", test: str = "test", train: Sequence[str] | None = None,
                  name: str = "", metric: str = "transfer error", arg: str = "err") -> "ErrorTable":
        """A table from a long frame: ``r`` training-domain columns, a test column, an error column.

        ``train`` defaults to the columns whose names start with ``"train"``. Each unordered
        training set must appear with each test domain outside it exactly once.

        Examples
        --------
        >>> import pandas as pd; from llmsurrogate.transfer import ErrorTable
        >>> long = pd.DataFrame({"train": ["a", "a", "b", "b", "c", "c"], "test": ["b", "c", "a", "c", "a", "b"],
        ...                      "error": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
        >>> t = ErrorTable.from_long(long)
        >>> t.n, t.r, float(t.to_matrix().loc["c", "b"])
        (3, 1, 6.0)
        """
        frame = as_frame(data, arg)
        if train is None:
            train = [c for c in frame.columns if str(c).startswith("train")]
            if not train:
                raise InvalidArgumentError(f"argument `{arg}`: no training-domain columns; name them "
                                           "'train', 'train_1', ... or pass `train=[...]`")
        train = list(train)
        require_columns(frame, [*train, test, error], name=arg)
        if len(frame) == 0:
            raise InvalidArgumentError(f"argument `{arg}` has no rows")
        if frame[[*train, test]].isna().to_numpy().any():
            raise InvalidArgumentError(f"argument `{arg}`: the domain columns {[*train, test]} have missing values")
        codes, domains = code_domains([frame[c].to_numpy() for c in [*train, test]])
        tr, te = codes[:, :-1], codes[:, -1]
        reject_lossy(frame[error], f"{arg}[{error!r}]")
        try:
            values = frame[error].to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"argument `{arg}`: column {error!r} must hold numbers; {err}") from err
        return cls._from_arrays(values, te, tr, domains, name=name, metric=metric, arg=arg)

    @classmethod
    def _from_arrays(cls, values, test, train, domains, *, name, metric, arg, finite=False) -> "ErrorTable":
        """The table of these rows after the full checks (``finite=True``: the caller has checked
        that every value is finite)."""
        n, r = len(domains), train.shape[1]
        if n <= r:
            raise InvalidArgumentError(f"argument `{arg}`: need more domains than training domains (n > r); "
                                       f"got n = {n}, r = {r}")
        if not finite:
            bad = np.flatnonzero(~np.isfinite(values))
            if bad.size:
                raise NonFiniteError(located(f"argument `{arg}`: error at ", at(bad[0], "row", marked=True),
                                             f" is {values[bad[0]]}; every (train, test) combination needs a finite "
                                             "error"))
        if r == 1 and values.size == n * (n - 1):  # the matrix layout: placed by (test, train) slot, no sort
            if in_square_layout(test, train, n):  # in that order already
                return cls._square(values, n, domains, name=name, metric=metric)
            slot = np.full(n * n, -1, dtype=np.int64)
            slot[test * n + train[:, 0]] = np.arange(values.size)
            slot[:: n + 1] = -1  # a row with its test domain as training domain leaves a slot empty below
            order = slot[slot >= 0]
            if order.size == values.size:  # every off-diagonal (train, test) once: the table's layout
                return cls._square(values[order], n, domains, name=name, metric=metric, copy=False)
        train = np.sort(train, axis=1)
        if r > 1 and np.any(np.diff(train, axis=1) == 0):
            row = int(np.flatnonzero(np.any(np.diff(train, axis=1) == 0, axis=1))[0])
            raise InvalidArgumentError(located(f"argument `{arg}`: ", at(row, "row", marked=True),
                                               " repeats a training domain"))
        clash = np.flatnonzero(np.any(train == test[:, None], axis=1))
        if clash.size:
            raise InvalidArgumentError(located(f"argument `{arg}`: ", at(clash[0], "row", marked=True),
                                               f" has its test domain {domains[test[clash[0]]]!r} among its training "
                                               "domains"))
        keys = np.column_stack([test, train])
        order = np.lexsort(keys[:, ::-1].T)
        keys, values, test, train = keys[order], values[order], test[order], train[order]
        dup = np.flatnonzero(np.all(keys[1:] == keys[:-1], axis=1))
        if dup.size:
            k = keys[dup[0]]
            raise InvalidArgumentError(
                f"argument `{arg}`: duplicate entry for train={[domains[i] for i in k[1:]]}, test={domains[k[0]]!r}; "
                "keep one error per (training set, test domain)")
        expected = n * math.comb(n - 1, r)
        if values.size != expected:
            counts = np.bincount(test, minlength=n)
            short = int(np.argmin(counts))
            raise ShapeError(
                f"argument `{arg}`: {values.size} errors, but {n} domains with r = {r} need {expected} "
                f"(each test domain with each of the C({n - 1}, {r}) training sets); test domain "
                f"{domains[short]!r} has {counts[short]} of {math.comb(n - 1, r)}")
        return cls(values=np.ascontiguousarray(values), test=np.ascontiguousarray(test),
                   train=np.ascontiguousarray(train), domains=list(domains), name=name, metric=metric)

    @classmethod
    def _square(cls, values, n, domains, *, name, metric, copy=True) -> "ErrorTable":
        """The ``r = 1`` table of ``values`` (copied unless ``copy=False``) in the table's order
        (:func:`square_layout`); its test and training domains are the shared read-only arrays of
        that layout."""
        test, train = square_layout(n)
        values = np.array(values, dtype=np.float64) if copy else np.ascontiguousarray(values, dtype=np.float64)
        return cls(values=values, test=test, train=train, domains=list(domains), name=name, metric=metric)

    @classmethod
    def _in_lex_layout(cls, values, n, r, domains, *, name, metric) -> "ErrorTable":
        """The complete table whose ``values`` (float64, N, not copied) are already in the table's
        order (:func:`lex_layout`; the builds write them there): no sort, no index arrays of its
        own (the layout's shared read-only ones). Checks the size and that every value is finite."""
        values = np.ascontiguousarray(values, dtype=np.float64)
        size = n * math.comb(n - 1, r)
        if n <= r or values.shape != (size,):
            raise ShapeError(f"{values.shape} values for a complete table of n = {n}, r = {r} ({size} errors)")
        if not np.isfinite(values).all():
            raise NonFiniteError(f"a table in the layout of n = {n}, r = {r} holds a non-finite value")
        if r == 1:
            return cls._square(values, n, domains, name=name, metric=metric, copy=False)
        test, train = lex_layout(n, r)
        return cls(values=values, test=test, train=train, domains=list(domains), name=name, metric=metric)

    @classmethod
    def coerce(cls, err: Any, *, arg: str = "err", name: str = "") -> "ErrorTable":
        """Accept any of the three conventions (matrix, long frame, table).

        Examples
        --------
        >>> import numpy as np; from llmsurrogate.transfer import ErrorTable
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
        >>> t = ErrorTable.coerce(E)          # a matrix, a long frame or a table
        >>> t.domains, ErrorTable.coerce(t) is t
        ([0, 1, 2], True)
        """
        if isinstance(err, ErrorTable):
            return err
        if isinstance(err, Mapping) or type(err).__module__.split(".")[0] == "polars":
            err = as_frame(err, arg)
        if isinstance(err, pd.DataFrame):
            if "test" in err.columns and any(str(c).startswith("train") for c in err.columns):
                error_col = "error" if "error" in err.columns else err.columns[-1]
                return cls.from_long(err, error=error_col, name=name, arg=arg)
            return cls.from_matrix(err, name=name, arg=arg)
        if isinstance(err, np.ndarray) or isinstance(err, (list, tuple)):
            return cls.from_matrix(err, name=name, arg=arg)
        raise InvalidArgumentError(
            f"argument `{arg}` must be a square error matrix [train, test], a long frame with columns "
            f"train..., test, error, or an ErrorTable; got {type(err).__name__}")

    # ---- comparisons between methods ----------------------------------------------------------
    def same_design(self, other: "ErrorTable", *, arg: str = "err2") -> None:
        """Raise unless ``other`` covers the same domains and (training set, test) pairs.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate.transfer import ErrorTable
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
        >>> ErrorTable.from_matrix(E).same_design(ErrorTable.from_matrix(2 * E))  # same design: no error
        >>> ErrorTable.from_matrix(E).same_design(ErrorTable.from_matrix(np.ones((4, 4))))
        Traceback (most recent call last):
            ...
        llmsurrogate.exceptions.ShapeError: argument `err2` covers other domains than `err1`; both methods must be evaluated on the same domains
        """
        if list(map(str, self.domains)) != list(map(str, other.domains)):
            raise ShapeError(f"argument `{arg}` covers other domains than `err1`; both methods must be "
                             "evaluated on the same domains")
        if self.r != other.r or not (np.array_equal(self.test, other.test) and np.array_equal(self.train, other.train)):
            raise ShapeError(f"argument `{arg}` has another (training set, test domain) structure than `err1`")

    # ---- output -------------------------------------------------------------------------------
    def to_matrix(self):
        """The ``r = 1`` table as an ``n x n`` DataFrame ``[train, test]`` with NaN on the diagonal.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate.transfer import ErrorTable
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
        >>> ErrorTable.from_matrix(E, domains=["a", "b", "c"]).to_matrix()
        test     a    b    c
        train
        a      NaN  1.0  2.0
        b      3.0  NaN  4.0
        c      5.0  6.0  NaN
        """
        if self.r != 1:
            raise InvalidArgumentError(f"to_matrix() needs r = 1; this table has r = {self.r}")
        m = np.full((self.n, self.n), np.nan)
        m[self.train[:, 0], self.test] = self.values
        return pd.DataFrame(m, index=pd.Index(self.domains, name="train"), columns=pd.Index(self.domains, name="test"))

    def tidy(self):
        """Long frame: ``train`` (or ``train_1..train_r``), ``test``, ``error``; domain labels.

        Examples
        --------
        >>> import numpy as np; from llmsurrogate.transfer import ErrorTable
        >>> E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # E[train, test]
        >>> ErrorTable.from_matrix(E, domains=["a", "b", "c"]).tidy()
          train test  error
        0     b    a    3.0
        1     c    a    5.0
        2     a    b    1.0
        3     c    b    6.0
        4     a    c    2.0
        5     b    c    4.0
        """
        labels = np.asarray(self.domains, dtype=object)
        cols = {"train": labels[self.train[:, 0]]} if self.r == 1 else \
            {f"train_{k + 1}": labels[self.train[:, k]] for k in range(self.r)}
        cols["test"] = labels[self.test]
        cols["error"] = self.values
        return pd.DataFrame(cols)

    def summary(self) -> Summary:
        """Sizes and the distribution of the errors (print it, or ``.as_text()``).

        Examples
        --------
        >>> from llmsurrogate import datasets; from llmsurrogate.transfer import ErrorTable
        >>> print(ErrorTable.coerce(datasets.load_transfer_errors("RF"), name="RF").summary().as_text().splitlines()[0])
        Transfer-error table: RF (transfer error)
        """
        q = np.quantile(self.values, [0, 0.05, 0.5, 0.95, 1])
        dist = pd.DataFrame({"min": [q[0]], "p5": [q[1]], "median": [q[2]], "p95": [q[3]], "max": [q[4]]})
        title = f"Transfer-error table{': ' + self.name if self.name else ''} ({self.metric})"
        return Summary(title, facts={"domains (n)": self.n, "training domains (r)": self.r,
                                     "errors (N)": self.N, "per test domain (K)": self.K},
                       tables=[("distribution of the pooled errors", dist)])


class PooledErrors:
    """transferUQ's reading of an error table: every error pooled as given (``pooled=True``).

    The authors' package only looks at the errors and their test domains, so it also takes
    (a) the two-column form ``test, error`` (``r`` then comes from the caller, or stays unknown),
    (b) ordered training tuples (each unordered training set once per order, e.g. its ``r = 2``
    example), and (c) tables with missing cells, whose remaining errors it uses ("the theoretical
    guarantee is unclear"). This holds such a table: ``values``, ``test`` (0..n-1), ``domains``,
    ``r`` (``None`` when unknown) and ``missing`` (how many errors were NaN and left out). It is
    *balanced* when every test domain has the same number of errors ``K``; the functions that need
    the per-domain structure (weighted and worst-case intervals, dominance) need a balanced table.
    docs/methods/transfer.md §7 (input conventions).
    """

    def __init__(self, values, test, domains, r, *, missing: int = 0, expected: int | None = None,
                 name: str = "", metric: str = "transfer error"):
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        self.test = np.ascontiguousarray(test, dtype=np.int64)
        self.domains = list(domains)
        self._r = r
        self.missing = int(missing)
        self.expected = expected
        self.name = name
        self.metric = metric
        counts = np.bincount(self.test, minlength=len(self.domains))
        self.balanced = bool(counts.size and np.all(counts == counts[0]) and counts[0] > 0)

    n = property(lambda self: len(self.domains), doc="Number of domains.")
    N = property(lambda self: int(self.values.size), doc="Number of pooled errors.")  # noqa: N815

    @property
    def r(self):
        """Number of training domains, or ``None`` (two-column form without ``r``)."""
        return self._r

    @property
    def K(self) -> int:  # noqa: N802 - the paper's symbol
        """Errors per test domain (balanced tables only)."""
        return self.N // self.n

    @property
    def complete(self) -> bool:
        """No missing cells and, when ``r`` is known, one error per (training set or tuple, test)."""
        return self.missing == 0 and self.balanced and (self.expected is None or self.N == self.expected)

    def same_design(self, other: Any, *, arg: str = "err2") -> None:
        """Raise unless ``other`` has the same domains and number of errors per test domain."""
        if list(map(str, self.domains)) != list(map(str, other.domains)):
            raise ShapeError(f"argument `{arg}` covers other domains than `err1`; both methods must be "
                             "evaluated on the same domains")
        if not np.array_equal(np.bincount(self.test, minlength=self.n), np.bincount(other.test, minlength=other.n)):
            raise ShapeError(f"argument `{arg}` has another number of errors per test domain than `err1`")


def _pooled(err: Any, *, arg: str, r: Any = None, name: str = "") -> "ErrorTable | PooledErrors":
    """transferUQ's reading of ``err`` (``pooled=True``): a complete table in the package's own
    layout stays an :class:`ErrorTable`; anything else transferUQ accepts becomes a
    :class:`PooledErrors`. Long frames are read by position as transferUQ does: the last column
    holds the errors, the one before it the test domain, the first ``ncol - 2`` the training
    domains (none: the two-column form). A :class:`CodedLong` (the R bridge's long data frames)
    is read the same way."""
    if isinstance(err, (ErrorTable, PooledErrors)):
        return err
    if r is not None:
        if isinstance(r, bool) or not isinstance(r, (int, np.integer, float)) or float(r) != int(r) or int(r) < 1:
            raise InvalidArgumentError(f"argument `r` must be a whole number >= 1; got {r!r}")
        r = int(r)
    if isinstance(err, CodedLong):
        key = (r, arg, name)
        if key not in err.tables:
            ncol = err.train.shape[1]
            if ncol and r is not None and r != ncol:
                raise InvalidArgumentError(f"argument `r` ({r}) does not match the {ncol} training-domain "
                                           f"columns of `{arg}`")
            err.tables[key] = _pooled_codes(err.values, err.test, err.train, err.domains, ncol or r, arg=arg,
                                            name=name)
        return err.tables[key]
    if isinstance(err, Mapping) or type(err).__module__.split(".")[0] == "polars":
        err = as_frame(err, arg)
    # a long frame has a `test` column or is not square (transferUQ's matrices are square)
    long = isinstance(err, pd.DataFrame) and ("test" in map(str, err.columns) or err.shape[0] != err.shape[1])
    frame = err if long else None
    if frame is None:  # a square matrix
        try:
            arr = err.to_numpy(dtype=np.float64, na_value=np.nan) if isinstance(err, pd.DataFrame) else \
                np.asarray(err, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"argument `{arg}` must be a numeric matrix; {exc}") from exc
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ShapeError(f"argument `{arg}` must be a square n x n matrix [train, test]; got shape {arr.shape}")
        n = arr.shape[0]
        test, train = np.nonzero(~np.eye(n, dtype=bool).T)
        frame = pd.DataFrame({"train": train, "test": test, "error": arr[train, test]})
        if r is not None and r != 1:
            raise InvalidArgumentError(f"argument `r` ({r}) does not match a square matrix (r = 1)")
    d = frame.shape[1]
    if d < 2:
        raise InvalidArgumentError(f"argument `{arg}` needs at least two columns: the test domain and the error")
    cols = list(frame.columns)
    train_cols, test_col, err_col = cols[:d - 2], cols[d - 2], cols[d - 1]
    if train_cols and r is not None and r != len(train_cols):
        raise InvalidArgumentError(f"argument `r` ({r}) does not match the {len(train_cols)} training-domain "
                                   f"columns of `{arg}`")
    r = len(train_cols) if train_cols else r
    if len(frame) == 0:
        raise InvalidArgumentError(f"argument `{arg}` has no rows")
    for c in [*train_cols, test_col]:
        isna = frame[c].isna().to_numpy()
        if isna.any():
            raise InvalidArgumentError(located(f"argument `{arg}`: column {str(c)!r} has a missing domain at ",
                                               at(np.flatnonzero(isna)[0], "row", marked=True),
                                               "; every error needs its training and test domains"))
    try:
        values = frame[err_col].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"argument `{arg}`: column {str(err_col)!r} must hold numbers; {exc}") from exc
    codes, domains = code_domains([frame[c].to_numpy() for c in [*train_cols, test_col]])
    return _pooled_codes(values, codes[:, -1], codes[:, :-1], domains, r, arg=arg, name=name)


def _pooled_codes(values: np.ndarray, test: np.ndarray, train: np.ndarray, domains: list, r: int | None, *,
                  arg: str, name: str = "") -> "ErrorTable | PooledErrors":
    """:func:`_pooled` once the domains are codes (``train`` with no columns: the two-column form)."""
    if values.size == 0:
        raise InvalidArgumentError(f"argument `{arg}` has no rows")
    finite = bool(np.isfinite(values).all())
    if not finite:
        inf = np.flatnonzero(np.isinf(values))
        if inf.size:
            raise NonFiniteError(located(f"argument `{arg}`: the error at ", at(inf[0], "row", marked=True),
                                         f" is {values[inf[0]]}; errors must be finite (NaN marks a missing cell)"))
    n = len(domains)
    if finite and r == 1 and train.shape[1] == 1 and values.size == n * (n - 1) and in_square_layout(test, train, n):
        # the table's own r = 1 layout in its order (no test domain among the training domains, every
        # pair once): what the checks below and ErrorTable._from_arrays would give
        return ErrorTable._square(values, n, domains, name=name, metric="transfer error")
    clash = (train[:, 0] == test) if train.shape[1] == 1 else np.any(train == test[:, None], axis=1)
    if clash.any():
        clash = np.flatnonzero(clash)
        raise InvalidArgumentError(located(f"argument `{arg}`: ", at(clash[0], "row", marked=True),
                                           f" has its test domain {domains[test[clash[0]]]!r} among its training "
                                           "domains"))
    keep = None if finite else ~np.isnan(values)  # finite: nothing is missing
    missing = 0 if finite else int((~keep).sum())
    if not finite and not keep.any():
        raise InvalidArgumentError(f"argument `{arg}`: every error is missing (NaN)")
    if r is not None and n <= r:
        raise InvalidArgumentError(f"argument `{arg}`: need more domains than training domains (n > r); "
                                   f"got n = {n}, r = {r}")
    if train.shape[1] and missing == 0 and values.size == n * math.comb(n - 1, train.shape[1]):
        try:  # the package's own layout (one error per unordered training set): keep the full checks
            return ErrorTable._from_arrays(values, test, train, domains, name=name, metric="transfer error", arg=arg,
                                           finite=True)
        except (InvalidArgumentError, ShapeError):
            pass
    if keep is None:
        return PooledErrors(values, test, domains, r, missing=0, expected=_expected(n, r, values.size), name=name)
    return PooledErrors(values[keep], test[keep], domains, r, missing=missing, expected=_expected(n, r, values.size),
                        name=name)


def _expected(n: int, r: int | None, size: int) -> int | None:
    """How many errors a pooled table of ``size`` rows should have (ordered or unordered training
    sets; ``None`` without ``r``)."""
    if r is None:
        return None
    ordered = n * math.perm(n - 1, r)
    unordered = n * math.comb(n - 1, r)
    return ordered if size == ordered or size > unordered else unordered
