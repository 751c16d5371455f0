"""What the transfer inference modules share: reading an error table, sides and levels.

Every inference function (:mod:`._intervals`, :mod:`._dominance`, :mod:`._ustat`) takes the error
table in any of the three conventions of the authors' R package transferUQ (a square matrix
``[train, test]`` with the diagonal ignored, a long frame ``train..., test, error``, or an
:class:`ErrorTable`); ``pooled=True`` reads it as transferUQ does (:class:`PooledErrors`). A long
table of a sample of the training sets (``error_table(subsets=K)``, ``transfer build --subsets K``)
is read as its errors pooled, with a warning; computations per test domain (weights, worst cases,
dominance) then need the same number of errors for every test domain.

``side`` is ``"two"``, ``"upper"`` (an upper bound: ``(-inf, a]``, transferUQ's ``"right"``) or
``"lower"`` (a lower bound: ``[a, inf)``, transferUQ's ``"left"``); the package's names are accepted.
``level`` is the package's *nominal* coverage level c (transferUQ's ``coverage``): a two-sided
interval uses τ = (1 + c)/2, a one-sided one τ = c. ``correction=True`` inflates c by
(n + 1)/(n − r) first so that Proposition 1 guarantees c. Every interval function also accepts
``tau=`` to give the quantile level directly.

The Rust-side sorted table (``rust/transfer/table.rs``) is built once per :class:`ErrorTable` and
cached on it (:func:`_core_table`) for the computations per test domain; intervals that need only a
few order statistics of the pooled errors select them (:func:`_order_statistics`) without it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .. import _core
from .._positions import at, located
from .._validation import (
    as_float_array,
    as_frame,
    check_choice,
    check_int,
    check_probability,
)
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning, ShapeError
from ._stream import Streamed, is_streamed, streamed
from ._stream import order_statistics as streamed_order_statistics
from ._table import CodedLong, ErrorTable, PooledErrors, _pooled, code_domains

_SIDES = {"two": "two", "upper": "upper", "lower": "lower", "right": "upper", "left": "lower"}
DEFAULT_TAULIST = np.round(np.arange(0.5, 1.0 + 1e-9, 0.01), 10)
DEFAULT_BETAS = np.round(np.arange(0.2, 0.8 + 1e-9, 0.01), 10)


# ---- plumbing -------------------------------------------------------------------------------------

def _table(err: Any, arg: str = "err", pooled: bool = False, r: Any = None) -> ErrorTable:
    """``err`` as an :class:`ErrorTable`; with ``pooled=True`` read as transferUQ does (two-column
    form, ordered training tuples, missing cells: a :class:`PooledErrors`), with a warning when
    cells are missing."""
    if isinstance(err, PooledErrors):  # read already
        return err
    if is_streamed(err):
        raise InvalidArgumentError(
            f"argument `{arg}`: a file, memory map or Dask collection is read in chunks by forecast_interval and "
            "qte_interval only; for this computation read the table into memory first (a matrix, "
            "a long table or an ErrorTable)")
    if not pooled:
        try:
            return ErrorTable.coerce(err, arg=arg)
        except ShapeError:
            if not _training_sample(err, arg):
                raise
        # a long table with some of the training sets (error_table(subsets=K), `transfer build
        # --subsets K`): its errors pooled as given, with a warning
        t = _pooled(err, arg=arg, r=r)
        if isinstance(t, PooledErrors) and t.r is not None:
            what = arg if arg.startswith("-") else f"argument `{arg}`"  # the command line names its option
            warnings.warn(f"{what} holds {t.N} of the {t.n * math.comb(t.n - 1, t.r)} errors of a complete table "
                          f"({t.n} domains, r = {t.r}), a sample of the training sets: the result pools the errors "
                          "given, an estimate of the complete table's (Proposition 1's guarantee is for every training "
                          "set)", LLMSurrogateWarning, stacklevel=4)
        return t
    t = _pooled(err, arg=arg, r=r)
    if isinstance(t, PooledErrors) and not t.complete:
        if t.missing:
            what = f"{t.missing} of its {t.N + t.missing} errors are missing (NA)"
        elif t.expected is not None:
            what = f"it has {t.N} errors where {t.n} domains with r = {t.r} need {t.expected}"
        else:
            what = "its test domains have different numbers of errors"
        warnings.warn(f"argument `{arg}`: {what}; as transferUQ does, the result uses the errors given, but "
                      "Proposition 1's guarantee needs one error per (training set, test domain)",
                      LLMSurrogateWarning, stacklevel=4)  # 4: past the public function's argument wrapper
    return t


def _training_sample(err: Any, arg: str) -> bool:
    """Whether ``err`` is a long table (``train...``, ``test``, ``error``) of a sample of the
    training sets: no missing error, and each training set in it tested on every domain outside
    it, once (what ``error_table(subsets=K)`` writes). A table missing single cells is not one."""
    if isinstance(err, CodedLong):
        train, test, values, n = err.train, err.test, err.values, len(err.domains)
    else:
        if isinstance(err, Mapping) or type(err).__module__.split(".")[0] == "polars":
            err = as_frame(err, arg)
        if not isinstance(err, pd.DataFrame) or "test" not in err.columns:
            return False
        train_cols = [c for c in err.columns if str(c).startswith("train")]
        if not train_cols or err[[*train_cols, "test"]].isna().to_numpy().any():
            return False
        codes, domains = code_domains([err[c].to_numpy() for c in [*train_cols, "test"]])
        train, test, n = codes[:, :-1], codes[:, -1], len(domains)
        values = pd.to_numeric(err["error" if "error" in err.columns else err.columns[-1]], errors="coerce").to_numpy()
    r = train.shape[1]
    if r == 0 or n <= r or np.isnan(values.astype(np.float64)).any():
        return False
    _, which, counts = np.unique(np.sort(train, axis=1), axis=0, return_inverse=True, return_counts=True)
    pairs = which.reshape(-1) * n + test
    return bool(np.all(counts == n - r) and np.unique(pairs).size == pairs.size)


class SquareMatrix(NamedTuple):
    """A square float64 matrix ``E[train, test]`` read only for its pooled errors' order statistics
    (:func:`_ordered`): never made an :class:`ErrorTable`, whose test and training domains cost 16
    bytes an error (issue 37)."""

    matrix: np.ndarray
    arg: str = "err"

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])

    r = 1

    @property
    def N(self) -> int:  # noqa: N802 - the paper's symbol
        return self.n * (self.n - 1)

    def raise_missing_cell(self) -> None:
        """Raise the table's error for the matrix's first missing or infinite cell off the diagonal
        (what a kernel that found one leaves to the table to name)."""
        ErrorTable.from_matrix(self.matrix, arg=self.arg)
        raise AssertionError("unreachable: from_matrix accepts only finite off-diagonal cells")


def _ordered(err: Any, arg: str = "err", pooled: bool = False, r: Any = None) -> "ErrorTable | SquareMatrix | Streamed":
    """``err`` as :func:`_table` reads it, for a computation that needs only order statistics of the
    pooled errors (:func:`_order_statistics`): a plain float64 ndarray ``n x n`` stays a
    :class:`SquareMatrix`, read straight from its cells; a file or a Dask collection is read in
    chunks (:mod:`._stream`)."""
    if is_streamed(err):   # (pooled or not: a streamed table must be complete, and then both read it alike)
        return streamed(err, arg)
    if (not pooled and type(err) is np.ndarray and err.dtype == np.float64 and err.ndim == 2
            and err.shape[0] == err.shape[1] >= 2):
        return SquareMatrix(err, arg)
    return _table(err, arg=arg, pooled=pooled, r=r)


def _order_statistics(t: "ErrorTable | SquareMatrix", ranks: Any) -> np.ndarray:
    """The pooled errors' values at the 1-based ``ranks`` (0: -inf, N + 1: +inf), in the order of
    ``f64::total_cmp`` (-0.0 before 0.0): what the sorted table holds at those ranks, bit for bit.

    Found by selection in Rust (``rust/transfer/select.rs``) on one copy of the errors, 8 bytes an
    error, never a sort, and nothing kept after the call; a matrix is read cell by cell without the
    table's index arrays. A table's columns are checked as the core table checks them (the same
    errors). A pooled table with missing cells keeps NumPy's sort (its order of signed zeros).

    >>> E = np.array([[np.nan, 1, -0.0], [3, np.nan, 0.0], [5, 6, np.nan]])
    >>> _order_statistics(_ordered(E), [0, 1, 2, 6, 7]).tolist()
    [-inf, -0.0, 0.0, 6.0, inf]
    """
    ranks = np.ascontiguousarray(ranks, dtype=np.int64)
    if isinstance(t, Streamed):
        return streamed_order_statistics(t, ranks)
    if isinstance(t, SquareMatrix):
        m = t.matrix
        if not m.flags.c_contiguous:  # the transpose of a Fortran-ordered matrix has the same off-diagonal cells
            m = m.T if m.flags.f_contiguous else np.ascontiguousarray(m)
        out = _core.transfer_matrix_order_statistics(m, ranks)
        if out is None:  # a cell off the diagonal is missing or infinite: the table's error names it
            t.raise_missing_cell()
        return out
    if isinstance(t, PooledErrors) and not t.balanced:
        f = np.sort(t.values)
        return np.concatenate([[-np.inf], f, [np.inf]])[np.clip(ranks, 0, f.size + 1)]
    return _core.transfer_order_statistics(np.ascontiguousarray(t.values, dtype=np.float64),
                                           np.ascontiguousarray(t.test, dtype=np.int64), t.n, ranks)


def _core_table(t: "ErrorTable | SquareMatrix", negate: bool = False):
    """The Rust-side sorted table, built once per ErrorTable (and once for the negated errors); of a
    :class:`SquareMatrix`, read straight from the matrix (the same table, without the ErrorTable's
    copy of the errors and its index arrays: 40 bytes an error less at its peak), and not kept."""
    if isinstance(t, SquareMatrix):
        m = np.ascontiguousarray(-t.matrix if negate else t.matrix)
        core = _core.TransferTable.from_matrix(m)
        if core is None:  # a cell off the diagonal is missing or infinite: the table's error names it
            t.raise_missing_cell()
        return core
    key = "_llms_core_neg" if negate else "_llms_core"
    core = t.__dict__.get(key)
    if core is None:
        if isinstance(t, PooledErrors) and not t.balanced:
            raise InvalidArgumentError(
                "this computation needs the same number of errors for every test domain (weights, worst cases and "
                "dominance are per test domain); the table has missing cells or a sample of the training sets: "
                "build it with every training set, or drop the domains with missing cells")
        vals = -t.values if negate else t.values
        core = _core.TransferTable(np.ascontiguousarray(vals, dtype=np.float64),
                                   np.ascontiguousarray(t.test, dtype=np.int64), t.n)
        object.__setattr__(t, key, core)
    return core


def _side(side: Any) -> str:
    if isinstance(side, (list, tuple)) and side:  # R's c("two", "left", "right") default
        side = side[0]
    return _SIDES[check_choice(side, "side", list(_SIDES))]


def _tau(level: Any, side: str, tau: Any, *, n: int | None = None, r: int | None = None,
         correction: bool = False) -> float:
    """τ from the package's nominal coverage ``level`` (or τ given directly), validated."""
    if tau is not None:
        if level is not None:
            raise InvalidArgumentError("pass either `level` or `tau`, not both")
        t = check_probability(tau, "tau", low=0.0, high=1.0, high_open=False)
        if side == "two" and t <= 0.5:
            raise InvalidArgumentError(
                f"argument `tau`: a two-sided interval needs tau in (0.5, 1]; got {t} (at tau <= 0.5 the interval "
                "[e_(N+1-k), e_(k)] is inverted and Proposition 1 guarantees nothing)")
        return t
    if level is None:
        raise InvalidArgumentError("argument `level` is required (a number in (0, 1)), or pass `tau`")
    c = check_probability(level, "level", low=0.0, high=1.0, high_open=False)
    if correction:
        c_adj = c * (n + 1) / (n - r)
        if c_adj > 1:
            warnings.warn(
                f"coverage {c} cannot be guaranteed with n = {n} domains and r = {r}: the best possible guarantee "
                f"is (n - r)/(n + 1) = {(n - r) / (n + 1):.4f}, reached by the [min, max] interval returned",
                LLMSurrogateWarning, stacklevel=4)  # 4: past the public function's argument wrapper
        c = min(c_adj, 1.0)
    return (1 + c) / 2 if side == "two" else c


def _clip_side(lo: float, hi: float, side: str) -> tuple[float, float]:
    if side == "upper":
        return (-math.inf, float(hi))
    if side == "lower":
        return (float(lo), math.inf)
    return (float(lo), float(hi))


def _n_r(n: Any, r: Any) -> tuple[int, int]:
    """Numbers of domains n and training domains r, with n > r >= 1."""
    n, r = check_int(n, "n", minimum=2), check_int(r, "r", minimum=1)
    if n <= r:
        raise InvalidArgumentError(f"arguments `n` and `r`: need n > r (more domains than training domains); "
                                   f"got n = {n}, r = {r}")
    return n, r


def _check_weights(w: np.ndarray, n: int | None = None) -> np.ndarray:
    """Likelihood ratios: finite, >= 0, not all zero (and ``n`` of them when given)."""
    if n is not None and w.size != n:
        raise ShapeError(f"argument `weights` needs one likelihood ratio per domain ({n}); got {w.size}")
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise InvalidArgumentError(located(f"argument `weights` must be finite; got {w[bad[0]]} at ", at(bad[0])))
    bad = np.flatnonzero(w < 0)
    if bad.size:
        raise InvalidArgumentError(located(f"argument `weights` must be >= 0 (likelihood ratios); got {w[bad[0]]} at ",
                                           at(bad[0])))
    if not np.any(w > 0):
        raise InvalidArgumentError("argument `weights`: all weights are zero; at least one must be positive")
    return w


def _check_r(t: ErrorTable, r: Any) -> None:
    if t.r is None:
        raise InvalidArgumentError("argument `r` is missing: a two-column (test, error) table does not give the number "
                                   "of training domains; pass `r`")
    if r is not None and check_int(r, "r", minimum=1) != t.r:
        raise InvalidArgumentError(f"argument `r` ({r}) does not match the table's {t.r} training domains per error")


def _same(err1: Any, err2: Any, pooled: bool = False, square: bool = False) -> tuple[ErrorTable, ErrorTable]:
    """The two tables of a comparison, on the same design (domains paired by label). ``square=True``
    (a caller that reads them only through :func:`_core_table`): two plain float64 matrices of one
    size stay :class:`SquareMatrix` (domains 0..n-1 in both)."""
    if square:
        s1, s2 = _ordered(err1, "err1", pooled), _ordered(err2, "err2", pooled)
        if isinstance(s1, SquareMatrix) and isinstance(s2, SquareMatrix) and s1.n == s2.n:
            return s1, s2
    t1, t2 = _table(err1, "err1", pooled), _table(err2, "err2", pooled)
    if type(t1) is not type(t2):  # one complete ErrorTable, one pooled: compare as pooled
        t1, t2 = (x if isinstance(x, PooledErrors) else PooledErrors(x.values, x.test, x.domains, x.r, name=x.name)
                  for x in (t1, t2))
    t2 = _in_domain_order(t2, t1)
    t1.same_design(t2, arg="err2")
    return t1, t2


def _in_domain_order(t2: ErrorTable, t1: ErrorTable) -> ErrorTable:
    """``t2`` with its domains in ``t1``'s order when both hold the same domain labels in another order
    (two matrices whose rows are permuted differently): tables are paired by domain label, never by
    position (the rule of ``_validation``)."""
    if type(t1) is not ErrorTable or type(t2) is not ErrorTable or len(t1.domains) != len(t2.domains):
        return t2
    d1, d2 = [str(d) for d in t1.domains], [str(d) for d in t2.domains]
    if d1 == d2 or set(d1) != set(d2) or len(set(d1)) != len(d1):
        return t2
    pos = {d: i for i, d in enumerate(d1)}
    to1 = np.array([pos[d] for d in d2], dtype=np.int64)
    return ErrorTable._from_arrays(t2.values.copy(), to1[t2.test], to1[t2.train], list(t1.domains), name=t2.name,
                                   metric=t2.metric, arg="err2")


def _taulist(taulist: Any) -> np.ndarray:
    taus = as_float_array(taulist, "taulist", allow_empty=True)
    if taus.size == 0:
        raise InvalidArgumentError("argument `taulist` is empty")
    bad = ~((taus > 0) & (taus <= 1))
    if bad.any():
        raise InvalidArgumentError(f"argument `taulist` must lie in (0, 1]; got {taus[bad][0]}")
    return np.ascontiguousarray(taus)

