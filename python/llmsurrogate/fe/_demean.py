"""The within transformation, Python side: fixed-effect codes, singleton removal, and the call
into the Rust kernel (``rust/fe/demean.rs``: conjugate gradient on the symmetric Kaczmarz sweep,
or for two fixed effects on the Schur complement in coefficient space; weighted, parallel over
columns, GIL released).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import _core
from .._positions import at, located
from .._validation import as_float_array, reject_lossy
from .._workers import resolve_n_jobs
from ..exceptions import ConvergenceError, InvalidArgumentError, ShapeError

#: Default relative tolerance of the demeaning (W-norm of the conjugate-gradient residual over the
#: W-norm of the column).
DEFAULT_TOL = 1e-12
#: Default most iterations per column.
DEFAULT_MAXITER = 10_000


def factorize(values) -> tuple[np.ndarray, int]:
    """Integer codes 0..G-1 (in order of first appearance) and G; missing values get -1."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return codes.astype(np.int64), len(uniques)


def recode(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes renumbered 0..G-1 after rows were dropped (levels that lost every row disappear)."""
    codes = np.asarray(codes, dtype=np.int64)
    if codes.size == 0:
        return codes.astype(np.uint32), 0
    present = np.bincount(codes) > 0
    mapping = np.cumsum(present) - 1
    return mapping[codes].astype(np.uint32), int(present.sum())


def singleton_mask(codes: list[np.ndarray]) -> np.ndarray:
    """Rows to keep after removing singletons as fixest does: a row alone in its level of any
    fixed effect is dropped, repeatedly, until no fixed effect has a level with one row."""
    n = len(codes[0]) if codes else 0
    keep = np.ones(n, dtype=bool)
    while True:
        changed = False
        for c in codes:
            counts = np.bincount(c[keep], minlength=int(c.max()) + 1 if n else 0)
            single = keep & (counts[c] == 1)
            if single.any():
                keep &= ~single
                changed = True
        if not changed:
            return keep


def _codes(c, name: str, n: int) -> np.ndarray:
    """Fixed-effect codes 0..G-1 (integers, or whole floats) of ``n`` rows as uint32, checked."""
    reject_lossy(c, name)
    arr = np.asarray(c)
    if arr.shape != (n,):
        raise ShapeError(f"argument `{name}` must hold one code per row of `x` ({n}); got shape {arr.shape}")
    if arr.dtype.kind not in "iub":
        arr = as_float_array(arr, name, allow_nan=False, allow_empty=True)
        if not np.all(arr == np.floor(arr)):
            i = int(np.flatnonzero(arr != np.floor(arr))[0])
            raise InvalidArgumentError(located(f"argument `{name}` must hold integer codes; got {arr[i]} at ", at(i)))
    if arr.size and (arr.min() < 0 or arr.max() >= 2**32 - 1):
        i = int(np.argmin(arr) if arr.min() < 0 else np.argmax(arr))
        raise InvalidArgumentError(located(f"argument `{name}` must hold codes 0..G-1 below 2**32 - 1 (missing values: "
                                           f"drop those rows first, or use `factorize`); got {arr[i]} at ", at(i)))
    return arr.astype(np.uint32)


@dataclass(frozen=True)
class Demeaned:
    """Demeaned columns (n, p), iterations and final relative residual per column.

    Examples
    --------
    >>> import numpy as np
    >>> d = demean(np.array([[1.0, 0.0], [3.0, 2.0], [10.0, 4.0], [20.0, 4.0]]), [np.array([0, 0, 1, 1])])
    >>> d.values.shape, d.converged, d.values[:, 1].tolist()
    ((4, 2), True, [-1.0, 1.0, 0.0, 0.0])
    """

    values: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    converged: bool


def demean(x: np.ndarray, codes: list[np.ndarray], weights: np.ndarray | None = None, *,
           tol: float = DEFAULT_TOL, maxiter: int = DEFAULT_MAXITER, n_jobs: int | None = None) -> Demeaned:
    """Demean the columns of ``x`` (n, p) over the fixed effects ``codes`` (each 0..G-1, length n),
    with optional weights. Raises :class:`ConvergenceError` when a column misses ``tol`` after
    ``maxiter`` iterations. ``n_jobs``: workers/threads (None: see :func:`llmsurrogate.num_threads`).

    Examples
    --------
    >>> import numpy as np
    >>> firm = np.array([0, 0, 1, 1])
    >>> demean(np.array([1.0, 3.0, 10.0, 20.0]), [firm]).values.ravel().tolist()
    [-1.0, 1.0, -5.0, 5.0]
    >>> demean(np.array([1.0, 3.0, 10.0, 20.0]), [firm], weights=np.array([1.0, 3.0, 1.0, 1.0])).values.ravel().tolist()
    [-1.5, 0.5, -5.0, 5.0]
    """
    reject_lossy(x, "x")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ShapeError(f"argument `x` must be a vector or a matrix (n, p); got shape {x.shape}")
    n, p = x.shape
    if isinstance(codes, np.ndarray) and codes.ndim == 1:
        codes = [codes]   # one fixed effect
    if not isinstance(codes, (list, tuple)) or not codes:
        raise InvalidArgumentError("argument `codes`: pass a list of fixed effects, at least one (each an array of "
                                   "integer codes 0..G-1, one per row of `x`)")
    stacked = np.ascontiguousarray(np.vstack([_codes(c, f"codes[{j}]", n) for j, c in enumerate(codes)]))
    n_groups = [int(c.max()) + 1 if n else 0 for c in stacked]
    if weights is None:
        w = None
    else:
        w = as_float_array(weights, "weights", allow_empty=True)
        if w.size != n:
            raise ShapeError(f"argument `weights` has {w.size} values for {n} rows of `x`")
    values, iters, resid, converged = _core.fe_demean(
        np.ascontiguousarray(x.T), stacked, n_groups, w, float(tol), int(maxiter), resolve_n_jobs(n_jobs))
    if not converged:
        worst = int(np.argmax(resid))
        raise ConvergenceError(located(
            "demeaning did not converge: ", at(worst, "column"), f" has relative residual {resid[worst]:.3g} > "
            f"fixef_tol={tol:g} after fixef_maxiter={maxiter} iterations; raise `fixef_maxiter` or `fixef_tol`"
        ))
    return Demeaned(values=values.T, iterations=np.asarray(iters), residual=np.asarray(resid), converged=bool(converged))
