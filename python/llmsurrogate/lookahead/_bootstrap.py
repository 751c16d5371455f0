"""``bootstrap``: the pairs bootstrap of the interaction coefficient (docs/methods/lookahead.md
§2.7, §5.4): the lookahead sample handed to :func:`llmsurrogate.fe.bootstrap` (Rust,
``rust/fe/bootstrap.rs``: integer resampling weights through the weighted demeaning, parallel
over replications, reproducible by seed for any thread count)."""

from __future__ import annotations

import time
import warnings

import numpy as np

from .._deprecation import deprecated_arguments
from .._validation import as_frame, check_int, check_n_jobs
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..fe import bootstrap as fe_bootstrap
from ..fe import bootstrap_counts
from ._data import prepare
from ._magnitudes import finite_number
from ._results import LookaheadBootstrap

__all__ = ["bootstrap", "bootstrap_counts", "RESAMPLE_HELP"]

RESAMPLE_HELP = "'obs' (rows, the paper's pairs bootstrap) or the name of a column whose levels are resampled as blocks (e.g. 'date', 'firm')"


@deprecated_arguments(renamed={"reps": "n_boot"}, positional=4)
def bootstrap(data, outcome: str, signal: str, lap: str, *, fe=("firm", "date"), n_boot: int = 10_000,
              seed: int | None = None, resample: str = "obs", controls=(), standardize: bool = False,
              reference: float | None = None, n_jobs: int | None = None) -> LookaheadBootstrap:
    """Pairs bootstrap of the interaction coefficient ``signal x lap`` (§2.7; Figure III).

    Each of ``n_boot`` replications draws the rows (``resample="obs"``, the paper's choice) or the
    levels of a column (``resample="date"``, ``"firm"`` or any column name: block bootstrap) with
    replacement and re-estimates the regression of :func:`lookahead_test` (same ``fe``,
    ``controls``, ``standardize``; variables are **not** re-standardised inside resamples, §2.7);
    the replicated coefficients are in the result's ``draws``.

    p-values (§2.7; departure 10): against ``reference`` (the in-sample estimate when the data
    are the out-of-sample period, as the paper: #{draws >= reference} / B, and (1 + #) / (B + 1),
    which is never 0); without ``reference``, the percentile test of H0: delta <= 0,
    ``#{draws <= 0} / B`` and ``(1 + #) / (B + 1)``. ``result.p_value_at(reference, side=...)`` gives any other.

    Engine: :func:`llmsurrogate.fe.bootstrap` on the sample's formula (``param`` the interaction,
    ``cluster`` the ``resample`` column): replication b draws multinomial counts from SplitMix64
    started at the (b + 1)-th output of SplitMix64 seeded with ``seed`` (docs §5.4) and fits the
    weighted fixed-effects OLS with the counts as frequency weights, which equals the fit on the
    duplicated rows. Rows drawn 0 times drop out; singletons are kept (they do not move the
    slopes; dropping them changes N only). A replication whose design is singular (a regressor
    collinear in the resample) is NaN, counted, and left out of the p-values. ``seed=None`` draws
    a seed from the operating system and records it in the result. ``reps`` (the old name of
    ``n_boot``) and passing the arguments after ``lap`` by position still work, with a
    FutureWarning. ``n_jobs``: workers/threads (None: see :func:`llmsurrogate.num_threads`); the
    draws do not depend on it.

    Examples
    --------
    >>> from llmsurrogate.lookahead.demo import small_panel
    >>> df = small_panel()   # 600 rows: ret = (0.1 + 0.5 lap) llm + noise, so delta = 0.5
    >>> boot = bootstrap(df, "ret", "llm", "lap", n_boot=200, seed=1, n_jobs=1)
    >>> boot.draws.shape, round(boot.estimate, 2), boot.p_value, round(boot.p_value_plus_one, 4)
    ((200,), 0.53, 0.0, 0.005)
    """
    started = time.perf_counter()
    n_boot = check_int(n_boot, "n_boot", minimum=1)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 64))
    else:
        seed = check_int(seed, "seed", minimum=0, maximum=(1 << 64) - 1)
    if not isinstance(resample, str) or not resample:
        raise InvalidArgumentError(f"argument `resample` must be {RESAMPLE_HELP}; got {resample!r}")
    reference = finite_number(reference, "reference", optional=True)
    n_jobs = check_n_jobs(n_jobs)
    frame = as_frame(data, "data")
    if resample != "obs" and resample not in frame.columns:
        raise InvalidArgumentError(f"argument `resample` must be {RESAMPLE_HELP}; {resample!r} is not a column of `data`")
    sample = prepare(frame, outcome, signal, lap, fe, controls, standardize,
                     extra=[resample] if resample != "obs" else [])
    term = sample.interaction
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLMSurrogateWarning)  # the notes are warned below
            boot = fe_bootstrap(sample.form, sample.frame, param=term, n_boot=n_boot,
                                cluster=None if resample == "obs" else resample, seed=seed, n_jobs=n_jobs)
    except InvalidArgumentError as err:
        if str(err).startswith("argument `cluster`"):  # the lookahead's word for it
            raise InvalidArgumentError("argument `resample`" + str(err)[len("argument `cluster`"):]) from None
        raise
    notes = list(sample.notes) + list(boot.notes)
    for msg in boot.notes:
        warnings.warn(msg, LLMSurrogateWarning, stacklevel=3)  # 3: past the deprecation wrapper
    return LookaheadBootstrap(
        outcome=outcome, signal=signal, lap=lap, term=term, fe=list(sample.fe), controls=list(controls)
        if not isinstance(controls, str) else [controls], standardized=bool(standardize), resample=resample,
        n_blocks=boot.n_clusters, reps=n_boot, seed=seed, estimate=boot.estimate, reference=reference,
        draws=boot.draws, n_singular=boot.n_singular, n_unconverged=boot.n_unconverged,
        nobs=boot.nobs, seconds=time.perf_counter() - started, notes=tuple(notes))
