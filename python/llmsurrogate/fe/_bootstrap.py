"""The pairs and cluster bootstrap of one coefficient of a fixed-effects OLS: :func:`bootstrap`
(the design from :func:`~llmsurrogate.fe.feols`' builder, the replications in Rust,
``rust/fe/bootstrap.rs``) and :func:`bootstrap_counts` (the resampling weights of one
replication). Method: docs/methods/fe.md, "The bootstrap"."""

from __future__ import annotations

import time
import warnings

import numpy as np

from .. import _core
from .._validation import as_frame, check_int, check_real
from .._workers import resolve_n_jobs
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ._demean import DEFAULT_MAXITER, DEFAULT_TOL, factorize
from ._estimation import COLLIN_TOL, build_design, fit_design
from ._formula import Formula, parse_formula
from ._results import FeolsBootstrap
from ._vcov import VcovSpec

__all__ = ["bootstrap", "bootstrap_counts"]


def _check_seed(seed) -> int:
    """``seed`` checked, or for ``None`` one drawn from the operating system."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (1 << 64))
    return check_int(seed, "seed", minimum=0, maximum=(1 << 64) - 1)


def _first_appearance(codes: np.ndarray) -> np.ndarray:
    """Codes renumbered 0..G-1 in order of first appearance, as uint32."""
    return factorize(codes)[0].astype(np.uint32)


def bootstrap(fml: str | Formula, data, *, param: str | None = None, n_boot: int = 1000, cluster: str | None = None,
              seed: int | None = None, fixef_tol: float = DEFAULT_TOL, fixef_maxiter: int = DEFAULT_MAXITER,
              collin_tol: float = COLLIN_TOL, n_jobs: int | None = None, weights=None, **kwargs) -> FeolsBootstrap:
    """Pairs bootstrap (``cluster=None``: rows resampled) or cluster bootstrap (``cluster="date"``:
    the levels of a column resampled as blocks) of the coefficient ``param`` of ``feols(fml, data)``.

    Each of ``n_boot`` replications draws the rows (or the clusters) with replacement and refits
    the fixed-effects OLS; the replicated coefficients are the result's ``draws``. The design is
    built by :func:`feols`' own builder: the same formula syntax, fixed-effect codes and
    missing-value rule (a row missing any column used, the cluster column included, is dropped
    with a count and a warning). Singletons are kept (``fixef_rm="none"``): a row alone in a
    fixed-effect level is fitted by its level and does not move the slopes. Weights are not
    supported. A formula without fixed effects has its intercept absorbed as a one-level fixed
    effect (one without an intercept is refused).

    Parameters
    ----------
    fml : str or Formula
        As :func:`feols`: ``"y ~ x1 + x2 | firm + date"``.
    data : pandas or polars DataFrame, or a mapping of column name to values.
    param : the term whose coefficient is bootstrapped (a name of ``fit.terms``, e.g. ``"x1"`` or
        ``"x1:x2"``; pyfixest's word). ``None``: the formula's only regressor.
    n_boot : replications (at least 1).
    cluster : None (pairs bootstrap: rows) or a column whose levels are resampled as blocks (at
        least 2 levels); every row of a block drawn k times gets weight k.
    seed : integer in [0, 2**64); None draws one from the operating system and records it.
    fixef_tol, fixef_maxiter, collin_tol : as :func:`feols`.
    n_jobs : workers/threads (None: see :func:`llmsurrogate.num_threads`). The draws do not depend
        on it.
    weights : None only: weights are not supported (an :class:`InvalidArgumentError`, as is any
        other keyword, named).

    Returns
    -------
    FeolsBootstrap
        ``draws`` (``n_boot``; NaN for a replication whose design is singular, or whose demeaning
        missed ``fixef_tol``, counted in ``n_singular`` / ``n_unconverged`` and a warning), the
        full-sample ``estimate``, :meth:`~FeolsBootstrap.se`, :meth:`~FeolsBootstrap.confint`
        (percentile) and :meth:`~FeolsBootstrap.tidy`.

    Notes
    -----
    Replication ``b`` is the weighted fit with the resampling counts as frequency weights (equal to
    the fit on the duplicated rows); its counts come from SplitMix64 started at the ``(b + 1)``-th
    output of SplitMix64 seeded with ``seed`` (:func:`bootstrap_counts` returns them), so the
    draws are reproducible by seed for any ``n_jobs`` and the first ``b`` draws do not depend on
    ``n_boot``. Clusters and fixed-effect levels are numbered by first appearance among the rows
    kept, so the draws are those of the complete rows alone. The same kernel runs the lookahead
    test's bootstrap (:func:`llmsurrogate.lookahead.bootstrap`).

    See Also
    --------
    feols : the fit whose coefficient is bootstrapped.
    bootstrap_counts : the weights of one replication.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate import fe
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"firm": rng.integers(0, 20, 400), "x": rng.normal(size=400)})
    >>> df["y"] = 2.0 * df["x"] + 0.1 * df["firm"] + rng.normal(size=400)
    >>> boot = fe.bootstrap("y ~ x | firm", df, n_boot=200, cluster="firm", seed=1, n_jobs=1)
    >>> boot.draws.shape, round(boot.estimate, 2), round(boot.se(), 3)
    ((200,), 2.08, 0.047)
    >>> boot.confint(level=0.9).round(2).tolist()
    [2.0, 2.16]
    """
    started = time.perf_counter()
    if weights is not None:
        raise InvalidArgumentError("argument `weights`: the bootstrap does not support weights (each replication "
                                   "weights the rows by their resampling counts); fit a weighted model with feols()")
    for key in kwargs:
        import difflib

        known = ["param", "n_boot", "cluster", "seed", "fixef_tol", "fixef_maxiter", "collin_tol", "n_jobs"]
        hint = difflib.get_close_matches(key, known, n=1)
        raise InvalidArgumentError(f"unknown argument `{key}` of fe.bootstrap" + (f"; did you mean `{hint[0]}`?"
                                                                                   if hint else ""))
    form = fml if isinstance(fml, Formula) else parse_formula(fml)
    n_boot = check_int(n_boot, "n_boot", minimum=1)
    seed = _check_seed(seed)
    if cluster is not None and (not isinstance(cluster, str) or not cluster):
        raise InvalidArgumentError(f"argument `cluster` must be None (rows) or a column name; got {cluster!r}")
    if not (isinstance(fixef_tol, (int, float)) and 0 < fixef_tol < 1):
        raise InvalidArgumentError(f"argument `fixef_tol` must lie in (0, 1); got {fixef_tol!r}")
    fixef_maxiter = check_int(fixef_maxiter, "fixef_maxiter", minimum=1)
    collin_tol = check_real(collin_tol, "collin_tol", low=0.0, high=1.0, low_open=True, high_open=True)
    if not form.fixef and not form.intercept:
        raise InvalidArgumentError("argument `fml`: the bootstrap needs fixed effects or an intercept; "
                                   "remove the `0` / `-1` term")
    def regressor(terms: list, param):
        terms = [t for t in terms if t != "Intercept"]
        if param is None:
            if len(terms) != 1:
                raise InvalidArgumentError(f"argument `param`: name the term to bootstrap, one of {terms}")
            param = terms[0]
        if param not in terms:
            raise InvalidArgumentError(f"argument `param`: {param!r} is not a regressor of the formula; one of {terms}")
        return terms, param

    if not form.transformed:  # the names are known before the data are read
        terms, param = regressor(form.term_names, param)
    n_jobs = resolve_n_jobs(n_jobs)
    frame = as_frame(data, "data")
    spec = VcovSpec("CRV1", (cluster,)) if cluster is not None else VcovSpec("iid")
    design = build_design(form, frame, data, spec, None, "none", stacklevel=3)
    terms, param = regressor(design.names, param)  # a transform's columns: C(g)[T.b], ...
    fit = fit_design(design, VcovSpec("iid"), fixef_tol=fixef_tol, fixef_maxiter=fixef_maxiter,
                     collin_tol=collin_tol, n_jobs=n_jobs, started=started)
    if param not in fit.terms or fit.dropped_collinear:
        raise InvalidArgumentError(
            f"regressor(s) {fit.dropped_collinear} are collinear with the others or the fixed effects on the full "
            "sample; drop them before bootstrapping")
    # levels numbered by first appearance among the rows kept (the design numbers them among all
    # rows, the same order when no row was dropped): the draws are then those of the complete rows
    # alone, whatever rows were dropped
    renumber = _first_appearance if design.nobs < design.n_input else (lambda c: c)
    blocks, n_blocks = None, 0
    if cluster is not None:
        blocks = np.ascontiguousarray(renumber(design.cl_codes[0]))
        n_blocks = int(blocks.max()) + 1
        if n_blocks < 2:
            raise InvalidArgumentError(f"argument `cluster`: column {cluster!r} has {n_blocks} level(s); blocks need "
                                       "at least 2")
    # the outcome and the regressors (not the intercept: a one-level fixed effect absorbs it) as rows
    # of a (p, n) array, centred: the kernel's collinearity rule then compares a column's pivot with
    # its sum of squares about its mean, as feols does, not with its level
    first = int(design.names[0] == "Intercept")
    x = np.vstack([design.y] + [design.X[:, j] for j in range(first, design.X.shape[1])])
    x = np.ascontiguousarray(x - x.mean(axis=1, keepdims=True))
    codes = [renumber(c) for c in design.fe_codes] or [np.zeros(design.nobs, dtype=np.uint32)]
    stacked = np.ascontiguousarray(np.vstack(codes))
    n_groups = [int(c.max()) + 1 for c in stacked]
    draws, n_singular, n_unconverged = _core.fe_bootstrap(
        x, stacked, n_groups, terms.index(param), n_boot, seed, blocks, n_blocks, float(fixef_tol),
        int(fixef_maxiter), float(collin_tol), n_jobs)
    notes = list(fit.notes)
    new = []
    if n_singular:
        new.append(f"{n_singular} replication(s) with a regressor collinear in the resample: NaN, left out of the "
                   "p-values")
    if n_unconverged:
        new.append(f"{n_unconverged} replication(s) whose demeaning missed the tolerance: NaN, left out of the "
                   "p-values")
    for msg in new:
        warnings.warn(msg, LLMSurrogateWarning, stacklevel=2)
    return FeolsBootstrap(
        formula=form.text, param=param, estimate=float(fit.coef()[param]), draws=np.asarray(draws, dtype=np.float64),
        n_boot=n_boot, seed=seed, cluster=cluster, n_clusters=int(n_blocks), n_singular=int(n_singular),
        n_unconverged=int(n_unconverged), nobs=int(fit.nobs), fixef=list(fit.fixef_names),
        seconds=time.perf_counter() - started, notes=tuple(notes + new))


def bootstrap_counts(n: int, seed: int, b: int, blocks=None) -> np.ndarray:
    """The resampling counts (frequency weights) of replication ``b`` of :func:`bootstrap` for ``n``
    rows (``blocks``: n block labels, e.g. dates, for the cluster bootstrap): the exact weights
    of that replication, for reference implementations and tests.

    Examples
    --------
    >>> bootstrap_counts(5, seed=1, b=1).tolist()
    [2.0, 1.0, 2.0, 0.0, 0.0]
    >>> bootstrap_counts(6, seed=1, b=1, blocks=["a", "a", "b", "b", "c", "c"]).tolist()
    [2.0, 2.0, 1.0, 1.0, 0.0, 0.0]
    """
    n = check_int(n, "n", minimum=1)
    seed = check_int(seed, "seed", minimum=0, maximum=(1 << 64) - 1)
    b = check_int(b, "b", minimum=0)
    if blocks is None:
        return np.asarray(_core.fe_bootstrap_counts(n, seed, b))
    codes, g = factorize(np.asarray(blocks))
    if len(codes) != n or (codes < 0).any():
        raise InvalidArgumentError(f"argument `blocks` must hold {n} non-missing labels")
    return np.asarray(_core.fe_bootstrap_counts(n, seed, b, np.ascontiguousarray(codes.astype(np.uint32)), g))
