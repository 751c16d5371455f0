"""Inputs of the PPI estimators, checked and paired (docs/methods/ppi.md §1): each bad input is an
:class:`~llmsurrogate.exceptions.InvalidArgumentError` (or a subclass) that names the argument.

* Rows are paired **by label** where two inputs that share rows are pandas objects (``y``,
  ``yhat``, ``X`` and ``weights`` on the labelled rows; ``yhat_unlabeled``, ``X_unlabeled`` and
  ``weights_unlabeled`` on the unlabelled rows): the same labels in another order are reordered,
  other labels are refused (:func:`llmsurrogate._validation.align_by_label`).
* Columns are paired **by name** where two inputs with named columns share columns (``X`` and
  ``X_unlabeled``; ``y``, ``yhat`` and ``yhat_unlabeled`` with K columns).
* Weights must be positive and finite; they are rescaled to sum to the number of their rows
  (ppi_py's normalisation, §1.2).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from .._positions import at, located
from .._validation import (
    align_by_label,
    as_float_array,
    check_choice,
    check_probability,
    reject_lossy,
)
from ..exceptions import (
    EmptyInputError,
    InvalidArgumentError,
    NonFiniteError,
    ShapeError,
)

METHODS = ("classical", "ppi", "ppi++")
INTERCEPT_NAME = "Intercept"


def check_method(method, allowed=METHODS) -> str:
    return check_choice(method, "method", list(allowed))


def check_level(level) -> float:
    """The confidence level in (0, 1); returns alpha = 1 - level."""
    return 1.0 - check_probability(level, "level")


def check_lam(lam, method: str, k: int = 1):
    """``lam``: None (tuned, PPI++) or a number in [0, 1] (a length-``k`` sequence for a mean of k
    columns); given only with ``method="ppi++"`` (classical is lam = 0, ppi lam = 1)."""
    if lam is None:
        return None
    if method != "ppi++":
        fixed = "0 (labelled rows only)" if method == "classical" else "1"
        raise InvalidArgumentError(
            f"argument `lam` is given with method={method!r}, whose lambda is {fixed}; pass method='ppi++' with "
            "`lam` to fix lambda, or leave `lam` out")
    if isinstance(lam, (bool, np.bool_)):
        raise InvalidArgumentError("argument `lam` must be a number in [0, 1], not a bool")
    if isinstance(lam, numbers.Real):
        arr = np.array([float(lam)])
        scalar = True
    else:
        arr = as_float_array(lam, "lam")
        scalar = False
        if arr.size not in (1, k):
            raise ShapeError(f"argument `lam` has {arr.size} values; pass one number or one per column ({k})")
    bad = np.flatnonzero(~((arr >= 0) & (arr <= 1)))
    if bad.size:
        raise InvalidArgumentError(
            f"argument `lam` must lie in [0, 1]; got {float(arr[bad[0]])!r}. lambda = 0 is the classical estimate, 1 "
            "plain PPI; outside [0, 1] the rectified loss of a GLM is not convex and PPI++ never tunes there")
    return float(arr[0]) if scalar or arr.size == 1 else arr


def _columns_of(x) -> list | None:
    cols = getattr(x, "columns", None)
    if cols is None or isinstance(x, np.ndarray):
        return None
    return list(cols)


def as_matrix(x, name: str) -> tuple[np.ndarray, list[str] | None]:
    """``x`` as an ``n x k`` float64 array with its column names (a pandas or polars DataFrame),
    or None. A 1-d input is one column; a named pandas Series gives its name. NaN, infinite and
    non-numeric values are errors naming the argument, the row and the column."""
    if x is None:
        raise InvalidArgumentError(f"argument `{name}` is None; pass numbers")
    cols = _columns_of(x)
    if cols is not None:
        if len(cols) == 0:
            raise EmptyInputError(f"argument `{name}` has no columns")
        arrays = [as_float_array(x[c], f"{name}[{c!r}]", allow_nan=False, allow_empty=True) for c in cols]
        arr = np.column_stack(arrays) if arrays[0].size else np.empty((0, len(cols)))
        names = [str(c) for c in cols]
    elif isinstance(x, (np.ndarray, list, tuple)) and np.ndim(x) == 2:
        reject_lossy(x, name)
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise InvalidArgumentError(f"argument `{name}` must hold numbers only; {err}") from err
        names = None
        bad = np.argwhere(~np.isfinite(arr)) if not np.isfinite(arr).all() else np.empty((0, 2))
        if bad.size:
            i, j = (int(v) for v in bad[0])
            raise NonFiniteError(located(f"argument `{name}` has a non-finite value ({arr[i, j]}) at ", at(i, "row"),
                                         ", ", at(j, "column"), "; drop or impute missing values first (PPI needs "
                                         "the prediction on every row)"))
    else:   # one column: a sequence, a 1-d array, a pandas or polars Series
        if np.ndim(x) > 2:
            raise ShapeError(f"argument `{name}` must be 1- or 2-dimensional; got shape {np.shape(x)}")
        arr = as_float_array(x, name, allow_nan=False, allow_empty=True).reshape(-1, 1)
        label = getattr(x, "name", None)
        names = [str(label)] if isinstance(label, (str, int)) and not isinstance(label, bool) else None
    if arr.shape[0] == 0:
        raise EmptyInputError(f"argument `{name}` has no rows; pass at least two")
    return np.ascontiguousarray(arr, dtype=np.float64), names


def check_rows(*named: tuple[str, np.ndarray]) -> int:
    """The common number of rows of the named arrays (a ShapeError naming two that differ)."""
    first_name, first = named[0]
    for name, arr in named[1:]:
        if arr is not None and arr.shape[0] != first.shape[0]:
            raise ShapeError(f"arguments `{first_name}` and `{name}` must have one row each per row of the same "
                             f"data; got {first.shape[0]} and {arr.shape[0]} rows")
    return first.shape[0]


def weights_vector(w, name: str, n: int) -> np.ndarray:
    """Positive finite weights of ``n`` rows rescaled to sum to ``n`` (ones when None)."""
    if w is None:
        return np.ones(n)
    arr = as_float_array(w, name, allow_nan=False)
    if arr.shape[0] != n:
        data = "labelled rows (`y`)" if name == "weights" else "unlabelled rows (`yhat_unlabeled`)"
        raise ShapeError(f"argument `{name}` has {arr.shape[0]} values for {n} {data}")
    bad = np.flatnonzero(~(arr > 0))
    if bad.size:
        raise InvalidArgumentError(located(f"argument `{name}` must be positive; got {float(arr[bad[0]])!r} at ",
                                           at(bad[0], "row"), " (drop the rows of weight 0 instead)"))
    return arr * (n / arr.sum())


def match_columns(named: list[tuple[str, np.ndarray, list[str] | None]]) -> tuple[list[np.ndarray], list[str] | None]:
    """Arrays that share columns, reordered by name where two have names (the first named one sets
    the order); a ShapeError or InvalidArgumentError naming both arguments otherwise."""
    ref_name, ref, ref_names = next(((nm, a, c) for nm, a, c in named if c is not None), named[0])
    out = []
    for name, arr, names in named:
        if arr.shape[1] != ref.shape[1]:
            raise ShapeError(f"arguments `{ref_name}` and `{name}` must have the same columns; got {ref.shape[1]} and "
                             f"{arr.shape[1]}")
        if names is not None and ref_names is not None and names != ref_names:
            if sorted(names) != sorted(ref_names) or len(set(names)) != len(names):
                raise InvalidArgumentError(
                    f"arguments `{ref_name}` and `{name}` name different columns ({ref_names} and {names}); columns "
                    "are paired by name: give both the same column names")
            arr = arr[:, [names.index(c) for c in ref_names]]
        out.append(arr)
    return out, ref_names


#: why an outcome with one value on every labelled row is refused, per estimand (docs/methods/ppi.md §1.5)
_CONSTANT_Y = {
    "mean": "its variance is 0, so the classical interval has width 0 and PPI++ tunes lambda to 0 and gives that "
            "interval too; a share of 0 or 1 among the labelled rows needs more labelled rows or an exact binomial "
            "interval, not a z-interval",
    "quantile": "the classical interval is that one value (width 0), and the labelled rows show nothing of the "
                "spread the quantile is about; label more rows",
    "linear": "the classical fit is exact (every residual 0), so its standard errors are 0 and the interval has "
              "width 0",
    "logistic": "a logistic regression of an outcome that is always 0 or always 1 has no finite fit (the intercept "
                "separates it), and of any other constant an exact fit with standard errors 0",
    "poisson": "a Poisson regression of counts that are all 0 has no finite fit, and of any other constant an exact "
               "fit with standard errors 0",
}


def check_varies(y: np.ndarray, name: str = "y", estimand: str = "mean", terms: list[str] | None = None) -> None:
    """An outcome (each of its K columns) must take two values or more on the labelled rows: one
    value everywhere is an error naming the argument (and the column), with the reason for
    ``estimand`` (``"mean"``, ``"quantile"``, ``"linear"``, ``"logistic"``, ``"poisson"``)."""
    y2 = y.reshape(y.shape[0], -1)
    if not y2.shape[0]:
        return
    constant = np.flatnonzero(np.all(y2 == y2[0], axis=0))
    if not constant.size:
        return
    j = int(constant[0])
    reason = _CONSTANT_Y.get(estimand, _CONSTANT_Y["mean"])
    if y2.shape[1] == 1:
        raise InvalidArgumentError(f"argument `{name}` has the same value ({y2[0, 0]:g}) in every labelled row: "
                                   f"{reason}")
    column = terms[j] if terms is not None else str(j)
    raise InvalidArgumentError(
        f"argument `{name}`: column {column!r} has the same value ({y2[0, j]:g}) in every labelled row: {reason}. "
        "An option no labelled row chose: drop its column or merge it with another option")


def check_min_rows(n: int, N: int) -> None:
    if n < 2:
        raise EmptyInputError(f"argument `y` has {n} labelled row; PPI needs at least two")
    if N < 2:
        raise EmptyInputError(f"argument `yhat_unlabeled` has {N} unlabelled row{'s' if N != 1 else ''}; PPI needs "
                              "at least two")


def cluster_ids(ids, name: str, m: int):
    """Cluster ids of ``m`` rows as an object array (None passes): any hashable values, no missing."""
    if ids is None:
        return None
    import pandas as pd

    arr = np.asarray(ids.to_numpy() if hasattr(ids, "to_numpy") else ids, dtype=object)
    if arr.ndim != 1:
        raise ShapeError(f"argument `{name}` must be one id per row (1-dimensional); got shape {arr.shape}")
    if arr.shape[0] != m:
        data = "labelled rows (`y`)" if name == "cluster" else "unlabelled rows (`yhat_unlabeled`)"
        raise ShapeError(f"argument `{name}` has {arr.shape[0]} ids for {m} {data}")
    bad = np.flatnonzero(pd.isna(arr))
    if bad.size:
        raise NonFiniteError(located(f"argument `{name}` has a missing cluster id at ", at(bad[0], "row"),
                                     "; every row needs its cluster"))
    return arr


def cluster_inputs(cluster, cluster_unlabeled, n: int, N: int):
    """The cluster codes of both samples (one numbering; see ``_stats.cluster_codes``), or None
    when neither is given; at least two clusters."""
    from ._stats import cluster_codes

    if cluster is None and cluster_unlabeled is None:
        return None
    codes = cluster_codes(cluster_ids(cluster, "cluster", n), cluster_ids(cluster_unlabeled, "cluster_unlabeled", N),
                          n, N)
    if np.unique(codes[0]).size < 2:
        raise InvalidArgumentError("argument `cluster`: the labelled rows lie in one cluster; cluster-robust "
                                   "variances need at least two (better: many) clusters")
    return codes


class _Sizes:
    """``n`` and ``N``: the labelled and unlabelled rows of checked inputs."""

    @property
    def n(self) -> int:
        return self.y.shape[0]

    @property
    def N(self) -> int:
        return self.yhat_unlabeled.shape[0]


@dataclass
class MeanInputs(_Sizes):
    """The arrays of a mean or a quantile: ``n x K`` and ``N x K`` outcomes, normalised weights."""

    y: np.ndarray
    yhat: np.ndarray
    yhat_unlabeled: np.ndarray
    w: np.ndarray
    w_unlabeled: np.ndarray
    terms: list[str]
    weighted: bool
    clusters: tuple | None = None  # (codes of the labelled rows, codes of the unlabelled rows)


def mean_inputs(y, yhat, yhat_unlabeled, weights, weights_unlabeled, *, columns: bool,
                default_term: str, cluster=None, cluster_unlabeled=None) -> MeanInputs:
    """Check, pair and convert the inputs of :func:`llmsurrogate.ppi.mean` (``columns=True``: K
    columns allowed) or :func:`llmsurrogate.ppi.quantile` (one column)."""
    ya, y_names = as_matrix(y, "y")
    yha, yh_names = as_matrix(yhat, "yhat")
    yua, yu_names = as_matrix(yhat_unlabeled, "yhat_unlabeled")
    wa = None if weights is None else as_float_array(weights, "weights", allow_nan=False)
    wua = None if weights_unlabeled is None else as_float_array(weights_unlabeled, "weights_unlabeled",
                                                                allow_nan=False)
    y, yhat, weights, cluster = align_by_label(("y", y), ("yhat", yhat), ("weights", weights), ("cluster", cluster))
    yhat_unlabeled, weights_unlabeled, cluster_unlabeled = align_by_label(
        ("yhat_unlabeled", yhat_unlabeled), ("weights_unlabeled", weights_unlabeled),
        ("cluster_unlabeled", cluster_unlabeled))
    ya, _ = as_matrix(y, "y")
    yha, _ = as_matrix(yhat, "yhat")
    yua, _ = as_matrix(yhat_unlabeled, "yhat_unlabeled")
    n = check_rows(("y", ya), ("yhat", yha))
    N = yua.shape[0]
    check_min_rows(n, N)
    if not columns and (ya.shape[1] != 1 or yha.shape[1] != 1 or yua.shape[1] != 1):
        bad = next(nm for nm, a in (("y", ya), ("yhat", yha), ("yhat_unlabeled", yua)) if a.shape[1] != 1)
        raise ShapeError(f"argument `{bad}` must be one column (1-dimensional)")
    (ya, yha, yua), names = match_columns([("y", ya, y_names if ya.shape[1] > 1 else None),
                                           ("yhat", yha, yh_names if yha.shape[1] > 1 else None),
                                           ("yhat_unlabeled", yua, yu_names if yua.shape[1] > 1 else None)])
    k = ya.shape[1]
    if k == 1:
        terms = y_names or [default_term]
    else:
        terms = names or [f"y{j}" for j in range(k)]
    check_varies(ya, "y", default_term if default_term in ("mean", "quantile") else "mean", terms if k > 1 else None)
    w = weights_vector(weights, "weights", n)
    wu = weights_vector(weights_unlabeled, "weights_unlabeled", N)
    return MeanInputs(ya, yha, yua, w, wu, terms, weighted=wa is not None or wua is not None,
                      clusters=cluster_inputs(cluster, cluster_unlabeled, n, N))


@dataclass
class RegressionInputs(_Sizes):
    """The arrays of a regression: designs ``n x d`` and ``N x d``, outcomes, normalised weights."""

    X: np.ndarray
    y: np.ndarray
    yhat: np.ndarray
    X_unlabeled: np.ndarray
    yhat_unlabeled: np.ndarray
    w: np.ndarray
    w_unlabeled: np.ndarray
    terms: list[str]
    weighted: bool
    intercept: bool  # the model has a constant column (given or added)
    clusters: tuple | None = None  # (codes of the labelled rows, codes of the unlabelled rows)
    cache: dict = field(default_factory=dict, repr=False, compare=False)  # results computed once per inputs


def _spans_constant(X: np.ndarray) -> bool:
    """Whether a column of ones is a linear combination of the columns of X (a constant column, or
    a full set of dummies)."""
    ones = np.ones(X.shape[0])
    b, *_ = np.linalg.lstsq(X, ones, rcond=None)
    return bool(np.max(np.abs(X @ b - ones)) < 1e-8)


def check_rank(X: np.ndarray, name: str, terms: list[str]) -> None:
    """X has full column rank (an error naming a column that depends on the others): the
    column-pivoted QR of the R factor of X (one Householder pass over the rows in Rust; pivoting
    on R is pivoting on X, column norms being kept by orthogonal transformations)."""
    from scipy.linalg import qr

    from .. import _core

    d = X.shape[1]
    if X.shape[0] < d:
        raise InvalidArgumentError(f"argument `{name}` has {X.shape[0]} rows for {d} columns; a regression needs at "
                                   "least as many rows as coefficients")
    R, _ = _core.ppi_qr(np.ascontiguousarray(X, dtype=np.float64))
    scale = np.sqrt((R * R).sum(axis=0))
    if np.any(scale == 0):
        j = int(np.flatnonzero(scale == 0)[0])
        raise InvalidArgumentError(f"argument `{name}`: column {terms[j]!r} is 0 in every row")
    _, R2, piv = qr(R / scale, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R2))
    rank = int(np.sum(diag > diag[0] * 1e-10))
    if rank < d:
        raise InvalidArgumentError(
            f"argument `{name}`: the columns are linearly dependent (rank {rank} of {d}); column "
            f"{terms[int(piv[rank])]!r} is a combination of the others. Drop it")


def regression_inputs(X, y, yhat, X_unlabeled, yhat_unlabeled, weights, weights_unlabeled, intercept,
                      family: str, cluster=None, cluster_unlabeled=None) -> RegressionInputs:
    """Check, pair and convert the inputs of the regressions (docs/methods/ppi.md §1)."""
    if intercept is not None and not isinstance(intercept, (bool, np.bool_)):
        raise InvalidArgumentError(f"argument `intercept` must be None, True or False; got {intercept!r}")
    for arg, value in (("X", X), ("y", y), ("yhat", yhat), ("X_unlabeled", X_unlabeled),
                       ("yhat_unlabeled", yhat_unlabeled)):
        as_matrix(value, arg)  # types and missing values, at the user's own row positions
    wa = None if weights is None else as_float_array(weights, "weights", allow_nan=False)
    wua = None if weights_unlabeled is None else as_float_array(weights_unlabeled, "weights_unlabeled",
                                                                allow_nan=False)
    X, y, yhat, weights, cluster = align_by_label(("X", X), ("y", y), ("yhat", yhat), ("weights", weights),
                                                  ("cluster", cluster))
    X_unlabeled, yhat_unlabeled, weights_unlabeled, cluster_unlabeled = align_by_label(
        ("X_unlabeled", X_unlabeled), ("yhat_unlabeled", yhat_unlabeled), ("weights_unlabeled", weights_unlabeled),
        ("cluster_unlabeled", cluster_unlabeled))
    Xa, x_names = as_matrix(X, "X")
    Xua, xu_names = as_matrix(X_unlabeled, "X_unlabeled")
    vectors = {}
    for arg, value in (("y", y), ("yhat", yhat), ("yhat_unlabeled", yhat_unlabeled)):
        arr, _ = as_matrix(value, arg)
        if arr.shape[1] != 1:
            raise ShapeError(f"argument `{arg}` must be one column (1-dimensional); got {arr.shape[1]} columns")
        vectors[arg] = arr[:, 0]
    ya, yha, yua = vectors["y"], vectors["yhat"], vectors["yhat_unlabeled"]
    n = check_rows(("X", Xa), ("y", ya), ("yhat", yha))
    N = check_rows(("X_unlabeled", Xua), ("yhat_unlabeled", yua))
    check_min_rows(n, N)
    (Xa, Xua), names = match_columns([("X", Xa, x_names), ("X_unlabeled", Xua, xu_names)])
    terms = names or [f"x{j}" for j in range(Xa.shape[1])]
    check_varies(ya, "y", family)
    if family == "logistic":
        for arg, arr in (("y", ya), ("yhat", yha), ("yhat_unlabeled", yua)):
            bad = np.flatnonzero((arr < 0) | (arr > 1))
            if bad.size:
                raise InvalidArgumentError(located(f"argument `{arg}` must lie in [0, 1] for a logistic regression "
                                                   f"(labels or probabilities); got {float(arr[bad[0]])!r} at ",
                                                   at(bad[0], "row")))
    elif family == "poisson":
        for arg, arr in (("y", ya), ("yhat", yha), ("yhat_unlabeled", yua)):
            bad = np.flatnonzero(arr < 0)
            if bad.size:
                raise InvalidArgumentError(located(f"argument `{arg}` must be >= 0 for a Poisson regression (counts or "
                                                   f"rates); got {float(arr[bad[0]])!r} at ", at(bad[0], "row")))
    has_constant = _spans_constant(Xa)
    if intercept is None and not has_constant:
        raise InvalidArgumentError(
            "argument `X` has no constant column, so the model would have no intercept; llmsurrogate never adds one "
            "silently (ppi_py never adds one at all). Pass intercept=True to add a column of ones named "
            f"{INTERCEPT_NAME!r}, add one yourself, or pass intercept=False for a model without intercept")
    if intercept is True:
        if has_constant:
            raise InvalidArgumentError(
                "argument `intercept` is True but `X` already holds a constant column (or dummies that sum to one): "
                "another would make the columns linearly dependent; pass intercept=None (or False)")
        Xa = np.column_stack([np.ones(n), Xa])
        Xua = np.column_stack([np.ones(N), Xua])
        if INTERCEPT_NAME in terms:
            raise InvalidArgumentError(f"argument `X` has a column named {INTERCEPT_NAME!r} that is not constant; "
                                       "rename it to add an intercept")
        terms = [INTERCEPT_NAME, *terms]
    check_rank(Xa, "X", terms)
    check_rank(Xua, "X_unlabeled", terms)
    w = weights_vector(weights, "weights", n)
    wu = weights_vector(weights_unlabeled, "weights_unlabeled", N)
    return RegressionInputs(Xa, ya, yha, Xua, yua, w, wu, terms, weighted=wa is not None or wua is not None,
                            intercept=has_constant or intercept is True,
                            clusters=cluster_inputs(cluster, cluster_unlabeled, n, N))


def check_coord(coord, terms: list[str], tuned: bool):
    """``coord``: None, a 0-based column position or a column name; only where lambda is tuned."""
    if coord is None:
        return None
    if not tuned:
        raise InvalidArgumentError(
            "argument `coord` chooses the coefficient lambda is tuned for; it has no effect with a fixed lambda "
            "(method='classical', 'ppi' or `lam` given): leave it out")
    if isinstance(coord, str):
        if coord not in terms:
            raise InvalidArgumentError(f"argument `coord` names no column of `X`: {coord!r} (columns: {terms})")
        return terms.index(coord)
    if isinstance(coord, (bool, np.bool_)) or not isinstance(coord, numbers.Integral):
        raise InvalidArgumentError(f"argument `coord` must be a column name or a 0-based position; got {coord!r}")
    if not 0 <= int(coord) < len(terms):
        raise InvalidArgumentError(f"argument `coord` must be a 0-based position in 0..{len(terms) - 1}; got {coord}")
    return int(coord)
