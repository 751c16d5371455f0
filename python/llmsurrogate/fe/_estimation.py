"""``feols``: OLS with absorbed fixed effects (pyfixest's formula syntax and defaults)."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._positions import at, located
from .._validation import (
    align_by_label,
    as_float_array,
    as_frame,
    check_real,
    fixest_df_k,
    note_dropped,
    require_columns,
)
from .._workers import resolve_n_jobs
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ._demean import (
    DEFAULT_MAXITER,
    DEFAULT_TOL,
    demean,
    factorize,
    recode,
    singleton_mask,
)
from ._formula import Formula, parse_formula
from ._results import FeolsResult, FittedSample
from ._vcov import VcovInputs, VcovSpec, check_variances, compute_vcov, parse_vcov, to_units

#: Relative pivot below which a regressor counts as collinear with the ones before it (and the
#: fixed effects): its demeaned, partialled-out sum of squares over its sum of squares about its
#: mean (about 0 without an intercept or fixed effects).
COLLIN_TOL = 1e-9


def check_columns(frame, columns, argument: str) -> None:
    """Refuse MultiIndex columns, and a column of ``columns`` that ``frame`` has twice (pandas
    would hand a DataFrame where a column is read): :class:`InvalidArgumentError` naming
    ``argument``."""
    if isinstance(frame.columns, pd.MultiIndex):
        raise InvalidArgumentError(f"argument `{argument}` has MultiIndex columns; flatten them first (e.g. "
                                   f"{argument}.columns = ['_'.join(map(str, c)) for c in {argument}.columns])")
    counts = frame.columns.value_counts()
    for c in dict.fromkeys(columns):
        if counts.get(c, 0) > 1:
            raise InvalidArgumentError(f"argument `{argument}` has {int(counts[c])} columns named {c!r}; rename or "
                                       "drop the copies")


def _numeric(frame, col: str) -> np.ndarray:
    s = frame[col]
    if not (pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)) or pd.api.types.is_complex_dtype(s):
        raise InvalidArgumentError(
            f"argument `fml`: column {col!r} is not numeric (dtype {s.dtype}); regressors and the outcome must be "
            "numbers (make dummies or codes first; categorical fixed effects go after `|`)")
    return s.to_numpy(dtype=np.float64, na_value=np.nan)


def _standardize(M: np.ndarray, w: np.ndarray, centre: bool):
    """The columns of ``M`` (n, p) written as ``a * (m + b * Z)``: ``a`` the largest absolute value,
    ``m`` the weighted mean of ``M / a`` (0 unless ``centre``) and ``b`` the largest absolute value
    of ``M / a - m``, so that ``Z`` lies in [-1, 1] (and is centred) whatever the location and
    scale of ``M``: no cross-product over- or underflows, and the collinearity test sees a column's
    variation, not its level. A column of zeros gets ``a = b = 1``. Returns ``Z, a, m, b``, ``Z``
    in Fortran order (its columns contiguous, as the demeaning reads them)."""
    Z = np.array(M.T, dtype=np.float64, order="C")  # (p, n): reductions over rows run along memory
    a = np.max(np.abs(Z), axis=1)
    a = np.where(a > 0, a, 1.0)
    Z /= a[:, None]
    m = (Z * w).sum(axis=1) / w.sum() if centre else np.zeros(len(Z))
    Z -= m[:, None]
    b = np.max(np.abs(Z), axis=1)
    b = np.where(b > 0, b, 1.0)
    Z /= b[:, None]
    return Z.T, a, m, b


def _drop_collinear(A: np.ndarray, raw_ss: np.ndarray, names: list[str], tol: float) -> list[int]:
    """Indices of the columns kept by a Cholesky sweep that drops a column whose pivot is below
    ``tol`` times ``raw_ss``, its sum of squares before the fixed effects are partialled out
    (collinear with the kept ones or absorbed by the fixed effects)."""
    k = A.shape[0]
    keep: list[int] = []
    L = np.zeros((k, k))
    for j in range(k):
        if keep:
            lj = np.linalg.solve(L[np.ix_(keep, keep)], A[keep, j]) if keep else np.zeros(0)
            pivot = A[j, j] - lj @ lj
        else:
            lj = np.zeros(0)
            pivot = A[j, j]
        if raw_ss[j] <= 0 or pivot <= tol * raw_ss[j]:
            continue
        L[j, keep] = lj
        L[j, j] = np.sqrt(pivot)
        keep.append(j)
    return keep


#: pyfixest 0.60's feols arguments that llmsurrogate does not take, with the value at which they
#: change nothing (accepted silently); any other value is refused by name.
PYFIXEST_ARGUMENTS = {
    "vcov_kwargs": None, "ssc": None, "drop_intercept": False, "copy_data": True, "store_data": True,
    "lean": False, "solver": "scipy.linalg.solve", "demeaner": None, "demeaner_backend": None,
    "use_compression": False, "reps": 100, "context": None, "seed": None, "split": None, "fsplit": None,
}
#: pyfixest's default small-sample corrections (``pf.ssc()``), the ones feols applies.
DEFAULT_SSC = {"k_adj": True, "k_fixef": "nonnested", "G_adj": True, "G_df": "min"}


def check_pyfixest_arguments(kwargs: dict) -> None:
    """Refuse, by name, every keyword of ``kwargs``: pyfixest's feols arguments that would change
    the fit (``ssc`` other than its default, ``split``, ``fsplit``, ...), and unknown ones."""
    for key, value in kwargs.items():
        if key not in PYFIXEST_ARGUMENTS:
            import difflib

            known = ["vcov", "weights", "weights_type", "fixef_rm", "fixef_tol", "fixef_maxiter", "collin_tol",
                     "n_jobs"]
            hint = difflib.get_close_matches(key, known + list(PYFIXEST_ARGUMENTS), n=1)
            raise InvalidArgumentError(f"unknown argument `{key}` of feols" + (f"; did you mean `{hint[0]}`?" if hint
                                                                               else ""))
        default = PYFIXEST_ARGUMENTS[key]
        if key == "ssc" and isinstance(value, dict) and value == DEFAULT_SSC:
            continue
        try:
            same = value is default or (default is not None and not isinstance(value, (np.ndarray, pd.Series))
                                        and type(value) is type(default) and value == default)
        except Exception:  # an object whose == is not a bool
            same = False
        if not same:
            extra = (f" (only pyfixest's default {DEFAULT_SSC} is applied)" if key == "ssc" else
                     " (fit each subsample separately)" if key in ("split", "fsplit") else "")
            raise InvalidArgumentError(f"argument `{key}` (pyfixest's) is not supported by llmsurrogate.fe.feols; "
                                       f"got {value!r}{extra}")


def feols(fml: str | Formula, data, vcov=None, weights=None, *, weights_type: str = "aweights",
          fixef_rm: str = "singleton", fixef_tol: float = DEFAULT_TOL, fixef_maxiter: int = DEFAULT_MAXITER,
          collin_tol: float = COLLIN_TOL, n_jobs: int | None = None, **kwargs) -> FeolsResult:
    """OLS of ``fml`` with absorbed fixed effects, as ``pyfixest.feols`` (same formula syntax, names
    and default small-sample corrections; docs/methods/fe.md).

    Parameters
    ----------
    fml : str or Formula
        ``"y ~ x1 + x2 + x1:x2 | firm + date"``: numeric regressors, ``:`` and ``*`` interactions,
        ``C(x)`` / ``factor(x)`` / ``i(x, ref=...)`` / ``i(x, z)`` dummies, ``log()``, ``exp()``,
        ``sqrt()``, ``I(...)``, ``poly(x, d)``, ``- 1`` or ``+ 0``, and after ``|`` any number of
        fixed effects (``a^b`` for an interacted one). Without ``|`` an intercept is fitted. A
        :class:`Formula` from :func:`parse_formula` is used as it is.
    data : pandas or polars DataFrame, or a mapping of column name to values.
    vcov : ``"iid"`` (default), ``"hetero"`` (HC1), ``"HC2"``, ``"HC3"`` (both without fixed
        effects), ``{"CRV1": "date"}`` or ``{"CRV1": "firm+date"}``.
    weights : None, a column name of ``data``, or an array of n non-negative weights (real
        numbers; a pandas Series is paired with a pandas ``data`` by label).
    weights_type : ``"aweights"`` (default: analytic/precision weights) or ``"fweights"``
        (frequency weights, whole numbers: a row of weight w counts as w rows; the same estimates,
        ``nobs`` and the degrees of freedom from the sum of the weights, as pyfixest).
    fixef_rm : ``"singleton"`` (default, as pyfixest: rows alone in a fixed-effect level are dropped,
        repeatedly, with a count and a warning) or ``"none"``.
    fixef_tol, fixef_maxiter : tolerance and iteration cap of the demeaning (relative residual of its
        conjugate-gradient iteration; :class:`ConvergenceError` when missed).
    collin_tol : relative pivot in (0, 1) below which a regressor is dropped as collinear (with a
        warning): its sum of squares after partialling out the fixed effects (or the intercept) and
        the regressors before it, over its sum of squares about its mean; invariant to the
        location and scale of the columns.
    n_jobs : workers/threads of the demeaning (None: see :func:`llmsurrogate.num_threads`).
    **kwargs : pyfixest's other arguments are accepted at their pyfixest default (``ssc=None``,
        ``demeaner=None``, ``lean=False``, ...) and refused by name otherwise
        (:class:`InvalidArgumentError`: ``ssc``, ``split``, ``fsplit``, ``vcov_kwargs``, ...).

    Notes
    -----
    Rows with a missing value in any column used (outcome, regressors, the columns a transform
    reads, fixed effects, cluster columns, weights) are dropped and counted. Returns a
    :class:`FeolsResult` (with ``predict()``, ``resid()``, ``fixef()`` and ``model_matrix()``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": rng.normal(size=50)})
    >>> df["y"] = 1.5 * df["x"] + df["firm"] + rng.normal(scale=0.1, size=50)
    >>> fit = feols("y ~ x | firm", df, vcov="hetero")
    >>> round(float(fit.coef()["x"]), 2), fit.nobs, fit.fe_levels
    (1.48, 50, {'firm': 10})
    >>> df["g"] = np.arange(50) % 3
    >>> feols("y ~ x + C(g)", df).coef().index.tolist()
    ['Intercept', 'x', 'C(g)[T.1]', 'C(g)[T.2]']
    """
    started = time.perf_counter()
    check_pyfixest_arguments(kwargs)
    form = fml if isinstance(fml, Formula) else parse_formula(fml)
    spec = parse_vcov(vcov)
    if weights_type not in ("aweights", "fweights"):
        raise InvalidArgumentError(f"argument `weights_type` must be 'aweights' or 'fweights'; got {weights_type!r}")
    if weights_type == "fweights" and weights is None:
        raise InvalidArgumentError("argument `weights_type`: 'fweights' needs `weights` (the frequency of each row)")
    if fixef_rm not in ("singleton", "none"):
        raise InvalidArgumentError(f"argument `fixef_rm` must be 'singleton' or 'none'; got {fixef_rm!r}")
    if not (isinstance(fixef_tol, (int, float)) and 0 < fixef_tol < 1):
        raise InvalidArgumentError(f"argument `fixef_tol` must lie in (0, 1); got {fixef_tol!r}")
    if not (isinstance(fixef_maxiter, (int, np.integer)) and fixef_maxiter >= 1):
        raise InvalidArgumentError(f"argument `fixef_maxiter` must be an integer >= 1; got {fixef_maxiter!r}")
    collin_tol = check_real(collin_tol, "collin_tol", low=0.0, high=1.0, low_open=True, high_open=True)
    n_jobs = resolve_n_jobs(n_jobs)
    frame = as_frame(data, "data")
    design = build_design(form, frame, data, spec, weights, fixef_rm, stacklevel=3, weights_type=weights_type)
    return fit_design(design, spec, fixef_tol=fixef_tol, fixef_maxiter=fixef_maxiter, collin_tol=collin_tol,
                      n_jobs=n_jobs, started=started)


@dataclass(frozen=True)
class Design:
    """The estimation sample of a fixed-effects OLS, as :func:`build_design` builds it for
    :func:`feols` and :func:`~llmsurrogate.fe.bootstrap`: the outcome ``y`` (n,) and the regressors
    ``X`` (n, k) of the rows kept (an intercept column first when the formula has one), their
    analytic weights ``w`` (None: unweighted), the fixed-effect and cluster codes of the rows kept
    (``uint32``, 0..G-1 in order of first appearance), and the counts of rows dropped with the
    notes that said so."""

    form: Formula
    y: np.ndarray
    X: np.ndarray
    w: np.ndarray | None
    weights_name: str | None
    fe_codes: list
    cl_codes: list
    n_input: int
    n_dropped_nan: int
    n_dropped_singletons: int
    n_dropped_zero_weight: int
    notes: list
    names: list = None  # the regressor columns' names (coefficient names)
    rows: np.ndarray = None  # positions in `data` of the rows kept
    fe_labels: list = None  # per fixed effect: the LevelLabels of its codes
    spec: object = None  # formulaic's ModelSpec of the regressors (formulas with transforms)
    categorical_levels: dict = None  # column -> the levels C()/i() saw in the rows kept
    weights_type: str = "aweights"

    @property
    def nobs(self) -> int:
        return len(self.y)


class LevelLabels:
    """The level of each code of a fixed effect, as pyfixest writes it (``str`` of the value:
    ``"3"``, ``"1.0"``, ``"a"``; ``"a^1.0"`` for an interacted one), made into strings only when
    asked (:meth:`strings`): ``parts`` holds, per column of the fixed effect, the value of each
    level."""

    def __init__(self, parts: list):
        self.parts = parts

    def __len__(self) -> int:
        return len(self.parts[0])

    def take(self, keep) -> "LevelLabels":
        return LevelLabels([np.asarray(p)[keep] for p in self.parts])

    def strings(self) -> np.ndarray:
        if len(self.parts) == 1:
            return np.array([str(v) for v in self.parts[0]], dtype=object)
        return np.array(["^".join(str(v) for v in vals) for vals in zip(*self.parts)], dtype=object)


def _factorize_labels(frame, fe: tuple[str, ...]) -> tuple[np.ndarray, LevelLabels]:
    """Codes (-1: missing) in order of first appearance and the levels of the fixed effect ``fe``."""
    if len(fe) == 1:
        codes, uniques = pd.factorize(frame[fe[0]].to_numpy(), use_na_sentinel=True)
        return codes.astype(np.int64), LevelLabels([np.asarray(uniques)])
    parts = [pd.factorize(frame[c].to_numpy(), use_na_sentinel=True) for c in fe]
    part_codes = np.column_stack([p[0] for p in parts])
    valid = np.all(part_codes >= 0, axis=1)
    codes = np.full(len(part_codes), -1, dtype=np.int64)
    if valid.any():
        combo, _ = factorize(pd.MultiIndex.from_arrays([part_codes[valid, j] for j in range(len(parts))]))
        codes[valid] = combo
    first_row = np.flatnonzero(valid)[np.unique(codes[valid], return_index=True)[1]] if valid.any() else \
        np.zeros(0, dtype=np.int64)
    return codes, LevelLabels([np.asarray(u)[c[first_row]] for c, u in parts])


def build_design(form: Formula, frame: pd.DataFrame, data, spec: VcovSpec, weights, fixef_rm: str, *,
                 stacklevel: int = 2, weights_type: str = "aweights") -> Design:
    """feols' one design builder: the columns of ``form`` (and the cluster columns of ``spec``) from
    ``frame`` (``data`` as a DataFrame; ``data`` itself pairs a pandas ``weights`` Series by
    label), the fixed effects factorized, and the rows dropped by the package's rules: a missing
    value in any column used (outcome, regressors, fixed effects, cluster columns, weights), a
    weight of 0, and with ``fixef_rm="singleton"`` the singletons. Each drop is counted, noted
    and warned about (``stacklevel`` as :func:`warnings.warn`'s inside this function: 2 names its
    caller)."""
    check_columns(frame, form.columns() + list(spec.clusters) + ([weights] if isinstance(weights, str) else []),
                  "data")
    require_columns(frame, form.columns(), "data")
    require_columns(frame, list(spec.clusters), "data")
    if form.transformed:  # the columns read as numbers, refused as the plain formula refuses them
        for c in form.numeric:
            _numeric(frame, c)
    n_input = len(frame)
    if n_input == 0:
        raise InvalidArgumentError("argument `data` has no rows")

    y = _numeric(frame, form.outcome) if form.outcome_column else np.zeros(n_input)
    if form.transformed:
        X, names = None, None
    else:
        cols = {c: _numeric(frame, c) for t in form.terms for c in t}
        X = np.column_stack([np.prod([cols[c] for c in t], axis=0) for t in form.terms]) if form.terms else \
            np.zeros((n_input, 0))
        names = form.term_names
        if form.intercept:
            X = np.column_stack([np.ones(n_input), X])

    if weights is None:
        w = None
        weights_name = None
    else:
        if isinstance(weights, str):
            require_columns(frame, [weights], "data")
            w = _numeric(frame, weights)
            weights_name = weights
        else:
            _, weights = align_by_label(("data", data), ("weights", weights))  # pandas: by label
            w = as_float_array(weights, "weights")
            weights_name = "array"
            if len(w) != n_input:
                raise InvalidArgumentError(f"argument `weights` has {len(w)} values for {n_input} rows of `data`")
        if np.any(w[np.isfinite(w)] < 0):
            raise InvalidArgumentError("argument `weights` has negative values; weights must be >= 0")
        if np.any(np.isinf(w)):
            raise InvalidArgumentError("argument `weights` has infinite values")
        if weights_type == "fweights":
            fin = w[np.isfinite(w)]
            if np.any(fin != np.floor(fin)):
                i = int(np.flatnonzero(np.isfinite(w) & (w != np.floor(w)))[0])
                raise InvalidArgumentError(located(f"argument `weights`: frequency weights (weights_type='fweights') "
                                                   f"must be whole numbers; got {w[i]} at ", at(i)))

    fe_raw, fe_lab = [], []
    for fe in form.fixef:
        codes, labels = _factorize_labels(frame, fe)
        fe_raw.append(codes)
        fe_lab.append(labels)
    cl_raw = [factorize(frame[c].to_numpy())[0] for c in spec.clusters]

    ok = np.isfinite(y) if form.outcome_column else np.ones(n_input, dtype=bool)
    if X is not None:
        ok &= np.all(np.isfinite(X), axis=1)
    for c in fe_raw + cl_raw:
        ok &= c >= 0
    if w is not None:
        ok &= np.isfinite(w)
    model_spec, cat_levels = None, None
    n_not_finite = 0
    if form.transformed and ok.any():
        from ._transforms import build

        ok &= ~frame[list(form.variables)].isna().any(axis=1).to_numpy()  # missing: counted as such
        n_before = int(ok.sum())
        built = build(form, frame, ok)
        names, model_spec = built.names, built.spec
        X = np.full((n_input, len(names)), np.nan)
        X[built.rows] = built.X
        if built.y is not None:
            y = np.full(n_input, np.nan)
            y[built.rows] = built.y
        kept = np.zeros(n_input, dtype=bool)
        kept[built.rows] = True
        ok &= kept & np.isfinite(y) & np.all(np.isfinite(X), axis=1)
        n_not_finite = n_before - int(ok.sum())
    elif X is None:
        X = np.zeros((n_input, 0))
    notes: list[str] = []
    n_nan = int(n_input - ok.sum())
    note_dropped(notes, n_nan - n_not_finite, " (NaN/None)", stacklevel=stacklevel)
    if n_not_finite:  # pyfixest's rule: log() of a value <= 0, sqrt() of a negative one
        msg = (f"{n_not_finite} row(s) dropped where a transform is not finite (log() of a value <= 0, sqrt() of a "
               "negative value)")
        notes.append(msg)
        warnings.warn(msg, LLMSurrogateWarning, stacklevel=stacklevel)
    n_zero_weight = 0
    if w is not None:
        # a row of weight 0 carries no information: dropped (so that it counts in no N, level or
        # cluster), which makes the fit identical to one without the row
        zero = ok & (w == 0)
        n_zero_weight = int(zero.sum())
        if n_zero_weight:
            ok &= ~zero
            msg = f"{n_zero_weight} row(s) of weight 0 dropped"
            notes.append(msg)
            warnings.warn(msg, LLMSurrogateWarning, stacklevel=stacklevel)
    if not ok.any():
        for name, c in zip(spec.clusters, cl_raw):
            if not np.any(c >= 0):
                raise InvalidArgumentError(f"argument `vcov`: cluster column {name!r} has no non-missing value")
        if w is not None and not np.any(w > 0):
            raise InvalidArgumentError("argument `weights`: no row has a positive weight (every weight is 0 or missing)")
        raise InvalidArgumentError("argument `data`: no row is complete (and of positive weight) in the columns the formula uses")

    n_singletons = 0
    if fe_raw:
        codes_ok = [recode(c[ok])[0] for c in fe_raw]
        if fixef_rm == "singleton":
            keep_sub = singleton_mask(codes_ok)
            n_singletons = int((~keep_sub).sum())
            if n_singletons:
                idx = np.flatnonzero(ok)
                ok[idx[~keep_sub]] = False
                msg = f"{n_singletons} singleton observation(s) dropped (alone in a fixed-effect level; fixef_rm='singleton')"
                notes.append(msg)
                warnings.warn(msg, LLMSurrogateWarning, stacklevel=stacklevel)
    n = int(ok.sum())
    if n == 0:
        raise InvalidArgumentError("argument `data`: no observation is left after dropping missing values and singletons")
    fe_codes, fe_labels = [], []
    for c, labels in zip(fe_raw, fe_lab):
        present = np.bincount(c[ok], minlength=len(labels)) > 0
        fe_codes.append(recode(c[ok])[0])
        fe_labels.append(labels.take(np.flatnonzero(present)))
    if form.categorical:  # the levels C()/i() saw, in the column's dtype (predict() matches new data to them)
        cat_levels = {c: frame[c].iloc[np.flatnonzero(ok)].drop_duplicates().reset_index(drop=True)
                      for c in form.categorical}
    return Design(form=form, y=y[ok], X=X[ok], w=None if w is None else w[ok], weights_name=weights_name,
                  fe_codes=fe_codes, cl_codes=[recode(c[ok])[0] for c in cl_raw],
                  n_input=n_input, n_dropped_nan=n_nan, n_dropped_singletons=n_singletons,
                  n_dropped_zero_weight=n_zero_weight, notes=notes, names=list(names), rows=np.flatnonzero(ok),
                  fe_labels=fe_labels, spec=model_spec, categorical_levels=cat_levels, weights_type=weights_type)


def fit_design(design: Design, spec: VcovSpec, *, fixef_tol: float, fixef_maxiter: int, collin_tol: float,
               n_jobs: int, started: float) -> FeolsResult:
    """The weighted OLS of a :class:`Design` with the variance ``spec`` (whose cluster columns the
    design holds): the fit of :func:`feols`, whose arguments it takes checked."""
    form, y, X, w, n = design.form, design.y, design.X, design.w, design.nobs
    fe_codes, cl_codes, notes = design.fe_codes, design.cl_codes, list(design.notes)
    names = list(design.names) if design.names is not None else form.term_names
    fweights = design.weights_type == "fweights"
    # OLS is equivariant to the location (with an intercept or fixed effects) and the scale of each
    # column, and to the scale of the weights: fit on standardized columns (_standardize), then map
    # the coefficients and their variance back. y = ay (my + by ys), X_j = ax_j (mx_j + bx_j Z_j).
    wmax = 1.0 if w is None else float(w.max())
    wn = np.ones(n) if w is None else w / wmax
    first = int(bool(names) and names[0] == "Intercept" and not fe_codes)  # stays a column of ones
    S, a, m, b = _standardize(np.column_stack([y, X[:, first:]]), wn, bool(fe_codes) or bool(first))
    ys, Xs = S[:, 0], (np.column_stack([X[:, :first], S[:, 1:]]) if first else S[:, 1:])
    (ay, *ax), (my, *mx), (by, *bx) = a, m, b
    ax, mx, bx = np.r_[[1.0] * first, ax], np.r_[[0.0] * first, mx], np.r_[[1.0] * first, bx]

    iterations, residual = 0, 0.0
    if fe_codes:
        dm = demean(S, fe_codes, None if w is None else wn, tol=fixef_tol, maxiter=fixef_maxiter, n_jobs=n_jobs)
        yt, Xt = dm.values[:, 0], dm.values[:, 1:]
        iterations = int(dm.iterations.max())
        residual = float(dm.residual.max())
    else:
        yt, Xt = ys, Xs

    A = Xt.T @ (Xt * wn[:, None])
    keep = _drop_collinear(A, (Xs**2 * wn[:, None]).sum(axis=0), names, collin_tol)
    dropped = [names[j] for j in range(len(names)) if j not in keep]
    if dropped:
        msg = f"collinear regressor(s) dropped: {', '.join(dropped)} (collinear with the other regressors or the fixed effects)"
        notes.append(msg)
        warnings.warn(msg, LLMSurrogateWarning, stacklevel=3)
    if not keep:
        raise InvalidArgumentError("argument `fml`: every regressor is collinear with the fixed effects; nothing to estimate")
    names = [names[j] for j in keep]
    Xt, A = Xt[:, keep], A[np.ix_(keep, keep)]
    beta_s = np.linalg.solve(A, Xt.T @ (wn * yt))
    bread = np.linalg.inv(A)
    bread = (bread + bread.T) / 2
    resid = yt - Xt @ beta_s

    fe_names = form.fixef_names
    vc = compute_vcov(spec, X=Xt, resid=resid, w=None if w is None else wn, bread=bread, fe_codes=fe_codes,
                      fe_names=fe_names, cluster_codes=cl_codes, fweights=wmax if fweights else None)
    # back to the columns' units: beta = r * (G beta_s) (+ ay my for the intercept), V = r (G V_s G') r,
    # where G is the identity but for the intercept's row (1, -mx_j / bx_j)
    k = len(keep)
    G = np.eye(k)
    if first:
        G[0, 1:] = -np.asarray(mx)[keep[1:]] / np.asarray(bx)[keep[1:]]
    with np.errstate(over="ignore", under="ignore"):
        r = (ay / ax[keep]) * (by / bx[keep])
        beta = r * (G @ beta_s)
        if first:
            beta[0] = ay * (my + by * (G[0] @ beta_s))
    V, se, Q = to_units(vc.vcov, G, r)
    check_variances(names, Q, spec)
    bad = [nm for nm, bj, sj in zip(names, beta, se) if not (np.isfinite(bj) and np.isfinite(sj))]
    if bad:
        raise InvalidArgumentError(
            f"argument `data`: the coefficient of {bad[0]!r} (or its standard error) is beyond the range of a float64 "
            f"(outcome {form.outcome!r} up to {ay:.3g} in absolute value, {bad[0]!r} up to "
            f"{ax[keep][names.index(bad[0])]:.3g}); rescale {bad[0]!r} or {form.outcome!r} (other units)")
    if not np.all(np.isfinite(V)) or np.any((np.abs(V) < np.finfo(float).tiny) & (Q != 0)):
        msg = ("the variance matrix of the coefficients is beyond the range of a float64 at the scales of these "
               "columns (vcov() holds infinite or rounded entries); se(), tstat(), pvalue() and confint() are exact")
        notes.append(msg)
        warnings.warn(msg, LLMSurrogateWarning, stacklevel=3)
    ssu = float(np.sum(wn * resid**2))
    ssy = float(np.sum(wn * (ys - np.sum(wn * ys) / np.sum(wn)) ** 2))
    r2 = 1 - ssu / ssy if ssy > 0 else float("nan")
    if fe_codes:
        ssy_w = float(np.sum(wn * yt**2))
        r2_within = 1 - ssu / ssy_w if ssy_w > 0 else float("nan")
    else:
        r2_within = float("nan")
    n_obs = int(round(float(w.sum()))) if fweights else n
    df_k = fixest_df_k(len(keep), [int(c.max()) + 1 for c in fe_codes])  # the codes are 0..L-1 (recode)
    with np.errstate(over="ignore", under="ignore"):
        resid_y = resid * (ay * by)  # the residuals in the outcome's units
    sample = FittedSample(rows=design.rows, y=y, X=X[:, keep], resid=resid_y, w=w, fe_codes=fe_codes,
                          fe_labels=design.fe_labels, spec=design.spec, categorical_levels=design.categorical_levels,
                          form=form, names=list(names), beta=beta,
                          vcov_inputs=VcovInputs(X=Xt, resid=resid, w=None if w is None else wn, bread=bread,
                                                 fe_codes=fe_codes, fe_names=list(fe_names),
                                                 cluster_codes=dict(zip(spec.clusters, cl_codes)),
                                                 fweights=wmax if fweights else None, G=G, r=r))
    res = FeolsResult(
        formula=form.text,
        outcome=form.outcome,
        terms=list(names),
        beta=beta,
        vcov_matrix=V,
        vcov_type=spec.label,
        df_t=int(vc.df_t),
        df_k=int(vc.df_k),
        nobs=n_obs,
        n_input=design.n_input,
        n_dropped_nan=design.n_dropped_nan,
        n_dropped_singletons=design.n_dropped_singletons,
        n_dropped_zero_weight=design.n_dropped_zero_weight,
        dropped_collinear=dropped,
        fixef_names=fe_names,
        fe_levels={name: int(c.max()) + 1 for name, c in zip(fe_names, fe_codes)},
        n_clusters={name: int(c.max()) + 1 for name, c in zip(spec.clusters, cl_codes)},
        r2=r2,
        r2_within=r2_within,
        rmse=float(ay * by * np.sqrt(ssu / n_obs * wmax)),
        weights=design.weights_name,
        demean_iterations=iterations,
        demean_residual=residual,
        demean_tol=float(fixef_tol),
        seconds=time.perf_counter() - started,
        notes=tuple(notes),
        std_errors=se,
        weights_type=design.weights_type,
        df_resid=int(n_obs - df_k),
    )
    object.__setattr__(res, "_sample", sample)
    return res
