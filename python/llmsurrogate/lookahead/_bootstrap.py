"""``bootstrap``: the pairs bootstrap of the interaction coefficient (docs/methods/lookahead.md
§2.7, §5.4), in Rust (``rust/fe/bootstrap.rs``) as integer resampling weights through the weighted
demeaning, parallel over replications, reproducible by seed for any thread count."""

from __future__ import annotations

import time
import warnings

import numpy as np

from .. import _core
from .._validation import check_int, check_n_jobs
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..fe import feols, parse_formula
from ..fe._demean import DEFAULT_MAXITER, DEFAULT_TOL, factorize
from ..fe._estimation import COLLIN_TOL
from ._data import prepare
from ._results import LookaheadBootstrap

RESAMPLE_HELP = "'obs' (rows, the paper's pairs bootstrap) or the name of a column whose levels are resampled as blocks (e.g. 'date', 'firm')"


def _design(sample, formula: str):
    """The outcome and regressor columns as rows of a (p, n) array, the term names, the codes."""
    form = parse_formula(formula)
    frame = sample.frame
    cols = [frame[form.outcome].to_numpy(np.float64)]
    for t in form.terms:
        cols.append(np.prod([frame[c].to_numpy(np.float64) for c in t], axis=0))
    # centred (the fixed effects absorb a constant): the Rust collinearity rule then compares a
    # column's pivot with its sum of squares about its mean, as fe.feols does, not with its level
    x = np.vstack(cols)
    x = np.ascontiguousarray(x - x.mean(axis=1, keepdims=True))
    codes = []
    for f in form.fixef:
        if len(f) == 1:
            c, _ = factorize(frame[f[0]].to_numpy())
        else:
            import pandas as pd

            c, _ = factorize(pd.MultiIndex.from_arrays([frame[k].to_numpy() for k in f]))
        codes.append(c)
    stacked = np.ascontiguousarray(np.vstack(codes).astype(np.uint32))
    n_groups = [int(c.max()) + 1 for c in stacked]
    return x, form.term_names, stacked, n_groups


def bootstrap(data, outcome: str, signal: str, lap: str, fe=("firm", "date"), reps: int = 10_000, seed: int | None = None,
              resample: str = "obs", *, controls=(), standardize: bool = False, reference: float | None = None,
              n_jobs: int | None = None) -> LookaheadBootstrap:
    """Pairs bootstrap of the interaction coefficient ``signal x lap`` (§2.7; Figure III).

    Each of ``reps`` replications draws the rows (``resample="obs"``, the paper's choice) or the
    levels of a column (``resample="date"``, ``"firm"`` or any column name: block bootstrap) with
    replacement and re-estimates the regression of :func:`lookahead_test` (same ``fe``,
    ``controls``, ``standardize``; variables are **not** re-standardised inside resamples, §2.7);
    the replicated coefficients are in the result's ``draws``.

    p-values (§2.7; departure 10): against ``reference`` (the in-sample estimate when the data
    are the out-of-sample period, as the paper: #{draws >= reference} / B, and (1 + #) / (B + 1),
    which is never 0); without ``reference``, the percentile test of H0: delta <= 0,
    ``#{draws <= 0} / B`` and ``(1 + #) / (B + 1)``. ``result.pvalue(reference, side=...)`` gives any other.

    Engine: replication b draws multinomial counts from SplitMix64 started at the (b + 1)-th output
    of SplitMix64 seeded with ``seed`` (the risk bootstrap's convention; docs §5.4) and fits
    the weighted fixed-effects OLS with the counts as frequency weights, which equals the fit on the
    duplicated rows. Rows drawn 0 times drop out; singletons are kept (they do not move the
    slopes; dropping them changes N only). A replication whose design is singular (a regressor
    collinear in the resample) is NaN, counted, and left out of the p-values. ``seed=None`` draws
    a seed from the operating system and records it in the result.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"firm": rng.integers(0, 30, 600), "date": rng.integers(0, 20, 600),
    ...                    "llm": rng.choice([-1.0, 0.0, 1.0], 600), "lap": rng.uniform(0, 1, 600)})
    >>> df["ret"] = (0.1 + 0.5 * df["lap"]) * df["llm"] + rng.normal(scale=0.5, size=600)
    >>> boot = bootstrap(df, "ret", "llm", "lap", reps=200, seed=1, n_jobs=1)
    >>> boot.draws.shape, round(boot.estimate, 2), boot.p_value, round(boot.p_value_plus_one, 4)
    ((200,), 0.53, 0.0, 0.005)
    """
    started = time.perf_counter()
    reps = check_int(reps, "reps", minimum=1)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 64))
    else:
        seed = check_int(seed, "seed", minimum=0, maximum=(1 << 64) - 1)
    if not isinstance(resample, str) or not resample:
        raise InvalidArgumentError(f"argument `resample` must be {RESAMPLE_HELP}; got {resample!r}")
    if reference is not None:
        try:
            reference = float(reference)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"argument `reference` must be a number or None; got {reference!r}") from None
        if not np.isfinite(reference):
            raise InvalidArgumentError(f"argument `reference` must be finite; got {reference!r}")
    n_jobs = check_n_jobs(n_jobs)
    from .._validation import as_frame

    frame = as_frame(data, "data")
    if resample != "obs" and resample not in frame.columns:
        raise InvalidArgumentError(f"argument `resample` must be {RESAMPLE_HELP}; {resample!r} is not a column of `data`")
    sample = prepare(frame, outcome, signal, lap, fe, controls, standardize,
                     extra=[resample] if resample != "obs" else [])
    x, terms, codes, n_groups = _design(sample, sample.formula)
    term = sample.interaction
    coef = terms.index(term)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        fit = feols(sample.formula, sample.frame, vcov="iid", fixef_rm="none", n_jobs=n_jobs)
    if term not in fit.terms or fit.dropped_collinear:
        raise InvalidArgumentError(
            f"regressor(s) {fit.dropped_collinear} are collinear with the others or the fixed effects on the full "
            "sample; drop them before bootstrapping")
    estimate = float(fit.coef()[term])
    blocks, n_blocks = None, 0
    if resample != "obs":
        b, n_blocks = factorize(sample.frame[resample].to_numpy())
        blocks = np.ascontiguousarray(b.astype(np.uint32))
        if n_blocks < 2:
            raise InvalidArgumentError(f"argument `resample`: column {resample!r} has {n_blocks} level(s); blocks need at least 2")
    draws, n_singular, n_unconverged = _core.fe_bootstrap(
        x, codes, n_groups, coef, reps, seed, blocks, n_blocks, DEFAULT_TOL, DEFAULT_MAXITER, COLLIN_TOL, n_jobs)
    notes = list(sample.notes)
    if n_singular:
        notes.append(f"{n_singular} replication(s) with a regressor collinear in the resample: NaN, left out of the p-values")
    if n_unconverged:
        notes.append(f"{n_unconverged} replication(s) whose demeaning missed the tolerance: NaN, left out of the p-values")
    for msg in notes[len(sample.notes):]:
        warnings.warn(msg, LLMSurrogateWarning, stacklevel=2)
    return LookaheadBootstrap(
        outcome=outcome, signal=signal, lap=lap, term=term, fe=list(sample.fe), controls=list(controls)
        if not isinstance(controls, str) else [controls], standardized=bool(standardize), resample=resample,
        n_blocks=int(n_blocks), reps=reps, seed=seed, estimate=estimate, reference=reference,
        draws=np.asarray(draws, dtype=np.float64), n_singular=int(n_singular), n_unconverged=int(n_unconverged),
        nobs=int(fit.nobs), seconds=time.perf_counter() - started, notes=tuple(notes))


def bootstrap_counts(n: int, seed: int, b: int, blocks=None) -> np.ndarray:
    """The resampling counts (frequency weights) of replication ``b`` for ``n`` rows (``blocks``:
    n block labels, e.g. dates, for the block variants) -- the exact weights of the bootstrap's
    replication b, for reference implementations and tests.

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
