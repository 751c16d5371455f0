"""``lookahead_test``: the fixed-effects regression of the outcome on the LLM signal, LAP and their
product (docs/methods/lookahead.md §2.2–§2.4), through :func:`llmsurrogate.fe.feols`.

scipy.stats is imported inside :func:`lookahead_test`: it takes about half a second to import, and
the command line imports this package to register its commands."""

from __future__ import annotations

import warnings

import numpy as np

from .._deprecation import deprecated_arguments
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..fe import feols
from ._data import prepare
from ._magnitudes import magnitudes
from ._results import LookaheadTest


@deprecated_arguments(positional=4)
def lookahead_test(data, outcome: str, signal: str, lap: str, *, fe=("firm", "date"), cluster: str | None = "date",
                   controls=(), standardize: bool = False, n_jobs: int | None = None) -> LookaheadTest:
    """The lookahead-bias test of Gao, Jiang & Yan (2026): regress ``outcome`` on ``signal`` (the
    LLM forecast), ``lap`` and ``signal x lap`` with absorbed fixed effects ``fe`` and standard
    errors clustered by ``cluster`` (docs/methods/lookahead.md §2.2–§2.4).

    The statistic is the interaction coefficient delta. A **positive** delta is the signature of
    lookahead bias (the forecast is more accurate on the texts the model finds familiar, §2.2); the
    package reports the one-sided p-value of H0: delta <= 0 against delta > 0 (``p_greater``), the
    other side (``p_less``) and the two-sided one, all from the t distribution with the
    regression's degrees of freedom (G - 1 with clustered errors, as fixest and pyfixest). The
    test is a small-contamination diagnostic: under the paper's contamination model delta can be
    negative when contamination is large (§2.2, caveat 2).

    Specifications (§2.4): Table II column 2 is the default; Table III adds
    ``controls=["small", "llm:small", "lap:small", "llm:lap:small"]``; Table IV
    ``controls=["p1", "llm:p1"]`` or ``["conf", "llm:conf"]``; Table V ``standardize=True``
    (outcome, signal and LAP z-scored within the sample, ddof=1, before the product); Table VI
    ``fe=["firm", "quarter"], cluster="firm"``. Controls are formula terms (``:`` for products).
    The baseline regression (Table II column 1) drops every term that involves ``lap``.

    Conventions of the paper (§2.4): one row per text, plain products (no centring), **no
    singleton removal** (``fixef_rm="none"``), the overall R² including fixed effects. Rows with
    a missing value in a column used are dropped with a count and a warning. ``cluster=None``
    gives heteroskedasticity-robust (HC1) errors. Arguments after ``lap`` are keyword-only (passing
    them by position still works, with a FutureWarning). ``n_jobs``: workers/threads of the demeaning
    (None: see :func:`llmsurrogate.num_threads`).

    Returns a :class:`LookaheadTest` (``.regression`` and ``.baseline`` are the two
    :class:`~llmsurrogate.fe.FeolsResult` fits).

    Examples
    --------
    >>> from llmsurrogate.lookahead.demo import small_panel
    >>> df = small_panel()   # 600 rows: ret = (0.1 + 0.5 lap) llm + noise, so delta = 0.5
    >>> res = lookahead_test(df, "ret", "llm", "lap")          # fe firm + date, clustered by date
    >>> res.term, round(res.estimate, 2), res.df, res.p_greater < 0.001
    ('llm:lap', 0.53, 19, True)
    """
    from scipy.stats import t as t_dist

    if cluster is not None and (not isinstance(cluster, str) or not cluster):
        raise InvalidArgumentError(f"argument `cluster` must be a column name or None; got {cluster!r}")
    sample = prepare(data, outcome, signal, lap, fe, controls, standardize, extra=[cluster] if cluster else [])
    vcov = {"CRV1": cluster} if cluster else "hetero"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        full = feols(sample.form, sample.frame, vcov=vcov, fixef_rm="none", n_jobs=n_jobs)
        base = feols(sample.baseline_formula, sample.frame, vcov=vcov, fixef_rm="none", n_jobs=n_jobs)
    notes = list(sample.notes) + list(full.notes)
    for n in full.notes + base.notes:
        warnings.warn(n, LLMSurrogateWarning, stacklevel=3)  # 3: past the deprecation wrapper
    term = sample.interaction
    if term not in full.terms:
        raise InvalidArgumentError(
            f"the interaction {term} was dropped as collinear with the other regressors or the fixed effects; "
            "the test cannot be run on these data")
    j = full.terms.index(term)
    est = float(full.coef().iloc[j])
    se = float(full.se().iloc[j])
    stat = est / se if se > 0 else float("nan")
    df = int(full.df_t)
    gamma = float(full.coef()[signal]) if signal in full.terms else float("nan")
    gamma_b = float(base.coef()[signal]) if signal in base.terms else None
    mags = magnitudes(gamma, est, sample.lap_mean, sample.lap_sd, gamma_baseline=gamma_b, signal_sd=sample.signal_sd) \
        if np.isfinite(gamma) else {}
    return LookaheadTest(
        outcome=outcome, signal=signal, lap=lap, term=term, fe=list(sample.fe), cluster=cluster,
        controls=list(controls) if not isinstance(controls, str) else [controls], standardized=bool(standardize),
        estimate=est, std_error=se, statistic=stat, df=df,
        p_greater=float(t_dist.sf(stat, df)), p_less=float(t_dist.cdf(stat, df)),
        p_two_sided=float(2 * t_dist.sf(abs(stat), df)),
        nobs=int(full.nobs), n_input=int(sample.n_input), n_dropped=int(sample.n_dropped),
        lap_mean=sample.lap_mean, lap_sd=sample.lap_sd,
        lap_min=sample.lap_min, lap_max=sample.lap_max, signal_sd=sample.signal_sd, magnitudes=mags,
        fit=full.to_json(indent=None), baseline_fit=base.to_json(indent=None), notes=tuple(notes))
