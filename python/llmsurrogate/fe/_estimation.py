"""``feols``: OLS with absorbed fixed effects (pyfixest's formula syntax and defaults)."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import (
    align_by_label,
    as_float_array,
    as_frame,
    check_real,
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
from ._results import FeolsResult
from ._vcov import VcovSpec, compute_vcov, parse_vcov

#: Relative pivot below which a regressor counts as collinear with the ones before it (and the
#: fixed effects): its demeaned, partialled-out sum of squares over its sum of squares about its
#: mean (about 0 without an intercept or fixed effects).
COLLIN_TOL = 1e-9


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


def feols(fml: str | Formula, data, vcov=None, weights=None, *, fixef_rm: str = "singleton", fixef_tol: float = DEFAULT_TOL,
          fixef_maxiter: int = DEFAULT_MAXITER, collin_tol: float = COLLIN_TOL, n_jobs: int | None = None) -> FeolsResult:
    """OLS of ``fml`` with absorbed fixed effects, as ``pyfixest.feols`` (same formula syntax and
    default small-sample corrections; docs/methods/fe.md).

    Parameters
    ----------
    fml : str or Formula
        ``"y ~ x1 + x2 + x1:x2 | firm + date"``: numeric regressors, ``:`` and ``*`` interactions, and
        after ``|`` any number of fixed effects (``a^b`` for an interacted one). Without ``|`` an
        intercept is fitted. A :class:`Formula` from :func:`parse_formula` is used as it is.
    data : pandas or polars DataFrame, or a mapping of column name to values.
    vcov : ``"iid"`` (default), ``"hetero"`` (HC1), ``{"CRV1": "date"}`` or ``{"CRV1": "firm+date"}``.
    weights : None, a column name of ``data``, or an array of n non-negative analytic weights (real
        numbers; a pandas Series is paired with a pandas ``data`` by label).
    fixef_rm : ``"singleton"`` (default, as pyfixest: rows alone in a fixed-effect level are dropped,
        repeatedly, with a count and a warning) or ``"none"``.
    fixef_tol, fixef_maxiter : tolerance and iteration cap of the demeaning (relative residual of its
        conjugate-gradient iteration; :class:`ConvergenceError` when missed).
    collin_tol : relative pivot in (0, 1) below which a regressor is dropped as collinear (with a
        warning): its sum of squares after partialling out the fixed effects (or the intercept) and
        the regressors before it, over its sum of squares about its mean; invariant to the
        location and scale of the columns.
    n_jobs : workers/threads of the demeaning (None: see :func:`llmsurrogate.num_threads`).

    Notes
    -----
    Rows with a missing value in any column used (outcome, regressors, fixed effects, cluster
    columns, weights) are dropped and counted. Returns a :class:`FeolsResult`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"firm": np.repeat(np.arange(10), 5), "x": rng.normal(size=50)})
    >>> df["y"] = 1.5 * df["x"] + df["firm"] + rng.normal(scale=0.1, size=50)
    >>> fit = feols("y ~ x | firm", df, vcov="hetero")
    >>> round(float(fit.coef()["x"]), 2), fit.nobs, fit.fe_levels
    (1.48, 50, {'firm': 10})
    """
    started = time.perf_counter()
    form = fml if isinstance(fml, Formula) else parse_formula(fml)
    spec = parse_vcov(vcov)
    if fixef_rm not in ("singleton", "none"):
        raise InvalidArgumentError(f"argument `fixef_rm` must be 'singleton' or 'none'; got {fixef_rm!r}")
    if not (isinstance(fixef_tol, (int, float)) and 0 < fixef_tol < 1):
        raise InvalidArgumentError(f"argument `fixef_tol` must lie in (0, 1); got {fixef_tol!r}")
    if not (isinstance(fixef_maxiter, (int, np.integer)) and fixef_maxiter >= 1):
        raise InvalidArgumentError(f"argument `fixef_maxiter` must be an integer >= 1; got {fixef_maxiter!r}")
    collin_tol = check_real(collin_tol, "collin_tol", low=0.0, high=1.0, low_open=True, high_open=True)
    n_jobs = resolve_n_jobs(n_jobs)
    frame = as_frame(data, "data")
    design = build_design(form, frame, data, spec, weights, fixef_rm, stacklevel=3)
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

    @property
    def nobs(self) -> int:
        return len(self.y)


def build_design(form: Formula, frame: pd.DataFrame, data, spec: VcovSpec, weights, fixef_rm: str, *,
                 stacklevel: int = 2) -> Design:
    """feols' one design builder: the columns of ``form`` (and the cluster columns of ``spec``) from
    ``frame`` (``data`` as a DataFrame; ``data`` itself pairs a pandas ``weights`` Series by
    label), the fixed effects factorized, and the rows dropped by the package's rules: a missing
    value in any column used (outcome, regressors, fixed effects, cluster columns, weights), a
    weight of 0, and with ``fixef_rm="singleton"`` the singletons. Each drop is counted, noted
    and warned about (``stacklevel`` as :func:`warnings.warn`'s inside this function: 2 names its
    caller)."""
    require_columns(frame, form.columns(), "data")
    require_columns(frame, list(spec.clusters), "data")
    n_input = len(frame)
    if n_input == 0:
        raise InvalidArgumentError("argument `data` has no rows")

    y = _numeric(frame, form.outcome)
    cols = {c: _numeric(frame, c) for t in form.terms for c in t}
    X = np.column_stack([np.prod([cols[c] for c in t], axis=0) for t in form.terms]) if form.terms else np.zeros((n_input, 0))
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

    fe_raw = []
    for fe in form.fixef:
        if len(fe) == 1:
            codes, _ = factorize(frame[fe[0]].to_numpy())
        else:
            parts = [factorize(frame[c].to_numpy())[0] for c in fe]
            key = pd.MultiIndex.from_arrays(parts)
            codes, _ = factorize(key)
            codes = np.where(np.any(np.column_stack(parts) < 0, axis=1), -1, codes)
        fe_raw.append(codes)
    cl_raw = [factorize(frame[c].to_numpy())[0] for c in spec.clusters]

    ok = np.isfinite(y) & np.all(np.isfinite(X), axis=1)
    for c in fe_raw + cl_raw:
        ok &= c >= 0
    if w is not None:
        ok &= np.isfinite(w)
    notes: list[str] = []
    n_nan = int(n_input - ok.sum())
    note_dropped(notes, n_nan, " (NaN/None)", stacklevel=stacklevel)
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
    return Design(form=form, y=y[ok], X=X[ok], w=None if w is None else w[ok], weights_name=weights_name,
                  fe_codes=[recode(c[ok])[0] for c in fe_raw], cl_codes=[recode(c[ok])[0] for c in cl_raw],
                  n_input=n_input, n_dropped_nan=n_nan, n_dropped_singletons=n_singletons,
                  n_dropped_zero_weight=n_zero_weight, notes=notes)


def fit_design(design: Design, spec: VcovSpec, *, fixef_tol: float, fixef_maxiter: int, collin_tol: float,
               n_jobs: int, started: float) -> FeolsResult:
    """The weighted OLS of a :class:`Design` with the variance ``spec`` (whose cluster columns the
    design holds): the fit of :func:`feols`, whose arguments it takes checked."""
    form, y, X, w, n = design.form, design.y, design.X, design.w, design.nobs
    fe_codes, cl_codes, notes, names = design.fe_codes, design.cl_codes, list(design.notes), form.term_names
    # OLS is equivariant to the location (with an intercept or fixed effects) and the scale of each
    # column, and to the scale of the weights: fit on standardized columns (_standardize), then map
    # the coefficients and their variance back. y = ay (my + by ys), X_j = ax_j (mx_j + bx_j Z_j).
    wmax = 1.0 if w is None else float(w.max())
    wn = np.ones(n) if w is None else w / wmax
    first = int(form.intercept)  # the intercept column stays a column of ones
    S, a, m, b = _standardize(np.column_stack([y, X[:, first:]]), wn, bool(fe_codes) or form.intercept)
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
                      fe_names=fe_names, cluster_codes=cl_codes)
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
        Q = G @ vc.vcov @ G.T
        se = r * np.sqrt(np.diag(Q))
        V = (r[:, None] * Q) * r[None, :]
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
    return FeolsResult(
        formula=form.text,
        outcome=form.outcome,
        terms=list(names),
        beta=beta,
        vcov_matrix=V,
        vcov_type=spec.label,
        df_t=int(vc.df_t),
        df_k=int(vc.df_k),
        nobs=n,
        n_input=design.n_input,
        n_dropped_nan=design.n_dropped_nan,
        n_dropped_singletons=design.n_dropped_singletons,
        n_dropped_zero_weight=design.n_dropped_zero_weight,
        dropped_collinear=dropped,
        fixef=fe_names,
        fe_levels={name: int(c.max()) + 1 for name, c in zip(fe_names, fe_codes)},
        n_clusters={name: int(c.max()) + 1 for name, c in zip(spec.clusters, cl_codes)},
        r2=r2,
        r2_within=r2_within,
        rmse=float(ay * by * np.sqrt(ssu / n * wmax)),
        weights=design.weights_name,
        demean_iterations=iterations,
        demean_residual=residual,
        demean_tol=float(fixef_tol),
        seconds=time.perf_counter() - started,
        notes=tuple(notes),
        std_errors=se,
    )
